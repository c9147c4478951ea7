//! The server processes of the HTTP workloads, started as a run starts them, over real sockets and a real
//! PostgreSQL: warm-ups and identifications are counted, open connections are seen on both sides, and the
//! processes end with the run. Started by hand with known visitors, in memory or on PostgreSQL, a server
//! answers every line of the cookie file it wrote as a returning visitor, as an HTTP load tool sends them. A run
//! whose servers are external leases each fleet from the fleet host (`serve-fleet`, as the Docker run uses it):
//! the fleet serves with the settings asked for, letting it go frees its ports for the next, and a request out
//! of range is refused with the reason while the host goes on serving.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use janitor_axum::serve::Driver;
use janitor_benchmarks::capacity::env::{CapacityEnv, Run};
use janitor_benchmarks::capacity::run::HttpRun;
use janitor_benchmarks::capacity::server::host::HOST_OFFSET;
use janitor_benchmarks::capacity::server::host::{host_address, host_cores, Lease};
use janitor_benchmarks::capacity::server::{Fleet, FleetSettings, CONTROL_OFFSET, ENDPOINT};
use janitor_benchmarks::capacity::{seed, Target};
use janitor_sql::testing::{database_url, population, with_schemas};
use janitor_test_support::http1::{self, Connection};
use janitor_test_support::ports::free_span;

/// A run on `schema` whose servers it starts itself, or, when `external`, leases from a fleet host.
fn run_for(schema: &str, external: bool) -> HttpRun {
    let mut vars = BTreeMap::new();
    if external {
        vars.insert(
            "JANITOR_BENCHMARK_EXTERNAL_SERVERS".to_owned(),
            "1".to_owned(),
        );
    }
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
async fn fleet_serves_counts_and_stops() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let schema = database.schema().unwrap().as_str().to_owned();
        population::seed(&database, 3, 1, janitor_core::now_ms()).await;
        let settings = FleetSettings {
            workers: 2,
            max_in_flight: 8,
            pool: 1,
            threads: 1,
            slot_wait: None,
            base_port: free_span(CONTROL_OFFSET + 2).unwrap(),
        };
        let fleet = Fleet::start(&run_for(&schema, false), settings)
            .await
            .unwrap();
        let servers = fleet.servers();
        assert_eq!(servers.len(), 2);

        let mut connections = Vec::new();
        for (i, server) in servers.iter().enumerate() {
            let mut c = Connection::connect(*server, Some("127.0.0.3".parse().unwrap()))
                .await
                .unwrap();
            assert_eq!(c.send(&http1::get("/ready")).await.unwrap().status, 200);
            let cookie = identifies_seeded_visitor(&mut c, i as u64 + 1).await;
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
        let refused = Fleet::start(&run_for(&schema, false), settings)
            .await
            .unwrap_err();
        assert!(
            refused.contains("another process") || refused.contains("ended while starting"),
            "{refused}"
        );

        fleet.stop().await;
        assert!(Connection::connect(servers[0], None).await.is_err());
    })
    .await;
}

/// A process this file started: killed when dropped (the test ended, passed or panicked), and watching its
/// standard input, a pipe this process holds, so that it ends even when the test process is killed.
struct Started(Child);

