//! The shared store behaviour suite on the in-memory store, and what only the memory store promises.

use std::sync::Arc;

use janitor_core::store::suite::{observation, run, visitor};
use janitor_core::{MemoryVisitorStore, Retention, VisitorStore};

#[tokio::test]
async fn memory_store_passes_the_store_suite() {
    run(|retention| async move { MemoryVisitorStore::new(retention) }).await;
}

#[test]
fn memory_store_is_safe_across_threads() {
    let store = Arc::new(MemoryVisitorStore::new(Retention::new(90, 3).unwrap()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let handles: Vec<_> = (1..=8u64)
        .map(|n| {
            let store = Arc::clone(&store);
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
