//! Differential: the same bytes, sent on a connection to each driver of `janitor_axum::serve` (the pooled one
//! and hyper's), must get the same status lines in the same order and hand the application the same requests
//! (method, target, version, headers, body). Any difference in framing, in what is refused, or in what reaches
//! the router is a finding.
//!
//! Each driver serves one end of an in-memory pipe on a runtime whose clock is paused, so every wait (a head
//! that never ends, a body that never comes, the lingering close) passes at once and in the same order for
//! both. The client writes the input, then reads until the server closes or 30 s of that clock pass; in the
//! second case it ends its sending side and reads for 30 s more. The body deadline is set past both waits.
//!
//! The differences the project keeps on purpose are left out: `Transfer-Encoding` beside `Content-Length`,
//! which the pooled driver refuses and hyper frames by its chunks (docs/http.md), and `100 Continue` for a body
//! that has already arrived, which hyper sends and the pooled driver need not. So is an input with HTTP/2's
//! preface after a refused head, which hyper alone closes without an answer, and a chunked input with a bare
//! LF after its `chunked` (the pooled driver refuses a bare LF in trailers, where hyper reads a line end).

#![no_main]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::Router;
use janitor_axum::serve::{serve_stream, Driver, ServeConfig};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::runtime::Runtime;

/// What a client saw and the application was handed.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    /// Every status line the client read (`HTTP/1.1 200`), in order.
    status_lines: Vec<String>,
    /// How many of them came only after the client had ended its sending side.
    after_end: usize,
    /// Every request the router received, written out.
    routed: Vec<String>,
}

impl Seen {
    /// Whether two drivers agree: the same requests routed and the same status lines, except that one may
    /// leave out answers the other gave only once the client had ended its sending side (a request cut short
    /// by the client's end: hyper answers its broken body, the pooled driver takes the end for the client
    /// gone and closes).
    fn agrees_with(&self, other: &Seen) -> bool {
        if self.routed != other.routed {
            return false;
        }
        let (short, long) = if self.status_lines.len() <= other.status_lines.len() {
            (self, other)
        } else {
            (other, self)
        };
        let before_end = long.status_lines.len() - long.after_end;
        long.status_lines.starts_with(&short.status_lines) && before_end <= short.status_lines.len()
    }
}

fuzz_target!(|data: &[u8]| {
    if both_framings(data) || later_h2_preface(data) || bare_lf_after_chunked(data) {
        return;
    }
    let runtime = runtime();
    let pooled = runtime.block_on(exchange(Driver::Pooled, data));
    let hyper = runtime.block_on(exchange(Driver::Hyper, data));
    assert!(
        pooled.agrees_with(&hyper),
        "the pooled driver and hyper differ:\n pooled: {pooled:?}\n hyper:  {hyper:?}"
    );
});

/// A bare LF anywhere after the first `chunked` (any case): it may sit in trailers. Wider than the
/// difference itself, which needs the decoder to place; a bare LF in a head is still compared where no
/// chunked body comes before it.
fn bare_lf_after_chunked(data: &[u8]) -> bool {
    let Some(at) = data
        .windows(7)
        .position(|w| w.eq_ignore_ascii_case(b"chunked"))
    else {
        return false;
    };
    data[at..]
        .windows(2)
        .any(|pair| pair[1] == b'\n' && pair[0] != b'\r')
}

fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a runtime")
    })
}

/// Whether the input names both `Transfer-Encoding` and `Content-Length` anywhere (the documented difference).
fn both_framings(data: &[u8]) -> bool {
    let lower = data.to_ascii_lowercase();
    let has = |name: &[u8]| lower.windows(name.len()).any(|w| w == name);
    has(b"transfer-encoding") && has(b"content-length")
}

/// Whether HTTP/2's preface follows a request head: hyper, refusing that head, closes without a word if its
/// buffer then starts with the preface (it answers 400 otherwise); the pooled driver always answers 400.
fn later_h2_preface(data: &[u8]) -> bool {
    let preface = b"PRI * HTTP/2.0";
    let start = data
        .iter()
        .position(|b| !matches!(b, b'\r' | b'\n'))
        .unwrap_or(0);
    data.windows(preface.len())
        .enumerate()
        .any(|(at, window)| at > start && window == preface)
}

