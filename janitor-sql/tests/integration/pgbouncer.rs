//! The stores behind PgBouncer in `pool_mode = transaction`, started by each test in front of the local server:
//! the seven store suites (migrations included, and the family's erasure in one transaction), one round trip per
//! statement with nothing prepared, and the statement timeout kept by the client.
//!
//! The bouncer sets every server session's `search_path` to a schema that does not exist, so only statements
//! that name their schema pass.

use std::future::Future;
use std::time::{Duration, Instant};

use janitor_core::{Engine, EngineConfig, Retention, StoreError, VisitorStore};
use janitor_sql::testing::{admin_client, database_url, with_schemas, Schemas};
use janitor_sql::{Database, PgVisitorStore, PoolMode};
use janitor_test_support::pgbouncer::{BouncerMode, PgBouncer};

/// What a case behind the bouncer gets: schemas to make, and the bouncer's URL.
#[derive(Debug, Clone)]
struct Pooled {
    schemas: Schemas,
    url: String,
}

impl Pooled {
    /// A migrated schema, reached through the bouncer in transaction mode.
    async fn fresh(&self) -> Database {
        self.schemas
            .fresh_at(&self.url, |b| b.pool_mode(PoolMode::Transaction))
            .await
    }
}

/// Runs `case` with a bouncer of its own, in front of `DATABASE_URL`; schemas are dropped afterwards.
async fn behind_bouncer<F, Fut>(case: F)
where
    F: FnOnce(Pooled) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let bouncer = PgBouncer::start(&database_url()).unwrap_or_else(|e| panic!("{e}"));
    let url = bouncer.url("postgres");
    with_schemas(move |schemas| case(Pooled { schemas, url })).await;
    drop(bouncer);
}

janitor_sql::pg_store_suites!(
    around: behind_bouncer,
    database: |pooled: Pooled| pooled.fresh().await,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cookie_visit_is_one_round_trip_and_nothing_is_prepared() {
    behind_bouncer(|pooled| async move {
        let database = pooled.fresh().await;
        let engine = Engine::new(
            PgVisitorStore::new(database.clone(), Retention::default()),
            EngineConfig::default(),
        );
        let payload = janitor_core::testing::mac_payload();
        let first = engine.identify(&payload, None).await.expect("first visit");
        let before = database.statements_executed();
        let again = engine
            .identify(&payload, Some(&first.identity.visitor_id))
            .await
            .expect("cookie visit");
        assert!(again.identity.is_returning);
        assert_eq!(
            database.statements_executed() - before,
            1,
            "identical to the newest observation: history + refresh + touch"
        );
        let mut document = janitor_core::testing::mac_document();
        document["signals"]["viewport"]["width"] = serde_json::json!(1000);
        let resized = janitor_core::VisitorPayload::from_value(&document).expect("payload");
        let before = database.statements_executed();
        let changed = engine
            .identify(&resized, Some(&first.identity.visitor_id))
            .await
            .expect("cookie visit");
        assert!(changed.metrics.observation_saved);
        assert_eq!(
            database.statements_executed() - before,
            2,
            "history, then save + prune + touch"
        );
        assert_eq!(database.statements_prepared(), 0, "unnamed statements only");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_keeps_the_statement_timeout_and_cancels_the_statement() {
    behind_bouncer(|pooled| async move {
        let database = pooled
            .schemas
            .fresh_at(&pooled.url, |b| {
                b.pool_mode(PoolMode::Transaction).statement_timeout_ms(300)
            })
            .await;
        let schema = database.schema().expect("a schema").to_string();
        let store = PgVisitorStore::new(database, Retention::default());
        // Another session holds the table, so the store's read waits on it.
        let admin = admin_client().await;
        admin
            .batch_execute(&format!(
                "BEGIN; LOCK TABLE {schema}.observations IN ACCESS EXCLUSIVE MODE"
            ))
            .await
            .expect("lock");
        let started = Instant::now();
        let outcome = store
            .recent_observations(&janitor_core::testing::visitor(1), 5, 0)
            .await;
        match outcome {
            Err(StoreError::Unavailable(message)) => {
                assert!(message.contains("timed out after 300 ms"), "{message}")
            }
            other => panic!("expected the client's timeout, got {other:?}"),
        }
        assert!(started.elapsed() < Duration::from_secs(3));
        // The cancel reached the server: no statement of ours still waits on the lock.
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let waiting: i64 = admin
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE wait_event_type = 'Lock' AND query LIKE '%observations%'",
                    &[],
                )
                .await
                .expect("activity")
                .get(0);
            if waiting == 0 {
                break;
            }
            assert!(Instant::now() < deadline, "the statement was not cancelled");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        admin.batch_execute("ROLLBACK").await.expect("unlock");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_mode_through_pgbouncer_says_to_use_transaction_mode() {
    // PgBouncer refuses the `options` startup parameter in each of its pool modes.
    for bouncer_mode in [BouncerMode::Session, BouncerMode::Transaction] {
        let bouncer =
            PgBouncer::start_in(&database_url(), bouncer_mode).unwrap_or_else(|e| panic!("{e}"));
        let database = Database::from_url(&bouncer.url("postgres")).expect("pool");
        let refused = database.ping().await;
        match &refused {
            Err(StoreError::Unavailable(message)) => {
                assert!(
                    message.contains("unsupported startup parameter: options"),
                    "{bouncer_mode:?}: {message}"
                );
                assert!(
                    message.contains("JANITOR_DATABASE_POOL_MODE=transaction")
                        && message.contains("PoolMode::Transaction"),
                    "{bouncer_mode:?}: {message}"
                );
            }
            other => panic!("{bouncer_mode:?}: expected a refusal, got {other:?}"),
        }
        // What the message says to do works, through the same bouncer.
        let config = janitor_sql::DatabaseConfig::builder(&bouncer.url("postgres"))
            .pool_mode(PoolMode::Transaction)
            .build()
            .unwrap();
        Database::new(config)
            .unwrap()
            .ping()
            .await
            .expect("transaction mode");
    }
}
