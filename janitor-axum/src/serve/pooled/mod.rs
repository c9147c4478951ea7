//! The pooled driver: an HTTP/1.1 connection that holds no buffer while it waits. It waits for the first byte
//! of a request on a one-byte read, borrows a buffer from the pool to read the head (parsed by `httparse`),
//! hands the request to the application with a body read lazily from the same buffer, writes the answer, and
//! gives the buffer back once nothing more is buffered. Pipelined bytes stay in the buffer as the next request.

mod framing;
mod head;
mod response;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::ConnectInfo;
use axum::Router;
use http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use super::config::ServeConfig;
use super::pool::BufferPool;
use super::signal::{self, Signals};
pub(crate) use head::transfer_refused;
use head::HeadError;
use response::Asked;
use wire::{Link, RequestBody};

/// What an HTTP/2 client sends first (RFC 9113 §3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether `bytes` hold HTTP/2's whole connection preface, after any CR and LF bytes.
fn is_h2_preface(bytes: &[u8]) -> bool {
    let start = bytes.iter().position(|b| !matches!(b, b'\r' | b'\n'));
    start.is_some_and(|start| bytes[start..].starts_with(H2_PREFACE))
}

/// What a connection does after a request.
enum Next {
    KeepAlive,
    /// Close, after letting the client read the answer.
    Linger,
    /// Close at once (a timeout, an error, the peer gone).
    Close,
}

/// Serves one connection until it closes, a wait of the config passes, or a shutdown has let its request end.
pub(super) async fn serve_connection<Io>(
    io: Io,
    peer: SocketAddr,
    app: Router,
    config: ServeConfig,
    pool: Arc<BufferPool>,
    mut signals: Signals,
) where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let link = Link::new(io, pool, config.keep_alive_timeout());
    loop {
        if signal::stopping(&signals) {
            break;
        }
        let buffered = link.lock().has_buffered();
        if !buffered && !next_request_starts(&link, config, &mut signals).await {
            break;
        }
        let deadline = Instant::now() + config.header_read_timeout();
        // Boxed: the state of an exchange exists only while one runs, so a waiting connection stays small.
        let next = Box::pin(exchange(&link, peer, &app, config, deadline, &signals)).await;
        match next {
            Next::KeepAlive => link.lock().release_if_empty(),
            Next::Linger => {
                // Boxed, like an exchange: a waiting connection does not carry a closing one's state.
                Box::pin(link.linger(&mut signals, config.idle_at_capacity())).await;
                break;
            }
            Next::Close => break,
        }
    }
}

/// Waits for the first byte of the next request: `false` when the client has gone, the keep-alive wait has
/// passed, the server stops, or it is at capacity and this connection has waited for `idle_at_capacity`.
async fn next_request_starts<Io>(
    link: &Link<Io>,
    config: ServeConfig,
    signals: &mut Signals,
) -> bool
where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let idle_since = Instant::now();
    let keep_alive = tokio::time::sleep_until(idle_since + config.keep_alive_timeout());
    tokio::pin!(keep_alive);
    loop {
        // Biased: a head that has arrived is served, whatever else the same wake brought.
        tokio::select! {
            biased;
            first = link.first_byte() => return matches!(first, Ok(true)),
            () = &mut keep_alive => return false,
            changed = signals.changed() => {
                if signal::idle_should_close(changed, signals, idle_since, config.idle_at_capacity()) {
                    // A head may have reached the socket since the runtime last looked: let it look once
                    // more, so that a request already sent is never the one closed as idle.
                    tokio::task::yield_now().await;
                    return tokio::select! {
                        biased;
                        first = link.first_byte() => matches!(first, Ok(true)),
                        () = std::future::ready(()) => false,
                    };
                }
            }
        }
    }
}

