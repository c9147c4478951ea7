//! Clients that keep a real server busy while a test breaks its database: each on its own keep-alive
//! connection, reconnecting whenever the server closes it, every answer logged with when it was sent and
//! answered.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use super::wire::Connection;

/// One answer, as a client saw it.
pub struct Answer {
    /// What the client asked for, in the client's words (an event id, a route).
    pub asked: String,
    pub status: u16,
    pub retry_after: Option<String>,
    pub sent: Instant,
    pub answered: Instant,
    pub body: Vec<u8>,
}

impl Answer {
    /// The visitor id of an identification's body.
    pub fn visitor_id(&self) -> Option<String> {
        serde_json::from_slice::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v["visitorId"].as_str().map(str::to_owned))
    }
}

/// A POST of a JSON `body` to `path`.
pub fn post(path: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Sends `request(round)` in a loop until `stop`, one request at a time with a short pause between, each
/// answer within `longest` (a hang fails the test). `request` names what it asks and gives the bytes.
pub async fn keep_asking(
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    log: Arc<Mutex<Vec<Answer>>>,
    longest: Duration,
    request: impl Fn(usize) -> (String, Vec<u8>),
) {
    let mut connection: Option<Connection> = None;
    let mut round = 0;
    while !stop.load(Ordering::SeqCst) {
        round += 1;
        if connection.is_none() {
            connection = Some(Connection::open(address).await.expect("the server accepts"));
        }
        let open = connection.as_mut().unwrap();
        let (asked, bytes) = request(round);
        let sent = Instant::now();
        let reply = tokio::time::timeout(longest, open.exchange(&bytes))
            .await
            .expect("an answer, not a hang");
        let Ok(reply) = reply else {
            // The server closed the keep-alive connection between requests: open another.
            connection = None;
            continue;
        };
        if reply.head.header("connection") == Some("close") {
            connection = None;
        }
        log.lock().unwrap().push(Answer {
            asked,
            status: reply.head.status,
            retry_after: reply.head.header("retry-after").map(str::to_owned),
            sent,
            answered: Instant::now(),
            body: reply.body,
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The application of a database fault test: the library on `url` with bounds that keep every answer short
/// (statement 2 s, pool wait 0.5 s, connect 1 s, 8 connections), migrated, and served on a socket of its own
/// with the application's `routes` beside the endpoint.
#[cfg(all(feature = "postgres", feature = "serve"))]
pub async fn serve_on_database(
    url: &str,
    namespace: &str,
    routes: impl FnOnce(&janitor_axum::Janitor) -> axum::Router,
) -> (
    janitor_axum::postgres::Database,
    janitor_axum::Janitor,
    SocketAddr,
) {
    use janitor_axum::postgres::DatabaseConfig;
    use janitor_axum::postgres::{Database, PgStores};
    use janitor_axum::serve::{serve, ServeConfig};
    use janitor_axum::Janitor;

    let config = DatabaseConfig::builder(url)
        .statement_timeout_ms(2_000)
        .wait_timeout_ms(500)
        .connect_timeout_ms(1_000)
        .max_connections(8)
        .build()
        .expect("a usable connection string");
    let database = Database::new(config).unwrap();
    database.migrate().await.expect("migrations");
    let janitor = Janitor::new(
        super::config(namespace).build().unwrap(),
        PgStores::new(database.clone()),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(serve(
        listener,
        janitor.router().merge(routes(&janitor)),
        ServeConfig::default(),
        std::future::pending(),
    ));
    (database, janitor, address)
}
