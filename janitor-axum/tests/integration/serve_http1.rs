//! HTTP/1.1 over the production entry point, through a real socket: keep-alive, pipelining, `Expect:
//! 100-continue`, chunked request bodies, HTTP/1.0, HEAD and answers of unknown length, and the pooled
//! driver's buffers going back to their pool once a request is answered.

use crate::common;

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, Uri};
use axum::routing::{get, post};
use axum::Router;
use common::wire::{driver, wait_until, within, Connection, SETTLE};
use janitor_axum::serve::{serve_listener, BufferPool, Driver, ServeConfig};
use tokio::net::TcpListener;

/// Two frames of data and no size known in advance: the answer must go chunked.
struct Unsized(u8);

impl http_body::Body for Unsized {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        self.0 += 1;
        Poll::Ready(match self.0 {
            1 => Some(Ok(http_body::Frame::data(Bytes::from_static(b"one,")))),
            2 => Some(Ok(http_body::Frame::data(Bytes::from_static(b"two")))),
            _ => None,
        })
    }
}

fn app() -> Router {
    Router::new()
        .route("/", get(|| async { "ok" }))
        .route(
            "/path/{name}",
            get(|uri: Uri| async move { uri.path().to_owned() }),
        )
        .route("/echo", post(|body: Bytes| async move { body }))
        .route("/refuse", post(|| async { StatusCode::PAYLOAD_TOO_LARGE }))
        .route("/unsized", get(|| async { Body::new(Unsized(0)) }))
}

/// Serves [`app`] on the run's driver; the pool its connections borrow from.
async fn start() -> (SocketAddr, Arc<BufferPool>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let pool = Arc::new(BufferPool::default());
    let config = ServeConfig::builder().driver(driver()).build().unwrap();
    let stop = std::future::pending();
    tokio::spawn(serve_listener(
        listener,
        app(),
        config,
        Arc::clone(&pool),
        stop,
    ));
    (address, pool)
}

fn get_request(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
}

#[tokio::test]
async fn a_connection_carries_request_after_request_and_gives_its_buffer_back_each_time() {
    let (address, pool) = start().await;
    let mut connection = Connection::open(address).await.unwrap();
    for round in 1..=3u64 {
        let reply = within(
            "a request",
            connection.exchange(get_request("/").as_bytes()),
        )
        .await
        .unwrap();
        assert_eq!((reply.status(), reply.text().as_str()), (200, "ok"));
        assert_eq!(reply.header("connection"), None);
        assert!(reply.header("date").is_some_and(|d| d.ends_with(" GMT")));
        if driver() == Driver::Pooled {
            // Waiting for its next request, the connection holds no buffer.
            wait_until("the buffer is back", SETTLE, || {
                pool.returned() >= round && pool.lent() == 0
            })
            .await;
        }
    }
    assert!(!connection.closed_within(Duration::from_millis(200)).await);
    if driver() == Driver::Pooled {
        assert_eq!(pool.returned(), 3);
        assert_eq!(
            pool.kept(),
            1,
            "one buffer, lent and given back three times"
        );
    }
}

#[tokio::test]
async fn two_and_three_pipelined_requests_are_answered_in_order() {
    let (address, _) = start().await;
    for names in [&["a", "b"][..], &["x", "y", "z"]] {
        let mut connection = Connection::open(address).await.unwrap();
        let all: String = names
            .iter()
            .map(|n| get_request(&format!("/path/{n}")))
            .collect();
        connection.write(all.as_bytes()).await.unwrap();
        for name in names {
            let reply = within("a pipelined answer", connection.read_reply())
                .await
                .unwrap();
            assert_eq!(reply.status(), 200);
            assert_eq!(reply.text(), format!("/path/{name}"));
        }
        let after = within(
            "after them",
            connection.exchange(get_request("/").as_bytes()),
        )
        .await
        .unwrap();
        assert_eq!(after.status(), 200);
    }
    // A pipelined POST body ends where its length says; the next request follows it.
    let mut connection = Connection::open(address).await.unwrap();
    let both = format!(
        "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n\r\nhello{}",
        get_request("/path/next")
    );
    connection.write(both.as_bytes()).await.unwrap();
    assert_eq!(
        within("the post", connection.read_reply())
            .await
            .unwrap()
            .text(),
        "hello"
    );
    assert_eq!(
        within("the get", connection.read_reply())
            .await
            .unwrap()
            .text(),
        "/path/next"
    );
}

