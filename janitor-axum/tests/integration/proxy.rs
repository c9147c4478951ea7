//! The endpoint behind a reverse proxy, over a real socket: a proxy that rewrites `Host` (nginx's default) is
//! answered when the public origins are listed, and forwarded headers count only from trusted proxy addresses.

use crate::common;

use common::wire::{serve_with_peers, Connection};
use janitor_axum::config::OriginConfig;
use janitor_axum::{Janitor, MemoryStores};

const BODY: &str = r#"{"signals":{"userAgent":"Mozilla/5.0 Chrome/131.0 Safari/537.36","timezone":"Europe/Paris"}}"#;

/// A POST as nginx forwards it with its defaults: `Host` is the upstream's, the browser's origin unchanged.
fn proxied(headers: &str) -> Vec<u8> {
    format!(
        "POST /api/visitor HTTP/1.1\r\nHost: 127.0.0.1:3000\r\nContent-Type: application/json\r\n\
         Origin: https://www.example.com\r\n{headers}Content-Length: {}\r\n\r\n{BODY}",
        BODY.len()
    )
    .into_bytes()
}

async fn status(origin: OriginConfig, request: &[u8]) -> u16 {
    let config = common::config("proxy-tests")
        .origin(origin)
        .build()
        .unwrap();
    let janitor = Janitor::new(config, MemoryStores::new());
    let address = serve_with_peers(janitor.router()).await;
    let mut connection = Connection::open(address).await.unwrap();
    connection.exchange(request).await.unwrap().status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_rewriting_proxy_needs_the_public_origins_listed() {
    assert_eq!(status(OriginConfig::default(), &proxied("")).await, 403);
    let listed = OriginConfig::builder()
        .allow_origin("https://example.com")
        .allow_origin("https://www.example.com")
        .build()
        .unwrap();
    assert_eq!(status(listed.clone(), &proxied("")).await, 200);
    let foreign = String::from_utf8(proxied("")).unwrap().replace(
        "https://www.example.com",
        "https://www.example.com.evil.example",
    );
    assert_eq!(status(listed, foreign.as_bytes()).await, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_headers_count_from_a_trusted_proxy_only() {
    let forwarded = proxied("X-Forwarded-Host: www.example.com\r\nX-Forwarded-Proto: https\r\n");
    let trusting = OriginConfig::builder()
        .trust_proxy("127.0.0.1")
        .build()
        .unwrap();
    assert_eq!(status(trusting, &forwarded).await, 200);
    // The test client is the peer: a proxy elsewhere is not this peer, and its headers are a client's words.
    let elsewhere = OriginConfig::builder()
        .trust_proxy("10.0.0.0/8")
        .build()
        .unwrap();
    assert_eq!(status(elsewhere, &forwarded).await, 403);
    assert_eq!(status(OriginConfig::default(), &forwarded).await, 403);
}

/// The log lines written on this thread, as a plain `fmt` subscriber prints them.
#[derive(Clone, Default)]
struct Logs(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Plain `axum::serve` gives no peer address: trusted proxies can never be believed, and the first request
/// that needs one says so, once. One thread runs the server and the test, so the test's subscriber sees it.
#[tokio::test(flavor = "current_thread")]
async fn trusted_proxies_without_peer_addresses_warn_once() {
    let logs = Logs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let trusting = OriginConfig::builder()
        .trust_proxy("127.0.0.1")
        .build()
        .unwrap();
    let config = common::config("proxy-no-peer-tests")
        .origin(trusting)
        .build()
        .unwrap();
    let janitor = Janitor::new(config, MemoryStores::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, janitor.router()).await.unwrap() });
    let forwarded = proxied("X-Forwarded-Host: www.example.com\r\nX-Forwarded-Proto: https\r\n");
    for _ in 0..3 {
        let mut connection = Connection::open(address).await.unwrap();
        let answer = connection.exchange(&forwarded).await.unwrap();
        assert_eq!(
            answer.status(),
            403,
            "no peer: the forwarded host is not believed"
        );
    }
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("requests carry no peer address"))
        .collect();
    assert_eq!(warnings.len(), 1, "{text}");
    assert!(warnings[0].contains("WARN"), "{text}");
    assert!(
        warnings[0].contains("into_make_service_with_connect_info::<SocketAddr>()"),
        "{text}"
    );
}
