//! The production entry point over real sockets: each limit of `ServeConfig` closes or refuses what it must,
//! and leaves honest clients alone.

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::routing;
use axum::Router;
use common::wire::{driver, get, post_with_length, within, Connection, SETTLE};
use janitor_axum::serve::{serve, Driver, ServeConfig};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A served app answering `/` and `/peer` (the peer address the request carries), and the way to stop it.
struct Served {
    address: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<std::io::Result<()>>,
}

impl Served {
    async fn start(config: ServeConfig) -> Served {
        Served::with_app(config, app()).await
    }

    async fn with_app(config: ServeConfig, app: Router) -> Served {
        Served::on_driver(driven(config), app).await
    }

    /// Serves `app` with `config` as it is, on the driver it names.
    async fn on_driver(config: ServeConfig, app: Router) -> Served {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(serve(listener, app, config, async {
            let _ = stopped.await;
        }));
        Served {
            address,
            stop: Some(stop),
            task,
        }
    }

    async fn open(&self) -> Connection {
        Connection::open(self.address).await.unwrap()
    }

    /// A fresh connection gets 200 from `/`.
    async fn answers(&self) {
        let mut connection = self.open().await;
        let reply = within("an honest request", connection.exchange(&get("/"))).await;
        assert_eq!(reply.unwrap().head.status, 200);
    }

    async fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        within("the server to stop", &mut self.task)
            .await
            .unwrap()
            .unwrap();
    }
}

fn app() -> Router {
    Router::new()
        .route("/", routing::get(|| async { "ok" }))
        .route(
            "/peer",
            routing::get(
                |ConnectInfo(peer): ConnectInfo<SocketAddr>| async move { peer.to_string() },
            ),
        )
        .route(
            "/slow",
            routing::get(|| async {
                tokio::time::sleep(Duration::from_millis(600)).await;
                "slow"
            }),
        )
}

/// `config` on the driver the run names (`JANITOR_SERVE_DRIVER`).
fn driven(config: ServeConfig) -> ServeConfig {
    ServeConfig::builder()
        .driver(driver())
        .header_read_timeout_ms(config.header_read_timeout().as_millis() as u64)
        .body_read_timeout_ms(config.body_read_timeout().as_millis() as u64)
        .keep_alive_timeout_ms(config.keep_alive_timeout().as_millis() as u64)
        .idle_at_capacity_ms(config.idle_at_capacity().as_millis() as u64)
        .max_header_bytes(config.max_header_bytes())
        .max_connections(config.max_connections())
        .build()
        .unwrap()
}

fn limits() -> janitor_axum::serve::ServeConfigBuilder {
    ServeConfig::builder()
        .header_read_timeout_ms(400)
        .keep_alive_timeout_ms(800)
}

/// A route of the application that reads its form, answering any error reading it as the guide does (413).
fn form_app() -> Router {
    let read = |body: axum::body::Body| async move {
        match axum::body::to_bytes(body, 1 << 30).await {
            Ok(bytes) => (http::StatusCode::OK, bytes.len().to_string()),
            Err(_) => (http::StatusCode::PAYLOAD_TOO_LARGE, String::new()),
        }
    };
    app().route("/form", routing::post(read))
}

/// The probe's two holds on an application route: a `Content-Length` of 1,000,000,000 with no body, and a
/// body trickled a byte every 50 ms. Each is answered 408 at the body's deadline (300 ms here) and closed,
/// whatever the handler made of the error, on both drivers; a body that arrives in time is read.
#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_408_on_every_route() {
    for driver in [Driver::Pooled, Driver::Hyper] {
        let config = ServeConfig::builder()
            .driver(driver)
            .body_read_timeout_ms(300)
            .build()
            .unwrap();
        let served = Served::on_driver(config, form_app()).await;
        let mut never = served.open().await;
        let started = tokio::time::Instant::now();
        let request = post_with_length("/form", 1_000_000_000, b"{");
        let reply = within("the body's deadline", never.exchange(&request)).await;
        assert_eq!(reply.unwrap().head.status, 408, "{driver:?}");
        assert!(
            started.elapsed() >= Duration::from_millis(290),
            "{driver:?}"
        );
        assert!(
            never.closed_within(Duration::from_secs(10)).await,
            "{driver:?}"
        );

        let mut trickle = served.open().await;
        trickle
            .write(&post_with_length("/form", 100, b"a"))
            .await
            .unwrap();
        // Still sending a byte every 50 ms as the deadline nears.
        for _ in 0..4 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            trickle.write(b"a").await.unwrap();
        }
        let reply = within("the trickled body's answer", trickle.read_reply()).await;
        assert_eq!(reply.unwrap().head.status, 408, "{driver:?}");

        let mut honest = served.open().await;
        let reply = within(
            "an honest form",
            honest.exchange(&post_with_length("/form", 5, b"hello")),
        )
        .await;
        let reply = reply.unwrap();
        assert_eq!(
            (reply.head.status, reply.text()),
            (200, "5".to_owned()),
            "{driver:?}"
        );
        served.answers().await;
        served.stop().await;
    }
}