async fn exchange(driver: Driver, data: &[u8]) -> Seen {
    let routed = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&routed);
    let app = Router::new().fallback(move |request: Request| {
        let record = Arc::clone(&record);
        async move {
            let (parts, body) = request.into_parts();
            let headers: Vec<String> = parts
                .headers
                .iter()
                .map(|(name, value)| format!("{name}: {:?}", value.as_bytes()))
                .collect();
            record.lock().unwrap().push(format!(
                "{} {} {:?} {headers:?}",
                parts.method, parts.uri, parts.version
            ));
            // A body that ends in an error is not compared: when the client leaves, the pooled driver drops the
            // handler where hyper hands it the error, and either is right.
            let body = axum::body::to_bytes(body, 1 << 20).await;
            if let Ok(bytes) = &body {
                record
                    .lock()
                    .unwrap()
                    .push(format!("body {:?}", bytes.as_ref()));
            }
            match body {
                Ok(_) => axum::response::Response::new(Body::from("routed")),
                Err(_) => {
                    let mut response = axum::response::Response::new(Body::from("unread"));
                    *response.status_mut() = http::StatusCode::BAD_REQUEST;
                    response
                }
            }
        }
    });
    // The body deadline (the same on both drivers, and tested on both in tests/integration/serve.rs) is set past
    // the client's two waits: at its default of 10 s it would end the first wait where the client's own end should,
    // and hyper, which reads trailers to their end before it sees a fault in them, would answer 408 where the
    // pooled driver has refused the fault already.
    let config = ServeConfig::builder()
        .driver(driver)
        .body_read_timeout_ms(120_000)
        .build()
        .expect("the defaults");
    let (mut client, server) = tokio::io::duplex(1 << 20);
    let peer = SocketAddr::from(([127, 0, 0, 1], 40_000));
    let served = tokio::spawn(serve_stream(server, peer, app, config));
    let _ = client.write_all(data).await;
    let mut output = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(30), client.read_to_end(&mut output)).await;
    let before_end = status_lines(&output).len();
    if read.is_err() {
        // Still open and waiting for more: the client says it has no more to send. A driver may refuse a
        // broken body or trailer as soon as it sees the fault or once it ends (hyper reads trailers to their
        // end first); after the end of the input both must have said the same.
        let _ = client.shutdown().await;
        let _ =
            tokio::time::timeout(Duration::from_secs(30), client.read_to_end(&mut output)).await;
    }
    drop(client);
    let _ = served.await;
    let routed = routed.lock().unwrap().clone();
    let status_lines = status_lines(&output);
    Seen {
        after_end: status_lines.len() - before_end,
        status_lines,
        routed,
    }
}

/// The status line of every answer in `output` (`HTTP/1.1 200`), read with httparse and skipped by its
/// `Content-Length` (every answer here has one, or no body), `100 Continue` aside: a server may leave it out
/// once the body has arrived (RFC 9110 §10.1.1), which the pooled driver does and hyper does not. An answer to
/// `HEAD` has a length and no body, so the reading may go astray after one; it goes astray the same way for
/// both drivers, whose answers frame alike.
fn status_lines(output: &[u8]) -> Vec<String> {
    let mut lines = Vec::new();
    let mut rest = output;
    loop {
        let mut fields = [httparse::EMPTY_HEADER; 64];
        let mut answer = httparse::Response::new(&mut fields);
        let Ok(httparse::Status::Complete(head)) = answer.parse(rest) else {
            break;
        };
        let code = answer.code.unwrap_or(0);
        let length = answer
            .headers
            .iter()
            .find(|field| field.name.eq_ignore_ascii_case("content-length"))
            .and_then(|field| std::str::from_utf8(field.value).ok()?.trim().parse().ok())
            .unwrap_or(0usize);
        if code != 100 {
            lines.push(format!("HTTP/1.{} {code}", answer.version.unwrap_or(1)));
        }
        let end = head + if code < 200 { 0 } else { length };
        if end > rest.len() {
            break;
        }
        rest = &rest[end..];
    }
    lines
}
