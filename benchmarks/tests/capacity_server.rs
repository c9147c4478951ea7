//! The server processes of the HTTP workloads, started as a run starts them, over real sockets and a real
//! PostgreSQL: warm-ups and identifications are counted, open connections are seen on both sides, and the
//! processes end with the run.

use std::collections::BTreeMap;
use std::time::Duration;

use janitor_benchmarks::capacity::env::{CapacityEnv, Run};
use janitor_benchmarks::capacity::http1::{self, Connection};
use janitor_benchmarks::capacity::run::HttpRun;
use janitor_benchmarks::capacity::server::{Fleet, FleetSettings, ENDPOINT};
use janitor_benchmarks::capacity::Target;
use janitor_sql::testing::{database_url, population, with_schemas};

fn run_for(schema: &str) -> HttpRun {
    HttpRun {
        target: Target {
            url: database_url(),
            schema: schema.to_owned(),
        },
        env: CapacityEnv::from_vars(&BTreeMap::new(), Run::Single).unwrap(),
        cookies: std::env::temp_dir().join("unused-cookies.tsv"),
        binary: env!("CARGO_BIN_EXE_janitor-capacity").into(),
        scratch: std::env::temp_dir(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_serves_counts_and_stops() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let schema = database.schema().unwrap().as_str().to_owned();
        population::seed(&database, 3, 1, janitor_core::now_ms()).await;
        let settings = FleetSettings {
            workers: 2,
            max_in_flight: 8,
            pool: 1,
            base_port: 31_740,
        };
        let fleet = Fleet::start(&run_for(&schema), settings).await.unwrap();
        let servers = fleet.servers();
        assert_eq!(servers.len(), 2);

        let mut connections = Vec::new();
        for (i, server) in servers.iter().enumerate() {
            let mut c = Connection::connect(*server, Some("127.0.0.3".parse().unwrap()))
                .await
                .unwrap();
            assert_eq!(c.send(&http1::get("/ready")).await.unwrap().status, 200);
            let visitor = population::visitor(i as u64 + 1);
            let body = population::payload_json(i as u64 + 1).to_string();
            let cookie = format!("__visitor={}", visitor.as_str());
            let r = c
                .send(&http1::post_json(ENDPOINT, &cookie, &body))
                .await
                .unwrap();
            assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(c.body()));
            let answer: serde_json::Value = serde_json::from_slice(c.body()).unwrap();
            assert_eq!(answer["visitorId"], visitor.as_str(), "{answer}");
            let r = c
                .send(&http1::post_json(ENDPOINT, &cookie, "{"))
                .await
                .unwrap();
            assert_eq!(r.status, 400);
            connections.push(c);
        }
        let stats = fleet.stats(false).await.unwrap();
        for s in &stats {
            assert_eq!((s.open, s.peak_open, s.accepted), (1, 1, 1), "{s:?}");
            assert_eq!(
                (s.ready, s.completed, s.failures, s.overloads),
                (1, 1, 1, 0),
                "{s:?}"
            );
            assert!(s.rss_bytes > 1_000_000, "{s:?}");
        }
        drop(connections);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let stats = fleet.stats(true).await.unwrap();
        assert!(
            stats.iter().all(|s| s.open == 0 && s.peak_open == 1),
            "{stats:?}"
        );
        let stats = fleet.stats(false).await.unwrap();
        assert!(stats.iter().all(|s| s.peak_open == 0), "{stats:?}");

        // A second fleet on the same ports is refused: its processes cannot bind.
        let refused = Fleet::start(&run_for(&schema), settings).await.unwrap_err();
        assert!(
            refused.contains("another process") || refused.contains("ended while starting"),
            "{refused}"
        );

        fleet.stop().await;
        assert!(Connection::connect(servers[0], None).await.is_err());
    })
    .await;
}
