//! The cookieless lookup on a read replica: a primary and a hot standby this test starts (PostgreSQL's own
//! streaming replication). Lookups read the standby while it keeps up; with its replay paused past the lag
//! bound they read the primary, and find what was written since; with replay resumed they go back; with the
//! standby down they read the primary without an error. Every other statement stays on the primary.
//!
//! A standby that goes silent (its connections open, nothing coming back) is the tests' server behind a relay
//! the test silences: it reads as a primary, which the lookup reads, until the relay holds every byte.

use std::net::{SocketAddr, ToSocketAddrs};
use std::str::FromStr;
use std::time::{Duration, Instant};

use janitor_core::identification::candidates::probes_for;
use janitor_core::testing::visitor;
use janitor_core::testing::visitor_store::observation;
use janitor_core::{Retention, VisitorId, VisitorStore};
use janitor_sql::testing::{database_url, with_schemas};
use janitor_sql::{
    Database, DatabaseConfig, LookupReplica, PgVisitorStore, ReplicaState, SetupError,
};
use janitor_test_support::cluster::{free_port, Cluster, ClusterSpec};
use janitor_test_support::relay::Relay;

use janitor_core::testing::T0;

const MAX_LAG_MS: u64 = 200;
const CHECK_MS: u64 = 50;

fn spec(name: &str) -> ClusterSpec {
    let dir = std::env::temp_dir().join(format!(
        "janitor-replica-test-{}-{name}",
        std::process::id()
    ));
    ClusterSpec::new("janitor-replica-test", dir, free_port().unwrap())
}

fn pool(url: &str, schema: Option<&str>) -> Database {
    let mut builder = DatabaseConfig::builder(url)
        .max_connections(2)
        .connect_timeout_ms(1_000)
        .wait_timeout_ms(1_000);
    if let Some(schema) = schema {
        builder = builder.schema(schema);
    }
    Database::new(builder.build().unwrap()).unwrap()
}

/// Runs `sql` on the server behind `database`, outside the stores.
async fn run(database: &Database, sql: &str) {
    database
        .pool()
        .get()
        .await
        .unwrap()
        .batch_execute(sql)
        .await
        .unwrap();
}

