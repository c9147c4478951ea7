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

/// Observations made as large as the payload allows cannot take the store past its bytes: each one that would
/// evicts the visitors holding the oldest observations, never the one it belongs to, and what is evicted or
/// expired is no longer counted (issue 38: at 50,000 visitors of ten such observations the store took 3.3 GB).
#[tokio::test]
async fn observations_past_its_bytes_evict_the_oldest_visitors() {
    const MIB: usize = 1 << 20;
    let store = MemoryVisitorStore::new(Retention::new(1, 10).unwrap())
        .with_max_bytes(MIB)
        .unwrap();
    assert_eq!(store.max_bytes(), MIB);
    // 60 visitors of ten observations of about 7.5 KiB counted would be 4.4 MiB.
    let largest = |n: u64, k: u64| {
        let mut observation = observation(&format!("{n}-{k}"));
        let fill = |len: usize| format!("{n}-{k}-{}", "x".repeat(len));
        observation.user_agent = Some(fill(500));
        observation.languages = Some((0..20).map(|_| fill(55)).collect());
        observation
    };
    let mut at = 0;
    for n in 1..=60u64 {
        store.create_visitor(&visitor(n), at).await.unwrap();
        for k in 0..10 {
            at += 1;
            store
                .save_observation(&visitor(n), &largest(n, k), at)
                .await
                .unwrap();
            assert!(store.weight() <= MIB, "{} bytes held", store.weight());
        }
    }
    let held = store.observation_count();
    assert!(
        store.evicted_count() > 0 && held < 600,
        "{held} observations held"
    );
    let newest = store
        .recent_observations(&visitor(60), 10, at)
        .await
        .unwrap();
    assert_eq!(
        newest.len(),
        10,
        "the newest visitor keeps its observations"
    );
    assert!(store
        .recent_observations(&visitor(1), 10, at)
        .await
        .unwrap()
        .is_empty());
    // Each observation counts 4 KiB and twice its text (about 1,700 bytes here).
    let each = store.weight() / held;
    assert!(each > 4_096 + 2 * 1_600, "{each} bytes per observation");
    // Past the retention, cleanup takes everything and nothing is counted.
    let later = at + 2 * 24 * 3_600_000;
    while store
        .cleanup(None, 1_000, later)
        .await
        .unwrap()
        .expired_deleted
        > 0
    {}
    assert_eq!((store.observation_count(), store.weight()), (0, 0));
    for refused in [MIB - 1, (1 << 40) + 1] {
        assert_eq!(
            store.with_max_bytes(refused).unwrap_err().field,
            "max_bytes"
        );
    }
    for accepted in [MIB, 1 << 40] {
        assert!(store.with_max_bytes(accepted).is_ok());
    }
    assert_eq!(
        MemoryVisitorStore::default().max_bytes(),
        janitor_core::DEFAULT_MAX_BYTES
    );
}
