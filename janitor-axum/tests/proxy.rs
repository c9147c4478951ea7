//! The endpoint behind a reverse proxy, over a real socket: a proxy that rewrites `Host` (nginx's default) is
//! answered when the public origins are listed, and forwarded headers count only from trusted proxy addresses.

mod common;

use common::wire::{serve_with_peers, Connection};
use janitor_axum::{Janitor, MemoryStores, OriginConfig};

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
