//! What the examples share: the configuration from the environment (development mode unless told
//! otherwise), the stores `DATABASE_URL` chooses, background maintenance, `/metrics`, logs, and a server that
//! stops cleanly on Ctrl-C or SIGTERM.
//!
//! - `JANITOR_ADDR`: where to listen (default `127.0.0.1:3000`).
//! - `JANITOR_METRICS_ADDR`: where to serve `/metrics` alone, off the public listener (`127.0.0.1:9090`, say,
//!   reachable from this machine only); unset, `/metrics` is served beside the site's routes, and anyone who
//!   can reach the site can read it.
//! - `DATABASE_URL`: use PostgreSQL (migrations are applied at start) instead of the in-memory store, with the
//!   other `JANITOR_SCHEMA` and `JANITOR_DATABASE_*` variables of `janitor_sql::DatabaseConfig::from_env`
//!   (`JANITOR_DATABASE_POOL_MODE=transaction` behind PgBouncer).
//! - `JANITOR_JEV_ENDPOINT` with `JANITOR_JEV_API_KEY` (and `_MODEL`, `_TIMEOUT_MS`, `_ROOT_CERTIFICATES`): a
//!   Jev provider for risk, behind the shared inference budget (`JANITOR_JEV_BUDGET_*`; `JevConfig::from_env`).
//! - Every `JANITOR_*` option of `JanitorSettings` (`JANITOR_SECRET`, `JANITOR_MAX_IN_FLIGHT`,
//!   `JANITOR_ALLOWED_ORIGINS`, ...). Without `JANITOR_SECRET` a random development secret is made for this
//!   run: quota and evidence labels then start again at every restart, and the check that instances on one
//!   database share their secret is skipped.
//! - `JANITOR_HEADER_READ_TIMEOUT_MS`, `JANITOR_KEEP_ALIVE_TIMEOUT_MS`, `JANITOR_IDLE_AT_CAPACITY_MS`,
//!   `JANITOR_MAX_HEADER_BYTES`, `JANITOR_MAX_CONNECTIONS`: the connection limits of
//!   `janitor_axum::serve::ServeConfig`.
//! - `RUST_LOG`: the log filter (default `info,tokio_postgres=info`; `tokio_postgres` logs statement
//!   parameters at debug level: visitor ids, user agents, signals).
//!
//! Unless `JANITOR_ENVIRONMENT=production` the examples run in development mode, whether
//! `JANITOR_ENVIRONMENT=development` says so or the variable is unset: the cookie is not `Secure` (so the
//! endpoint answers loopback hosts only) and the endpoint shows the scores, unless `JANITOR_COOKIE_SECURE` or
//! `JANITOR_EXPOSE_CLIENT_SCORES` say otherwise, and a secret is made up when none is given.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::process::ExitCode;

use axum::routing::get;
use axum::Router;
use janitor_axum::config::{EnvSource, Environment, JanitorConfigError};
use janitor_axum::handle::Stores;
use janitor_axum::jev::JevConfig;
use janitor_axum::maintenance::MaintenanceSchedule;
use janitor_axum::protection::budget::BudgetConfig;
use janitor_axum::serve::{self, ServeConfig};
use janitor_axum::{Janitor, JanitorConfig, JanitorSettings, MemoryStores, SetupError};
use metrics_exporter_prometheus::PrometheusBuilder;

/// The routes an example adds to the handle's own, on whichever stores the environment chose.
pub trait Site {
    /// Its name, for the line printed at start.
    const NAME: &'static str;
    /// Its routes.
    fn routes(&self, janitor: &Janitor) -> Router;
}

/// Serves `site` as the environment says, until Ctrl-C or SIGTERM; a configuration or start-up error is
/// printed in words and fails the process.
pub async fn main(site: impl Site) -> ExitCode {
    match run(site).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Where the examples listen: the site, and `/metrics` when it has a listener of its own.
#[derive(Debug, Clone, Copy)]
struct Addresses {
    public: SocketAddr,
    metrics: Option<SocketAddr>,
}

/// The address in `variable`, or `default`.
fn address(variable: &str, default: Option<&str>) -> Result<Option<SocketAddr>, SetupError> {
    let Some(text) = std::env::var(variable).ok().or(default.map(str::to_owned)) else {
        return Ok(None);
    };
    let address = text.parse();
    address
        .map(Some)
        .map_err(|e| SetupError::other(format!("{variable} must be host:port: {e}")))
}

async fn run(site: impl Site) -> Result<(), SetupError> {
    let addr = Addresses {
        public: address("JANITOR_ADDR", Some("127.0.0.1:3000"))?.expect("a default"),
        metrics: address("JANITOR_METRICS_ADDR", None)?,
    };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,tokio_postgres=info")),
        )
        .init();
    let setup = setup(&EnvSource::process())?;
    match std::env::var("DATABASE_URL") {
        Ok(_) => serve_postgres(setup, site, addr).await,
        Err(_) => {
            println!("in-memory store (set DATABASE_URL to use PostgreSQL)");
            let development_secret = setup.development_secret;
            let janitor = setup.handle(MemoryStores::new())?;
            serve(janitor, development_secret, site, addr).await
        }
    }
}

/// The configuration, whether its secret was made up for this run, and the Jev provider, if any.
struct Setup {
    config: JanitorConfig,
    development_secret: bool,
    jev: Option<(JevConfig, BudgetConfig)>,
}

