//! Background maintenance on both stores: expired observations and the visitors they leave empty go without
//! any request, and the task stops when dropped.

use std::time::{Duration, Instant};

use janitor_axum::handle::Stores;
use janitor_axum::maintenance::MaintenanceSchedule;
use janitor_axum::Janitor;
use janitor_core::testing::visitor;
use janitor_core::testing::visitor_store::observation;
use janitor_core::{now_ms, Retention, VisitorId, VisitorStore};

use crate::common;
use common::stores::on_both_stores;

/// Observations the stores still hold for `visitors`, expired ones included.
async fn histories<S: Stores>(stores: &S, visitors: &[VisitorId]) -> usize {
    // A long retention sees expired rows that are not deleted yet.
    let all = stores.visitors(Retention::new(365, 10).unwrap());
    let mut held = 0;
    for v in visitors {
        held += all
            .recent_observations(v, 10, now_ms())
            .await
            .unwrap()
            .len();
    }
    held
}

async fn expired_rows_go_in_the_background<S: Stores>(stores: S) {
    let config = common::config("maintenance-tests")
        .retention(1, 10)
        .build()
        .unwrap();
    let janitor = Janitor::new(config, stores.clone());
    let store = stores.visitors(Retention::new(1, 10).unwrap());
    let two_days_ago = now_ms() - 2 * 86_400_000;
    let visitors: Vec<VisitorId> = (1..=5).map(visitor).collect();
    for v in &visitors {
        store.create_visitor(v, two_days_ago).await.unwrap();
        store
            .save_observation(v, &observation("old"), two_days_ago)
            .await
            .unwrap();
    }
    assert_eq!(histories(&stores, &visitors).await, 5);
    let task = janitor.spawn_maintenance(MaintenanceSchedule::new(100, 2, 10).unwrap());
    let deadline = Instant::now() + Duration::from_secs(20);
    while histories(&stores, &visitors).await > 0 {
        assert!(
            Instant::now() < deadline,
            "maintenance did not remove the expired rows"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(task);
    // The emptied, stale visitors went with them: a new visitor of the same id can be created.
    store.create_visitor(&visitors[0], now_ms()).await.unwrap();
}

on_both_stores!(expired_rows_go_in_the_background);
