//! A small site that recognises returning browsers: a page at `/` and the endpoint at `/api/visitor`.
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
use janitor_axum::{Backend, Environment, InMemory, Janitor, JanitorConfig, Postgres};
use janitor_sql::{Database, DatabaseConfig};

const PAGE: &str = r#"<!doctype html>
<html lang="en">
<meta charset="utf-8">
<title>Janitor quick start</title>
<style>body{font:16px system-ui,sans-serif;margin:3rem auto;max-width:40rem} code{font-size:1.1em}</style>
<h1>Janitor quick start</h1>
<p>Visitor: <code id="visitor">measuring…</code></p>
<p>Returning: <span id="returning">–</span></p>
<p>Confidence: <span id="confidence">–</span>, risk: <span id="risk">–</span></p>
<p>Reload the page: the id stays. Clear the cookie or open a private window: the id comes back by similarity.</p>
<script type="module">
const screen_ = window.screen;
const signals = {
  userAgent: navigator.userAgent.slice(0, 512),
  platform: (navigator.platform || "").slice(0, 128),
  languages: (navigator.languages || []).slice(0, 20).map((l) => l.slice(0, 64)),
  timezone: Intl.DateTimeFormat().resolvedOptions().timeZone.slice(0, 128),
  screen: {
    width: Math.min(screen_.width, 32768),
    height: Math.min(screen_.height, 32768),
    colorDepth: Math.min(screen_.colorDepth, 64),
    pixelRatio: Math.min(window.devicePixelRatio || 1, 16),
  },
  viewport: { width: Math.min(innerWidth, 32768), height: Math.min(innerHeight, 32768) },
  hardware: {
    hardwareConcurrency: Math.min(navigator.hardwareConcurrency || 0, 1024),
    ...(navigator.deviceMemory ? { deviceMemory: Math.min(navigator.deviceMemory, 1024) } : {}),
    maxTouchPoints: Math.min(navigator.maxTouchPoints || 0, 256),
  },
  automation: { webdriver: navigator.webdriver === true },
};
const response = await fetch("/api/visitor", {
  method: "POST",
  credentials: "same-origin",
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ signals }),
});
const answer = await response.json();
if (response.ok) {
  document.getElementById("visitor").textContent = answer.visitorId;
  document.getElementById("returning").textContent = String(answer.isReturning);
  if ("confidence" in answer) {
    document.getElementById("confidence").textContent = String(answer.confidence);
    document.getElementById("risk").textContent = answer.riskStatus;
  }
} else {
  document.getElementById("visitor").textContent = `${response.status}: ${answer.error}`;
}
</script>
"#;

/// A random development secret (64 hex characters) for runs without `JANITOR_SECRET`.
fn development_secret() -> String {
    let bytes: [u8; 32] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

async fn serve<B: Backend>(janitor: Janitor<B>, addr: SocketAddr) -> Result<(), Box<dyn Error>> {
    let app = janitor.router().route("/", get(|| async { Html(PAGE) }));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("Janitor quick start on http://{}/", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let addr: SocketAddr = std::env::var("JANITOR_ADDR")
        .unwrap_or_else(|_| "127.0.0.1:3000".to_owned())
        .parse()
        .map_err(|e| format!("JANITOR_ADDR must be host:port: {e}"))?;
    let secret = std::env::var("JANITOR_SECRET").unwrap_or_else(|_| {
        eprintln!(
            "warning: JANITOR_SECRET is not set; using a random development secret for this run"
        );
        development_secret()
    });
    let mut config = JanitorConfig::builder()
        .secret(&secret)
        .environment(Environment::Development)
        .cookie_secure(false)
        .expose_client_scores(true);
    if let Ok(value) = std::env::var("JANITOR_MAX_IN_FLIGHT") {
        let n: usize = value.parse().map_err(|_| {
            format!("JANITOR_MAX_IN_FLIGHT must be a whole number from 1 to 1024, got {value:?}")
        })?;
        config = config.max_in_flight_requests(n);
    }
    let config = config.build()?;
    match std::env::var("DATABASE_URL") {
        Ok(url) => {
            let mut db_config = DatabaseConfig::builder(&url);
            if let Ok(schema) = std::env::var("JANITOR_SCHEMA") {
                db_config = db_config.schema(&schema);
            }
            let database = Database::new(db_config.build()?)?;
            let report = database.migrate().await?;
            println!("PostgreSQL: migrations applied now {:?}", report.applied);
            serve(Janitor::new(config, Postgres(database)), addr).await
        }
        Err(_) => {
            println!("in-memory store (set DATABASE_URL to use PostgreSQL)");
            serve(Janitor::new(config, InMemory), addr).await
        }
    }
}