#[tokio::test]
async fn a_head_sent_a_byte_at_a_time_is_cut_off() {
    let served = Served::start(limits().build().unwrap()).await;
    let mut slow = served.open().await;
    let started = tokio::time::Instant::now();
    let head = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    let mut closed = false;
    for byte in head {
        if slow.write(std::slice::from_ref(byte)).await.is_err() {
            closed = true;
            break;
        }
        if slow.closed_within(Duration::from_millis(50)).await {
            closed = true;
            break;
        }
    }
    assert!(closed, "the trickled head kept its connection");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(350),
        "closed too early: {waited:?}"
    );
    // Meanwhile and afterwards, others are served.
    served.answers().await;
    served.stop().await;
}

#[tokio::test]
async fn many_slow_heads_are_all_closed_and_honest_clients_still_served() {
    let served = Served::start(limits().build().unwrap()).await;
    let mut slow = Vec::new();
    for _ in 0..200 {
        let mut connection = served.open().await;
        connection
            .write(b"GET / HTTP/1.1\r\nHost: 127")
            .await
            .unwrap();
        slow.push(connection);
    }
    served.answers().await;
    for connection in &mut slow {
        assert!(
            connection.closed_within(SETTLE).await,
            "a slow head stayed open"
        );
    }
    served.answers().await;
    served.stop().await;
}

#[tokio::test]
async fn an_idle_connection_is_closed_after_the_keep_alive_wait() {
    let served = Served::start(limits().build().unwrap()).await;
    // One that never sends anything, and one that goes quiet after an answer.
    let mut silent = served.open().await;
    let mut quiet = served.open().await;
    let reply = within("a first request", quiet.exchange(&get("/")))
        .await
        .unwrap();
    assert_eq!(reply.head.status, 200);
    // Within the wait, the connection still carries a second request.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let again = within("a second request", quiet.exchange(&get("/")))
        .await
        .unwrap();
    assert_eq!(again.head.status, 200);
    let started = tokio::time::Instant::now();
    assert!(
        quiet.closed_within(SETTLE).await,
        "the idle connection stayed open"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(700),
        "{:?}",
        started.elapsed()
    );
    assert!(
        silent.closed_within(SETTLE).await,
        "the silent connection stayed open"
    );
    served.stop().await;
}

#[tokio::test]
async fn a_slow_answer_is_not_an_idle_connection() {
    // The request takes longer than the header and keep-alive waits; neither applies while it is answered.
    let config = ServeConfig::builder()
        .header_read_timeout_ms(200)
        .keep_alive_timeout_ms(200)
        .build()
        .unwrap();
    let served = Served::start(config).await;
    let mut connection = served.open().await;
    let reply = within("a slow answer", connection.exchange(&get("/slow")))
        .await
        .unwrap();
    assert_eq!(reply.head.status, 200);
    assert_eq!(reply.body, b"slow");
    served.stop().await;
}

#[tokio::test]
async fn a_head_past_the_limit_is_431() {
    let served = Served::start(limits().max_header_bytes(8_192).build().unwrap()).await;
    let request = |pad: usize| {
        format!(
            "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: {}\r\n\r\n",
            "p".repeat(pad)
        )
    };
    let mut fits = served.open().await;
    let reply = within(
        "a head under the limit",
        fits.exchange(request(7_000).as_bytes()),
    )
    .await;
    assert_eq!(reply.unwrap().head.status, 200);
    let mut large = served.open().await;
    let reply = within(
        "a head over the limit",
        large.exchange(request(9_000).as_bytes()),
    )
    .await;
    assert_eq!(reply.unwrap().head.status, 431);
    assert!(large.closed_within(SETTLE).await);
    served.answers().await;
    served.stop().await;
}

