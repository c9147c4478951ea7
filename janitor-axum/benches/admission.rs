//! criterion benchmark of the admission layer's own cost: one request through a router with a trivial route,
//! with the layer and without it, body read to the end (the slot is held until then).
//!
//! Run with: `cargo bench -p janitor-axum --bench admission`
#![allow(missing_docs)] // criterion_group! generates an undocumented function

use std::hint::black_box;

use axum::body::Body;
use axum::routing::get;
use axum::Router;
use criterion::{criterion_group, criterion_main, Criterion};
use http::Request;
use http_body_util::BodyExt;
use janitor_axum::admission::{Admission, AdmissionConfig};
use tower::ServiceExt;

fn request() -> Request<Body> {
    Request::get("/route").body(Body::empty()).unwrap()
}

async fn answer(router: &Router) -> usize {
    let response = router.clone().oneshot(request()).await.unwrap();
    assert!(response.status().is_success());
    response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .len()
}

fn admission_layer(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let plain = Router::new().route("/route", get(|| async { "ok" }));
    let admission = Admission::new(
        AdmissionConfig::builder()
            .max_in_flight_requests(1024)
            .build()
            .unwrap(),
    );
    let admitted = Router::new()
        .route("/route", get(|| async { "ok" }))
        .route_layer(admission.layer());

    let mut group = c.benchmark_group("trivial route");
    group.bench_function("bare axum", |bench| {
        bench.iter(|| black_box(runtime.block_on(answer(&plain))))
    });
    group.bench_function("with the admission layer", |bench| {
        bench.iter(|| black_box(runtime.block_on(answer(&admitted))))
    });
    group.finish();
}

criterion_group!(benches, admission_layer);
criterion_main!(benches);
