//! The behaviour every [`BudgetStore`] must show: [`budget_store_tests!`](crate::budget_store_tests) runs each
//! case as its own test.
//!
//! The factory must return an empty store (for a database: a fresh schema). The first cases exercise the
//! compare-and-swap contract directly; the others drive an [`InferenceBudget`] over the store.

use super::{label_key, Fresh, T0};
use crate::protection::budget::{
    BudgetConfig, BudgetDenial, BudgetRecord, BudgetRow, BudgetStore, CallOutcome, InferenceBudget,
    LeaseRecord,
};

/// A row at `version` expiring at `expires_at`, with two leases (one probe) and non-zero counters.
pub fn sample_row(version: i64, expires_at: i64) -> BudgetRow {
    BudgetRow {
        version,
        expires_at,
        record: BudgetRecord {
            version,
            window_start: T0 - 5,
            used: 7,
            failures: 2,
            open_until: T0 + 30_000,
            epoch: 3,
            leases: vec![
                LeaseRecord {
                    id: "4b8e2f8a-5a52-4c1e-9d59-0a1b2c3d4e5f".into(),
                    expires_at: T0 + 6_200,
                    epoch: 3,
                    probe: false,
                    cost: 1,
                },
                LeaseRecord {
                    id: "0f9e8d7c-6b5a-4a39-8b27-161514131211".into(),
                    expires_at: T0 + 9_000,
                    epoch: 2,
                    probe: true,
                    cost: 16,
                },
            ],
        },
    }
}

/// Case: Absent rows read as none.
pub async fn absent_rows_read_as_none(fresh: impl Fresh<(), Store: BudgetStore>) {
    let store = &fresh.store(()).await;
    assert_eq!(
        store.read("sub_absent").await.expect("read"),
        None,
        "absent_rows_read_as_none"
    );
}

/// Case: Insert only when absent.
pub async fn insert_only_when_absent(fresh: impl Fresh<(), Store: BudgetStore>) {
    let store = &fresh.store(()).await;
    let first = sample_row(1, T0 + 60_000);
    assert!(
        swap(store, "sub_a", 0, &first).await,
        "insert_only_when_absent: the first insert wins"
    );
    assert_eq!(
        store.read("sub_a").await.expect("read"),
        Some(first.clone()),
        "insert_only_when_absent: the row round-trips"
    );
    let mut other = sample_row(1, T0 + 1);
    other.record.used = 99;
    assert!(
        !swap(store, "sub_a", 0, &other).await,
        "insert_only_when_absent: a second insert loses"
    );
    assert_eq!(
        store.read("sub_a").await.expect("read"),
        Some(first),
        "insert_only_when_absent: the loser changed nothing"
    );
}

/// Case: Update only at the expected version.
pub async fn update_only_at_the_expected_version(fresh: impl Fresh<(), Store: BudgetStore>) {
    let store = &fresh.store(()).await;
    assert!(
        !swap(store, "sub_u", 1, &sample_row(2, T0)).await,
        "update_only_at_the_expected_version: an absent row is not updated"
    );
    assert_eq!(store.read("sub_u").await.expect("read"), None);
    assert!(swap(store, "sub_u", 0, &sample_row(1, T0)).await);
    let second = sample_row(2, T0 + 10);
    assert!(
        swap(store, "sub_u", 1, &second).await,
        "update_only_at_the_expected_version: the current version wins"
    );
    for stale in [1, 3, 0] {
        assert!(
            !swap(store, "sub_u", stale, &sample_row(9, T0 + 20)).await,
            "update_only_at_the_expected_version: version {stale} loses"
        );
    }
    assert_eq!(
        store.read("sub_u").await.expect("read"),
        Some(second),
        "update_only_at_the_expected_version: losers changed nothing"
    );
}

