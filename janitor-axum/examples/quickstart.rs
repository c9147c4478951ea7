//! A small site that recognises returning browsers: a page at `/` that loads the browser client from
//! `/janitor.js`, and the endpoint at `/api/visitor`.
//!
//! Run with: `cargo run -p janitor-axum --example quickstart`, then open http://127.0.0.1:3000/.
//!
//! - `JANITOR_ADDR`: where to listen (default `127.0.0.1:3000`).
//! - `DATABASE_URL`: use PostgreSQL (migrations are applied at start) instead of the in-memory store;
//!   `JANITOR_SCHEMA` names a schema to work in (created by the migrations), else the server's `search_path`.
//! - `JANITOR_SECRET`: the identity secret (32–4096 characters). Without it a random development secret is made
//!   for this run, so ids restored by similarity do not survive a restart on PostgreSQL.
//! - `JANITOR_MAX_IN_FLIGHT`: requests measured at once (1–1024, default 64).
//!
//! The page runs in development mode: the cookie is not `Secure` (loopback only) and the page shows the scores.

use std::error::Error;
use std::net::SocketAddr;

use axum::response::Html;
use axum::routing::get;
use janitor_axum::{
    AdmissionConfig, CookieConfig, EndpointConfig, Environment, Janitor, JanitorConfig,
    MemoryStores, Stores,
};

/// The page (the browser tests serve the same file).
const PAGE: &str = include_str!("quickstart.html");

/// A random development secret (64 hex characters) for runs without `JANITOR_SECRET`.
fn development_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn serve<S: Stores>(janitor: Janitor<S>, addr: SocketAddr) -> Result<(), Box<dyn Error>> {
    let app = janitor.router().route("/", get(|| async { Html(PAGE) }));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("Janitor quick start on http://{}/", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

/// The configuration from the environment: development mode (an insecure loopback cookie, scores shown).
fn config() -> Result<JanitorConfig, Box<dyn Error>> {
    let secret = std::env::var("JANITOR_SECRET").unwrap_or_else(|_| {
        eprintln!(
            "warning: JANITOR_SECRET is not set; using a random development secret for this run"
        );
        development_secret()
    });
    let mut admission = AdmissionConfig::builder();
    if let Ok(value) = std::env::var("JANITOR_MAX_IN_FLIGHT") {
        let n: usize = value.parse().map_err(|_| {
            format!("JANITOR_MAX_IN_FLIGHT must be a whole number from 1 to 1024, got {value:?}")
        })?;
        admission = admission.max_in_flight_requests(n);
    }
    Ok(JanitorConfig::builder()
        .secret(&secret)
        .environment(Environment::Development)
        .cookie(CookieConfig::builder().secure(false).build()?)
        .endpoint(
            EndpointConfig::builder()
                .expose_client_scores(true)
                .build()?,
        )
        .admission(admission.build()?)
        .build()?)
}

#[cfg(feature = "postgres")]
async fn serve_postgres(
    config: JanitorConfig,
    url: &str,
    addr: SocketAddr,
) -> Result<(), Box<dyn Error>> {
    use janitor_sql::{Database, DatabaseConfig, PgStores};
    let mut db_config = DatabaseConfig::builder(url);
    if let Ok(schema) = std::env::var("JANITOR_SCHEMA") {
        db_config = db_config.schema(&schema);
    }
    let database = Database::new(db_config.build()?)?;
    let report = database.migrate().await?;
    println!("PostgreSQL: migrations applied now {:?}", report.applied);
    serve(Janitor::new(config, PgStores::new(database)), addr).await
}

#[cfg(not(feature = "postgres"))]
async fn serve_postgres(_: JanitorConfig, _: &str, _: SocketAddr) -> Result<(), Box<dyn Error>> {
    Err("DATABASE_URL is set, but this build has no PostgreSQL stores (enable the `postgres` feature)".into())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let addr: SocketAddr = std::env::var("JANITOR_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:3000".to_owned())
        .parse()
        .map_err(|e| format!("JANITOR_ADDR must be host:port: {e}"))?;
    let config = config()?;
    match std::env::var("DATABASE_URL") {
        Ok(url) => serve_postgres(config, &url, addr).await,
        Err(_) => {
            println!("in-memory store (set DATABASE_URL to use PostgreSQL)");
            serve(Janitor::new(config, MemoryStores::new()), addr).await
        }
    }
}
