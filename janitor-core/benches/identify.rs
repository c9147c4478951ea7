//! criterion benchmarks of the identification core.
//!
//! Run with: `cargo bench -p janitor-core --bench identify`
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::hint::black_box;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use janitor_core::identification::candidates::{
    probes_for, rank_lookup_rows, LookupRow, CANDIDATE_LIMIT, ROWS_PER_PROBE,
};
use janitor_core::identification::similarity::compare;
use janitor_core::testing::visitor;
use janitor_core::{
    Engine, EngineConfig, MemoryVisitorStore, Observation, Retention, VisitorPayload, VisitorStore,
};
use serde_json::json;

/// Visitor `tag`'s browser. Timezone and renderer together are unique below 10,000, so any other visitor
/// differs by at least a timezone (0.05 of weight) and a returning browser is restored unambiguously.
fn sample(tag: u64) -> VisitorPayload {
    let doc = json!({"signals": {
        "userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/130.0.0.0 Safari/537.36",
        "platform": "MacIntel",
        "languages": ["en-US", "he"],
        "timezone": format!("Zone/{}", tag % 400),
        "screen": {"width": 1440, "height": 900, "colorDepth": 24, "pixelRatio": 2},
        "viewport": {"width": 1280, "height": 720},
        "hardware": {"hardwareConcurrency": 2 + tag % 15, "deviceMemory": 8, "maxTouchPoints": 0},
        "graphics": {"webglVendor": "WebKit", "webglRenderer": format!("Renderer {}", tag / 400)},
        "automation": {"webdriver": false}
    }});
    VisitorPayload::from_value(&doc).expect("valid sample")
}

fn similarity_pair(c: &mut Criterion) {
    let (a, b) = (sample(1), sample(2));
    c.bench_function("normalize + similarity, one pair", |bench| {
        bench.iter(|| {
            let previous = Observation::normalize(&black_box(&a).signals, None);
            let current = Observation::normalize(&black_box(&b).signals, None);
            black_box(compare(&previous, &current))
        })
    });
}

fn compare_pair(c: &mut Criterion) {
    let previous = Observation::normalize(&sample(1).signals, None);
    let current = Observation::normalize(&sample(2).signals, None);
    c.bench_function("similarity of one normalized pair", |bench| {
        bench.iter(|| black_box(compare(black_box(&previous), black_box(&current))))
    });
}

fn ranking(c: &mut Criterion) {
    let current = Observation::normalize(&sample(0).signals, None);
    let probes = probes_for(&current);
    assert_eq!(probes.len(), 6);
    // 6 probes × 101 rows over 300 visitors, with varied observations.
    let rows: Vec<LookupRow> = (0..probes.len() * (ROWS_PER_PROBE + 1))
        .map(|i| LookupRow {
            visitor_id: visitor(i as u64 % 300),
            seen_at: i as i64,
            probe: i / (ROWS_PER_PROBE + 1),
            observation: Arc::new(Observation::normalize(&sample(i as u64).signals, None)),
        })
        .collect();
    assert_eq!(rows.len(), 606);
    c.bench_function("rank 606 lookup rows to 10 candidates", |bench| {
        bench.iter(|| {
            black_box(rank_lookup_rows(
                black_box(&rows),
                &current,
                CANDIDATE_LIMIT,
            ))
        })
    });
}

fn cookieless_identification(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let store = MemoryVisitorStore::new(Retention::default());
    let now = janitor_core::now_ms();
    runtime.block_on(async {
        for n in 0..10_000u64 {
            let id = visitor(n + 1);
            store.create_visitor(&id, now - 1000).await.expect("create");
            let observation = Observation::normalize(&sample(n).signals, None);
            store
                .save_observation(&id, &observation, now - 1000)
                .await
                .expect("save");
        }
    });
    let engine = Engine::new(store.clone(), EngineConfig::default());
    // A returning browser without its cookie: a unique match that is restored (so the store does not grow).
    let returning = sample(4242);
    let first = runtime
        .block_on(engine.identify(&returning, None))
        .expect("identify");
    assert!(first.identity.is_returning, "the sample must be restored");
    c.bench_function(
        "cookieless identification, in-memory store, 10,000 visitors",
        |bench| {
            bench.iter_batched(
                || (),
                |()| {
                    black_box(
                        runtime
                            .block_on(engine.identify(&returning, None))
                            .expect("identify"),
                    )
                },
                BatchSize::SmallInput,
            )
        },
    );
}

/// The cookie path through an engine that knows its store's type, and through the one a handle holds (the
/// family's type erased, every store call's future boxed), on the same visitors, side by side in one run.
fn cookie_path_known_and_erased(c: &mut Criterion) {
    use janitor_core::stores::erased::ErasedEvaluator;
    use janitor_core::{ErasedStores, MemoryStores, Stores};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let stores = MemoryStores::new();
    let known = Engine::new(
        stores.visitors(Retention::default()),
        EngineConfig::default(),
    );
    let erased = Engine::new(
        ErasedStores::new(stores.clone()).visitors(Retention::default()),
        EngineConfig::default(),
    )
    .with_optional_evaluator(None::<Arc<dyn ErasedEvaluator>>);
    let payload = sample(7);
    let first = runtime
        .block_on(known.identify(&payload, None))
        .expect("identify");
    let cookie = first.identity.visitor_id.clone();
    let mut group = c.benchmark_group("cookie path, in-memory store");
    group.bench_function("store type known", |bench| {
        bench.iter(|| {
            let answer = runtime.block_on(known.identify(black_box(&payload), Some(&cookie)));
            black_box(answer.expect("identify"))
        })
    });
    group.bench_function("store type erased (the handle's)", |bench| {
        bench.iter(|| {
            let answer = runtime.block_on(erased.identify(black_box(&payload), Some(&cookie)));
            black_box(answer.expect("identify"))
        })
    });
    group.finish();
}

criterion_group!(
    benches,
    similarity_pair,
    compare_pair,
    ranking,
    cookieless_identification,
    cookie_path_known_and_erased
);
criterion_main!(benches);