/// Case: Rows are isolated.
pub async fn rows_are_isolated(fresh: impl Fresh<(), Store: BudgetStore>) {
    let store = &fresh.store(()).await;
    assert!(swap(store, "sub_x", 0, &sample_row(1, T0)).await);
    assert!(
        swap(store, "sub_y", 0, &sample_row(1, T0 + 5)).await,
        "rows_are_isolated: another id inserts"
    );
    assert!(swap(store, "sub_x", 1, &sample_row(2, T0)).await);
    assert_eq!(
        store.read("sub_y").await.expect("read").map(|r| r.version),
        Some(1),
        "rows_are_isolated: the other row is untouched"
    );
}

/// Case: Expired rows are read and replaceable.
pub async fn expired_rows_are_read_and_replaceable(fresh: impl Fresh<(), Store: BudgetStore>) {
    let store = &fresh.store(()).await;
    assert!(swap(store, "sub_e", 0, &sample_row(1, T0)).await);
    // Expiry only marks the row for cleanup: its record still says what is running.
    assert_eq!(
        store.read("sub_e").await.expect("read").map(|r| r.version),
        Some(1),
        "expired_rows_are_read_and_replaceable: read after expiry"
    );
    let next = sample_row(2, T0 + 120_000);
    assert!(
        swap(store, "sub_e", 1, &next).await,
        "expired_rows_are_read_and_replaceable: replaced by version"
    );
    assert_eq!(store.read("sub_e").await.expect("read"), Some(next));
}

/// Case: Cleanup is bounded and spares live rows.
pub async fn cleanup_is_bounded_and_spares_live_rows(fresh: impl Fresh<(), Store: BudgetStore>) {
    let store = &fresh.store(()).await;
    for n in 1..=5 {
        let row = sample_row(1, T0 + n);
        assert!(swap(store, &format!("sub_old{n}"), 0, &row).await);
    }
    assert!(swap(store, "sub_live", 0, &sample_row(1, T0 + 11)).await);
    let now = T0 + 10;
    assert_eq!(
        store.cleanup(2, now).await.expect("cleanup"),
        2,
        "cleanup_is_bounded_and_spares_live_rows: at most the batch"
    );
    for gone in ["sub_old1", "sub_old2"] {
        assert_eq!(
            store.read(gone).await.expect("read"),
            None,
            "cleanup_is_bounded_and_spares_live_rows: soonest-expired first ({gone})"
        );
    }
    assert_eq!(
        store.cleanup(0, now).await.expect("cleanup"),
        1,
        "cleanup_is_bounded_and_spares_live_rows: a batch of 0 is clamped to 1"
    );
    assert_eq!(store.cleanup(1000, now).await.expect("cleanup"), 2);
    assert_eq!(
        store.cleanup(1000, now).await.expect("cleanup"),
        0,
        "cleanup_is_bounded_and_spares_live_rows: nothing left to delete"
    );
    assert!(
        store.read("sub_live").await.expect("read").is_some(),
        "cleanup_is_bounded_and_spares_live_rows: a live row stays"
    );
    assert_eq!(
        store.cleanup(1000, T0 + 11).await.expect("cleanup"),
        1,
        "cleanup_is_bounded_and_spares_live_rows: expiring exactly now counts as expired"
    );
}

/// A compare-and-swap that must reach the store: whether it won.
async fn swap<S: BudgetStore>(
    store: &S,
    id: &str,
    expected_version: i64,
    next: &BudgetRow,
) -> bool {
    store
        .compare_and_swap(id, expected_version, next)
        .await
        .expect("cas")
}

/// The row `budget` keeps in its store, which must exist.
async fn stored_row<S: BudgetStore>(budget: &InferenceBudget<S>) -> BudgetRow {
    budget
        .store()
        .read(budget.id())
        .await
        .expect("read")
        .expect("row")
}

