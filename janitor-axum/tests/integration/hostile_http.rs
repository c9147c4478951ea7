//! The hostile-HTTP battery, over a real socket to the production entry point (`serve`) on each driver and the
//! real router, on both stores: malformed and oversized heads, ambiguous framing, smuggling attempts, pipelining, bytes that
//! are not text, duplicated security headers and payloads at the edges of JSON. Each case checks its status,
//! that nothing was routed that should not be, and that the server then answers an honest request.

use crate::common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::any;
use axum::Router;
use common::stores::on_both_stores;
use common::wire::{serve_on, within, Connection};
use janitor_axum::handle::Stores;
use janitor_axum::serve::Driver;
use janitor_axum::Janitor;

const UA: &str = "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36";

/// A well-formed identify request with `body` and extra header lines (each ending in CRLF).
fn post(body: &str, extra: &str) -> Vec<u8> {
    post_bytes(body.as_bytes(), extra.as_bytes())
}

/// The same with bytes that need not be text.
fn post_bytes(body: &[u8], extra: &[u8]) -> Vec<u8> {
    [
        b"POST /api/visitor HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            .as_slice(),
        extra,
        format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes(),
        body,
    ]
    .concat()
}

fn honest_body() -> String {
    format!(r#"{{"signals":{{"userAgent":"{UA}","timezone":"Europe/Paris"}}}}"#)
}

fn signals(inner: &str) -> String {
    format!(r#"{{"signals":{{{inner}}}}}"#)
}

/// One attack: what is sent, the statuses the answers must have in order (fewer answers than listed means
/// the server closed the connection early, which fails the case), and whether the connection must be closed
/// after them.
struct Case {
    name: &'static str,
    request: Vec<u8>,
    statuses: &'static [u16],
    closes: Option<bool>,
}

fn case(name: &'static str, request: Vec<u8>, statuses: &'static [u16]) -> Case {
    Case {
        name,
        request,
        statuses,
        closes: None,
    }
}

fn cases() -> Vec<Case> {
    let honest = honest_body();
    let mut all = vec![
        case("a request line without a target", b"GET\r\n\r\n".to_vec(), &[400]),
        case(
            "a space inside the target",
            b"GET /a b HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_vec(),
            &[400],
        ),
        case(
            "an unknown protocol version",
            b"GET / HTTP/7.1\r\nHost: 127.0.0.1\r\n\r\n".to_vec(),
            &[400],
        ),
        case(
            "a 20 KB path",
            format!("GET /{} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "p".repeat(20_000)).into_bytes(),
            &[431],
        ),
        case(
            "a 20 KB header",
            format!("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: {}\r\n\r\n", "h".repeat(20_000))
                .into_bytes(),
            &[431],
        ),
        case(
            "200 headers",
            format!(
                "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n{}\r\n",
                (0..200).map(|i| format!("X-H{i}: v\r\n")).collect::<String>()
            )
            .into_bytes(),
            &[431],
        ),
        case(
            "a folded header line",
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Folded: a\r\n  b\r\n\r\n".to_vec(),
            &[400],
        ),
        case(
            "a space before a header's colon",
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Space : a\r\n\r\n".to_vec(),
            &[400],
        ),
        case(
            "a NUL byte in a header value",
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Nul: a\0b\r\n\r\n".to_vec(),
            &[400],
        ),
        case(
            "two different Content-Length headers",
            format!(
                "POST /api/visitor HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nContent-Length: 5\r\n\r\n{honest}",
                honest.len()
            )
            .into_bytes(),
            &[400],
        ),
        case(
            "a Content-Length that is not a number",
            b"POST /api/visitor HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
              Content-Length: 1e3\r\n\r\n"
                .to_vec(),
            &[400],
        ),
        Case {
            name: "a chunked body past the limit",
            request: {
                let mut request = b"POST /api/visitor HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                    Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    .to_vec();
                for _ in 0..20 {
                    request.extend_from_slice(format!("400\r\n{}\r\n", " ".repeat(1024)).as_bytes());
                }
                request.extend_from_slice(b"0\r\n\r\n");
                request
            },
            statuses: &[413],
            closes: Some(true),
        },
        Case {
            name: "Content-Length beside chunked, hiding a second request",
            request: b"POST /api/visitor HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Content-Length: 60\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n\
                GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                .to_vec(),
            statuses: &[400],
            closes: Some(true),
        },
        Case {
            name: "Expect: 100-continue with a body past the limit",
            request: b"POST /api/visitor HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                Expect: 100-continue\r\nContent-Length: 100000\r\n\r\n"
                .to_vec(),
            statuses: &[413],
            closes: Some(true),
        },
        Case {
            name: "pipelined: good, invalid JSON, good",
            request: [post(&honest, ""), post("{", ""), post(&honest, "")].concat(),
            statuses: &[200, 400, 200],
            closes: Some(false),
        },
        case(
            "an Origin that is not text",
            post_bytes(honest.as_bytes(), b"Origin: https://\xff\xfe.example\r\n"),
            &[403],
        ),
        case(
            "a User-Agent header that is not text",
            post_bytes(honest.as_bytes(), b"User-Agent: \xff\xfe\r\n"),
            &[200],
        ),
        case(
            "the own origin, then a foreign one",
            post(
                &honest,
                "Origin: http://127.0.0.1\r\nOrigin: https://evil.example\r\n",
            ),
            &[403],
        ),
        case(
            "Sec-Fetch-Site same-origin, then cross-site",
            post(
                &honest,
                "Sec-Fetch-Site: same-origin\r\nSec-Fetch-Site: cross-site\r\n",
            ),
            &[403],
        ),
        case(
            "two Host headers",
            post(&honest, "Host: evil.example\r\n"),
            &[400],
        ),
        case(
            "JSON nested 5,000 deep",
            post(&format!("{}{}", "[".repeat(5_000), "]".repeat(5_000)), ""),
            &[400],
        ),
        case(
            "a number past the double range",
            post(&signals(r#""screen":{"pixelRatio":1e400}"#), ""),
            &[400],
        ),
        case(
            "a lone surrogate",
            post(&signals(r#""timezone":"\ud800""#), ""),
            &[400],
        ),
        case(
            "a NUL character in a string",
            post(&signals(r#""timezone":"a\u0000b""#), ""),
            &[400],
        ),
        case(
            "bytes that are not UTF-8 in the body",
            post_bytes(b"{\"signals\":{\"timezone\":\"\xff\xfe\"}}", b""),
            &[400],
        ),
    ];
    all.push(case("an honest request, last", post(&honest, ""), &[200]));
    all
}

/// The application served on each driver, both on `stores`: (driver, address).
async fn start<S: Stores>(stores: S, smuggled: Arc<AtomicUsize>) -> Vec<(Driver, SocketAddr)> {
    let config = common::config("hostile").build().unwrap();
    let janitor = Janitor::new(config, stores);
    let app = janitor.router().route(
        "/smuggled",
        any(move || async move {
            smuggled.fetch_add(1, Ordering::SeqCst);
            "smuggled"
        }),
    );
    let app: Router = app;
    let mut served = Vec::new();
    for driver in [Driver::Pooled, Driver::Hyper] {
        served.push((driver, serve_on(app.clone(), driver).await));
    }
    served
}

/// Reads up to `count` replies, stopping early if the server closes the connection.
async fn replies(connection: &mut Connection, count: usize) -> Vec<u16> {
    let mut statuses = Vec::new();
    for _ in 0..count {
        match tokio::time::timeout(Duration::from_secs(10), connection.read_reply()).await {
            Ok(Ok(reply)) => statuses.push(reply.head.status),
            Ok(Err(_)) => break,
            Err(_) => panic!("no answer within 10 s after {statuses:?}"),
        }
    }
    statuses
}

async fn battery<S: Stores>(stores: S) {
    let smuggled = Arc::new(AtomicUsize::new(0));
    for (driver, address) in start(stores, Arc::clone(&smuggled)).await {
        on_driver(driver, address).await;
    }
    assert_eq!(
        smuggled.load(Ordering::SeqCst),
        0,
        "a smuggled request was routed"
    );
}

/// Every case against the server at `address`, on `driver`.
async fn on_driver(driver: Driver, address: SocketAddr) {
    let driver = driver.name();
    for case in cases() {
        let mut connection = Connection::open(address).await.unwrap();
        // A server may answer and close before it has read everything: a failed write is no failure here.
        let _ = connection.write(&case.request).await;
        let statuses = replies(&mut connection, case.statuses.len()).await;
        assert_eq!(statuses, case.statuses, "{driver}: {}", case.name);
        if let Some(closes) = case.closes {
            let closed = connection.closed_within(Duration::from_millis(500)).await;
            assert_eq!(
                closed, closes,
                "{driver}: {}: closed after the answers",
                case.name
            );
        }
        // The server is up and serves an honest request on a fresh connection.
        let mut next = Connection::open(address).await.unwrap();
        let reply = within(case.name, next.exchange(&post(&honest_body(), "")))
            .await
            .unwrap();
        assert_eq!(
            reply.head.status,
            200,
            "{driver}: after {}: {}",
            case.name,
            reply.text()
        );
    }
}

on_both_stores!(battery);
