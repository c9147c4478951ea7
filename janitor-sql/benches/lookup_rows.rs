//! criterion benchmark of the candidate lookup's per-row decoding: a stored `lookup_features` array, as the
//! server sends it, walked in place (what the lookup does) beside tokio-postgres's `Vec<Option<&str>>`
//! decoding (what it did before).
//!
//! Run with: `cargo bench -p janitor-sql --features testing --bench lookup_rows`
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use janitor_sql::testing::lookup_rows::{features_in_place, features_through_vec, text_array};

/// A desktop browser's fourteen compared features, as PostgreSQL spells them in the array.
const FEATURES: [&str; 14] = [
    "MacIntel",
    "chrome",
    "Europe/Berlin",
    r#"["en-US", "he"]"#,
    "1440",
    "900",
    "1280",
    "720",
    "8",
    "8",
    "0",
    "Google Inc. (Apple)",
    "ANGLE (Apple, ANGLE Metal Renderer: Apple M1 Pro, Unspecified Version)",
    "false",
];

fn decoding(c: &mut Criterion) {
    let elements: Vec<Option<&[u8]>> = FEATURES.iter().map(|f| Some(f.as_bytes())).collect();
    let raw = text_array(&[14], &elements);
    assert_eq!(
        features_in_place(&raw).unwrap(),
        features_through_vec(&raw).unwrap()
    );
    let mut group = c.benchmark_group("one lookup row's features");
    group.bench_function("walked in place", |bench| {
        bench.iter(|| features_in_place(black_box(&raw)).unwrap())
    });
    group.bench_function("through Vec<Option<&str>>", |bench| {
        bench.iter(|| features_through_vec(black_box(&raw)).unwrap())
    });
    group.finish();
}

criterion_group!(benches, decoding);
criterion_main!(benches);
