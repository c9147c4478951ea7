//! "Storage unavailable" versus data errors: a killed connection, a statement timeout, an exhausted pool and an
//! unreachable server are `Unavailable`, and the pool recovers afterwards.

use crate::common;

use std::time::{Duration, Instant};

use common::{backend_pid, lock_observations, terminate, wait_until_blocked};
use janitor_core::testing::visitor;
use janitor_core::testing::visitor_store::observation;
use janitor_core::{Retention, StoreError, VisitorStore};
use janitor_sql::testing::with_schemas;
use janitor_sql::{Database, DatabaseConfig, MigrateError, PgVisitorStore};

use janitor_core::testing::T0;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_connection_is_unavailable_and_the_pool_recovers() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh_with(|b| b.max_connections(1)).await;
        let store = PgVisitorStore::new(database.clone(), Retention::default());
        store.create_visitor(&visitor(1), T0).await.unwrap();
        store
            .save_observation(&visitor(1), &observation("a"), T0)
            .await
            .unwrap();
        let pid = backend_pid(&database).await;

        let lock = lock_observations(&database).await;
        let blocked = {
            let store = store.clone();
            tokio::spawn(async move { store.recent_observations(&visitor(1), 5, T0).await })
        };
        wait_until_blocked(&lock, pid).await;
        terminate(pid).await;
        let outcome = blocked.await.unwrap();
        assert!(
            matches!(outcome, Err(StoreError::Unavailable(_))),
            "a terminated backend is unavailable, got {outcome:?}"
        );
        drop(lock);

        // The next call gets a new connection and the data is intact.
        let history = store
            .recent_observations(&visitor(1), 5, T0)
            .await
            .expect("pool recovered");
        assert_eq!(history.len(), 1);
        assert_ne!(
            backend_pid(&database).await,
            pid,
            "a new backend serves the pool"
        );
    })
    .await;
}

/// A session that refuses writes, as one left on a demoted primary or a standby after a failover: the write is
/// unavailable (25006), not a data error, and the session leaves the pool so that the next call reconnects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_session_is_unavailable_and_leaves_the_pool() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh_with(|b| b.max_connections(1)).await;
        let store = PgVisitorStore::new(database.clone(), Retention::default());
        let pid = {
            let client = database.pool().get().await.unwrap();
            client
                .batch_execute("SET default_transaction_read_only = on")
                .await
                .unwrap();
            client
                .query_one("SELECT pg_backend_pid()", &[])
                .await
                .unwrap()
                .get::<_, i32>(0)
        };
        let refused = store.create_visitor(&visitor(1), T0).await;
        match &refused {
            Err(StoreError::Unavailable(message)) => {
                assert!(message.contains("SQLSTATE 25006"), "{message}")
            }
            other => panic!("a read-only session is unavailable, got {other:?}"),
        }
        store
            .create_visitor(&visitor(1), T0)
            .await
            .expect("the next call writes on a new session");
        assert_ne!(
            backend_pid(&database).await,
            pid,
            "the read-only session left the pool"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_timeout_is_unavailable() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh_with(|b| b.statement_timeout_ms(200)).await;
        let store = PgVisitorStore::new(database.clone(), Retention::default());
        let lock = lock_observations(&database).await;
        let started = Instant::now();
        let outcome = store.recent_observations(&visitor(1), 5, T0).await;
        match &outcome {
            Err(StoreError::Unavailable(text)) => assert!(text.contains("57014"), "{text}"),
            other => panic!("expected a statement timeout, got {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(3));
        drop(lock);
        store
            .recent_observations(&visitor(1), 5, T0)
            .await
            .expect("works again");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_pool_fails_fast() {
    with_schemas(|schemas| async move {
        let database = schemas
            .fresh_with(|b| b.max_connections(1).wait_timeout_ms(100))
            .await;
        let store = PgVisitorStore::new(database.clone(), Retention::default());
        let held = database.pool().get().await.unwrap();
        let started = Instant::now();
        let outcome = store.recent_observations(&visitor(1), 5, T0).await;
        assert!(
            matches!(outcome, Err(StoreError::Unavailable(_))),
            "an exhausted pool is unavailable, got {outcome:?}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "waited {:?}",
            started.elapsed()
        );
        drop(held);
        store
            .recent_observations(&visitor(1), 5, T0)
            .await
            .expect("a free connection again");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_unavailable() {
    // Nothing listens on port 1.
    let database = Database::new(
        DatabaseConfig::builder("postgres://postgres@127.0.0.1:1/postgres")
            .connect_timeout_ms(500)
            .build()
            .unwrap(),
    )
    .unwrap();
    assert!(matches!(
        database.ping().await,
        Err(StoreError::Unavailable(_))
    ));
    let store = PgVisitorStore::new(database.clone(), Retention::default());
    let outcome = store.touch_visitor(&visitor(1), T0).await;
    assert!(
        matches!(outcome, Err(StoreError::Unavailable(_))),
        "{outcome:?}"
    );
    let migrated = database.migrate().await;
    assert!(
        matches!(
            migrated,
            Err(MigrateError::Store(StoreError::Unavailable(_)))
        ),
        "{migrated:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_data_errors() {
    with_schemas(|schemas| async move {
        // Not migrated: the tables do not exist. That is a deployment mistake, not a passing outage.
        let bare = schemas.unmigrated_with(|b| b);
        bare.ping().await.expect("the server answers");
        let store = PgVisitorStore::new(bare, Retention::default());
        let outcome = store.recent_observations(&visitor(1), 5, T0).await;
        match outcome {
            Err(StoreError::Data(text)) => assert!(text.contains("42P01"), "{text}"),
            other => panic!("expected a data error, got {other:?}"),
        }

        let store = PgVisitorStore::new(schemas.fresh().await, Retention::default());
        store.create_visitor(&visitor(1), T0).await.unwrap();
        let duplicate = store.create_visitor(&visitor(1), T0).await;
        match duplicate {
            // PostgreSQL's DETAIL line would quote the id; the message must not.
            Err(StoreError::Data(text)) => {
                assert!(text.contains("23505"), "{text}");
                assert!(!text.contains(visitor(1).as_str()), "{text}");
            }
            other => panic!("expected a data error, got {other:?}"),
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_the_database_cannot_take_is_invalid_and_writes_nothing() {
    with_schemas(|schemas| async move {
        let store = PgVisitorStore::new(schemas.fresh().await, Retention::default());
        // U+0000 fits neither text nor jsonb: SQLSTATE 22021 or 22P05, a data exception, never "unavailable".
        let unstorable = observation("a\0b");
        let write = janitor_core::identification::store::VisitWrite {
            visitor: &visitor(1),
            create: true,
            observation: Some(&unstorable),
            now_ms: T0,
        };
        match store.record_visit(write).await {
            Err(StoreError::Invalid(text)) => assert!(text.contains("SQLSTATE 22"), "{text}"),
            other => panic!("expected an invalid value, got {other:?}"),
        }
        store.create_visitor(&visitor(2), T0).await.unwrap();
        match store.save_observation(&visitor(2), &unstorable, T0).await {
            Err(StoreError::Invalid(text)) => assert!(text.contains("SQLSTATE 22"), "{text}"),
            other => panic!("expected an invalid value, got {other:?}"),
        }
        // Neither statement left a row behind, and the store still answers.
        for n in [1, 2] {
            assert!(store
                .recent_observations(&visitor(n), 10, T0)
                .await
                .unwrap()
                .is_empty());
        }
        let created_again = store.create_visitor(&visitor(1), T0).await;
        assert_eq!(created_again, Ok(()), "the failed create left no visitor");
    })
    .await;
}
