//! One server process: `janitor-capacity serve --port P [--url URL] [--schema S] [--max-in-flight N] [--pool N]
//! [--threads N] [--watch-stdin 1] [--driver pooled|hyper] [--visitors N --cookies FILE]`. It serves the quick-start stack plus `GET /ready` and the
//! trivial routes `/plain` and `/admitted`, and answers `GET /stats` on its control port (`P + 100`): its counters, and how long its app took to answer identify
//! requests ([`answer_times`](super::answer_times)).
//!
//! A run passes `--url` and never `--visitors`: it migrated and seeded first. Started by hand for an HTTP load
//! tool (see docs/benchmarks/http.md), `--visitors N --cookies FILE` seeds browsers `1..=N` of the test
//! population (migrating the schema first, keeping them when all are there) and writes their cookie file, one
//! `visitor-id<TAB>payload-json` line each, as a run does; without `--url` every store is in memory.

use std::io;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{Query, Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router};
use janitor_axum::admission::{Admission, AdmissionConfig, MAX_WAITING_REQUESTS, SLOT_WAIT_MS};
use janitor_axum::config::{CookieConfig, Environment};
use janitor_axum::postgres::PgStores;
use janitor_axum::serve::{
    serve_listener, BufferPool, Driver, ServeConfig, KEEP_ALIVE_TIMEOUT_MS, MAX_CONNECTIONS,
};
use janitor_axum::{Janitor, JanitorConfig, MemoryStores};
use janitor_sql::{Database, DatabaseConfig};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

use super::answer_times::AnswerClock;
use super::{ServerStats, CONTROL_OFFSET, ENDPOINT, SECRET};
use crate::capacity::report::rss_bytes;
use crate::capacity::seed;
use crate::{number, pairs};

/// The listen backlog asked for; the kernel caps it at `net.core.somaxconn`. A ramp connects thousands of
/// sockets at once and a short backlog would turn that into retries.
const BACKLOG: u32 = 65_535;

#[derive(Default)]
struct Counters {
    open: AtomicU64,
    peak_open: AtomicU64,
    accepted: AtomicU64,
    ready: AtomicU64,
    completed: AtomicU64,
    overloads: AtomicU64,
    failures: AtomicU64,
    completed_times: AnswerClock,
    overload_times: AnswerClock,
}

impl Counters {
    fn snapshot(&self, port: u16) -> ServerStats {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        ServerStats {
            pid: std::process::id(),
            port,
            open: load(&self.open),
            peak_open: load(&self.peak_open),
            accepted: load(&self.accepted),
            ready: load(&self.ready),
            completed: load(&self.completed),
            overloads: load(&self.overloads),
            failures: load(&self.failures),
            rss_bytes: rss_bytes(std::process::id()).unwrap_or(0),
            completed_times: self.completed_times.reading(),
            overload_times: self.overload_times.reading(),
        }
    }
}

struct Settings {
    port: u16,
    /// The database; without one every store is in memory.
    url: Option<String>,
    schema: String,
    max_in_flight: usize,
    /// Requests that may wait for a slot and how long (ms); the library's default when not given.
    slot_wait: (Option<usize>, Option<u64>),
    pool: usize,
    /// The runtime's threads ([`super::runtime`]).
    threads: usize,
    watch_stdin: bool,
    /// Serve with `janitor_axum::serve` on this driver; `axum::serve` when none is named.
    driver: Option<Driver>,
    /// Known visitors seeded before serving, and the cookie file written for them.
    seed: Option<(u64, PathBuf)>,
}

fn settings(args: Vec<String>) -> Result<Settings, String> {
    let mut s = Settings {
        port: 0,
        url: None,
        schema: super::super::SCHEMA.to_owned(),
        max_in_flight: 8,
        slot_wait: (None, None),
        pool: 2,
        threads: 0,
        watch_stdin: false,
        driver: None,
        seed: None,
    };
    let (mut visitors, mut cookies) = (None, None);
    for (name, value) in pairs(args)? {
        match name.as_str() {
            "port" => s.port = number(&name, &value, 1, 65_535 - u64::from(CONTROL_OFFSET))? as u16,
            "url" => s.url = Some(value),
            "schema" => s.schema = value,
            "max-in-flight" => s.max_in_flight = number(&name, &value, 1, 1_024)? as usize,
            "pool" => s.pool = number(&name, &value, 1, 64)? as usize,
            "threads" => s.threads = number(&name, &value, 0, super::MAX_THREADS as u64)? as usize,
            "max-waiting" => {
                let most = *MAX_WAITING_REQUESTS.range().end() as u64;
                s.slot_wait.0 = Some(number(&name, &value, 0, most)? as usize);
            }
            "slot-wait-ms" => {
                s.slot_wait.1 = Some(number(&name, &value, 0, *SLOT_WAIT_MS.range().end())?);
            }
            "watch-stdin" => s.watch_stdin = number(&name, &value, 0, 1)? == 1,
            "driver" => {
                s.driver = Some(match value.as_str() {
                    "pooled" => Driver::Pooled,
                    "hyper" => Driver::Hyper,
                    _ => return Err(format!("--driver {value}: pooled or hyper")),
                })
            }
            "visitors" => visitors = Some(number(&name, &value, 1, 100_000)?),
            "cookies" => cookies = Some(PathBuf::from(value)),
            other => return Err(format!("unknown option --{other}")),
        }
    }
    if s.port == 0 {
        return Err("--port is required".to_owned());
    }
    s.seed = match (visitors, cookies) {
        (Some(visitors), Some(cookies)) => Some((visitors, cookies)),
        (None, None) => None,
        _ => return Err("--visitors and --cookies go together".to_owned()),
    };
    Ok(s)
}

