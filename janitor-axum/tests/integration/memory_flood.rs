//! A flood of cookieless identifications against the in-memory store, over a real socket: every answer is 200
//! and the store never holds more visitors than its bound (the memory per visitor is measured by
//! `janitor-core/examples/memory_per_visitor.rs`).

use crate::common;

use common::wire::{post_with_length, serve, within, Connection};
use janitor_axum::handle::Stores;
use janitor_axum::{Janitor, MemoryStores};
use janitor_core::Retention;

const BOUND: usize = 4_000;

/// A payload no other request of the flood sends.
fn payload(n: usize) -> String {
    format!(
        r#"{{"signals":{{"userAgent":"Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.{n} Safari/537.36","timezone":"Europe/Paris","screen":{{"width":{},"height":1080}}}}}}"#,
        800 + n % 3000
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cookieless_flood_stays_within_the_bound_and_a_returning_visitor_is_kept() {
    let stores = MemoryStores::new().with_max_visitors(BOUND).unwrap();
    let visitors = stores.visitors(Retention::default());
    let janitor = Janitor::new(common::config("memory-flood").build().unwrap(), stores);
    let address = serve(janitor.router()).await;

    // Eight flooding connections, 2,000 new browsers each: four times the bound.
    let mut floods = Vec::new();
    for lane in 0..8 {
        floods.push(tokio::spawn(async move {
            let mut connection = Connection::open(address).await.unwrap();
            let mut statuses = std::collections::BTreeMap::new();
            for i in 0..2_000 {
                let body = payload(lane * 2_000 + i);
                let request = post_with_length("/api/visitor", body.len(), body.as_bytes());
                let reply = within("a flood request", connection.exchange(&request))
                    .await
                    .unwrap();
                *statuses.entry(reply.head.status).or_insert(0) += 1;
            }
            statuses
        }));
    }
    let mut most = 0;
    while !floods.iter().all(|flood| flood.is_finished()) {
        most = most.max(visitors.visitor_count());
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mut statuses = std::collections::BTreeMap::new();
    for flood in floods {
        for (status, count) in flood.await.unwrap() {
            *statuses.entry(status).or_insert(0) += count;
        }
    }
    println!(
        "16,000 cookieless identifications on a bound of {BOUND}: statuses {statuses:?}, at most {most} visitors held, {} at the end, {} evicted",
        visitors.visitor_count(),
        visitors.evicted_count()
    );
    assert!(most <= BOUND, "{most} visitors held");
    assert_eq!(statuses.get(&200), Some(&16_000), "{statuses:?}");
    assert_eq!(visitors.visitor_count(), BOUND);
    assert_eq!(visitors.evicted_count(), 16_000 - BOUND as u64);
}
