//! The identify endpoint under overload, over a real TCP socket: with 4 slots and 1,000 concurrent requests
//! against a store that blocks until released, exactly 4 reach the store, the other 996 are refused at once with
//! 503 and `Retry-After: 1`, and the in-flight count returns to 0 — also when clients disconnect mid-request.

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::stores::{Hook, Hooked};
use common::wire::{post_with_length, serve, wait_until, wait_until_free, within, Connection};
use janitor_axum::config::AdmissionConfig;
use janitor_axum::{Janitor, MemoryStores};
use tokio::sync::Semaphore;

// Browser and timezone give the lookup keys, so every admitted request reaches the (blocking) lookup.
const BODY: &[u8] = br#"{"signals":{"userAgent":"Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36","platform":"Linux x86_64","timezone":"Europe/Paris","screen":{"width":1920,"height":1080}}}"#;

fn request() -> Vec<u8> {
    post_with_length("/api/visitor", BODY.len(), BODY)
}

/// What the tests see of the store: how many lookups started, and the gate that holds them (no permit until the
/// test adds some).
struct Gate {
    calls: Arc<AtomicUsize>,
    gate: Arc<Semaphore>,
}

fn setup(slots: usize) -> (Janitor, Gate, Arc<AtomicUsize>) {
    let (calls, gate) = (Arc::new(AtomicUsize::new(0)), Arc::new(Semaphore::new(0)));
    let hook: Hook = {
        let (calls, gate) = (calls.clone(), gate.clone());
        Arc::new(move || {
            calls.fetch_add(1, Ordering::SeqCst);
            let gate = gate.clone();
            Box::pin(async move {
                let _ = gate.acquire().await;
            })
        })
    };
    let admission = AdmissionConfig::builder()
        .max_in_flight_requests(slots)
        .build()
        .unwrap();
    let config = common::config("overload")
        .admission(admission)
        .build()
        .unwrap();
    let stores = Hooked {
        stores: MemoryStores::new(),
        before_lookup: hook,
    };
    let janitor = Janitor::new(config, stores);
    let overloads = Arc::new(AtomicUsize::new(0));
    let counter = overloads.clone();
    janitor.admission().on_overload(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    (janitor, Gate { calls, gate }, overloads)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_slots_and_a_thousand_requests() {
    let (janitor, gated, overloads) = setup(4);
    let address = serve(janitor.router()).await;
    let tasks: Vec<_> = (0..1000)
        .map(|_| {
            tokio::spawn(async move {
                let mut connection = within("connect", Connection::open(address)).await.unwrap();
                within("exchange", connection.exchange(&request()))
                    .await
                    .unwrap()
            })
        })
        .collect();
    // The four admitted requests are parked in the store; everything else is answered already.
    wait_until("996 refusals", Duration::from_secs(20), || {
        overloads.load(Ordering::SeqCst) >= 996
    })
    .await;
    assert_eq!(
        gated.calls.load(Ordering::SeqCst),
        4,
        "exactly the admitted requests reach storage"
    );
    assert_eq!(janitor.admission().in_flight(), 4);
    gated.gate.add_permits(1_000);
    let mut statuses = std::collections::BTreeMap::new();
    for task in tasks {
        let reply = task.await.unwrap();
        if reply.status() == 503 {
            assert_eq!(reply.header("retry-after"), Some("1"));
            assert_eq!(reply.text(), r#"{"error":"Visitor measurement is busy"}"#);
        }
        *statuses.entry(reply.status()).or_insert(0) += 1;
    }
    assert_eq!(statuses, [(200, 4), (503, 996)].into_iter().collect());
    assert_eq!(overloads.load(Ordering::SeqCst), 996);
    assert_eq!(gated.calls.load(Ordering::SeqCst), 4);
    wait_until_free(janitor.admission()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_disconnect_release_their_slots() {
    let (janitor, gated, _) = setup(4);
    let address = serve(janitor.router()).await;
    for round in 0..3 {
        let mut connections = Vec::new();
        for _ in 0..4 {
            let mut connection = Connection::open(address).await.unwrap();
            connection.write(&request()).await.unwrap();
            connections.push(connection);
        }
        wait_until("four parked", Duration::from_secs(10), || {
            janitor.admission().in_flight() == 4
        })
        .await;
        drop(connections);
        wait_until_free(janitor.admission()).await;
        assert!(gated.calls.load(Ordering::SeqCst) >= 4 * (round + 1));
    }
    // The endpoint still answers.
    gated.gate.add_permits(10);
    let mut connection = Connection::open(address).await.unwrap();
    assert_eq!(connection.exchange(&request()).await.unwrap().status(), 200);
}

/// A refusal before the body is read: a small body is drained and the keep-alive connection serves the next
/// request; a body too large to drain gets `Connection: close` and the socket is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_requests_keep_or_close_the_connection() {
    let (janitor, gate, _) = setup(4);
    gate.gate.add_permits(100);
    let address = serve(janitor.router()).await;
    let plain = |length: usize, sent: &[u8]| {
        let mut request = format!(
            "POST /api/visitor HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\nContent-Length: {length}\r\n\r\n"
        )
        .into_bytes();
        request.extend_from_slice(sent);
        request
    };

    let mut connection = Connection::open(address).await.unwrap();
    let refused = within("415", connection.exchange(&plain(BODY.len(), BODY)))
        .await
        .unwrap();
    assert_eq!(refused.status(), 415);
    assert_eq!(
        refused.header("connection"),
        None,
        "a drained body keeps the connection"
    );
    let next = within("next request", connection.exchange(&request()))
        .await
        .unwrap();
    assert_eq!(
        next.status(),
        200,
        "the same connection serves the next request"
    );

    let mut connection = Connection::open(address).await.unwrap();
    let large = vec![b' '; 100];
    let refused = within("415 large", connection.exchange(&plain(1_000_000, &large)))
        .await
        .unwrap();
    assert_eq!(refused.status(), 415);
    assert_eq!(refused.header("connection"), Some("close"));
    assert!(
        connection.closed_within(Duration::from_secs(5)).await,
        "the server closes the connection"
    );
}