impl Started {
    fn spawn(command: &mut Command) -> Started {
        let child = command
            .args(["--watch-stdin", "1"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        Started(child)
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `janitor-capacity serve` on a free port with `args`, seeding 5 known visitors into `cookies`, and
/// waits until the cookie file is there (it is written whole once the server listens). Returns the port too.
fn serve_by_hand(cookies: &Path, args: &[&str]) -> (Started, u16) {
    let _ = std::fs::remove_file(cookies);
    let port = free_span(CONTROL_OFFSET + 1).unwrap();
    let server = Started::spawn(
        Command::new(env!("CARGO_BIN_EXE_janitor-capacity"))
            .args(["serve", "--port", &port.to_string(), "--visitors", "5"])
            .args(["--cookies", &cookies.to_string_lossy()])
            .args(args),
    );
    for _ in 0..600 {
        if cookies.exists() {
            return (server, port);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the server on port {port} wrote no cookie file");
}

/// Sends every line of the cookie file as its identify request: each is a returning visitor.
async fn every_cookie_is_known(port: u16, cookies: &Path) {
    let lines = seed::read_cookies(cookies).unwrap();
    assert_eq!(lines.len(), 5);
    let server = SocketAddr::from(([127, 0, 0, 1], port));
    let mut c = Connection::connect(server, None).await.unwrap();
    for line in lines {
        let cookie = format!("__visitor={}", line.visitor);
        let r = c
            .send(&http1::post_json(ENDPOINT, &cookie, &line.payload))
            .await
            .unwrap();
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(c.body()));
        let answer: serde_json::Value = serde_json::from_slice(c.body()).unwrap();
        assert_eq!(answer["visitorId"], line.visitor.as_str(), "{answer}");
    }
    assert_eq!(c.send(&http1::get("/admitted")).await.unwrap().status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_started_by_hand_seeds_its_visitors_and_writes_their_cookies() {
    let cookies = std::env::temp_dir().join(format!("by-hand-{}.tsv", std::process::id()));
    let (memory, port) = serve_by_hand(&cookies, &[]);
    every_cookie_is_known(port, &cookies).await;
    drop(memory);

    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let schema = database.schema().unwrap().as_str().to_owned();
        let url = database_url();
        let args = ["--url", url.as_str(), "--schema", schema.as_str()];
        let (postgres, port) = serve_by_hand(&cookies, &args);
        every_cookie_is_known(port, &cookies).await;
        drop(postgres);
        let _ = std::fs::remove_file(&cookies);
    })
    .await;
}

/// The host, in a process of its own as in its container; killed when the test ends. Its fleets start at
/// `base_port`, and it listens `HOST_OFFSET` below.
fn start_host(schema: &str, base_port: u16) -> Started {
    let port = host_address(base_port).port();
    let host = Started::spawn(
        Command::new(env!("CARGO_BIN_EXE_janitor-capacity"))
            .args([
                "serve-fleet",
                "--port",
                &port.to_string(),
                "--schema",
                schema,
            ])
            .env("JANITOR_BENCHMARK_DATABASE_URL", database_url()),
    );
    for _ in 0..200 {
        if std::net::TcpStream::connect(host_address(base_port)).is_ok() {
            return host;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the fleet host did not listen on {port}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleets_are_leased_served_and_let_go() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let schema = database.schema().unwrap().as_str().to_owned();
        population::seed(&database, 2, 1, janitor_core::now_ms()).await;
        // The host's port, two fleet servers and their control ports.
        let base_port = free_span(HOST_OFFSET + CONTROL_OFFSET + 2).unwrap() + HOST_OFFSET;
        let _host = start_host(&schema, base_port);
        let cores = host_cores(base_port).await.unwrap();
        assert!(cores >= 1, "{cores}");

        let settings = FleetSettings {
            workers: 2,
            max_in_flight: 3,
            pool: 1,
            threads: 0,
            slot_wait: None,
            base_port,
        };
        let run = run_for(&schema, true);
        for _ in 0..2 {
            // Twice on the same ports: the first lease's processes are gone when its release returns.
            let fleet = Fleet::start(&run, settings).await.unwrap();
            let servers = fleet.servers();
            assert_eq!(servers.len(), 2);
            for (i, server) in servers.iter().enumerate() {
                let mut c = Connection::connect(*server, None).await.unwrap();
                identifies_seeded_visitor(&mut c, i as u64 + 1).await;
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
                    slot_wait: None,
                    ..settings
                },
                "pool must be from 1 to 64, got 65",
            ),
            (
                FleetSettings {
                    threads: 65,
                    ..settings
                },
                "threads must be from 0 to 64, got 65",
            ),
        ] {
            let refused = Lease::take(bad, Some(Driver::Hyper)).await.unwrap_err();
            assert!(refused.contains(reason), "{refused}");
        }
        assert!(Connection::connect(first_server(base_port), None)
            .await
            .is_err());
        let lease = Lease::take(settings, Some(Driver::Pooled)).await.unwrap();
        let mut c = Connection::connect(first_server(base_port), None).await;
        for _ in 0..100 {
            if c.is_ok() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            c = Connection::connect(first_server(base_port), None).await;
        }
        assert_eq!(
            c.unwrap().send(&http1::get("/ready")).await.unwrap().status,
            200
        );
        lease.release().await.unwrap();
        assert!(Connection::connect(first_server(base_port), None)
            .await
            .is_err());

        // A run that dies holding its lease (the connection drops, nothing is released): the host notices and
        // stops the fleet, or it would never greet the next lease, which it serves only after that.
        let dropped = Lease::take(settings, None).await.unwrap();
        drop(dropped);
        let again = Lease::take(settings, None).await.unwrap();
        again.release().await.unwrap();
    })
    .await;
}

#[test]
fn started_processes_end_when_whoever_started_them_goes_away() {
    let cookies = std::env::temp_dir().join(format!("orphan-{}.tsv", std::process::id()));
    let (mut server, port) = serve_by_hand(&cookies, &[]);
    let _ = std::fs::remove_file(&cookies);
    let host_port = free_span(HOST_OFFSET + CONTROL_OFFSET + 1).unwrap() + HOST_OFFSET;
    let mut host = start_host("janitor_test_unused", host_port);
    for (name, process, address) in [
        ("server", &mut server, first_server(port)),
        ("fleet host", &mut host, host_address(host_port)),
    ] {
        // What a killed test process leaves: the other end of the pipe closes, and nobody kills the child.
        drop(process.0.stdin.take());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = process.0.try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the {name} outlived its parent"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "{name}: {status}");
        assert!(std::net::TcpStream::connect(address).is_err(), "{name}");
    }
}

fn first_server(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Identifies seeded visitor `n` on `c` with its cookie and payload, checks it comes back as itself, and
/// returns the cookie.
async fn identifies_seeded_visitor(c: &mut Connection, n: u64) -> String {
    let visitor = population::visitor(n);
    let body = population::payload_json(n).to_string();
    let cookie = format!("__visitor={}", visitor.as_str());
    let r = c
        .send(&http1::post_json(ENDPOINT, &cookie, &body))
        .await
        .unwrap();
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(c.body()));
    let answer: serde_json::Value = serde_json::from_slice(c.body()).unwrap();
    assert_eq!(answer["visitorId"], visitor.as_str(), "{answer}");
    cookie
}
