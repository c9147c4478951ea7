//! The fleet host (`janitor-capacity serve-fleet`), as the Docker run uses it, over real sockets and a real
//! PostgreSQL: a run whose servers are external leases each fleet from the host, the fleet serves with the
//! settings asked for, and letting it go frees its ports for the next; a request out of range is refused with
//! the reason, and the host goes on serving.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use janitor_axum::serve::Driver;
use janitor_axum::testing::http1::{self, Connection};
use janitor_benchmarks::capacity::env::{CapacityEnv, Run};
use janitor_benchmarks::capacity::run::HttpRun;
use janitor_benchmarks::capacity::server::host::{host_address, host_cores, Lease};
use janitor_benchmarks::capacity::server::{Fleet, FleetSettings, ENDPOINT};
use janitor_benchmarks::capacity::Target;
use janitor_sql::testing::{database_url, population, with_schemas};

const BASE_PORT: u16 = 31_840;

/// The host, in a process of its own as in its container; killed when the test ends.
struct Host(Child);

impl Host {
    fn start(schema: &str) -> Host {
        let port = host_address(BASE_PORT).port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_janitor-capacity"))
            .args([
                "serve-fleet",
                "--port",
                &port.to_string(),
                "--schema",
                schema,
            ])
            .env("JANITOR_BENCHMARK_DATABASE_URL", database_url())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        for _ in 0..200 {
            if std::net::TcpStream::connect(host_address(BASE_PORT)).is_ok() {
                return Host(child);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the fleet host did not listen on {port}");
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn external_run(schema: &str) -> HttpRun {
    let vars = BTreeMap::from([(
        "JANITOR_BENCHMARK_EXTERNAL_SERVERS".to_owned(),
        "1".to_owned(),
    )]);
    HttpRun {
        target: Target {
            url: database_url(),
            schema: schema.to_owned(),
        },
        env: CapacityEnv::from_vars(&vars, Run::Single).unwrap(),
        cookies: std::env::temp_dir().join("unused-cookies.tsv"),
        binary: env!("CARGO_BIN_EXE_janitor-capacity").into(),
        scratch: std::env::temp_dir(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleets_are_leased_served_and_let_go() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let schema = database.schema().unwrap().as_str().to_owned();
        population::seed(&database, 2, 1, janitor_core::now_ms()).await;
        let _host = Host::start(&schema);
        let cores = host_cores(BASE_PORT).await.unwrap();
        assert!(cores >= 1, "{cores}");

        let settings = FleetSettings {
            workers: 2,
            max_in_flight: 3,
            pool: 1,
            base_port: BASE_PORT,
        };
        let run = external_run(&schema);
        for _ in 0..2 {
            // Twice on the same ports: the first lease's processes are gone when its release returns.
            let fleet = Fleet::start(&run, settings).await.unwrap();
            let servers = fleet.servers();
            assert_eq!(servers.len(), 2);
            for (i, server) in servers.iter().enumerate() {
                let mut c = Connection::connect(*server, None).await.unwrap();
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
            }
            let stats = fleet.stats(false).await.unwrap();
            assert_eq!(
                stats.iter().map(|s| s.completed).sum::<u64>(),
                2,
                "{stats:?}"
            );
            fleet.stop().await;
            for server in &servers {
                assert!(
                    Connection::connect(*server, None).await.is_err(),
                    "{server}"
                );
            }
        }

        // Refused requests name the reason; nothing starts, and the host serves the next lease.
        for (bad, reason) in [
            (
                FleetSettings {
                    workers: 0,
                    ..settings
                },
                "workers must be from 1 to 64, got 0",
            ),
            (
                FleetSettings {
                    pool: 65,
                    ..settings
                },
                "pool must be from 1 to 64, got 65",
            ),
        ] {
            let refused = Lease::take(bad, Some(Driver::Hyper)).await.unwrap_err();
            assert!(refused.contains(reason), "{refused}");
        }
        assert!(Connection::connect(settings_first_server(), None)
            .await
            .is_err());
        let lease = Lease::take(settings, Some(Driver::Pooled)).await.unwrap();
        let mut c = Connection::connect(settings_first_server(), None).await;
        for _ in 0..100 {
            if c.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            c = Connection::connect(settings_first_server(), None).await;
        }
        assert_eq!(
            c.unwrap().send(&http1::get("/ready")).await.unwrap().status,
            200
        );
        lease.release().await.unwrap();
        assert!(Connection::connect(settings_first_server(), None)
            .await
            .is_err());
    })
    .await;
}

fn settings_first_server() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], BASE_PORT))
}
