//! The shared inference budget on PostgreSQL: the row format other languages read, and the
//! limits holding under concurrency, across pools, and through the circuit's cycle.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use janitor_core::protection::budget::{
    BudgetConfig, BudgetDenial, BudgetStore, CallOutcome, InferenceBudget,
};
use janitor_sql::testing::with_schemas;
use janitor_sql::{Database, PgBudgetStore};
use serde_json::{json, Value};
use tokio_postgres::types::Json;

use janitor_core::testing::{label_key, T0};

async fn raw_row(database: &Database, id: &str) -> (i64, i64, Value) {
    let client = database.pool().get().await.unwrap();
    let row = client
        .query_one(
            "SELECT version, expires_at, record FROM evaluation_controls WHERE id = $1",
            &[&id],
        )
        .await
        .unwrap();
    let Json(record): Json<Value> = row.get(2);
    (row.get(0), row.get(1), record)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_are_written_in_the_shared_format() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let budget = InferenceBudget::new(
            PgBudgetStore::new(database.clone()),
            BudgetConfig::default(),
            &label_key("format"),
        );
        let lease = budget.reserve(T0, 3, 1_200).await.expect("admitted");
        let (version, expires_at, record) = raw_row(&database, budget.id()).await;
        assert_eq!((version, expires_at), (1, T0 + 120_000));
        assert_eq!(
            record,
            json!({
                "version": 1, "windowStart": T0, "used": 3, "failures": 0, "openUntil": 0, "epoch": 0,
                "leases": [{"id": lease.id(), "expiresAt": T0 + 6_200, "epoch": 0, "probe": false, "cost": 3}]
            })
        );
        budget
            .finish(&lease, CallOutcome::Success, T0 + 10)
            .await
            .unwrap();
        let (version, _, record) = raw_row(&database, budget.id()).await;
        assert_eq!(
            (version, &record["version"]),
            (2, &json!(2)),
            "column and record versions move together"
        );
        assert_eq!(record["leases"], json!([]));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_written_by_other_instances_are_used() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let budget = InferenceBudget::new(
            PgBudgetStore::new(database.clone()),
            BudgetConfig::builder().max_concurrent(2).build().unwrap(),
            &label_key("interop"),
        );
        // As an instance without lease costs writes it: one running call, costing 1.
        let record = json!({
            "version": 5, "windowStart": T0, "used": 1, "failures": 1, "openUntil": 0, "epoch": 0,
            "leases": [{"id": "5d1f0c62-3c1a-4a9e-8f7b-2b9a1d3c4e5f", "expiresAt": T0 + 6_200, "epoch": 0, "probe": false}]
        });
        let client = database.pool().get().await.unwrap();
        client
            .execute(
                "INSERT INTO evaluation_controls (id, version, expires_at, record) VALUES ($1, 5, $2, $3)",
                &[&budget.id(), &(T0 + 120_000), &Json(&record)],
            )
            .await
            .unwrap();
        budget
            .reserve(T0 + 1, 1, 1_200)
            .await
            .expect("1 + 1 fits in 2");
        assert_eq!(
            budget.reserve(T0 + 1, 1, 1_200).await,
            Err(BudgetDenial::Concurrency),
            "the lease without a cost counts as 1"
        );
        let (version, _, record) = raw_row(&database, budget.id()).await;
        assert_eq!((version, &record["version"], &record["used"]), (6, &json!(6), &json!(2)));
        assert_eq!(record["leases"][0]["cost"], json!(1));
        // An expired row (not yet cleaned up) is still the namespace's row: it is updated by version.
        let expired = InferenceBudget::new(
            PgBudgetStore::new(database.clone()),
            BudgetConfig::default(),
            &label_key("interop"),
        );
        client
            .execute("UPDATE evaluation_controls SET expires_at = $1", &[&T0])
            .await
            .unwrap();
        expired.reserve(T0 + 3_600_000, 1, 1_200).await.expect("a later window");
        let (version, expires_at, record) = raw_row(&database, budget.id()).await;
        assert_eq!((version, expires_at), (7, T0 + 3_600_000 + 120_000));
        assert_eq!((&record["used"], &record["windowStart"]), (&json!(1), &json!(T0 + 3_600_000)));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_reservations_never_exceed_max_concurrent() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let config = BudgetConfig::builder()
            .max_calls(1_000_000)
            .max_concurrent(4)
            .build()
            .unwrap();
        let budget = Arc::new(InferenceBudget::new(
            PgBudgetStore::new(database),
            config,
            &label_key("concurrency"),
        ));
        let live = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let admitted = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let (budget, live, most, admitted) = (
                Arc::clone(&budget),
                Arc::clone(&live),
                Arc::clone(&most),
                Arc::clone(&admitted),
            );
            tasks.push(tokio::spawn(async move {
                for _ in 0..25 {
                    // A fixed clock: no lease expires, so only finishing frees a place.
                    match budget.reserve(T0, 1, 1_000).await {
                        Ok(lease) => {
                            let now_live = live.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now_live, Ordering::SeqCst);
                            admitted.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(20)).await;
                            live.fetch_sub(1, Ordering::SeqCst);
                            // A lost finish would hold its place for good under a fixed clock: insist.
                            let mut tries = 0;
                            while budget
                                .finish(&lease, CallOutcome::Success, T0)
                                .await
                                .is_err()
                            {
                                tries += 1;
                                assert!(tries < 200, "finish never got through");
                                tokio::time::sleep(Duration::from_millis(1)).await;
                            }
                        }
                        Err(denial) => {
                            assert!(
                                matches!(denial, BudgetDenial::Concurrency | BudgetDenial::Storage),
                                "{denial:?}"
                            );
                            tokio::time::sleep(Duration::from_millis(1)).await;
                        }
                    }
                }
            }));
        }
        for task in tasks {
            task.await.expect("task");
        }
        let most = most.load(Ordering::SeqCst);
        assert!(most <= 4, "{most} leases were held at once");
        assert!(
            most >= 2,
            "leases never overlapped: the test proved nothing"
        );
        assert!(admitted.load(Ordering::SeqCst) > 0, "nothing was admitted");
        let row = budget.store().read(budget.id()).await.unwrap().unwrap();
        assert!(row.record.leases.is_empty(), "every lease was finished");
        assert_eq!(row.record.used, admitted.load(Ordering::SeqCst) as u64);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_pools_share_one_window() {
    with_schemas(|schemas| async move {
        let first = schemas.fresh().await;
        // A second pool on the same schema, as a second instance would have.
        let second =
            Database::new(first.config().expect("built from a configuration").clone()).unwrap();
        let config = BudgetConfig::builder()
            .max_calls(25)
            .max_concurrent(32)
            .build()
            .unwrap();
        let budgets = [first, second].map(|database| {
            Arc::new(InferenceBudget::new(
                PgBudgetStore::new(database),
                config,
                &label_key("shared"),
            ))
        });
        assert_eq!(budgets[0].id(), budgets[1].id());
        let admitted = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for k in 0..16 {
            let budget = Arc::clone(&budgets[k % 2]);
            let admitted = Arc::clone(&admitted);
            tasks.push(tokio::spawn(async move {
                // Leases are held, never finished: 25 of them fit in max_concurrent, so only the window
                // stops the loop.
                for attempt in 0.. {
                    assert!(attempt < 10_000, "the window never filled");
                    match budget.reserve(T0 + 5, 1, 1_000).await {
                        Ok(_) => {
                            admitted.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(BudgetDenial::Budget) => break,
                        Err(BudgetDenial::Storage) => tokio::task::yield_now().await,
                        Err(other) => panic!("unexpected denial {other:?}"),
                    }
                }
            }));
        }
        for task in tasks {
            task.await.expect("task");
        }
        assert_eq!(admitted.load(Ordering::SeqCst), 25);
        let row = budgets[1]
            .store()
            .read(budgets[1].id())
            .await
            .unwrap()
            .unwrap();
        assert_eq!((row.record.used, row.record.leases.len()), (25, 25));
        // The next window admits again, on either pool.
        assert!(budgets[0].reserve(T0 + 60_005, 1, 1_000).await.is_ok());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_circuit_opens_probes_once_and_closes() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let config = BudgetConfig::builder()
            .failure_threshold(3)
            .cooldown_ms(10_000)
            .build()
            .unwrap();
        let budget =
            InferenceBudget::new(PgBudgetStore::new(database), config, &label_key("circuit"));
        for k in 0..3 {
            let lease = budget
                .reserve(T0 + k, 1, 1_200)
                .await
                .expect("closed circuit");
            assert!(!lease.is_probe());
            assert_eq!(
                budget.finish(&lease, CallOutcome::Failure, T0 + 100).await,
                Ok(true)
            );
        }
        let opened = budget.store().read(budget.id()).await.unwrap().unwrap();
        assert_eq!(
            (
                opened.record.failures,
                opened.record.open_until,
                opened.record.epoch
            ),
            (3, T0 + 10_100, 1)
        );
        for now in [T0 + 101, T0 + 5_000, T0 + 10_099] {
            assert_eq!(
                budget.reserve(now, 1, 1_200).await,
                Err(BudgetDenial::CircuitOpen),
                "during the cooldown, at {}",
                now - T0
            );
        }
        // Two calls race at the end of the cooldown: exactly one becomes the probe.
        let (a, b) = tokio::join!(
            budget.reserve(T0 + 10_100, 1, 1_200),
            budget.reserve(T0 + 10_100, 1, 1_200)
        );
        let (probe, refused) = match (a, b) {
            (Ok(probe), Err(denial)) | (Err(denial), Ok(probe)) => (probe, denial),
            other => panic!("expected one probe and one refusal, got {other:?}"),
        };
        assert!(probe.is_probe());
        assert_eq!(refused, BudgetDenial::Concurrency);
        assert_eq!(
            budget.reserve(T0 + 10_150, 1, 1_200).await,
            Err(BudgetDenial::Concurrency),
            "still one probe at a time"
        );
        assert_eq!(
            budget
                .finish(&probe, CallOutcome::Success, T0 + 10_200)
                .await,
            Ok(true)
        );
        let closed = budget.store().read(budget.id()).await.unwrap().unwrap();
        assert_eq!(
            (
                closed.record.failures,
                closed.record.open_until,
                closed.record.epoch
            ),
            (0, 0, 2)
        );
        let (a, b) = tokio::join!(
            budget.reserve(T0 + 10_201, 1, 1_200),
            budget.reserve(T0 + 10_201, 1, 1_200)
        );
        assert!(
            !a.expect("closed").is_probe() && !b.expect("closed").is_probe(),
            "a closed circuit admits ordinary calls side by side"
        );
    })
    .await;
}