/// Entry point of `janitor-capacity serve …`.
pub fn main(args: Vec<String>) -> Result<(), String> {
    let settings = settings(args)?;
    super::runtime(settings.threads)
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?
        .block_on(serve(settings))
}

async fn serve(s: Settings) -> Result<(), String> {
    let config = janitor_config(s.max_in_flight, s.slot_wait)?;
    let Some(url) = &s.url else {
        let janitor = Janitor::new(config, MemoryStores::new());
        if let Some((visitors, _)) = &s.seed {
            seed::record_visitors(janitor.engine().store(), *visitors).await?;
        }
        return serve_with(janitor, s).await;
    };
    let database = Database::new(
        DatabaseConfig::builder(url)
            .schema(&s.schema)
            .max_connections(s.pool)
            .build()
            .map_err(|e| format!("database settings: {e}"))?,
    )
    .map_err(|e| format!("database pool: {e}"))?;
    if let Some((visitors, _)) = &s.seed {
        // Seeding by hand has no run that migrated first; known visitors already there are kept.
        database
            .migrate()
            .await
            .map_err(|e| format!("migrating schema {}: {e}", s.schema))?;
        seed::known_visitors(&database, *visitors, true).await?;
    }
    serve_with(Janitor::new(config, PgStores::new(database)), s).await
}

fn janitor_config(
    max_in_flight: usize,
    (waiting, wait_ms): (Option<usize>, Option<u64>),
) -> Result<JanitorConfig, String> {
    let mut admission = AdmissionConfig::builder().max_in_flight_requests(max_in_flight);
    if let Some(waiting) = waiting {
        admission = admission.max_waiting_requests(waiting);
    }
    if let Some(ms) = wait_ms {
        admission = admission.slot_wait_ms(ms);
    }
    JanitorConfig::builder()
        .secret(SECRET)
        .environment(Environment::Development)
        .cookie(
            CookieConfig::builder()
                .secure(false)
                .build()
                .map_err(|e| format!("cookie settings: {e}"))?,
        )
        .admission(
            admission
                .build()
                .map_err(|e| format!("admission settings: {e}"))?,
        )
        .build()
        .map_err(|e| format!("janitor settings: {e}"))
}

async fn serve_with(janitor: Janitor, s: Settings) -> Result<(), String> {
    // The trivial routes measure the admission layer's own cost, so its limit is never reached.
    let trivial = Admission::new(
        AdmissionConfig::builder()
            .max_in_flight_requests(1_024)
            .build()
            .map_err(|e| format!("admission settings: {e}"))?,
    );
    let counters = Arc::new(Counters::default());
    let app = Router::new()
        .route("/ready", get(|| async { "ready" }))
        .route("/plain", get(|| async { "ok" }))
        .merge(
            Router::new()
                .route("/admitted", get(|| async { "ok" }))
                .layer(trivial.layer()),
        )
        .merge(janitor.router())
        .layer(middleware::from_fn_with_state(counters.clone(), count));

    let listener = listen(s.port)?;
    let control = TcpListener::bind(("127.0.0.1", s.port + CONTROL_OFFSET))
        .await
        .map_err(|e| format!("control {}", refused(s.port + CONTROL_OFFSET, &e)))?;
    let control_app = Router::new()
        .route("/stats", get(stats))
        .with_state((counters.clone(), s.port));
    tokio::spawn(async move { axum::serve(control, control_app).await });
    if s.watch_stdin {
        super::exit_with_parent();
    }
    if let Some((visitors, cookies)) = &s.seed {
        // Only a server started by hand seeds: a run's processes stay as quiet as before.
        seed::write_cookies(cookies, *visitors)?;
        println!(
            "serving {visitors} known visitors on http://127.0.0.1:{} (stats on port {}); cookies in {}",
            s.port,
            s.port + CONTROL_OFFSET,
            cookies.display()
        );
    }
    let listener = Counting { listener, counters };
    let Some(driver) = s.driver else {
        return axum::serve(listener, app)
            .await
            .map_err(|e| format!("serving: {e}"));
    };
    // Every socket of a run stays open from its ramp step to the end: no idle limit may close one, and one
    // process holds some 17,000 of them.
    let config = ServeConfig::builder()
        .driver(driver)
        .keep_alive_timeout_ms(KEEP_ALIVE_TIMEOUT_MS.range().end().to_owned())
        .max_connections(MAX_CONNECTIONS.range().end().to_owned())
        .build()
        .map_err(|e| format!("serve settings: {e}"))?;
    let listener = axum::serve::ListenerExt::tap_io(listener, |counted: &mut Counted| {
        let _ = counted.stream.set_nodelay(true);
    });
    let pool = Arc::new(BufferPool::default());
    serve_listener(listener, app, config, pool, std::future::pending())
        .await
        .map_err(|e| format!("serving: {e}"))
}