/// Waits until the standby has replayed everything the primary wrote so far.
async fn caught_up(primary: &Database, standby: &Database) {
    let client = primary.pool().get().await.unwrap();
    let lsn: String = client
        .query_one("SELECT pg_current_wal_lsn()::text", &[])
        .await
        .unwrap()
        .get(0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let standby = standby.pool().get().await.unwrap();
    loop {
        let replayed: bool = standby
            .query_one(
                "SELECT pg_last_wal_replay_lsn() >= $1::text::pg_lsn",
                &[&lsn],
            )
            .await
            .unwrap()
            .get(0);
        if replayed {
            return;
        }
        assert!(Instant::now() < deadline, "the standby did not catch up");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Saves visitor `n` with observation `tag` on the primary.
async fn save(store: &PgVisitorStore, n: u64, tag: &str) {
    store.create_visitor(&visitor(n), T0).await.unwrap();
    store
        .save_observation(&visitor(n), &observation(tag), T0)
        .await
        .unwrap();
}

/// The visitors a lookup for observation `tag` finds, and how many statements each pool ran for it.
async fn look_up(
    store: &PgVisitorStore,
    tag: &str,
    pools: (&Database, &Database),
) -> (Vec<VisitorId>, u64, u64) {
    let before = (pools.0.statements_executed(), pools.1.statements_executed());
    let rows = store
        .find_candidate_rows(&probes_for(&observation(tag)), T0)
        .await
        .expect("a lookup never fails while the primary answers");
    let mut found: Vec<VisitorId> = rows.into_iter().map(|row| row.visitor_id).collect();
    found.sort();
    found.dedup();
    (
        found,
        pools.0.statements_executed() - before.0,
        pools.1.statements_executed() - before.1,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lookup_reads_the_replica_within_its_lag_bound_and_the_primary_otherwise() {
    let (primary_cluster, standby_cluster) = tokio::task::spawn_blocking(|| {
        let primary = Cluster::start(spec("primary")).expect("a primary");
        let standby = Cluster::start_standby(spec("standby"), &primary).expect("a standby");
        (primary, standby)
    })
    .await
    .unwrap();
    let primary = pool(&primary_cluster.url(), None);
    let standby = pool(&standby_cluster.url(), None);
    primary.migrate().await.unwrap();
    let replica = LookupReplica::new(standby.clone(), MAX_LAG_MS, CHECK_MS).unwrap();
    let store = PgVisitorStore::new(primary.clone(), Retention::default())
        .with_lookup_replica(replica.clone())
        .unwrap();
    let pools = (&primary, &standby);

    // Caught up: the lookup reads the standby, and only the lookup.
    save(&store, 1, "a").await;
    caught_up(&primary, &standby).await;
    let (found, on_primary, on_standby) = look_up(&store, "a", pools).await;
    assert_eq!(found, [visitor(1)]);
    assert_eq!(
        (on_primary, on_standby),
        (0, 2),
        "a lag reading, then the lookup"
    );
    assert!(matches!(
        replica.last_state(),
        Some(ReplicaState::Replaying { .. })
    ));

    // Replay paused while the primary writes: past the bound, the primary answers, with the new visitor.
    run(&standby, "SELECT pg_wal_replay_pause()").await;
    tokio::time::sleep(Duration::from_millis(MAX_LAG_MS + CHECK_MS)).await;
    save(&store, 2, "b").await;
    tokio::time::sleep(Duration::from_millis(MAX_LAG_MS + CHECK_MS)).await;
    let (found, on_primary, _) = look_up(&store, "b", pools).await;
    assert!(found.contains(&visitor(2)), "{found:?}");
    assert_eq!(on_primary, 1);
    match replica.last_state() {
        Some(ReplicaState::Replaying { lag }) => {
            assert!(lag > Duration::from_millis(MAX_LAG_MS), "{lag:?}")
        }
        other => panic!("a lagging standby, got {other:?}"),
    }

    // Replay resumed: back on the standby once it has caught up and a new reading was taken.
    run(&standby, "SELECT pg_wal_replay_resume()").await;
    caught_up(&primary, &standby).await;
    tokio::time::sleep(Duration::from_millis(CHECK_MS * 2)).await;
    let (found, on_primary, on_standby) = look_up(&store, "b", pools).await;
    assert!(found.contains(&visitor(2)), "{found:?}");
    assert_eq!((on_primary, on_standby), (0, 2));

    // The standby lost: the lookup answers from the primary, without an error.
    let standby_cluster = tokio::task::spawn_blocking(move || {
        let mut standby = standby_cluster;
        standby.crash().expect("the standby stops");
        standby
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(CHECK_MS * 2)).await;
    for _ in 0..3 {
        let (found, on_primary, _) = look_up(&store, "b", pools).await;
        assert!(found.contains(&visitor(2)) && on_primary == 1, "{found:?}");
    }
    assert_eq!(replica.last_state(), Some(ReplicaState::Unreachable));

    // A replica whose pool works in another schema is refused.
    let elsewhere = LookupReplica::new(pool(&primary_cluster.url(), Some("elsewhere")), 1_000, 500);
    let refused = PgVisitorStore::new(primary.clone(), Retention::default())
        .with_lookup_replica(elsewhere.unwrap());
    assert!(matches!(refused, Err(SetupError::Pool(message)) if message.contains("schema")));
    for (lag, check) in [(0, 500), (600_001, 500), (1_000, 9), (1_000, 60_001)] {
        assert!(
            LookupReplica::new(standby.clone(), lag, check).is_err(),
            "{lag} {check}"
        );
    }
    drop((store, replica, primary, standby));
    tokio::task::spawn_blocking(move || drop((primary_cluster, standby_cluster)))
        .await
        .unwrap();
}

/// The bound the silent-standby tests give the replica.
const TIMEOUT_MS: u64 = 200;

/// How long a test waits on a lookup before it calls the lookup hung.
const HUNG: Duration = Duration::from_secs(10);

/// The address of the tests' server (`DATABASE_URL`).
fn server_address() -> SocketAddr {
    let config = tokio_postgres::Config::from_str(&database_url()).unwrap();
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(host) => host.clone(),
        other => panic!("the tests' server is reached over TCP, not {other:?}"),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    (host.as_str(), port)
        .to_socket_addrs()
        .unwrap()
        .next()
        .unwrap()
}

/// A pool on the tests' server through `relay`, in `primary`'s schema, whose own waits (10 s) are longer
/// than any test waits: only the replica's bound can end a wait on it sooner.
fn through(relay: &Relay, primary: &Database) -> Database {
    let url = format!(
        "postgres://postgres@127.0.0.1:{}/postgres",
        relay.address().port()
    );
    let config = DatabaseConfig::builder(&url)
        .schema(primary.schema().unwrap().as_str())
        .max_connections(2)
        .connect_timeout_ms(10_000)
        .wait_timeout_ms(10_000)
        .build()
        .unwrap();
    Database::new(config).unwrap()
}

/// A store on `primary` reading candidates on `replica`.
fn reading_on(primary: &Database, replica: &LookupReplica) -> PgVisitorStore {
    PgVisitorStore::new(primary.clone(), Retention::default())
        .with_lookup_replica(replica.clone())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_on_a_replica_gone_silent_answer_from_the_primary_within_the_bound() {
    with_schemas(|schemas| async move {
        let primary = schemas.fresh().await;
        let relay = Relay::start(server_address()).unwrap();
        let standby = through(&relay, &primary);
        // One reading for the whole test: the lookups below find it fresh, and go to the standby.
        let replica = LookupReplica::new(standby.clone(), 1_000, 60_000)
            .and_then(|replica| replica.with_timeout_ms(TIMEOUT_MS))
            .unwrap();
        let store = reading_on(&primary, &replica);
        save(&store, 1, "a").await;
        let (found, on_primary, on_standby) = look_up(&store, "a", (&primary, &standby)).await;
        assert_eq!((found, on_primary, on_standby), (vec![visitor(1)], 0, 2));
        assert_eq!(replica.last_state(), Some(ReplicaState::Primary));

        // Silent: more lookups at once than the standby's pool has connections, so that some wait on their
        // statement and the others on a connection.
        relay.silence();
        let started = Instant::now();
        let lookups: Vec<_> = (0..4)
            .map(|_| {
                let store = store.clone();
                let probes = probes_for(&observation("a"));
                tokio::spawn(async move {
                    let rows = tokio::time::timeout(HUNG, store.find_candidate_rows(&probes, T0));
                    (rows.await, started.elapsed())
                })
            })
            .collect();
        for lookup in lookups {
            let (rows, took) = lookup.await.unwrap();
            let rows = rows.expect("no lookup hangs on the silent standby");
            let rows = rows.expect("the primary answers");
            assert!(rows.iter().any(|row| row.visitor_id == visitor(1)));
            println!("a lookup on the silent standby answered after {took:?}");
            assert!(took < Duration::from_millis(TIMEOUT_MS + 1_500), "{took:?}");
        }
        assert_eq!(replica.last_state(), Some(ReplicaState::Unreachable));

        // A lag reading on the silent standby ends at the same bound (it was a fixed second).
        let unread = LookupReplica::new(standby.clone(), 1_000, 60_000)
            .and_then(|replica| replica.with_timeout_ms(TIMEOUT_MS))
            .unwrap();
        let started = Instant::now();
        let (found, on_primary, _) =
            look_up(&reading_on(&primary, &unread), "a", (&primary, &standby)).await;
        let took = started.elapsed();
        println!("a lookup whose lag reading met the silent standby answered after {took:?}");
        assert_eq!((found, on_primary), (vec![visitor(1)], 1));
        assert!(took < Duration::from_millis(900), "{took:?}");
        assert_eq!(unread.last_state(), Some(ReplicaState::Unreachable));
        drop((store, replica, unread, standby));
        tokio::task::spawn_blocking(move || drop(relay))
            .await
            .unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_dropped_during_its_lag_reading_leaves_the_next_reading_to_another() {
    with_schemas(|schemas| async move {
        let primary = schemas.fresh().await;
        let relay = Relay::start(server_address()).unwrap();
        let standby = through(&relay, &primary);
        let replica = LookupReplica::new(standby.clone(), 1_000, CHECK_MS).unwrap();
        let store = reading_on(&primary, &replica);
        save(&store, 1, "a").await;

        // The request's client goes away while its lookup waits on the lag reading: the lookup is dropped.
        relay.silence();
        let lookup = look_up(&store, "a", (&primary, &standby));
        let dropped = tokio::time::timeout(Duration::from_millis(100), lookup).await;
        assert!(dropped.is_err(), "the reading was still waiting");
        assert_eq!(replica.last_state(), None);

        // The next lookup takes a reading, and reads the standby.
        relay.resume();
        let (found, on_primary, on_standby) = look_up(&store, "a", (&primary, &standby)).await;
        assert_eq!(replica.last_state(), Some(ReplicaState::Primary));
        assert_eq!((found, on_primary, on_standby), (vec![visitor(1)], 0, 2));
        drop((store, replica, standby));
        tokio::task::spawn_blocking(move || drop(relay))
            .await
            .unwrap();
    })
    .await;
}