impl Setup {
    /// The handle on `stores`: with the provider of `JANITOR_JEV_*` behind its shared inference budget, or
    /// with none.
    fn handle(self, stores: impl Stores) -> Result<Janitor, SetupError> {
        let builder = Janitor::builder(self.config, stores);
        Ok(match self.jev {
            Some((jev, budget)) => builder.jev(jev, budget)?.build(),
            None => builder.build(),
        })
    }
}

/// The `JANITOR_*` variables the examples read themselves, which the library's check of misspelled names must
/// not report.
const EXAMPLE_VARIABLES: &[&str] = &[
    "JANITOR_ADDR",
    "JANITOR_METRICS_ADDR",
    "JANITOR_DEMO_PASSWORD",
];

/// The library's settings from `env`, in development mode unless told otherwise (see the module's
/// documentation).
pub fn settings(env: &EnvSource) -> Result<JanitorSettings, JanitorConfigError> {
    let mut settings = JanitorSettings::from_env_with_own(env, EXAMPLE_VARIABLES)?;
    // Development means the same whether the variable says it or is unset: a quick look in a browser on this
    // machine, over plain HTTP, with the scores on the page.
    let environment = *settings.environment.get_or_insert(Environment::Development);
    if environment == Environment::Development {
        settings.cookie.secure.get_or_insert(false);
        settings.endpoint.expose_client_scores.get_or_insert(true);
    }
    Ok(settings)
}

/// The configuration from `env`, in development mode unless told otherwise.
fn setup(env: &EnvSource) -> Result<Setup, SetupError> {
    let mut settings = settings(env)?;
    // Refused in production: instances sharing a database must share the secret.
    let development_secret = settings.fill_development_secret()?;
    if development_secret {
        eprintln!(
            "warning: JANITOR_SECRET is not set; using a random development secret for this run"
        );
    }
    Ok(Setup {
        config: settings.build()?,
        development_secret,
        jev: JevConfig::from_env()?,
    })
}

#[cfg(feature = "postgres")]
async fn serve_postgres(setup: Setup, site: impl Site, addr: Addresses) -> Result<(), SetupError> {
    use janitor_axum::postgres::{Database, DatabaseConfig, LookupReplica, PgStores};
    let database = Database::new(DatabaseConfig::from_env()?)?;
    let report = database.migrate().await?;
    println!("PostgreSQL: migrations applied now {:?}", report.applied);
    let mut stores = PgStores::new(database);
    if let Some(replica) = LookupReplica::from_env(&EnvSource::process())? {
        println!("PostgreSQL: the cookieless lookup reads the replica while it keeps up");
        stores = stores.lookup_replica(replica)?;
    }
    let development_secret = setup.development_secret;
    let janitor = setup.handle(stores)?;
    serve(janitor, development_secret, site, addr).await
}

#[cfg(not(feature = "postgres"))]
async fn serve_postgres(_: Setup, _: impl Site, _: Addresses) -> Result<(), SetupError> {
    Err(SetupError::other(
        "DATABASE_URL is set, but this build has no PostgreSQL stores (enable the `postgres` feature)",
    ))
}

async fn serve<W: Site>(
    janitor: Janitor,
    development_secret: bool,
    site: W,
    addr: Addresses,
) -> Result<(), SetupError> {
    // Instances sharing a database must share the secret: refuse to start otherwise. A secret made up for
    // this run is new every time, so it is not held to the one recorded by an earlier run.
    if !development_secret {
        janitor.check_key().await?;
    }
    let _maintenance = janitor.spawn_maintenance(MaintenanceSchedule::default());
    let recorder = PrometheusBuilder::new()
        .install_recorder()
        .map_err(SetupError::other)?;
    // The recorder's upkeep: without it, histogram samples pile up until a scrape (about 50 bytes a request).
    let upkeep = recorder.clone();
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            upkeep.run_upkeep();
        }
    });
    let metrics = get(move || async move { recorder.render() });
    let app = site.routes(&janitor).merge(janitor.router());
    let limits = ServeConfig::from_env(&EnvSource::process())?;
    let listener = tokio::net::TcpListener::bind(addr.public).await?;
    let local = listener.local_addr()?;
    println!("{} on http://{local}/", W::NAME);
    tracing::info!(%local, ?limits, "serving");
    // Bounded heads, bodies (408 past JANITOR_BODY_READ_TIMEOUT_MS, on every route), idle connections and
    // connection count; the peer address on every request lets trusted proxies (JANITOR_TRUSTED_PROXIES) be
    // told apart from everyone else. SIGTERM or Ctrl-C stops it after the
    // requests in flight are answered.
    let Some(metrics_addr) = addr.metrics else {
        let app = app.route("/metrics", metrics);
        serve::serve(listener, app, limits, serve::shutdown_signal()).await?;
        println!("stopped: the requests in flight were answered");
        return Ok(());
    };
    // A listener of its own, which a proxy passing the site's routes never reaches.
    let internal = tokio::net::TcpListener::bind(metrics_addr).await?;
    println!("metrics on http://{}/metrics", internal.local_addr()?);
    let internal_app = axum::Router::new().route("/metrics", metrics);
    tokio::try_join!(
        serve::serve(listener, app, limits, serve::shutdown_signal()),
        serve::serve(internal, internal_app, limits, serve::shutdown_signal()),
    )?;
    println!("stopped: the requests in flight were answered");
    Ok(())
}
