//! A production entry point for serving an axum application over HTTP/1.1, with the limits `axum::serve`
//! leaves out: how long a request head may take, how large it may be, how long an idle connection is kept,
//! and how many connections are served at once (see [`ServeConfig`]).
//!
//! Without them a client sending its headers a byte a second keeps a connection (and its buffer) forever,
//! and a thousand such clients pin memory and file descriptors. Here:
//! - a head that has not arrived in full within `header_read_timeout` of its first byte closes the connection;
//! - a connection with no request for `keep_alive_timeout` (from its accept or its last answer) is closed, and
//!   so is one whose client takes no byte of an answer for as long (what it was sent stays readable);
//! - a head larger than `max_header_bytes` is answered 431 and the connection closed;
//! - past `max_connections` no connection is accepted until one closes, and connections waiting for a request
//!   longer than `idle_at_capacity` are closed meanwhile, so an idle flood cannot keep new clients out;
//! - an HTTP/1.1 request without `Host`, with more than one, or with an absolute-form target naming another
//!   host is answered 400 before the application sees it (RFC 9112 §3.2);
//! - every request carries [`ConnectInfo<SocketAddr>`](axum::extract::ConnectInfo), as the origin check of
//!   trusted proxies needs.
//!
//! Two drivers serve a connection ([`Driver`]). The pooled one (the default) holds no buffer while a connection
//! waits: it borrows one from a [`BufferPool`] when a request's first byte arrives and gives it back once the
//! answer is written, so 200,000 idle keep-alive connections cost little more than their sockets. Its heads
//! are parsed by `httparse`, hyper's own parser. The hyper driver keeps two 8 KiB buffers per connection for
//! the connection's whole life.
//!
//! A request's body is bounded in time on every route (`body_read_timeout`: 408 and the connection closed); its
//! size is the application's to bound (the identify endpoint bounds its own).
//! TLS and HTTP/2 belong to the proxy in front
//! ([docs/deploying.md](https://github.com/janitor-rust/janitor/blob/main/docs/deploying.md)).
//!
//! ```no_run
//! use axum::{routing::get, Router};
//! use janitor_axum::serve::{serve, shutdown_signal, ServeConfig};
//!
//! # async fn run() -> std::io::Result<()> {
//! let app = Router::new().route("/", get(|| async { "hello" }));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! // Stops on SIGTERM or Ctrl-C, after answering the requests in flight.
//! serve(listener, app, ServeConfig::default(), shutdown_signal()).await
//! # }
//! ```

mod config;
mod connection;
mod deadline;
mod pool;
mod pooled;
mod signal;

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::response::IntoResponse;
use axum::serve::{Listener, ListenerExt};
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tower::ServiceExt;

pub use config::{
    Driver, ServeConfig, ServeConfigBuilder, ServeConfigError, BODY_READ_TIMEOUT_MS,
    HEADER_READ_TIMEOUT_MS, IDLE_AT_CAPACITY_MS, KEEP_ALIVE_TIMEOUT_MS, MAX_CONNECTIONS,
    MAX_HEADER_BYTES,
};
use connection::{Clock, GuardedBody, Watched};
pub use pool::{BufferPool, BUFFERS_KEPT, BUFFER_BYTES};
#[doc(hidden)]
pub use pooled::parse_request_bytes;
use signal::{Signal, Signals, CAPACITY_TICK};

use crate::refusal::Refusal;

/// Serves `app` on `listener` until `shutdown` resolves, then stops accepting, lets every open connection
/// finish the request it is on, and returns once all are closed. Sockets are served with `TCP_NODELAY`.
///
/// An error is returned only when the listener itself fails; a connection's error closes that connection.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    config: ServeConfig,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()> {
    let listener = listener.tap_io(|stream| {
        let _ = stream.set_nodelay(true);
    });
    serve_listener(
        listener,
        app,
        config,
        Arc::new(BufferPool::default()),
        shutdown,
    )
    .await
}

