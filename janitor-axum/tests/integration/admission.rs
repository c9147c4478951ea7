//! The admission layer over a real socket: the bound, the refusal on the wire, what happens to a refused
//! request's unread body, and one limit shared by several routes.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get as route_get;
use axum::Router;
use common::wire::{
    admission_with, get, post_with_length, serve, wait_until, wait_until_free, within, Connection,
    Reply, SETTLE,
};
use janitor_axum::admission::{Admission, AdmissionConfig, MAX_IN_FLIGHT_REQUESTS};
use tokio::sync::{mpsc, Semaphore};

const BUSY_JSON: &str = r#"{"error":"Visitor measurement is busy"}"#;

fn count_overloads(admission: &Admission) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&count);
    admission.on_overload(move || {
        counted.fetch_add(1, Ordering::SeqCst);
    });
    count
}

/// Where the slow handler waits: it counts its arrival, then blocks until the test opens the gate.
#[derive(Clone)]
struct Gate {
    reached: Arc<AtomicUsize>,
    open: Arc<Semaphore>,
}

impl Gate {
    fn new() -> Gate {
        Gate {
            reached: Arc::new(AtomicUsize::new(0)),
            open: Arc::new(Semaphore::new(0)),
        }
    }

    async fn pass(&self) {
        self.reached.fetch_add(1, Ordering::SeqCst);
        // Closing the semaphore is what opens the gate, for every waiter at once and for good.
        let _ = self.open.acquire().await;
    }

    fn reached(&self) -> usize {
        self.reached.load(Ordering::SeqCst)
    }

    fn open(&self) {
        self.open.close();
    }
}

/// `/slow` waits at the gate, `/fast` answers at once; both behind `admission`.
fn app(admission: &Admission, gate: &Gate) -> Router {
    let gate = gate.clone();
    Router::new()
        .route(
            "/slow",
            route_get(move || async move {
                gate.pass().await;
                "released"
            })
            .post(|| async { "unreachable while full" }),
        )
        .route("/fast", route_get(|| async { "fast" }))
        .layer(admission.layer())
}

fn assert_busy(reply: &Reply, close: bool) {
    assert_eq!(reply.status(), 503, "{reply:?}");
    assert_eq!(reply.text(), BUSY_JSON);
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(reply.header("cache-control"), Some("private, no-store"));
    assert_eq!(reply.header("vary"), Some("Cookie, Origin, Authorization"));
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        reply.header("content-length"),
        Some(BUSY_JSON.len().to_string().as_str())
    );
    assert_eq!(
        reply.header("connection"),
        close.then_some("close"),
        "{reply:?}"
    );
}

/// Holds one slot with a request waiting at the gate; returns the connection that will get its answer.
async fn hold_slot(
    address: std::net::SocketAddr,
    gate: &Gate,
    admission: &Admission,
) -> Connection {
    let before = gate.reached();
    let mut holder = Connection::open(address).await.unwrap();
    holder.write(&get("/slow")).await.unwrap();
    wait_until("the holder reaches the handler", SETTLE, || {
        gate.reached() == before + 1
    })
    .await;
    assert!(admission.in_flight() >= 1);
    holder
}