#[tokio::test]
async fn expect_continue_is_answered_100_when_the_body_is_read_and_not_when_refused() {
    let (address, _) = start().await;
    let mut connection = Connection::open(address).await.unwrap();
    let head = "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n";
    connection.write(head.as_bytes()).await.unwrap();
    let interim = within("100 Continue", connection.read_head())
        .await
        .unwrap();
    assert_eq!(interim.status, 100);
    connection.write(b"hello").await.unwrap();
    let reply = within("the answer", connection.read_reply()).await.unwrap();
    assert_eq!((reply.status(), reply.text().as_str()), (200, "hello"));
    // Refused before its body is read: no 100, the final status, and the unsent body cannot follow.
    let mut refused = Connection::open(address).await.unwrap();
    let head = "POST /refuse HTTP/1.1\r\nHost: 127.0.0.1\r\nExpect: 100-continue\r\nContent-Length: 100\r\n\r\n";
    refused.write(head.as_bytes()).await.unwrap();
    let reply = within("the refusal", refused.read_reply()).await.unwrap();
    assert_eq!(reply.status(), 413);
    if driver() == Driver::Pooled {
        // hyper closes too, without saying so first.
        assert_eq!(reply.header("connection"), Some("close"));
    }
    assert!(refused.closed_within(SETTLE).await);
}

#[tokio::test]
async fn a_chunked_body_arrives_whole_across_writes_and_the_connection_goes_on() {
    let (address, _) = start().await;
    let mut connection = Connection::open(address).await.unwrap();
    let head = "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n";
    connection.write(head.as_bytes()).await.unwrap();
    for piece in [
        &b"5\r\nhel"[..],
        b"lo\r\n",
        b"6;ext=1\r\n world\r\n0\r\n",
        b"X-T: 1\r\n\r\n",
    ] {
        tokio::time::sleep(Duration::from_millis(20)).await;
        connection.write(piece).await.unwrap();
    }
    let reply = within("the echo", connection.read_reply()).await.unwrap();
    assert_eq!(
        (reply.status(), reply.text().as_str()),
        (200, "hello world")
    );
    let next = within("the next", connection.exchange(get_request("/").as_bytes()))
        .await
        .unwrap();
    assert_eq!(next.status(), 200);
    // A broken chunk size fails the body: the application refuses it and the connection closes.
    let mut broken = Connection::open(address).await.unwrap();
    let bad = "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n";
    let reply = within("a broken chunk", broken.exchange(bad.as_bytes()))
        .await
        .unwrap();
    assert_eq!(reply.status(), 400);
    assert!(broken.closed_within(SETTLE).await);
}

#[tokio::test]
async fn http_1_0_closes_unless_asked_to_keep_alive() {
    let (address, _) = start().await;
    let mut closing = Connection::open(address).await.unwrap();
    let reply = within("1.0", closing.exchange(b"GET / HTTP/1.0\r\n\r\n"))
        .await
        .unwrap();
    assert_eq!((reply.status(), reply.text().as_str()), (200, "ok"));
    assert!(closing.closed_within(SETTLE).await);
    let mut kept = Connection::open(address).await.unwrap();
    let request = b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
    for _ in 0..2 {
        let reply = within("1.0 kept alive", kept.exchange(request))
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
        assert_eq!(reply.header("connection"), Some("keep-alive"));
    }
    // HTTP/1.1 asking to close is closed after its answer.
    let mut last = Connection::open(address).await.unwrap();
    let request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    let reply = within("1.1 close", last.exchange(request)).await.unwrap();
    assert_eq!(reply.header("connection"), Some("close"));
    assert!(last.closed_within(SETTLE).await);
}

#[tokio::test]
async fn head_has_the_length_and_no_body_and_an_unsized_answer_is_chunked() {
    let (address, _) = start().await;
    let mut connection = Connection::open(address).await.unwrap();
    connection
        .write(b"HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .unwrap();
    let head = within("HEAD", connection.read_head()).await.unwrap();
    assert_eq!(
        (head.status, head.header("content-length")),
        (200, Some("2"))
    );
    // Had a body followed the head, this answer would not parse.
    let reply = within(
        "after HEAD",
        connection.exchange(get_request("/unsized").as_bytes()),
    )
    .await
    .unwrap();
    assert_eq!(reply.header("transfer-encoding"), Some("chunked"));
    assert_eq!(reply.text(), "one,two");
    let again = within(
        "after chunked",
        connection.exchange(get_request("/").as_bytes()),
    )
    .await
    .unwrap();
    assert_eq!(again.status(), 200);
}

#[tokio::test]
async fn an_unread_body_closes_unless_all_of_it_had_arrived() {
    let (address, _) = start().await;
    // All of the body came with the head: dropped, and the connection carries the next request.
    let mut whole = Connection::open(address).await.unwrap();
    let request = "POST /refuse HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 3\r\n\r\nabc";
    assert_eq!(
        within("refused", whole.exchange(request.as_bytes()))
            .await
            .unwrap()
            .status(),
        413
    );
    assert_eq!(
        within("next", whole.exchange(get_request("/").as_bytes()))
            .await
            .unwrap()
            .status(),
        200
    );
    // Part of it still to come: the connection cannot know where the next request starts.
    let mut part = Connection::open(address).await.unwrap();
    let request = "POST /refuse HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 30\r\n\r\nabc";
    assert_eq!(
        within("refused", part.exchange(request.as_bytes()))
            .await
            .unwrap()
            .status(),
        413
    );
    assert!(part.closed_within(SETTLE).await);
}

/// Serves a router counting the requests that reach it, on `driver`.
async fn start_counting(driver: Driver) -> (SocketAddr, Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let routed = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&routed);
    let app = app().layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            counter.fetch_add(1, Ordering::SeqCst);
            next.run(request)
        },
    ));
    let config = ServeConfig::builder().driver(driver).build().unwrap();
    tokio::spawn(janitor_axum::serve::serve(
        listener,
        app,
        config,
        std::future::pending(),
    ));
    (address, routed)
}

