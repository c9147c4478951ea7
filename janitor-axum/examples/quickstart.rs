//! A small site that recognises returning browsers: a page at `/` that loads the browser client from
//! `/janitor.js`, the endpoint at `/api/visitor`, and the metrics at `/metrics` (Prometheus text format).
//!
//! Run with: `cargo run -p janitor-axum --example quickstart`, then open http://127.0.0.1:3000/. The variables
//! it reads (`DATABASE_URL`, `JANITOR_*`) are listed in `examples/common/mod.rs` and docs/deploying.md.

mod common;

use axum::response::Html;
use axum::routing::get;
use axum::Router;
use janitor_axum::Janitor;

/// The page (the browser tests serve the same file).
const PAGE: &str = include_str!("quickstart.html");

struct QuickStart;

impl common::Site for QuickStart {
    const NAME: &'static str = "Janitor quick start";

    fn routes(&self, _: &Janitor) -> Router {
        Router::new().route("/", get(|| async { Html(PAGE) }))
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    common::main(QuickStart).await
}
