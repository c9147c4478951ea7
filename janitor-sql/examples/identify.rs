//! Identifies one sample payload three times and prints the results: on the embedded in-memory store, or on
//! PostgreSQL when `DATABASE_URL` is set (in the schema `JANITOR_SCHEMA`, default `janitor_example`, created and
//! migrated on first use). The visitor is erased at the end, so runs repeat.
//!
//! Run with: `cargo run -p janitor-sql --example identify`
//! or: `DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres cargo run -p janitor-sql --example identify`

use std::error::Error;

use janitor_core::{
    Engine, EngineConfig, MemoryVisitorStore, Retention, VisitorPayload, VisitorStore,
};
use janitor_sql::{Database, DatabaseConfig, PgVisitorStore};

/// What a Windows laptop's Edge sends.
const SAMPLE: &str = r#"{"signals": {
    "userAgent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
    "platform": "Win32",
    "languages": ["de-DE", "en"],
    "timezone": "Europe/Berlin",
    "screen": {"width": 1920, "height": 1080, "colorDepth": 24, "pixelRatio": 1.25},
    "hardware": {"hardwareConcurrency": 12, "deviceMemory": 16, "maxTouchPoints": 10},
    "graphics": {"webglVendor": "Google Inc. (Intel)", "webglRenderer": "ANGLE (Intel, Intel(R) Iris(R) Xe Graphics Direct3D11)"}
}}"#;

async fn demo<S: VisitorStore>(store: S) -> Result<(), Box<dyn Error>> {
    let engine = Engine::new(store, EngineConfig::default());
    let payload = VisitorPayload::from_slice(SAMPLE.as_bytes())?;

    let first = engine.identify(&payload, None).await?;
    println!("first visit:  {}", serde_json::to_string(&first.identity)?);

    // The browser returns the id in its `__visitor` cookie.
    let id = first.identity.visitor_id;
    let second = engine.identify(&payload, Some(&id)).await?;
    println!("second visit: {}", serde_json::to_string(&second.identity)?);

    // Cookie cleared: the same device is recognised by similarity.
    let third = engine.identify(&payload, None).await?;
    println!("cookie lost:  {}", serde_json::to_string(&third.identity)?);

    // Erasure: the visitor and every observation of it.
    let erased = engine.store().delete_visitor(&id).await?;
    println!("erased:       {erased}");
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match std::env::var("DATABASE_URL") {
            Ok(url) => {
                let schema = std::env::var("JANITOR_SCHEMA")
                    .unwrap_or_else(|_| "janitor_example".to_owned());
                let database =
                    Database::new(DatabaseConfig::builder(&url).schema(&schema).build()?)?;
                let report = database.migrate().await?;
                println!(
                    "PostgreSQL, schema {schema}: migrations applied now {:?}",
                    report.applied
                );
                demo(PgVisitorStore::new(database, Retention::default())).await
            }
            Err(_) => {
                println!("in-memory store (set DATABASE_URL to use PostgreSQL)");
                demo(MemoryVisitorStore::new(Retention::default())).await
            }
        }
    })
}
