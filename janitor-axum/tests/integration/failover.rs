//! Failover on PostgreSQL's own replication: a primary and a hot standby this test starts (streaming, with
//! synchronous commit), the application on a multi-host connection string with
//! `target_session_attrs=read-write`, identifications and evidence recordings over real sockets. The primary
//! is killed (`pg_ctl stop -m immediate`), the standby promoted (`pg_ctl promote`) a second later, and the load
//! goes on. Every answer must be 200 or 503 with `Retry-After` (never 500, never a hang), the first 200 must
//! come soon after the promotion without restarting anything, and every visitor and event acknowledged with a
//! 200 must be on the new primary.

use crate::common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use common::load::{keep_asking, post as post_request, serve_on_database, Answer};
use janitor_axum::evidence::EvidenceError;
use janitor_axum::evidence::{Action, EventInput, EventType};
use janitor_axum::handle::StoreError;
use janitor_axum::{Janitor, Refusal};
use janitor_sql::{Database, DatabaseConfig};
use janitor_test_support::cluster::{free_port, Cluster, ClusterSpec};
use tokio::time::Instant;

/// Clients identifying at once, and clients recording events, each on its own keep-alive connection.
const IDENTIFYING: usize = 6;
const RECORDING: usize = 2;
/// Longest any answer may take: the statement timeout (2 s), the pool's wait and connect timeouts, slack.
const LONGEST_ANSWER: Duration = Duration::from_secs(5);
/// What a failover manager would take to notice the lost primary before promoting the standby.
const DETECTION: Duration = Duration::from_secs(1);
/// The longest wait for the first 200 after the standby accepts writes.
const RECOVERY: Duration = Duration::from_secs(2);

/// The event of `id`, as the application's route records it.
fn event(janitor: &Janitor, id: &str) -> EventInput {
    EventInput::builder(id, EventType::LoginSuccess)
        .action(Action::SignIn)
        .subject(janitor.evidence().subject_id("failover"))
        .build()
        .expect("a valid event")
}

/// An application route that records an event under the client's id: storage that cannot answer is the
/// endpoint's 503 with `Retry-After`; anything else would be a fault of the library, a 500.
async fn record(State(janitor): State<Janitor>, Path(id): Path<String>) -> Response {
    match janitor.evidence().record(&event(&janitor, &id)).await {
        Ok(_) => axum::http::StatusCode::OK.into_response(),
        Err(EvidenceError::Store(StoreError::Unavailable(_))) => {
            Refusal::Unavailable.for_route().into_response()
        }
        Err(other) => (
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            other.to_string(),
        )
            .into_response(),
    }
}

/// Identification `round` of client `n`: each its own screen and timezone, so each creates a visitor.
fn identification(n: usize, round: usize) -> (String, Vec<u8>) {
    let body = format!(
        r#"{{"signals":{{"userAgent":"Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36","timezone":"Failover/{round}","screen":{{"width":{w},"height":900}}}}}}"#,
        w = 1000 + n
    );
    ("identify".to_owned(), post_request("/api/visitor", &body))
}

/// Recording `round` of client `n`, under an id of its own.
fn recording(n: usize, round: usize) -> (String, Vec<u8>) {
    let id = format!("failover-{n}-{round}");
    let request = post_request(&format!("/events/{id}"), "{}");
    (id, request)
}

fn spec(name: &str) -> ClusterSpec {
    let dir = std::env::temp_dir().join(format!(
        "janitor-failover-test-{}-{name}",
        std::process::id()
    ));
    ClusterSpec::new("janitor-failover-test", dir, free_port().unwrap())
}

