//! The server that HTTP load tools run against: the identify endpoint over a seeded set of visitors, and a
//! trivial route with and without the admission layer.
//!
//! Run with:
//! `cargo run --release -p janitor-benchmarks --bin bench-server -- --visitors 1000`
//! then, for example,
//! `wrk -t2 -c64 -d10s -s benchmarks/wrk/identify-cookie.lua http://127.0.0.1:3000/api/visitor`.
//!
//! Options: `--port` 1–65535 (default 3000), `--visitors` 1–100,000 (default 1,000), `--max-in-flight` 1–1024
//! (default 64), `--visitors-file` (default /tmp/janitor-bench-visitors.txt: one `id<TAB>timezone` per line,
//! read by the wrk script). Uses PostgreSQL when `DATABASE_URL` is set (in the schema `janitor_bench`, emptied
//! first), the in-memory store otherwise. Routes: `POST /api/visitor`, `GET /plain`, `GET /admitted`.

use std::error::Error;

use axum::routing::get;
use axum::Router;
use janitor_axum::admission::{Admission, AdmissionConfig};
use janitor_axum::{Janitor, JanitorConfig, MemoryStores, PgStores, Stores};
use janitor_benchmarks::{number, pairs};
use janitor_core::identification::store::{VisitWrite, VisitorStore};
use janitor_core::{Observation, VisitorId, VisitorPayload};
use janitor_sql::{Database, DatabaseConfig};
use serde_json::json;

/// The device every seeded visitor has; only the timezone differs, so each cookie has its own history.
fn payload(zone: &str) -> VisitorPayload {
    let doc = json!({"signals": {
        "userAgent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.0.0 Safari/537.36",
        "platform": "Linux x86_64",
        "languages": ["en-US"],
        "timezone": zone,
        "screen": {"width": 1920, "height": 1080, "colorDepth": 24, "pixelRatio": 1},
        "hardware": {"hardwareConcurrency": 8, "deviceMemory": 8, "maxTouchPoints": 0}
    }});
    VisitorPayload::from_value(&doc).expect("valid payload")
}

async fn seed<S: Stores>(
    janitor: &Janitor<S>,
    visitors: u64,
    file: &str,
) -> Result<(), Box<dyn Error>> {
    let mut lines = String::new();
    let now = janitor_core::now_ms();
    for i in 0..visitors {
        let zone = format!("Bench/Zone{i}");
        let id = VisitorId::generate();
        let p = payload(&zone);
        let observation = Observation::normalize(&p.signals, p.behavior.as_ref());
        janitor
            .engine()
            .store()
            .record_visit(VisitWrite {
                visitor: &id,
                create: true,
                observation: Some(&observation),
                now_ms: now,
            })
            .await?;
        lines.push_str(&format!("{}\t{zone}\n", id.as_str()));
    }
    std::fs::write(file, lines)?;
    Ok(())
}

async fn serve<S: Stores>(
    janitor: Janitor<S>,
    port: u16,
    max_in_flight: usize,
) -> Result<(), Box<dyn Error>> {
    // The trivial routes measure the admission layer's own cost; its limit is high enough never to refuse.
    let admission = Admission::new(
        AdmissionConfig::builder()
            .max_in_flight_requests(1024)
            .build()?,
    );
    let app = Router::new()
        .route("/plain", get(|| async { "ok" }))
        .merge(
            Router::new()
                .route("/admitted", get(|| async { "ok" }))
                .layer(admission.layer()),
        )
        .merge(janitor.router());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!(
        "bench server on http://{} (max in flight {max_in_flight})",
        listener.local_addr()?
    );
    axum::serve(listener, app).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let (mut port, mut visitors, mut max_in_flight) = (3000, 1000, 64);
    let mut file = "/tmp/janitor-bench-visitors.txt".to_owned();
    for (name, value) in pairs(std::env::args().skip(1))? {
        match name.as_str() {
            "port" => port = number(&name, &value, 1, 65_535)?,
            "visitors" => visitors = number(&name, &value, 1, 100_000)?,
            "max-in-flight" => max_in_flight = number(&name, &value, 1, 1024)?,
            "visitors-file" => file = value,
            other => return Err(format!("unknown option --{other}").into()),
        }
    }
    let config = JanitorConfig::builder()
        .secret(&"bench-secret-".repeat(4))
        .admission(
            AdmissionConfig::builder()
                .max_in_flight_requests(max_in_flight as usize)
                .build()?,
        )
        .build()?;
    match std::env::var("DATABASE_URL") {
        Ok(url) => {
            let database = Database::new(
                DatabaseConfig::builder(&url)
                    .schema("janitor_bench")
                    .build()?,
            )?;
            database.migrate().await?;
            let client = database.pool().get().await?;
            client.batch_execute("TRUNCATE visitors CASCADE").await?;
            drop(client);
            let janitor = Janitor::new(config, PgStores::new(database));
            seed(&janitor, visitors, &file).await?;
            serve(janitor, port as u16, max_in_flight as usize).await
        }
        Err(_) => {
            let janitor = Janitor::new(config, MemoryStores::new());
            seed(&janitor, visitors, &file).await?;
            serve(janitor, port as u16, max_in_flight as usize).await
        }
    }
}