#[tokio::test]
async fn past_the_connection_limit_a_client_waits_for_a_free_one() {
    let config = ServeConfig::builder()
        .max_connections(2)
        .keep_alive_timeout_ms(60_000)
        .build()
        .unwrap();
    let served = Served::start(config).await;
    let mut first = served.open().await;
    let mut second = served.open().await;
    for connection in [&mut first, &mut second] {
        let reply = within("a request", connection.exchange(&get("/")))
            .await
            .unwrap();
        assert_eq!(reply.head.status, 200);
    }
    // The kernel accepts the third, but the server does not serve it while two are open.
    let mut third = served.open().await;
    third.write(&get("/")).await.unwrap();
    let early = tokio::time::timeout(Duration::from_millis(400), third.read_reply()).await;
    assert!(
        early.is_err(),
        "a third connection was served past the limit"
    );
    drop(first);
    let reply = within("the third, once one closed", third.read_reply())
        .await
        .unwrap();
    assert_eq!(reply.head.status, 200);
    served.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_flood_at_the_connection_limit_keeps_no_one_out_on_either_driver() {
    for driver in [Driver::Pooled, Driver::Hyper] {
        let config = ServeConfig::builder()
            .driver(driver)
            .max_connections(50)
            .keep_alive_timeout_ms(60_000)
            .idle_at_capacity_ms(200)
            .build()
            .unwrap();
        let served = Served::on_driver(config, app()).await;
        // Twice as many attackers as connection slots, each holding a connection that never sends a byte and
        // opening another as soon as it is closed.
        let address = served.address;
        let flood: Vec<_> = (0..100)
            .map(|_| {
                tokio::spawn(async move {
                    loop {
                        if let Ok(mut idle) = Connection::open(address).await {
                            idle.closed_within(Duration::from_secs(120)).await;
                        }
                    }
                })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut slowest = Duration::ZERO;
        for _ in 0..20 {
            let started = tokio::time::Instant::now();
            let mut honest = served.open().await;
            let reply = within("an honest request", honest.exchange(&get("/")))
                .await
                .unwrap();
            assert_eq!(reply.head.status, 200);
            slowest = slowest.max(started.elapsed());
        }
        println!(
            "{}: 100 idle attackers on 50 connections, 20 honest requests, slowest answered in {slowest:?}",
            driver.name()
        );
        // Without the capacity rule each would wait for an idle connection's 60 s keep-alive wait.
        assert!(
            slowest < Duration::from_secs(3),
            "{}: an honest request waited {slowest:?}",
            driver.name()
        );
        for attacker in flood {
            attacker.abort();
        }
        served.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closing_connection_lingers_while_its_client_sends_but_not_past_a_shutdown() {
    for driver in [Driver::Pooled, Driver::Hyper] {
        let config = ServeConfig::builder().driver(driver).build().unwrap();
        let served = Served::on_driver(config, app()).await;
        let mut client = served.open().await;
        // A refused head: the server answers, ends its sending side and reads what still comes.
        client.write(b"GET\r\n\r\n").await.unwrap();
        let reply = within("the refusal", client.read_reply()).await.unwrap();
        assert_eq!(reply.head.status, 400, "{}", driver.name());
        assert!(
            client.closed_within(Duration::from_secs(2)).await,
            "{}: no end of stream",
            driver.name()
        );
        // The client keeps sending, so the linger would last its 30 s; a shutdown ends it at once.
        let sender = tokio::spawn(async move {
            for _ in 0..60 {
                if client.write(b"x").await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        tokio::time::sleep(Duration::from_millis(600)).await;
        let started = tokio::time::Instant::now();
        served.stop().await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{}: the shutdown waited {:?} for a lingering connection",
            driver.name(),
            started.elapsed()
        );
        sender.abort();
    }
}

#[tokio::test]
async fn two_host_headers_are_400_and_the_peer_address_is_known() {
    let served = Served::start(ServeConfig::default()).await;
    let mut connection = served.open().await;
    let reply = within(
        "two hosts",
        connection.exchange(b"GET / HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n"),
    )
    .await
    .unwrap();
    assert_eq!(reply.head.status, 400);
    assert!(
        reply.text().contains("Exactly one Host header"),
        "{}",
        reply.text()
    );
    // The connection goes on: the refusal read the whole (bodiless) request.
    let reply = within("the peer", connection.exchange(&get("/peer")))
        .await
        .unwrap();
    assert_eq!(reply.head.status, 200);
    assert!(reply.text().starts_with("127.0.0.1:"), "{}", reply.text());
    served.stop().await;
}

#[tokio::test]
async fn a_shutdown_lets_the_request_in_flight_finish() {
    let served = Served::start(ServeConfig::default()).await;
    let mut busy = served.open().await;
    let idle = served.open().await;
    busy.write(&get("/slow")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let address = served.address;
    let stopping = tokio::spawn(served.stop());
    let reply = within("the slow answer", busy.read_reply()).await.unwrap();
    assert_eq!(reply.head.status, 200);
    within("serve to return", stopping).await.unwrap();
    drop(idle);
    assert!(
        Connection::open(address).await.is_err(),
        "the listener is closed after a shutdown"
    );
}