/// Writes `bytes` on a new connection and reads what comes back until the server closes or falls silent; the
/// status of every answer in it.
async fn statuses(address: SocketAddr, bytes: &str) -> Vec<u16> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(address).await.unwrap();
    socket.write_all(bytes.as_bytes()).await.unwrap();
    let mut read = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(Ok(n)) =
        tokio::time::timeout(Duration::from_millis(400), socket.read(&mut chunk)).await
    {
        if n == 0 {
            break;
        }
        read.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&read)
        .split("HTTP/1.1 ")
        .skip(1)
        .filter_map(|answer| answer.get(..3)?.parse().ok())
        .collect()
}

/// Both drivers, on the same bytes, answer alike and let the same requests through: the framing and host
/// cases an outside probe found them to disagree on, or both to accept (issue 28, defects 1, 2, 4 and 5).
#[tokio::test]
async fn both_drivers_refuse_ambiguous_framing_and_hosts_alike() {
    use std::sync::atomic::Ordering;
    let next = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
    let cases: [(&str, String, &[u16], usize); 11] = [
        (
            "an empty Transfer-Encoding beside Content-Length, a request behind it",
            format!("POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\nContent-Length: 5\r\n\r\nhello{next}"),
            &[400],
            0,
        ),
        (
            "a lone comma as Transfer-Encoding beside Content-Length",
            format!("POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\nContent-Length: 5\r\n\r\nhello{next}"),
            &[400],
            0,
        ),
        (
            "chunked beside Content-Length",
            "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_owned(),
            &[400],
            0,
        ),
        (
            "chunked twice",
            "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n".to_owned(),
            &[400],
            0,
        ),
        (
            "a list of lengths on one line",
            "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhello".to_owned(),
            &[400],
            0,
        ),
        (
            "the same length on two lines",
            "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello".to_owned(),
            &[200],
            1,
        ),
        ("HTTP/1.1 without Host", "GET / HTTP/1.1\r\n\r\n".to_owned(), &[400], 0),
        ("HTTP/1.0 without Host", "GET / HTTP/1.0\r\n\r\n".to_owned(), &[], 1),
        (
            "an absolute-form target naming another host",
            "GET http://attacker.example/ HTTP/1.1\r\nHost: victim.example\r\n\r\n".to_owned(),
            &[400],
            0,
        ),
        (
            "an absolute-form target naming its Host",
            "GET http://victim.example/ HTTP/1.1\r\nHost: Victim.Example\r\n\r\n".to_owned(),
            &[200],
            1,
        ),
        (
            "two Host headers",
            "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n".to_owned(),
            &[400],
            0,
        ),
    ];
    let mut disagreements = Vec::new();
    for driver in [Driver::Pooled, Driver::Hyper] {
        let (address, routed) = start_counting(driver).await;
        for (what, bytes, expected, reached) in &cases {
            // The one known difference (docs/http.md): hyper drops the length of a chunked request before the
            // application could see both, and serves it framed by its chunks.
            let (expected, reached) = match (driver, *what) {
                (Driver::Hyper, "chunked beside Content-Length") => (&[200][..], &1),
                _ => (*expected, reached),
            };
            let before = routed.load(Ordering::SeqCst);
            let got = statuses(address, bytes).await;
            let through = routed.load(Ordering::SeqCst) - before;
            // HTTP/1.0 answers carry their own version: counted by the router instead.
            if (!expected.is_empty() && got != expected) || through != *reached {
                disagreements.push(format!(
                    "{driver:?}, {what}: answered {got:?} (expected {expected:?}), {through} reached the router \
                     (expected {reached})"
                ));
            }
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}