fn config(max_calls: u32, max_concurrent: u32, threshold: u32) -> BudgetConfig {
    BudgetConfig::builder()
        .max_calls(max_calls)
        .max_concurrent(max_concurrent)
        .failure_threshold(threshold)
        .window_ms(1_000)
        .cooldown_ms(1_000)
        .build()
        .expect("valid suite configuration")
}

/// Case: Budget counts calls per window.
pub async fn budget_counts_calls_per_window(fresh: impl Fresh<(), Store: BudgetStore>) {
    let store = fresh.store(()).await;
    let budget = InferenceBudget::new(store, config(3, 32, 3), &label_key("window"));
    for k in 0..3 {
        assert!(
            budget.reserve(T0 + k, 1, 100).await.is_ok(),
            "budget_counts_calls_per_window: call {k}"
        );
    }
    assert_eq!(
        budget.reserve(T0 + 999, 1, 100).await,
        Err(BudgetDenial::Budget),
        "budget_counts_calls_per_window: the fourth call in the window"
    );
    assert!(
        budget.reserve(T0 + 1_000, 1, 100).await.is_ok(),
        "budget_counts_calls_per_window: a new window starts when the old one has elapsed"
    );
}

/// Case: Concurrency is released by finish.
pub async fn concurrency_is_released_by_finish(fresh: impl Fresh<(), Store: BudgetStore>) {
    let store = fresh.store(()).await;
    let budget = InferenceBudget::new(store, config(100, 2, 3), &label_key("concurrency"));
    let first = budget.reserve(T0, 1, 100).await.expect("first");
    budget.reserve(T0, 1, 100).await.expect("second");
    assert_eq!(
        budget.reserve(T0, 1, 100).await,
        Err(BudgetDenial::Concurrency),
        "concurrency_is_released_by_finish: the third concurrent call"
    );
    assert_eq!(
        budget.finish(&first, CallOutcome::Success, T0 + 1).await,
        Ok(true)
    );
    assert!(
        budget.reserve(T0 + 2, 1, 100).await.is_ok(),
        "concurrency_is_released_by_finish: a finished lease frees its place"
    );
}

/// Case: Circuit opens probes and closes.
pub async fn circuit_opens_probes_and_closes(fresh: impl Fresh<(), Store: BudgetStore>) {
    let store = fresh.store(()).await;
    let budget = InferenceBudget::new(store, config(100, 4, 2), &label_key("circuit"));
    for k in 0..2 {
        let lease = budget.reserve(T0 + k, 1, 100).await.expect("closed");
        assert!(!lease.is_probe());
        assert_eq!(
            budget.finish(&lease, CallOutcome::Failure, T0 + 10).await,
            Ok(true)
        );
    }
    assert_eq!(
        budget.reserve(T0 + 1_009, 1, 100).await,
        Err(BudgetDenial::CircuitOpen),
        "circuit_opens_probes_and_closes: open during the cooldown"
    );
    let probe = budget.reserve(T0 + 1_010, 1, 100).await.expect("probe");
    assert!(
        probe.is_probe(),
        "circuit_opens_probes_and_closes: the first call after the cooldown is a probe"
    );
    assert_eq!(
        budget.reserve(T0 + 1_010, 1, 100).await,
        Err(BudgetDenial::Concurrency),
        "circuit_opens_probes_and_closes: one probe at a time"
    );
    assert_eq!(
        budget
            .finish(&probe, CallOutcome::Success, T0 + 1_011)
            .await,
        Ok(true)
    );
    let row = stored_row(&budget).await;
    assert_eq!(
        (row.record.open_until, row.record.failures, row.record.epoch),
        (0, 0, 2),
        "circuit_opens_probes_and_closes: a successful probe closes the circuit"
    );
    let a = budget.reserve(T0 + 1_012, 1, 100).await.expect("closed");
    let b = budget.reserve(T0 + 1_012, 1, 100).await.expect("closed");
    assert!(!a.is_probe() && !b.is_probe());
}

