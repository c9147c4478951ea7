//! The connection workload at a small scale, with real server and load processes over real sockets and a
//! real PostgreSQL: every stage is reported and both sides agree; a server that dies mid-run fails the run with
//! the reason instead of hanging it.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use janitor_benchmarks::capacity::connections::{self, Plan};
use janitor_benchmarks::capacity::env::{CapacityEnv, Run};
use janitor_benchmarks::capacity::run::HttpRun;
use janitor_benchmarks::capacity::server::{ServerStats, CONTROL_OFFSET};
use janitor_benchmarks::capacity::{seed, Target};
use janitor_sql::testing::{database_url, population, with_schemas, Schemas};
use janitor_test_support::http1::{self, Connection};
use janitor_test_support::ports::free_span;
use serde_json::Value;

/// Known visitors behind the cookies; sockets take them in turn.
const VISITORS: u64 = 200;

/// A run on a fresh schema with `VISITORS` seeded visitors and their cookie file in a scratch directory.
async fn http_run(schemas: &Schemas, name: &str, settings: &[(&str, &str)]) -> HttpRun {
    let database = schemas.fresh().await;
    let schema = database.schema().unwrap().as_str().to_owned();
    population::seed(&database, VISITORS, 1, janitor_core::now_ms()).await;
    let scratch = std::env::temp_dir().join(format!(
        "capacity-connections-{name}-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&scratch).unwrap();
    let cookies = scratch.join("cookies.tsv");
    seed::write_cookies(&cookies, VISITORS).unwrap();
    let vars: BTreeMap<String, String> = settings
        .iter()
        .map(|(k, v)| (format!("JANITOR_BENCHMARK_{k}"), (*v).to_owned()))
        .collect();
    HttpRun {
        target: Target {
            url: database_url(),
            schema,
        },
        env: CapacityEnv::from_vars(&vars, Run::Single).unwrap(),
        cookies,
        binary: env!("CARGO_BIN_EXE_janitor-capacity").into(),
        scratch,
    }
}

/// Ports and sources of this file's own, and the report in the run's scratch directory. The ports (two
/// servers and their control ports) were free a moment ago and lie below the ephemeral range (32768–60999),
/// where no client socket of another program can be holding them.
fn plan(run: &HttpRun, first_source: Ipv4Addr) -> Plan {
    Plan {
        base_port: free_span(CONTROL_OFFSET + 2).unwrap(),
        first_source,
        report: run.scratch.join("connections.json"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_connections_go_through_every_stage() {
    with_schemas(|schemas| async move {
        let settings = [
            ("CONNECTIONS", "1000"),
            ("WORKERS", "2"),
            ("STEADY_SECONDS", "1"),
        ];
        let run = http_run(&schemas, "stages", &settings).await;
        let plan = plan(&run, Ipv4Addr::new(127, 0, 0, 40));
        let report =
            serde_json::to_value(connections::run_with(&run, &plan).await.unwrap()).unwrap();
        let written: Value =
            serde_json::from_str(&std::fs::read_to_string(&plan.report).unwrap()).unwrap();
        assert_eq!(written, report);
        let _ = std::fs::remove_dir_all(&run.scratch);

        assert_eq!(report["passed"], true, "{report:#}");
        assert_eq!(report["failure"], Value::Null);
        let summary = &report["summary"];
        assert_eq!(summary["held"], 1_000, "{summary:#}");
        assert_eq!(summary["counts_agreed"], true);
        assert_eq!(summary["unexpected_closes"], 0);
        assert_eq!(summary["socket_errors"], 0);
        assert_eq!(summary["burst_answered"], 1_000);
        let (ok, overloaded) = (
            summary["burst_successes"].as_u64().unwrap(),
            summary["burst_overloads"].as_u64().unwrap(),
        );
        assert_eq!(ok + overloaded, 1_000);
        assert!(ok >= 8, "admission lets some through: {summary:#}");
        assert_eq!(summary["recovery"], "100/100");
        assert!(summary["server_rss_after_ramp_bytes"].as_u64().unwrap() > 1_000_000);
        assert!(summary["bytes_per_connection"].is_number());

        let settings = &report["settings"];
        assert_eq!(
            (&settings["workers"], &settings["load_processes"]),
            (&2.into(), &1.into())
        );
        assert_eq!(settings["sources"][0], "127.0.0.40");
        assert!(report["machine"]["cores"].as_u64().unwrap() >= 1);
        assert!(report["versions"]["postgresql"].is_string());
        assert!(!report["limitations"].as_array().unwrap().is_empty());
        // One step: the target is below the first fixed step.
        assert_eq!(report["steps"].as_array().unwrap().len(), 1);
        assert_eq!(report["steps"][0]["server_open"], 1_000);

        let stages = &report["stages"];
        for name in ["ramp", "steady", "burst", "recovery"] {
            let stage = &stages[name];
            let servers = stage["servers"].as_array().unwrap();
            assert_eq!(servers.len(), 2, "{name}");
            for server in servers {
                for field in [
                    "open",
                    "peak_open",
                    "overloads",
                    "completed",
                    "failures",
                    "rss_bytes",
                ] {
                    assert!(server[field].is_u64(), "{name}.{field}: {server}");
                }
                // Sockets are spread evenly over the server processes.
                assert_eq!(server["open"], 500, "{name}: {server}");
                assert_eq!(server["failures"], 0, "{name}: {server}");
            }
            let load = &stage["loads"][0];
            for field in ["open", "sent", "ok", "overloaded", "errors", "closes"] {
                assert!(load[field].is_u64(), "{name}.{field}: {load}");
            }
            assert_eq!(load["open"], 1_000, "{name}");
            assert_eq!((&load["errors"], &load["closes"]), (&0.into(), &0.into()));
        }
        // Warm-ups are not identity work; every other stage's requests are seen on both sides.
        assert_eq!(stages["ramp"]["totals"]["sent"], 0);
        assert_eq!(stages["ramp"]["totals"]["completed"], 0);
        let ready: u64 = stages["ramp"]["servers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["ready"].as_u64().unwrap())
            .sum();
        assert_eq!(ready, 1_000);
        assert_eq!(stages["steady"]["totals"]["sent"], 100);
        assert_eq!(stages["burst"]["totals"]["sent"], 1_000);
        assert_eq!(stages["recovery"]["totals"]["ok"], 100);
        for name in ["steady", "burst", "recovery"] {
            let totals = &stages[name]["totals"];
            assert_eq!(totals["completed"], totals["ok"], "{name}: {totals}");
            assert_eq!(
                totals["overloads"], totals["overloaded"],
                "{name}: {totals}"
            );
        }
    })
    .await;
}

async fn server_stats(port: u16) -> Option<ServerStats> {
    let control = SocketAddr::from(([127, 0, 0, 1], port + CONTROL_OFFSET));
    let mut connection = Connection::connect(control, None).await.ok()?;
    connection.send(&http1::get("/stats")).await.ok()?;
    serde_json::from_slice(connection.body()).ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_dying_mid_run_fails_the_run_with_the_reason() {
    with_schemas(|schemas| async move {
        let settings = [
            ("CONNECTIONS", "1000"),
            ("WORKERS", "2"),
            ("STEADY_SECONDS", "6"),
        ];
        let run = http_run(&schemas, "killed", &settings).await;
        let plan = plan(&run, Ipv4Addr::new(127, 0, 0, 50));
        let first = plan.base_port;
        let report_path: PathBuf = plan.report.clone();
        let scratch = run.scratch.clone();
        let running = tokio::spawn(async move { connections::run_with(&run, &plan).await });

        // Once the first server holds its half and the steady stage has begun, it is killed.
        let victim = tokio::time::timeout(Duration::from_secs(120), async {
            loop {
                if let Some(stats) = server_stats(first).await {
                    if stats.open == 500 && stats.completed > 0 {
                        return stats.pid;
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
        .expect("the steady stage begins");
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &victim.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());

        let outcome = tokio::time::timeout(Duration::from_secs(120), running)
            .await
            .expect("the run ends instead of hanging")
            .unwrap();
        let failure = outcome.unwrap_err();
        println!("the run failed as it should: {failure}");
        assert!(failure.contains("unexpected close"), "{failure}");
        assert!(failure.contains("closed by the server"), "{failure}");
        let report: Value =
            serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap();
        let _ = std::fs::remove_dir_all(&scratch);
        assert_eq!(report["passed"], false);
        assert_eq!(report["failure"], failure.as_str());
        assert!(report["summary"]["unexpected_closes"].as_u64().unwrap() > 0);
        assert!(report["stages"]["ramp"].is_object());
        assert!(report["stages"]["burst"].is_null());
        // The surviving server ends with the run.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(server_stats(first + 1).await.is_none());
    })
    .await;
}