/// Resolves when the process is asked to stop: on SIGTERM (what systemd, Kubernetes, Docker and every other
/// process manager send) or on Ctrl-C (SIGINT); where there is no SIGTERM (Windows), on Ctrl-C alone. Give it to
/// [`serve`] as its `shutdown`, so that a stop answers the requests in flight and the process exits 0, instead
/// of a request cut off and an exit status of 143:
///
/// ```no_run
/// # async fn run(app: axum::Router) -> std::io::Result<()> {
/// use janitor_axum::serve::{serve, shutdown_signal, ServeConfig};
///
/// let listener = tokio::net::TcpListener::bind("0.0.0.0:3000").await?;
/// serve(listener, app, ServeConfig::default(), shutdown_signal()).await
/// # }
/// ```
///
/// Its handlers are installed when it is first polled (`serve` polls it before it accepts a connection), and
/// from then on these signals no longer end the process by themselves. A handler the system refuses leaves
/// that signal to its default effect and waits for the other one: a stop is never taken to have been asked.
pub async fn shutdown_signal() {
    let interrupt = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                terminate.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {}
        () = terminate => {}
    }
}

/// [`serve`] on any listener giving peer addresses (one that counts its connections, say), with the pool the
/// pooled driver borrows its read buffers from (its counters show buffers lent and given back).
pub async fn serve_listener<L>(
    mut listener: L,
    app: Router,
    config: ServeConfig,
    pool: Arc<BufferPool>,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()>
where
    L: Listener<Addr = SocketAddr>,
{
    let slots = Arc::new(Semaphore::new(config.max_connections()));
    let (signal, signals) = signal::channel();
    let mut said_at_capacity = None;
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            () = &mut shutdown => break,
            slot = free_slot(&slots, &signal, &mut said_at_capacity) => slot,
        };
        // The listener retries failed accepts itself (after a pause, so the loop does not spin on them).
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        let app = app.clone();
        let signals = signals.clone();
        let pool = Arc::clone(&pool);
        tokio::spawn(async move {
            match config.driver() {
                Driver::Pooled => {
                    pooled::serve_connection(stream, peer, app, config, pool, signals).await;
                }
                Driver::Hyper => serve_connection(stream, peer, app, config, signals).await,
            }
            drop(slot);
        });
    }
    drop(listener);
    signal.send_replace(Signal::Stopping);
    // Every connection holds a slot until it closes: all slots back means all connections done.
    let all = u32::try_from(config.max_connections()).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
    Ok(())
}

/// Serves one connection over any byte stream (an in-memory pipe, say) until it closes, with `config`'s
/// driver and limits (`max_connections` aside, which is the listener's). For the differential fuzz target,
/// which feeds the same bytes to both drivers.
#[doc(hidden)]
pub async fn serve_stream<Io>(io: Io, peer: SocketAddr, app: Router, config: ServeConfig)
where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // The sender lives as long as the connection: a connection whose accept loop is gone closes.
    let (_signal, signals) = signal::channel();
    match config.driver() {
        Driver::Pooled => {
            let pool = Arc::new(BufferPool::default());
            pooled::serve_connection(io, peer, app, config, pool, signals).await;
        }
        Driver::Hyper => serve_connection(io, peer, app, config, signals).await,
    }
}

/// A free connection slot. While there is none, the connections are told that the server is at capacity, at
/// most once every [`CAPACITY_TICK`] (`said_at` keeps when it was last said), so those idle past
/// `idle_at_capacity` close and make room. Each word wakes every waiting connection: a server hovering at its
/// limit must not say it on every accept.
async fn free_slot(
    slots: &Arc<Semaphore>,
    signal: &tokio::sync::watch::Sender<Signal>,
    said_at: &mut Option<tokio::time::Instant>,
) -> OwnedSemaphorePermit {
    if let Ok(slot) = Arc::clone(slots).try_acquire_owned() {
        return slot;
    }
    loop {
        let now = tokio::time::Instant::now();
        if said_at.is_none_or(|at| now >= at + CAPACITY_TICK) {
            signal.send_replace(Signal::AtCapacity);
            *said_at = Some(now);
        }
        let next = said_at.map_or(now, |at| at + CAPACITY_TICK);
        tokio::select! {
            slot = Arc::clone(slots).acquire_owned() => {
                return slot.expect("the semaphore is never closed");
            }
            () = tokio::time::sleep_until(next) => {}
        }
    }
}