#[test]
fn config_bounds() {
    assert_eq!(MAX_IN_FLIGHT_REQUESTS.default, 64);
    assert_eq!(Admission::default().max_in_flight(), 64);
    for good in [1, 1024] {
        assert_eq!(admission_with(good).max_in_flight(), good);
    }
    // Out-of-range values are refused by the configuration itself (its unit tests in `admission::config`).
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_slots_against_a_thousand_concurrent_requests() {
    let admission = admission_with(4);
    let overloads = count_overloads(&admission);
    let gate = Gate::new();
    let address = serve(app(&admission, &gate)).await;

    let (replies, mut received) = mpsc::unbounded_channel();
    for _ in 0..1000 {
        let replies = replies.clone();
        tokio::spawn(async move {
            let reply = async {
                Connection::open(address)
                    .await?
                    .exchange(&get("/slow"))
                    .await
            };
            let _ = replies.send(reply.await);
        });
    }
    for _ in 0..996 {
        let reply = within("a refusal", received.recv()).await.unwrap();
        assert_busy(&reply.unwrap(), false);
    }
    wait_until("four requests reach the handler", SETTLE, || {
        gate.reached() == 4
    })
    .await;
    assert_eq!(overloads.load(Ordering::SeqCst), 996);
    assert_eq!(admission.in_flight(), 4);
    assert!(
        received.try_recv().is_err(),
        "an admitted request finished early"
    );

    gate.open();
    for _ in 0..4 {
        let reply = within("an admitted answer", received.recv()).await.unwrap();
        let reply = reply.unwrap();
        assert_eq!((reply.status(), reply.text().as_str()), (200, "released"));
    }
    wait_until_free(&admission).await;
    assert_eq!(gate.reached(), 4);

    let mut connection = Connection::open(address).await.unwrap();
    for _ in 0..20 {
        let reply = within("recovery", connection.exchange(&get("/slow")))
            .await
            .unwrap();
        assert_eq!(reply.status(), 200);
    }
    assert_eq!(overloads.load(Ordering::SeqCst), 996);
    assert_eq!(gate.reached(), 24);
    assert_eq!(admission.in_flight(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_overload_callback_still_yields_the_refusal() {
    let admission = admission_with(1);
    admission.on_overload(|| panic!("the metrics sink failed"));
    let gate = Gate::new();
    let address = serve(app(&admission, &gate)).await;
    let mut holder = hold_slot(address, &gate, &admission).await;

    let mut refused = Connection::open(address).await.unwrap();
    for _ in 0..3 {
        let reply = within("a refusal", refused.exchange(&get("/fast")))
            .await
            .unwrap();
        assert_busy(&reply, false);
    }
    gate.open();
    let reply = within("the holder", holder.read_reply()).await.unwrap();
    assert_eq!(reply.status(), 200);
    wait_until_free(&admission).await;
    let reply = within("after", refused.exchange(&get("/fast")))
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_small_refused_body_is_drained_and_the_connection_kept() {
    let admission = admission_with(1);
    let gate = Gate::new();
    let address = serve(app(&admission, &gate)).await;
    let mut holder = hold_slot(address, &gate, &admission).await;

    let mut client = Connection::open(address).await.unwrap();
    let body = br#"{"signals":{"userAgent":"x"}}"#;
    let reply = within(
        "refusal",
        client.exchange(&post_with_length("/slow", body.len(), body)),
    )
    .await
    .unwrap();
    assert_busy(&reply, false);
    // A body that arrives after the head is waited for, not abandoned.
    client
        .write(&post_with_length("/slow", body.len(), b""))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    client.write(body).await.unwrap();
    let reply = within("refusal", client.read_reply()).await.unwrap();
    assert_busy(&reply, false);
    // An empty body has nothing to drain either.
    let reply = within(
        "refusal",
        client.exchange(&post_with_length("/slow", 0, b"")),
    )
    .await
    .unwrap();
    assert_busy(&reply, false);
    // The body of the first refusal is never read by the handler; only the holder is there.
    assert_eq!(gate.reached(), 1);

    gate.open();
    within("the holder", holder.read_reply()).await.unwrap();
    wait_until_free(&admission).await;
    let reply = within(
        "second request on the same connection",
        client.exchange(&get("/fast")),
    )
    .await
    .unwrap();
    assert_eq!((reply.status(), reply.text().as_str()), (200, "fast"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_chunked_or_expected_body_closes_the_connection() {
    let admission = admission_with(1);
    let gate = Gate::new();
    let address = serve(app(&admission, &gate)).await;
    let _holder = hold_slot(address, &gate, &admission).await;

    let large = post_with_length("/slow", 16_385, b"{\"signals\":");
    let chunked = b"POST /slow HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
        .to_vec();
    let mut expecting =
        b"POST /slow HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\n".to_vec();
    expecting.extend_from_slice(b"Content-Length: 10\r\n\r\n");
    for request in [large, chunked, expecting] {
        let mut client = Connection::open(address).await.unwrap();
        let reply = within("refusal", client.exchange(&request)).await.unwrap();
        assert_busy(&reply, true);
        assert!(
            client.closed_within(SETTLE).await,
            "the server kept a connection with a half-read body"
        );
    }
    assert_eq!(admission.in_flight(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_at_the_drain_limit_is_drained_and_one_that_stalls_closes() {
    let admission = Admission::new(
        AdmissionConfig::builder()
            .max_in_flight_requests(1)
            .max_drain_bytes(64)
            .drain_timeout_ms(200)
            .build()
            .unwrap(),
    );
    let gate = Gate::new();
    let address = serve(app(&admission, &gate)).await;
    let _holder = hold_slot(address, &gate, &admission).await;

    let mut client = Connection::open(address).await.unwrap();
    let reply = within(
        "refusal",
        client.exchange(&post_with_length("/slow", 64, &[b'a'; 64])),
    )
    .await
    .unwrap();
    assert_busy(&reply, false);
    let reply = within(
        "refusal",
        client.exchange(&post_with_length("/slow", 65, &[b'a'; 65])),
    )
    .await
    .unwrap();
    assert_busy(&reply, true);
    assert!(client.closed_within(SETTLE).await);

    // Declared small, but only part of it ever arrives: the drain gives up and closes.
    let mut stalled = Connection::open(address).await.unwrap();
    let started = tokio::time::Instant::now();
    let reply = within(
        "refusal",
        stalled.exchange(&post_with_length("/slow", 10, b"abc")),
    )
    .await
    .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_busy(&reply, true);
    assert!(stalled.closed_within(SETTLE).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_admission_on_two_routes_is_one_limit() {
    let admission = admission_with(2);
    let overloads = count_overloads(&admission);
    let gate = Gate::new();
    let (first, second) = (gate.clone(), gate.clone());
    // Two separately made layers on two differently built routes.
    let router = Router::new()
        .route(
            "/a",
            route_get(move || async move {
                first.pass().await;
                "a"
            })
            .layer(admission.layer()),
        )
        .merge(
            Router::new()
                .route(
                    "/b",
                    route_get(move || async move {
                        second.pass().await;
                        "b"
                    }),
                )
                .route_layer(admission.clone().layer()),
        );
    let address = serve(router).await;

    let mut on_a = Connection::open(address).await.unwrap();
    on_a.write(&get("/a")).await.unwrap();
    let mut on_b = Connection::open(address).await.unwrap();
    on_b.write(&get("/b")).await.unwrap();
    wait_until("both reach their handler", SETTLE, || gate.reached() == 2).await;
    assert_eq!(admission.in_flight(), 2);

    let mut third = Connection::open(address).await.unwrap();
    for path in ["/a", "/b"] {
        let reply = within("refusal", third.exchange(&get(path))).await.unwrap();
        assert_busy(&reply, false);
    }
    assert_eq!(overloads.load(Ordering::SeqCst), 2);

    gate.open();
    let a = within("a", on_a.read_reply()).await.unwrap();
    let b = within("b", on_b.read_reply()).await.unwrap();
    assert_eq!((a.text().as_str(), b.text().as_str()), ("a", "b"));
    wait_until_free(&admission).await;
    for path in ["/a", "/b"] {
        let reply = within("after", third.exchange(&get(path))).await.unwrap();
        assert_eq!(reply.status(), 200);
    }
}

/// One slot, `waiting` requests allowed to wait `ms` for it, served with its overload count and gate.
async fn one_slot_with_a_wait(
    waiting: usize,
    ms: u64,
) -> (Admission, Arc<AtomicUsize>, Gate, std::net::SocketAddr) {
    let config = AdmissionConfig::builder()
        .max_in_flight_requests(1)
        .max_waiting_requests(waiting)
        .slot_wait_ms(ms)
        .build()
        .unwrap();
    let admission = Admission::new(config);
    let overloads = count_overloads(&admission);
    let gate = Gate::new();
    let address = serve(app(&admission, &gate)).await;
    (admission, overloads, gate, address)
}

/// With a slot wait, a request that finds every slot taken waits its turn instead of being refused: it is
/// admitted as soon as a slot frees; a request past the waiters' bound is refused at once, and one whose wait
/// runs out is refused then, with the slot still held by the first. Nothing is left waiting or held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bounded_wait_admits_a_burst_and_refuses_past_its_bounds() {
    let (admission, overloads, gate, address) = one_slot_with_a_wait(1, 1_000).await;

    let mut holder = hold_slot(address, &gate, &admission).await;
    let mut waiter = Connection::open(address).await.unwrap();
    waiter.write(&get("/fast")).await.unwrap();
    wait_until("the second request waits", SETTLE, || {
        admission.waiting() == 1
    })
    .await;
    // The waiters' bound is one: a third request is refused without waiting.
    let refused = within("a refusal at once", async {
        Connection::open(address)
            .await?
            .exchange(&get("/fast"))
            .await
    })
    .await
    .unwrap();
    assert_busy(&refused, false);
    assert_eq!(overloads.load(Ordering::SeqCst), 1);

    gate.open();
    let released = within("the holder's answer", holder.read_reply())
        .await
        .unwrap();
    assert_eq!(released.status(), 200);
    let admitted = within("the waiter's answer", waiter.read_reply())
        .await
        .unwrap();
    assert_eq!((admitted.status(), admitted.text().as_str()), (200, "fast"));
    wait_until_free(&admission).await;
    assert_eq!(admission.waiting(), 0);
    assert_eq!(
        overloads.load(Ordering::SeqCst),
        1,
        "the waiter was never refused"
    );
}

/// Through the layer on a real socket: once a wait ran out, a request that finds the slot still taken is
/// refused without waiting (the overload window, `admission/wait.rs`). Its answer comes before the second-long
/// wait could have ended; had it waited, no timer could have answered it sooner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_wait_runs_out_the_next_request_is_refused_without_waiting() {
    let (admission, overloads, gate, address) = one_slot_with_a_wait(4, 1_000).await;
    let mut holder = hold_slot(address, &gate, &admission).await;
    let refuse = || async {
        let started = std::time::Instant::now();
        let reply = within("a refusal", async {
            Connection::open(address)
                .await?
                .exchange(&get("/fast"))
                .await
        })
        .await
        .unwrap();
        assert_busy(&reply, false);
        started.elapsed()
    };
    assert!(
        refuse().await >= Duration::from_millis(1_000),
        "the first waits"
    );
    let second = refuse().await;
    assert!(second < Duration::from_millis(1_000), "{second:?}");
    assert_eq!(overloads.load(Ordering::SeqCst), 2);
    assert_eq!((admission.waiting(), admission.in_flight()), (0, 1));
    gate.open();
    let released = within("the holder", holder.read_reply()).await.unwrap();
    assert_eq!(released.status(), 200);
    wait_until_free(&admission).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_runs_out_is_a_refusal_and_holds_nothing() {
    let (admission, overloads, gate, address) = one_slot_with_a_wait(4, 50).await;
    let mut holder = hold_slot(address, &gate, &admission).await;
    let refused = within("a refusal after the wait", async {
        Connection::open(address)
            .await?
            .exchange(&get("/fast"))
            .await
    })
    .await
    .unwrap();
    assert_busy(&refused, false);
    assert_eq!(overloads.load(Ordering::SeqCst), 1);
    assert_eq!((admission.waiting(), admission.in_flight()), (0, 1));
    gate.open();
    assert_eq!(
        within("the holder", holder.read_reply())
            .await
            .unwrap()
            .status(),
        200
    );
    wait_until_free(&admission).await;
}
