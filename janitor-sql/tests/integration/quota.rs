//! Request quotas on PostgreSQL: real concurrency, two instances sharing sharded counters,
//! the order of checks, and plans.

use std::sync::Arc;

use janitor_core::label::{LabelKey, ProtectionKey};
use janitor_core::protection::quota::{
    ClaimOutcome, QuotaClaim, QuotaConfig, QuotaContext, QuotaCounter, QuotaDecision, QuotaStore,
    RequestQuotas,
};
use janitor_sql::testing::{database_url, with_schemas};
use janitor_sql::{Database, DatabaseConfig, PgQuotaStore};

use janitor_core::testing::quota_store::{allowed_or_global_denial, sharded_quotas};
use janitor_core::testing::{label_key, T0};

fn key() -> LabelKey {
    label_key("quota-tests")
}

/// A second pool on the same schema, as another instance would have.
fn another_instance(database: &Database) -> Database {
    let schema = database.schema().unwrap().as_str();
    Database::new(
        DatabaseConfig::builder(&database_url())
            .schema(schema)
            .build()
            .unwrap(),
    )
    .unwrap()
}

async fn used(database: &Database, key: ProtectionKey<'_>) -> Option<i32> {
    let client = database.pool().get().await.unwrap();
    client
        .query_opt(
            "SELECT used FROM protection_quotas WHERE id = $1",
            &[&self::key().protection(&key)],
        )
        .await
        .unwrap()
        .map(|row| row.get(0))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_five_concurrent_claims_admit_exactly_seven() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh_with(|b| b.max_connections(25)).await;
        let store = PgQuotaStore::new(database.clone());
        for round in 0..5_i64 {
            let tasks: Vec<_> = (0..25)
                .map(|_| {
                    let store = store.clone();
                    tokio::spawn(async move {
                        let claim = QuotaClaim::fixed(format!("hot-{round}"), 7, T0, 60_000);
                        store.claim(&claim).await
                    })
                })
                .collect();
            let mut allowed = 0;
            for task in tasks {
                match task.await.unwrap().expect("claim") {
                    ClaimOutcome::Allowed => allowed += 1,
                    ClaimOutcome::Denied { .. } => {}
                }
            }
            assert_eq!(allowed, 7, "round {round}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_sharded_counters_exactly() {
    with_schemas(|schemas| async move {
        let first = schemas.fresh_with(|b| b.max_connections(8)).await;
        let second = another_instance(&first);
        let config = sharded_quotas();
        let a = Arc::new(RequestQuotas::new(
            PgQuotaStore::new(first.clone()),
            key(),
            config,
        ));
        let b = Arc::new(RequestQuotas::new(PgQuotaStore::new(second), key(), config));
        let window = T0 + 11 * 60_000; // epoch-aligned
        for round in 0..2_i64 {
            let start = window + round * 60_000;
            // 60 requests at once, half through each instance.
            let tasks: Vec<_> = (0..60)
                .map(|i| {
                    let quotas = if i % 2 == 0 { a.clone() } else { b.clone() };
                    tokio::spawn(async move {
                        quotas
                            .check(&QuotaContext::anonymous(), start + 100 + i)
                            .await
                    })
                })
                .collect();
            let mut allowed = 0;
            for task in tasks {
                let decision = task.await.unwrap().expect("a quota decision");
                allowed += usize::from(allowed_or_global_denial(decision));
            }
            assert_eq!(
                allowed, 21,
                "round {round}: exactly the global limit across both instances"
            );
            let mut slices = Vec::new();
            for shard in 0..4 {
                slices.push(
                    used(&first, ProtectionKey::GlobalShard { shards: 4, shard })
                        .await
                        .unwrap(),
                );
            }
            assert_eq!(slices, [6, 5, 5, 5], "round {round}");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checks_stop_at_the_first_denial() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let config = QuotaConfig::builder().global(100).account(3).session(2).build().unwrap();
        let quotas = RequestQuotas::new(PgQuotaStore::new(database.clone()), key(), config);
        let context = QuotaContext::new(Some("account-raw-1"), Some("session-raw-1")).unwrap();
        for i in 0..2 {
            assert_eq!(quotas.check(&context, T0 + i).await.unwrap(), QuotaDecision::Allowed);
        }
        // The session (2) is full: global and account counted the attempt, the session did not.
        let denied = quotas.check(&context, T0 + 20_000).await.unwrap();
        assert_eq!(
            denied,
            QuotaDecision::Limited { counter: QuotaCounter::Session, retry_after_secs: 40 }
        );
        assert_eq!(used(&database, ProtectionKey::Global).await, Some(3));
        assert_eq!(used(&database, ProtectionKey::Account("account-raw-1")).await, Some(3));
        assert_eq!(used(&database, ProtectionKey::Session("session-raw-1")).await, Some(2));
        // Now the account (3) is full and stops the checks before the session.
        let denied = quotas.check(&context, T0 + 30_000).await.unwrap();
        assert!(matches!(denied, QuotaDecision::Limited { counter: QuotaCounter::Account, .. }));
        assert_eq!(used(&database, ProtectionKey::Global).await, Some(4));
        assert_eq!(used(&database, ProtectionKey::Account("account-raw-1")).await, Some(3));
        // No raw id anywhere in the table.
        let client = database.pool().get().await.unwrap();
        let leaked: i64 = client
            .query_one(
                "SELECT count(*) FROM protection_quotas WHERE id LIKE '%raw%' OR id NOT LIKE 'sub\\_%'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(leaked, 0);
        // After the account window ends, it starts over; cleanup removes ended rows only.
        assert_eq!(quotas.check(&QuotaContext::new(Some("account-raw-1"), None).unwrap(), T0 + 60_000).await.unwrap(), QuotaDecision::Allowed);
        // That request restarted the global window too; only the session's has ended.
        assert_eq!(quotas.cleanup(100, T0 + 60_001).await.unwrap(), 1);
        assert_eq!(used(&database, ProtectionKey::Session("session-raw-1")).await, None);
        assert_eq!(used(&database, ProtectionKey::Account("account-raw-1")).await, Some(1));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_failure_is_an_error_never_an_admission() {
    let database = Database::new(
        DatabaseConfig::builder("postgres://postgres@127.0.0.1:1/postgres")
            .connect_timeout_ms(300)
            .build()
            .unwrap(),
    )
    .unwrap();
    let quotas = RequestQuotas::new(PgQuotaStore::new(database), key(), QuotaConfig::default());
    let outcome = quotas.check(&QuotaContext::anonymous(), T0).await;
    assert!(
        matches!(outcome, Err(janitor_core::StoreError::Unavailable(_))),
        "{outcome:?}"
    );
}
