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

/// A cookieless flood cannot grow the store past its capacity: each new visitor past it evicts the one holding
/// the oldest observation, and a visitor seen again recently is kept (issue 28, defect 9).
#[tokio::test]
async fn past_its_capacity_a_new_visitor_evicts_the_one_seen_longest_ago() {
    use janitor_core::identification::store::ReturningVisit;
    const MINUTE: i64 = 60_000;
    let store = MemoryVisitorStore::new(Retention::default())
        .with_max_visitors(10)
        .unwrap();
    assert_eq!(store.max_visitors(), 10);
    for n in 1..=10u64 {
        let at = n as i64 * MINUTE;
        store.create_visitor(&visitor(n), at).await.unwrap();
        store
            .save_observation(&visitor(n), &observation(&n.to_string()), at)
            .await
            .unwrap();
    }
    assert_eq!((store.visitor_count(), store.evicted_count()), (10, 0));
    // Visitor 1 comes back with its cookie: its newest observation is refreshed, so it is no longer the oldest.
    let now = 20 * MINUTE;
    let one = observation("1");
    let visit = ReturningVisit {
        visitor: &visitor(1),
        observation: &one,
        refresh: true,
        limit: 5,
        now_ms: now,
    };
    assert!(store.returning_visit(visit).await.unwrap().recorded);
    for n in 11..=13u64 {
        store.create_visitor(&visitor(n), now + 1).await.unwrap();
        store
            .save_observation(&visitor(n), &observation(&n.to_string()), now + 1)
            .await
            .unwrap();
    }
    assert_eq!((store.visitor_count(), store.evicted_count()), (10, 3));
    assert_eq!(store.observation_count(), 10);
    for (n, kept) in [
        (1, true),
        (2, false),
        (3, false),
        (4, false),
        (5, true),
        (13, true),
    ] {
        let history = store
            .recent_observations(&visitor(n), 5, now + 2)
            .await
            .unwrap();
        assert_eq!(!history.is_empty(), kept, "visitor {n}");
    }
    // The bound is a setting like any other: refused outside 1–10,000,000.
    for refused in [0, 10_000_001] {
        assert_eq!(
            store.with_max_visitors(refused).unwrap_err().field,
            "max_visitors"
        );
    }
    for accepted in [1, 10_000_000] {
        assert!(store.with_max_visitors(accepted).is_ok());
    }
    assert_eq!(
        MemoryVisitorStore::default().max_visitors(),
        janitor_core::DEFAULT_MAX_VISITORS
    );
}