/// One connection on hyper, until it closes, a deadline of its clock passes, or a shutdown has let its
/// request end.
async fn serve_connection<Io>(
    stream: Io,
    peer: SocketAddr,
    app: Router,
    config: ServeConfig,
    mut signals: Signals,
) where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let clock = Clock::new();
    let io = TokioIo::new(Watched {
        inner: stream,
        clock: Arc::clone(&clock),
    });
    let service_clock = Arc::clone(&clock);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let guard = service_clock.busy();
        let app = app.clone();
        // Boxed, so that the connection can be polled without shutting its socket (that needs `Unpin`).
        Box::pin(async move {
            let mut request = request.map(axum::body::Body::new);
            request.extensions_mut().insert(ConnectInfo(peer));
            let response = answer(app, request, config.body_read_timeout()).await;
            Ok::<_, Infallible>(response.map(|inner| GuardedBody {
                inner,
                guard: Some(guard),
            }))
        })
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The clock below bounds the head's time; hyper bounds its size and answers 431 past it.
    builder
        .header_read_timeout(None)
        .max_header_size(config.max_header_bytes());
    let mut connection = builder.serve_connection(io, service);
    let (mut stop_seen, mut weigh_idle) = (false, false);
    let idle_past = || {
        clock
            .idle_since()
            .is_some_and(|since| since.elapsed() >= config.idle_at_capacity())
    };
    let done = loop {
        let deadline = clock.deadline(config.header_read_timeout(), config.keep_alive_timeout());
        // While a request is answered, look again after a while: its end restarts the keep-alive wait.
        let wake =
            deadline.unwrap_or_else(|| tokio::time::Instant::now() + config.header_read_timeout());
        let wake = clock
            .stalled_at(config.keep_alive_timeout())
            .map_or(wake, |stalled| wake.min(stalled));
        // Biased: a head that has arrived is read (and the clock told) before anything else is weighed.
        tokio::select! {
            biased;
            done = std::future::poll_fn(|cx| connection.poll_without_shutdown(cx)) => break done,
            // Weighed after the connection has been polled once more (see `AtCapacity` below).
            () = std::future::ready(()), if weigh_idle => {
                weigh_idle = false;
                if idle_past() {
                    return;
                }
            }
            () = tokio::time::sleep_until(wake) => {
                let stalled = clock.stalled_at(config.keep_alive_timeout());
                let timed_out = deadline.is_some()
                    && clock.deadline(config.header_read_timeout(), config.keep_alive_timeout()) == deadline;
                // A client that stopped reading (its answers unread for the keep-alive wait) is let go as a
                // finished connection is, so that what it was sent stays readable; dropping the socket with
                // its requests unread would reset the connection.
                if stalled.is_some_and(|at| timed_out || at <= tokio::time::Instant::now()) {
                    break Ok(());
                }
                if timed_out {
                    return;
                }
            }
            changed = signals.changed(), if !stop_seen => {
                match changed.map(|()| *signals.borrow()) {
                    Err(_) => stop_seen = true,
                    Ok(Signal::Stopping) => {
                        stop_seen = true;
                        Pin::new(&mut connection).graceful_shutdown();
                    }
                    // A head may have reached the socket since the runtime last looked: let it look once more
                    // and hyper read, so that a request already sent is never closed as idle.
                    Ok(Signal::AtCapacity) if idle_past() => {
                        tokio::task::yield_now().await;
                        weigh_idle = true;
                    }
                    Ok(Signal::AtCapacity | Signal::Serving) => {}
                }
            }
        }
    };
    if done.is_ok() {
        let socket = connection.into_parts().io.into_inner();
        // Boxed: its buffer exists only while a connection closes, not in every connection.
        Box::pin(linger(socket, &mut signals, config.idle_at_capacity())).await;
    }
}

/// Ends the sending side of a connection hyper is done with, then reads and drops what the client still sends,
/// as the pooled driver does: closing while the client sends would reset the connection and throw away the
/// answers it has not read yet.
async fn linger<Io>(mut socket: Io, signals: &mut Signals, idle_at_capacity: std::time::Duration)
where
    Io: AsyncRead + AsyncWrite + Unpin,
{
    let _ = socket.shutdown().await;
    let mut sink = [0u8; 1024];
    let read_some = |cx: &mut std::task::Context<'_>| {
        let mut into = tokio::io::ReadBuf::new(&mut sink);
        let read = std::task::ready!(Pin::new(&mut socket).poll_read(cx, &mut into));
        std::task::Poll::Ready(read.is_ok() && !into.filled().is_empty())
    };
    signal::linger(read_some, signals, idle_at_capacity).await;
}