/// Runs `change` on a cluster off the runtime's threads (the server programs block).
async fn on_cluster(cluster: &Arc<Mutex<Cluster>>, change: fn(&mut Cluster) -> Result<(), String>) {
    let cluster = Arc::clone(cluster);
    tokio::task::spawn_blocking(move || change(&mut cluster.lock().unwrap()))
        .await
        .unwrap()
        .expect("the cluster changes as asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_standby_takes_over_with_only_200_and_503_and_nothing_acknowledged_lost() {
    let (primary, standby) = tokio::task::spawn_blocking(|| {
        let mut primary_spec = spec("primary");
        primary_spec
            .settings
            .push(("synchronous_standby_names".into(), "*".into()));
        let primary = Cluster::start(primary_spec).expect("a primary");
        let standby = Cluster::start_standby(spec("standby"), &primary).expect("a standby");
        (primary, standby)
    })
    .await
    .unwrap();
    let url = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
        primary.port(),
        standby.port()
    );
    let standby_url = standby.url();
    let (primary, standby) = (Arc::new(Mutex::new(primary)), Arc::new(Mutex::new(standby)));
    let (database, janitor, address) = serve_on_database(&url, "failover", |janitor| {
        Router::new()
            .route("/events/{id}", post(record))
            .with_state(janitor.clone())
    })
    .await;

    let stop = Arc::new(AtomicBool::new(false));
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut clients = Vec::new();
    for n in 0..IDENTIFYING + RECORDING {
        let (stop, log) = (Arc::clone(&stop), Arc::clone(&log));
        clients.push(tokio::spawn(async move {
            if n < IDENTIFYING {
                keep_asking(address, stop, log, LONGEST_ANSWER * 2, move |round| {
                    identification(n, round)
                })
                .await
            } else {
                keep_asking(address, stop, log, LONGEST_ANSWER * 2, move |round| {
                    recording(n, round)
                })
                .await
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1_500)).await;

    // The crash begins when pg_ctl is asked; requests fail from then on.
    let crashed = Instant::now();
    on_cluster(&primary, Cluster::crash).await;
    tokio::time::sleep(DETECTION).await;
    on_cluster(&standby, Cluster::promote).await;
    let promoted = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::SeqCst);
    for client in clients {
        client.await.unwrap();
    }

    let answers: Vec<Answer> = std::mem::take(&mut *log.lock().unwrap());
    check_answers(&answers, crashed, promoted);
    check_nothing_lost(&answers, &janitor.clone(), &standby_url).await;
    drop((janitor, database));
    tokio::task::spawn_blocking(move || drop((primary, standby)))
        .await
        .unwrap();
}

/// Only 200 and 503 with `Retry-After`, each within the longest wait; refusals seen; a 200 soon after the
/// promotion.
fn check_answers(answers: &[Answer], crashed: Instant, promoted: Instant) {
    let count = |status| answers.iter().filter(|a| a.status == status).count();
    for answer in answers {
        assert!(
            matches!(answer.status, 200 | 503),
            "{} answered {}: {}",
            answer.asked,
            answer.status,
            String::from_utf8_lossy(&answer.body)
        );
        assert!(
            answer.status != 503 || answer.retry_after.is_some(),
            "{}: a 503 without Retry-After: {}",
            answer.asked,
            String::from_utf8_lossy(&answer.body)
        );
        let took = answer.answered - answer.sent;
        assert!(took <= LONGEST_ANSWER, "an answer took {took:?}");
    }
    let refused: Vec<&Answer> = answers.iter().filter(|a| a.status == 503).collect();
    assert!(
        !refused.is_empty(),
        "the lost primary was seen by no request"
    );
    let first_back = answers
        .iter()
        .filter(|a| a.status == 200 && a.sent >= promoted)
        .map(|a| a.answered)
        .min()
        .expect("a 200 after the promotion");
    let last_refused = refused.iter().map(|a| a.answered).max().unwrap();
    println!(
        "failover test: {} answers, {} × 200 and {} × 503; 503s from {:?} to {:?} after the crash began; \
         promotion done {:?} after it; first 200 {:?} after the promotion",
        answers.len(),
        count(200),
        count(503),
        refused.iter().map(|a| a.answered).min().unwrap().saturating_duration_since(crashed),
        last_refused.saturating_duration_since(crashed),
        promoted - crashed,
        first_back - promoted,
    );
    assert!(
        first_back - promoted <= RECOVERY,
        "{:?}",
        first_back - promoted
    );
}

/// Every visitor and every event acknowledged with a 200 is on the promoted standby.
async fn check_nothing_lost(answers: &[Answer], janitor: &Janitor, standby_url: &str) {
    let visitors: BTreeSet<String> = answers
        .iter()
        .filter(|a| a.status == 200 && a.asked == "identify")
        .map(|a| a.visitor_id().expect("a 200 names its visitor"))
        .collect();
    let events: Vec<&str> = answers
        .iter()
        .filter(|a| a.status == 200 && a.asked.starts_with("failover-"))
        .map(|a| a.asked.as_str())
        .collect();
    assert!(!visitors.is_empty() && !events.is_empty());
    let new_primary = Database::new(
        DatabaseConfig::builder(standby_url)
            .max_connections(1)
            .build()
            .unwrap(),
    )
    .unwrap();
    let client = new_primary
        .pool()
        .get()
        .await
        .expect("the promoted standby");
    let ids: Vec<&str> = visitors.iter().map(String::as_str).collect();
    let stored: i64 = client
        .query_one("SELECT count(*) FROM visitors WHERE id = ANY($1)", &[&ids])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        stored as usize,
        visitors.len(),
        "acknowledged visitors were lost"
    );
    // Recording an event again with the same id and content records nothing when the first one is stored.
    for id in &events {
        let again = janitor
            .evidence()
            .record(&event(janitor, id))
            .await
            .unwrap();
        assert!(!again.recorded, "acknowledged event {id} was lost");
    }
    println!(
        "failover test: {} acknowledged visitors and {} acknowledged events, all on the new primary",
        visitors.len(),
        events.len()
    );
}
