//! What only the memory visitor store promises (its suite runs in `store_suites.rs`).

use janitor_core::testing::visitor;
use janitor_core::testing::visitor_store::observation;
use janitor_core::{MemoryVisitorStore, Retention, VisitorStore};

#[test]
fn memory_store_is_safe_across_threads() {
    let store = MemoryVisitorStore::new(Retention::new(90, 3).unwrap());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let handles: Vec<_> = (1..=8u64)
        .map(|n| {
            let store = store.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    store.create_visitor(&visitor(n), 0).await.unwrap();
                    for k in 0..50 {
                        store
                            .save_observation(&visitor(n), &observation(&k.to_string()), k)
                            .await
                            .unwrap();
                    }
                });
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // Bounded by retention: 8 visitors × 3 kept.
    assert_eq!(store.visitor_count(), 8);
    assert_eq!(store.observation_count(), 24);
    let history = runtime
        .block_on(store.recent_observations(&visitor(3), 10, 100))
        .unwrap();
    assert_eq!(history.len(), 3);
}

#[test]
fn memory_store_stays_bounded_without_cleanup() {
    use janitor_core::config::DAY_MS;
    // One-day retention, 100 new visitors a day for 30 days, and no maintenance call.
    let store = MemoryVisitorStore::new(Retention::new(1, 10).unwrap());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        for day in 0..30u64 {
            for n in 0..100u64 {
                let (id, at) = (visitor(day * 100 + n + 1), (day as i64) * DAY_MS + n as i64);
                store.create_visitor(&id, at).await.unwrap();
                store
                    .save_observation(&id, &observation("x"), at)
                    .await
                    .unwrap();
            }
        }
    });
    // Writes retire expired rows and the visitors they empty: about two days' worth remain, not thirty.
    assert!(
        store.observation_count() <= 300,
        "{} observations",
        store.observation_count()
    );
    assert!(
        store.visitor_count() <= 300,
        "{} visitors",
        store.visitor_count()
    );
}
