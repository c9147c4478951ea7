//! A client that pipelines identifications and reads the answers late loses none that were written: when a
//! request of its own times out, the server ends the connection without resetting it, so what the client has
//! not read yet stays readable.

use crate::common;

use std::time::Duration;

use janitor_axum::config::EndpointConfig;
use janitor_axum::serve::Driver;
use janitor_axum::{Janitor, MemoryStores};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

/// A payload of the size janitor.js sends (765 bytes).
const BODY: &str = r#"{"signals":{"userAgent":"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36","platform":"Linux x86_64","languages":["fr-FR","fr","en-US","en","de-DE","de","es-ES","es","it-IT","it","nl-NL","nl","pt-PT","pt"],"timezone":"Europe/Paris","screen":{"width":1920,"height":1080,"colorDepth":24,"pixelRatio":1},"viewport":{"width":1903,"height":961},"hardware":{"hardwareConcurrency":8,"deviceMemory":8,"maxTouchPoints":0},"automation":{"webdriver":false},"graphics":{"webglVendor":"Google Inc. (Intel)","webglRenderer":"ANGLE (Intel, Mesa Intel(R) UHD Graphics 620 (KBL GT2), OpenGL 4.6)"}},"behavior":{"pageAgeMs":1234,"mouseMoveCount":12,"pointerDownCount":1,"keyDownCount":0,"scrollCount":3,"visibilityChangeCount":0}}"#;

fn janitor(request_timeout_ms: u64) -> Janitor {
    let endpoint = EndpointConfig::builder()
        .request_timeout_ms(request_timeout_ms)
        .build()
        .unwrap();
    let config = common::config("slow-readers")
        .endpoint(endpoint)
        .build()
        .unwrap();
    Janitor::new(config, MemoryStores::new())
}

/// One identification request, its head and body in one string.
fn request() -> String {
    format!(
        "POST /api/visitor HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{BODY}",
        BODY.len()
    )
}

/// A client that pipelines `before` identifications, then stalls for `stall` in the middle of the next one's
/// body (past the request timeout of 1 s), then sends `after` more; and reads nothing until it has written
/// everything. The statuses it can then read, and whether the connection ended with a reset.
async fn stalled_pipeline(
    driver: Driver,
    before: usize,
    stall: Duration,
    after: usize,
) -> (Vec<u16>, bool) {
    let janitor = janitor(1_000);
    let address = common::wire::serve_on(janitor.router(), driver).await;
    // A small receive buffer: answers the client has not read wait in the server's send buffer, as they do
    // behind any client that reads slower than the server answers.
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4_096).unwrap();
    let stream = socket.connect(address).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let one = request();
    let writing = tokio::spawn(async move {
        writer.write_all(one.repeat(before).as_bytes()).await?;
        writer.write_all(&one.as_bytes()[..one.len() - 100]).await?;
        tokio::time::sleep(stall).await;
        // The rest of that body, and more requests: what a pipelining client had queued.
        writer.write_all(&one.as_bytes()[one.len() - 100..]).await?;
        writer.write_all(one.repeat(after).as_bytes()).await?;
        Ok::<_, std::io::Error>(writer)
    });
    let written = tokio::time::timeout(Duration::from_secs(20), writing).await;
    // Whether the server reset the connection while the client was still writing is not the question: what
    // the client can read afterwards is.
    let _written = written.expect("the writes end within 20 s").unwrap();
    let (received, reset) = read_to_the_end(&mut reader).await;
    (statuses(&received), reset)
}

/// Everything the server sends until it ends the connection, and whether it ended with a reset.
async fn read_to_the_end(reader: &mut (impl tokio::io::AsyncRead + Unpin)) -> (Vec<u8>, bool) {
    let mut received = Vec::new();
    let mut buffer = vec![0u8; 65_536];
    let reset = loop {
        match tokio::time::timeout(Duration::from_secs(20), reader.read(&mut buffer)).await {
            Ok(Ok(0)) => break false,
            Ok(Err(_)) => break true,
            Ok(Ok(n)) => received.extend_from_slice(&buffer[..n]),
            Err(_) => panic!("no byte within 20 s"),
        }
    };
    (received, reset)
}

/// The status of every status line in `bytes` (answer bodies are JSON and hold no status line).
fn statuses(bytes: &[u8]) -> Vec<u16> {
    let text = String::from_utf8_lossy(bytes);
    text.match_indices("HTTP/1.1 ")
        .filter_map(|(at, _)| text.get(at + 9..at + 12)?.parse().ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_written_before_a_timeout_reach_a_client_that_reads_late_on_either_driver() {
    for driver in [Driver::Pooled, Driver::Hyper] {
        let (statuses, reset) = stalled_pipeline(driver, 100, Duration::from_secs(2), 200).await;
        let ok = statuses.iter().filter(|&&s| s == 200).count();
        println!(
            "{}: {} answers read ({ok} of them 200, then {:?}), reset: {reset}",
            driver.name(),
            statuses.len(),
            &statuses[ok.min(statuses.len())..]
        );
        assert_eq!(ok, 100, "{}: answers written were lost", driver.name());
        assert_eq!(&statuses[100..], [408], "{}", driver.name());
        assert!(!reset, "{}: the connection was reset", driver.name());
    }
}

/// A client that pipelines `requests` reads of a 10 KiB answer and reads nothing for `stall`, on a server whose
/// keep-alive wait is 300 ms; then reads all it can. The complete answers it read, and whether the connection
/// ended with a reset.
async fn unread_pipeline(driver: Driver, requests: usize, stall: Duration) -> (usize, bool) {
    use janitor_axum::serve::{serve, ServeConfig};
    let page = "x".repeat(10_240);
    let app = axum::Router::new().route("/page", axum::routing::get(move || async move { page }));
    let config = ServeConfig::builder()
        .driver(driver)
        .keep_alive_timeout_ms(300)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(serve(listener, app, config, std::future::pending()));
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4_096).unwrap();
    let mut stream = socket.connect(address).await.unwrap();
    let one = "GET /page HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    stream
        .write_all(one.repeat(requests).as_bytes())
        .await
        .unwrap();
    tokio::time::sleep(stall).await;
    let (received, reset) = read_to_the_end(&mut stream).await;
    // An answer is complete when its whole body follows its head; the last one may be cut short.
    let body = format!("\r\n\r\n{}", "x".repeat(10_240));
    let text = String::from_utf8_lossy(&received);
    let complete = text
        .split("HTTP/1.1 200")
        .skip(1)
        .filter(|answer| answer.ends_with(&body))
        .count();
    (complete, reset)
}

/// The bound on a client that pipelines and stops reading (docs/http.md): once no byte of an answer has been
/// taken for the keep-alive wait, the connection ends, without a reset, so the answers written stay readable,
/// and the requests after them go unanswered. Before, the pooled driver waited for such a client forever and
/// hyper's reset the connection at the keep-alive wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_let_go_after_the_keep_alive_wait_on_either_driver() {
    for driver in [Driver::Pooled, Driver::Hyper] {
        let (answers, reset) = unread_pipeline(driver, 1_000, Duration::from_millis(1_500)).await;
        println!(
            "{}: {answers} of 1,000 answers read, reset: {reset}",
            driver.name()
        );
        assert!(!reset, "{}: the connection was reset", driver.name());
        assert!(
            (1..1_000).contains(&answers),
            "{}: {answers} answers: the client that stopped reading was not let go",
            driver.name()
        );
    }
}