/// Case: Writes keep version and expiry.
pub async fn writes_keep_version_and_expiry(fresh: impl Fresh<(), Store: BudgetStore>) {
    let store = fresh.store(()).await;
    let config = config(100, 4, 3);
    let budget = InferenceBudget::new(store, config, &label_key("rows"));
    let lease = budget.reserve(T0, 2, 700).await.expect("admitted");
    let row = stored_row(&budget).await;
    assert_eq!(
        (row.version, row.record.version),
        (1, 1),
        "writes_keep_version_and_expiry: the first write is version 1"
    );
    assert_eq!(row.expires_at, config.row_expires_at(T0, 700));
    assert_eq!(row.expires_at, T0 + 2 * 5_700);
    assert_eq!(row.record.leases, vec![lease.record().clone()]);
    assert_eq!((row.record.used, lease.cost()), (2, 2));
    assert_eq!(lease.expires_at(), T0 + 5_700);
    budget
        .finish(&lease, CallOutcome::Success, T0 + 3)
        .await
        .expect("finish");
    let row = stored_row(&budget).await;
    assert_eq!(
        (row.version, row.record.version, row.expires_at),
        (2, 2, T0 + 3 + 2 * 5_700),
        "writes_keep_version_and_expiry: every write bumps the version and renews the expiry"
    );
    assert!(row.record.leases.is_empty());
}

/// Case: Forgotten leases finish without writing.
pub async fn forgotten_leases_finish_without_writing(fresh: impl Fresh<(), Store: BudgetStore>) {
    let store = fresh.store(()).await;
    let budget = InferenceBudget::new(store, config(100, 4, 3), &label_key("forgotten"));
    let lease = budget.reserve(T0, 1, 100).await.expect("admitted");
    let far = T0 + 3_600_000;
    assert_eq!(budget.cleanup(10, far).await, Ok(1));
    assert_eq!(
        budget.finish(&lease, CallOutcome::Failure, far).await,
        Ok(false),
        "forgotten_leases_finish_without_writing: nothing to finish"
    );
    assert_eq!(
        budget.store().read(budget.id()).await.expect("read"),
        None,
        "forgotten_leases_finish_without_writing: no row was recreated"
    );
}

/// Case: Namespaces do not share a budget.
pub async fn namespaces_do_not_share_a_budget(fresh: impl Fresh<(), Store: BudgetStore + Clone>) {
    let store = fresh.store(()).await;
    let one = InferenceBudget::new(store.clone(), config(1, 4, 3), &label_key("one"));
    let two = InferenceBudget::new(store, config(1, 4, 3), &label_key("two"));
    assert_ne!(one.id(), two.id());
    one.reserve(T0, 1, 100).await.expect("first namespace");
    assert_eq!(one.reserve(T0, 1, 100).await, Err(BudgetDenial::Budget));
    assert!(
        two.reserve(T0, 1, 100).await.is_ok(),
        "namespaces_do_not_share_a_budget"
    );
}

/// One `#[tokio::test]` per case of the [`BudgetStore`] suite ([`crate::testing`] shows the forms).
///
/// `fresh` makes an empty store from `()`.
///
/// ```ignore
/// janitor_core::budget_store_tests!(fresh: |()| async { MemoryBudgetStore::new() });
/// ```
#[macro_export]
macro_rules! budget_store_tests {
    ($($setup:tt)+) => {
        $crate::__store_suite!(
            budget_store [
            absent_rows_read_as_none,
            insert_only_when_absent,
            update_only_at_the_expected_version,
            rows_are_isolated,
            expired_rows_are_read_and_replaceable,
            cleanup_is_bounded_and_spares_live_rows,
            budget_counts_calls_per_window,
            concurrency_is_released_by_finish,
            circuit_opens_probes_and_closes,
            writes_keep_version_and_expiry,
            forgotten_leases_finish_without_writing,
            namespaces_do_not_share_a_budget,
            ]
            $($setup)+
        );
    };
}
