//! `janitor_db_unavailable_total` counts every outcome reported as unavailable, a full outage included: a
//! refused connection, a connection that times out, a pool wait that times out, a terminated backend and a
//! statement the client times out.
//!
//! The recorder is the test thread's own and the test runs on that thread alone: the other tests of this binary
//! share its process, and a global recorder would count their events too. Every count below is this test's own.

use crate::common;

use std::collections::HashMap;
use std::net::{Ipv4Addr, TcpListener};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::{backend_pid, lock_observations, terminate, wait_until_blocked};
use janitor_core::testing::{visitor, T0};
use janitor_core::{Retention, StoreError, VisitorStore};
use janitor_sql::testing::with_schemas;
use janitor_sql::{Database, DatabaseConfig, PgVisitorStore, PoolMode};
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};

/// Counters by name; gauges and histograms are dropped.
#[derive(Default)]
struct Counters(Mutex<HashMap<String, Arc<AtomicU64>>>);

impl Counters {
    fn value(&self, name: &str) -> u64 {
        let counters = self.0.lock().unwrap();
        counters.get(name).map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

impl Recorder for &'static Counters {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        let mut counters = self.0.lock().unwrap();
        Counter::from_arc(Arc::clone(
            counters.entry(key.name().to_owned()).or_default(),
        ))
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

const UNAVAILABLE: &str = "janitor_db_unavailable_total";

/// Runs `case`, which must fail as unavailable, and checks that it counted once.
async fn counts_once<T: std::fmt::Debug>(
    counters: &Counters,
    case: &str,
    outcome: impl std::future::Future<Output = Result<T, StoreError>>,
) {
    let before = counters.value(UNAVAILABLE);
    counted_since(counters, before, case, outcome.await);
}

/// Checks that `outcome` is unavailable and that exactly one count was added since `before`. A case whose
/// failure runs in a task of its own reads `before` ahead of the event that fails it: the task may count
/// before its result is awaited.
fn counted_since<T: std::fmt::Debug>(
    counters: &Counters,
    before: u64,
    case: &str,
    outcome: Result<T, StoreError>,
) {
    match outcome {
        Err(StoreError::Unavailable(_)) => {}
        other => panic!("{case}: expected unavailable, got {other:?}"),
    }
    assert_eq!(counters.value(UNAVAILABLE) - before, 1, "{case}");
}

fn nowhere(port: u16) -> Database {
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let config = DatabaseConfig::builder(&url)
        .connect_timeout_ms(300)
        .build();
    Database::new(config.unwrap()).unwrap()
}

// A current-thread runtime: every task of the test (the pools' connections, the blocked read, the schemas' body)
// runs on the thread whose recorder is set.
#[tokio::test(flavor = "current_thread")]
async fn every_unavailable_outcome_is_counted() {
    let counters: &'static Counters = Box::leak(Box::default());
    let _local = metrics::set_default_local_recorder(&counters);

    // The whole outage: nothing listens, then something listens and never answers.
    let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let down = PgVisitorStore::new(nowhere(port), Retention::default());
    counts_once(counters, "refused", down.touch_visitor(&visitor(1), T0)).await;
    let silent = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = silent.local_addr().unwrap().port();
    counts_once(counters, "connect timeout", nowhere(port).ping()).await;
    drop(silent);

    with_schemas(move |schemas| async move {
        let database = schemas
            .fresh_with(|b| b.max_connections(1).wait_timeout_ms(100))
            .await;
        let store = PgVisitorStore::new(database.clone(), Retention::default());
        let held = database.pool().get().await.unwrap();
        counts_once(
            counters,
            "pool wait timeout",
            store.touch_visitor(&visitor(1), T0),
        )
        .await;
        drop(held);

        let pid = backend_pid(&database).await;
        let lock = lock_observations(&database).await;
        let blocked = {
            let store = store.clone();
            tokio::spawn(async move { store.recent_observations(&visitor(1), 5, T0).await })
        };
        wait_until_blocked(&lock, pid).await;
        let before = counters.value(UNAVAILABLE);
        terminate(pid).await;
        counted_since(
            counters,
            before,
            "terminated backend",
            blocked.await.unwrap(),
        );
        drop(lock);

        // Transaction mode: the client keeps the statement timeout.
        let database = schemas
            .fresh_with(|b| b.pool_mode(PoolMode::Transaction).statement_timeout_ms(200))
            .await;
        let store = PgVisitorStore::new(database.clone(), Retention::default());
        let lock = lock_observations(&database).await;
        counts_once(
            counters,
            "client statement timeout",
            store.recent_observations(&visitor(1), 5, T0),
        )
        .await;
        drop(lock);
    })
    .await;
}