fn listen(port: u16) -> Result<TcpListener, String> {
    let taken = |e: io::Error| refused(port, &e);
    let socket = TcpSocket::new_v4().map_err(taken)?;
    socket.set_reuseaddr(true).map_err(taken)?;
    socket.bind(([127, 0, 0, 1], port).into()).map_err(taken)?;
    socket.listen(BACKLOG).map_err(taken)
}

/// A port that could not be had, with who holds it when /proc shows that.
pub(crate) fn refused(port: u16, error: &io::Error) -> String {
    match janitor_test_support::ports::holder(port) {
        Some(holder) => format!("port {port} on 127.0.0.1: {error}; held by {holder}"),
        None => format!("port {port} on 127.0.0.1: {error}"),
    }
}

#[derive(serde::Deserialize)]
struct StatsQuery {
    #[serde(default)]
    reset_peak: u8,
}

async fn stats(
    State((counters, port)): State<(Arc<Counters>, u16)>,
    Query(query): Query<StatsQuery>,
) -> Json<ServerStats> {
    let snapshot = counters.snapshot(port);
    if query.reset_peak == 1 {
        counters
            .peak_open
            .store(counters.open.load(Ordering::Relaxed), Ordering::Relaxed);
    }
    Json(snapshot)
}

/// The routes the server process counts.
enum Route {
    Ready,
    Identify,
    Other,
}

async fn count(State(counters): State<Arc<Counters>>, request: Request, next: Next) -> Response {
    // Sorted before the request moves on, so counting costs no copy of its path.
    let route = match request.uri().path() {
        "/ready" => Route::Ready,
        ENDPOINT => Route::Identify,
        _ => Route::Other,
    };
    // Only identify answers are timed: the trivial routes measure the admission layer's own cost.
    let received = matches!(route, Route::Identify).then(Instant::now);
    let response = next.run(request).await;
    let (counter, clock) = match (route, response.status().as_u16()) {
        (Route::Ready, _) => (&counters.ready, None),
        (Route::Identify, 200) => (&counters.completed, Some(&counters.completed_times)),
        (Route::Identify, 503) => (&counters.overloads, Some(&counters.overload_times)),
        (Route::Identify, _) => (&counters.failures, None),
        (Route::Other, _) => return response,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    if let (Some(clock), Some(received)) = (clock, received) {
        clock.record(received.elapsed());
    }
    response
}

/// The server's listener, counting the connections it hands out and those still open.
struct Counting {
    listener: TcpListener,
    counters: Arc<Counters>,
}

impl axum::serve::Listener for Counting {
    type Io = Counted;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Counted, std::net::SocketAddr) {
        let (stream, addr) = axum::serve::Listener::accept(&mut self.listener).await;
        let c = &self.counters;
        c.accepted.fetch_add(1, Ordering::Relaxed);
        let open = c.open.fetch_add(1, Ordering::Relaxed) + 1;
        c.peak_open.fetch_max(open, Ordering::Relaxed);
        (
            Counted {
                stream,
                counters: self.counters.clone(),
            },
            addr,
        )
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }
}

/// An accepted connection; dropping it (the server closed or lost it) counts it closed.
struct Counted {
    stream: TcpStream,
    counters: Arc<Counters>,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.counters.open.fetch_sub(1, Ordering::Relaxed);
    }
}

impl AsyncRead for Counted {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Counted {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Settings, String> {
        settings(text.split_whitespace().map(str::to_owned).collect())
    }

    #[test]
    fn a_run_names_its_database_and_a_hand_run_may_seed_in_memory() {
        let run = parsed("--port 30500 --url postgres://x --pool 4").unwrap();
        assert_eq!((run.url.as_deref(), run.pool), (Some("postgres://x"), 4));
        assert!(run.seed.is_none());
        assert_eq!(run.driver, None);
        let pooled = parsed("--port 30500 --driver pooled").unwrap();
        assert_eq!(pooled.driver, Some(Driver::Pooled));
        assert_eq!(
            parsed("--port 1 --driver hyper").unwrap().driver,
            Some(Driver::Hyper)
        );
        let by_hand = parsed("--port 3000 --visitors 1000 --cookies /tmp/c.tsv").unwrap();
        assert!(by_hand.url.is_none());
        assert_eq!(by_hand.seed, Some((1_000, PathBuf::from("/tmp/c.tsv"))));
        for bad in [
            "--url postgres://x",
            "--port 3000 --visitors 10",
            "--port 3000 --cookies /tmp/c.tsv",
            "--port 3000 --visitors 0 --cookies /tmp/c.tsv",
            "--port 65500",
            "--port 3000 --driver h2",
        ] {
            assert!(parsed(bad).is_err(), "{bad}");
        }
    }
}