/// 400 with `Connection: close`, as the pooled driver answers a head whose framing it refuses.
fn framing_refused() -> axum::response::Response {
    let mut response = axum::response::Response::new(axum::body::Body::empty());
    *response.status_mut() = http::StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    response
}

/// The application's answer, or 400 for a request naming no host or more than one (RFC 9112 §3.2): an
/// HTTP/1.1 request without `Host`, two `Host` headers, or an absolute-form target naming another host than
/// `Host`. Both drivers answer through here, so they agree.
async fn answer(
    app: Router,
    request: http::Request<axum::body::Body>,
    body_timeout: std::time::Duration,
) -> axum::response::Response {
    // The framing first, as the pooled driver refuses it while reading the head, before any other check.
    if request
        .headers()
        .contains_key(http::header::TRANSFER_ENCODING)
        && pooled::transfer_refused(request.headers())
    {
        // hyper serves codings such as `chunked, chunked` (it looks only at the last one); the pooled driver
        // refuses them before reading the body. Refused here too, so the drivers agree.
        return framing_refused();
    }
    match crate::origin::request_host(request.uri(), request.headers()) {
        Err(refusal) => return refusal.into_response(),
        Ok(None) if request.version() == http::Version::HTTP_11 => {
            return Refusal::AmbiguousHost.into_response()
        }
        Ok(_) => {}
    }
    let (request, deadline) = deadline::bound(request, body_timeout);
    let response = match app.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    deadline::answer_if_passed(deadline.as_deref(), response)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};

    use super::*;

    /// One connection of `driver` over an in-memory pipe, told what the test's accept loop says.
    fn connection(driver: Driver, signals: Signals) -> (DuplexStream, tokio::task::JoinHandle<()>) {
        let (client, server) = tokio::io::duplex(4096);
        let app = Router::new().route("/", get(|| async { "served" }));
        let config = ServeConfig::builder()
            .driver(driver)
            .idle_at_capacity_ms(IDLE_AT_CAPACITY_MS.min)
            .build()
            .unwrap();
        let peer = SocketAddr::from(([127, 0, 0, 1], 4000));
        let task = tokio::spawn(async move {
            match driver {
                Driver::Pooled => {
                    let pool = Arc::new(BufferPool::default());
                    pooled::serve_connection(server, peer, app, config, pool, signals).await;
                }
                Driver::Hyper => serve_connection(server, peer, app, config, signals).await,
            }
        });
        (client, task)
    }

    /// A connection idle past `idle_at_capacity` whose request head arrives in the same turn as the word that the
    /// server is at capacity is answered, not closed as idle. On one thread, so both reach the connection before it
    /// runs again: a connection that weighed them in random order closed half of such requests.
    #[tokio::test]
    async fn a_head_that_has_arrived_is_never_closed_as_idle() {
        for driver in [Driver::Pooled, Driver::Hyper] {
            for round in 0..32 {
                let (accept_loop, signals) = signal::channel();
                let (mut client, task) = connection(driver, signals);
                let idle = Duration::from_millis(IDLE_AT_CAPACITY_MS.min * 3);
                tokio::time::sleep(idle).await;
                client
                    .write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
                    .await
                    .unwrap();
                accept_loop.send_replace(Signal::AtCapacity);
                let mut answer = vec![0u8; 12];
                let read =
                    tokio::time::timeout(Duration::from_secs(5), client.read_exact(&mut answer))
                        .await
                        .expect("an answer or a close within 5 s");
                assert!(
                    read.is_ok() && answer.as_slice() == b"HTTP/1.1 200",
                    "{} driver, round {round}: the request was closed as idle ({:?})",
                    driver.name(),
                    String::from_utf8_lossy(&answer)
                );
                drop(client);
                task.await.unwrap();
            }
        }
    }
}