/// Reads one request, has the application answer it and writes the answer.
async fn exchange<Io>(
    link: &Link<Io>,
    peer: SocketAddr,
    app: &Router,
    config: ServeConfig,
    deadline: Instant,
    signals: &Signals,
) -> Next
where
    Io: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let head =
        match tokio::time::timeout_at(deadline, read_head(link, config.max_header_bytes())).await {
            Err(_elapsed) => return Next::Close,
            Ok(Err(None)) => return Next::Close,
            Ok(Err(Some(status))) => {
                return match link.write_all(&response::refusal(status)).await {
                    Ok(()) => Next::Linger,
                    Err(_) => Next::Close,
                };
            }
            Ok(Ok(head)) => head,
        };
    let asked = Asked {
        head: head.request.method() == http::Method::HEAD,
        version: head.request.version(),
        keep_alive: head.keep_alive,
    };
    link.lock().start_body(head.body, head.expects_continue);
    let body = if head.body.is_done() {
        axum::body::Body::empty()
    } else {
        axum::body::Body::new(RequestBody { link: link.clone() })
    };
    let mut request = head.request.map(|()| body);
    request.extensions_mut().insert(ConnectInfo(peer));
    let answer = tokio::select! {
        answer = super::answer(app.clone(), request, config.body_read_timeout()) => answer,
        () = link.peer_gone() => return Next::Close,
    };
    // The answer says whether the connection closes after it: when shutting down, or when the body's end
    // is not known (the next request would start inside it).
    let asked = Asked {
        keep_alive: asked.keep_alive && !signal::stopping(signals) && link.body_settled(),
        ..asked
    };
    let written = tokio::select! {
        written = response::write(link, answer, asked) => written,
        () = link.peer_gone() => return Next::Close,
    };
    let body_done = link.lock().finish_body();
    match written {
        Ok(true) if body_done => Next::KeepAlive,
        Ok(_) => Next::Linger,
        // A client that stopped reading: what it was sent stays readable, the rest is not answered.
        Err(stalled) if stalled.kind() == std::io::ErrorKind::TimedOut => Next::Linger,
        Err(_) => Next::Close,
    }
}

/// Reads a head into the buffer: the head, or the status to refuse it with (`None`: close without a word).
async fn read_head<Io>(link: &Link<Io>, max_bytes: usize) -> Result<head::Head, Option<StatusCode>>
where
    Io: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        {
            let mut wire = link.lock();
            let buffer = wire.buffer();
            match head::parse(buffer.filled(), max_bytes) {
                Ok(head) => {
                    buffer.consume(head.length);
                    return Ok(head);
                }
                Err(HeadError::Partial) => {}
                Err(HeadError::TooLarge) => {
                    return Err(Some(StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE))
                }
                // HTTP/2's connection preface (prior knowledge) is closed without a word, as hyper's HTTP/1
                // connection does when the whole preface is in (after any empty lines).
                Err(HeadError::Malformed) if is_h2_preface(buffer.filled()) => return Err(None),
                Err(HeadError::Malformed) => return Err(Some(StatusCode::BAD_REQUEST)),
            }
        }
        match link.fill(max_bytes).await {
            Ok(0) | Err(_) => return Err(None),
            Ok(_) => {}
        }
    }
}

/// The head and body parsing of the pooled driver over a byte string, for the fuzz target: parses a head at
/// the start of `bytes`, then decodes the body after it, handing the decoder at most `piece` new bytes at a
/// time (as a socket might). `Some(body)` when both are whole and valid. Panics only when a decoding step is
/// out of bounds (a finding); it cannot loop, since every step consumes bytes or ends.
#[doc(hidden)]
pub fn parse_request_bytes(bytes: &[u8], piece: usize) -> Option<Vec<u8>> {
    let head = head::parse(bytes, bytes.len().max(1)).ok()?;
    let input = &bytes[head.length..];
    let mut decoder = head.body;
    let (mut body, mut start, mut end) = (Vec::new(), 0, 0);
    loop {
        let window = &input[start..end];
        match decoder.step(window) {
            framing::Step::Data(n) => {
                assert!(n > 0 && n <= window.len(), "a data step out of bounds");
                body.extend_from_slice(&window[..n]);
                start += n;
            }
            framing::Step::Skip(n) => {
                assert!(n > 0 && n <= window.len(), "a skip step out of bounds");
                start += n;
            }
            framing::Step::End => return Some(body),
            framing::Step::Invalid => return None,
            framing::Step::NeedMore if end == input.len() => return None,
            framing::Step::NeedMore => end = (end + piece.max(1)).min(input.len()),
        }
    }
}
