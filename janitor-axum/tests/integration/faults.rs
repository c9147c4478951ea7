//! The database fails under load: on a disposable cluster this test starts, identifications run over real
//! sockets while the backends are terminated, the server is stopped for three seconds and started again, and
//! the observations table is locked. Every answer must be 200 or 503 (never 500, never a hang past the
//! deadlines), the first 200 must come within a second of the database's return, and every visitor id
//! acknowledged with a 200 must be in the database afterwards.

use crate::common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::load::{keep_asking, post, serve_on_database};
use janitor_sql::{Database, DatabaseConfig};
use janitor_test_support::cluster::{free_port, Cluster, ClusterSpec};
use tokio::time::Instant;

/// Clients identifying at once, each on its own keep-alive connection.
const CLIENTS: usize = 8;
/// Longest any answer may take: the statement timeout (2 s), the pool's wait and connect timeouts, slack.
const LONGEST_ANSWER: Duration = Duration::from_secs(5);

/// Client `n`'s identification number `round`: each client its own screen, each round its own timezone, so
/// most identifications create a visitor.
fn request(n: usize, round: usize) -> (String, Vec<u8>) {
    let body = format!(
        r#"{{"signals":{{"userAgent":"Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0 Safari/537.36","timezone":"Fault/{round}","screen":{{"width":{w},"height":900}}}}}}"#,
        w = 1000 + n
    );
    ("identify".to_owned(), post("/api/visitor", &body))
}

/// A pool of one session on the cluster, outside the application's.
fn admin(url: &str) -> Database {
    Database::new(
        DatabaseConfig::builder(url)
            .max_connections(1)
            .build()
            .unwrap(),
    )
    .expect("an admin pool")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_500_no_hang_and_no_lost_visitor_through_database_faults() {
    let dir = std::env::temp_dir().join(format!("janitor-fault-test-{}", std::process::id()));
    let spec = ClusterSpec::new("janitor-fault-test", dir, free_port().unwrap());
    let cluster = Arc::new(Mutex::new(
        tokio::task::spawn_blocking(move || Cluster::start(spec))
            .await
            .unwrap()
            .expect("a disposable cluster"),
    ));
    let url = cluster.lock().unwrap().url();
    let (database, _janitor, address) =
        serve_on_database(&url, "faults", |_| axum::Router::new()).await;

    let stop = Arc::new(AtomicBool::new(false));
    let log = Arc::new(Mutex::new(Vec::new()));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|n| {
            tokio::spawn(keep_asking(
                address,
                Arc::clone(&stop),
                Arc::clone(&log),
                LONGEST_ANSWER * 2,
                move |round| request(n, round),
            ))
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;

    // 1. Every session of the application is terminated.
    let terminated: i64 = admin(&url)
        .pool()
        .get()
        .await
        .unwrap()
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert!(terminated > 0, "the application had sessions to terminate");
    tokio::time::sleep(Duration::from_secs(1)).await;

    // 2. The server stops for three seconds, then starts again.
    let paused = Arc::clone(&cluster);
    tokio::task::spawn_blocking(move || paused.lock().unwrap().pause())
        .await
        .unwrap()
        .expect("the server stops");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let resumed = Arc::clone(&cluster);
    tokio::task::spawn_blocking(move || resumed.lock().unwrap().resume())
        .await
        .unwrap()
        .expect("the server starts again");
    let back = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;

    // 3. The observations table is locked for three seconds, longer than the statement timeout.
    let locks = admin(&url);
    let locker = locks.pool().get().await.unwrap();
    locker
        .batch_execute("BEGIN; LOCK TABLE observations IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;
    locker.batch_execute("COMMIT").await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;

    stop.store(true, Ordering::SeqCst);
    for client in clients {
        client.await.unwrap();
    }
    let answers = std::mem::take(&mut *log.lock().unwrap());
    let count = |status| answers.iter().filter(|a| a.status == status).count();
    println!(
        "fault test: {} answers, {} of them 200 and {} 503, {terminated} sessions terminated",
        answers.len(),
        count(200),
        count(503)
    );
    for answer in &answers {
        assert!(
            matches!(answer.status, 200 | 503),
            "answered {}",
            answer.status
        );
        assert!(
            answer.status != 503 || answer.retry_after.is_some(),
            "a 503 without Retry-After"
        );
        let took = answer.answered - answer.sent;
        assert!(took <= LONGEST_ANSWER, "an answer took {took:?}");
    }
    assert!(count(503) > 0, "the faults were seen by no request");
    let first_back = answers
        .iter()
        .filter(|a| a.status == 200 && a.answered >= back)
        .map(|a| a.answered)
        .min()
        .expect("a 200 after the database came back");
    println!(
        "fault test: first 200 {:?} after the database came back",
        first_back - back
    );
    assert!(
        first_back - back <= Duration::from_secs(1),
        "{:?}",
        first_back - back
    );

    let acknowledged: BTreeSet<String> = answers
        .iter()
        .filter(|a| a.status == 200)
        .map(|a| a.visitor_id().expect("a 200 names its visitor"))
        .collect();
    let ids: Vec<&str> = acknowledged.iter().map(String::as_str).collect();
    let stored: i64 = admin(&url)
        .pool()
        .get()
        .await
        .unwrap()
        .query_one("SELECT count(*) FROM visitors WHERE id = ANY($1)", &[&ids])
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        stored as usize,
        acknowledged.len(),
        "acknowledged visitors were lost"
    );
    drop(database);
    tokio::task::spawn_blocking(move || drop(cluster))
        .await
        .unwrap();
}
