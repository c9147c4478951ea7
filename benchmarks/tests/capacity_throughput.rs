//! A short real sweep: server processes on PostgreSQL, 500 keep-alive connections, two rates of one second,
//! the burst, the closed-loop identify limit, pgbench and the admission overhead, written to a directory of
//! the test's own.

use std::collections::BTreeMap;
use std::time::Duration;

use janitor_benchmarks::capacity::env::{CapacityEnv, Run};
use janitor_benchmarks::capacity::run::HttpRun;
use janitor_benchmarks::capacity::server::{FleetSettings, CONTROL_OFFSET};
use janitor_benchmarks::capacity::throughput::{measure, SweepSettings, CHART, REPORT};
use janitor_benchmarks::capacity::{seed, Target};
use janitor_sql::testing::{admin_client, database_url, population, with_schemas};
use janitor_test_support::ports::free_span;
use serde_json::Value;

const VISITORS: u64 = 300;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_sweep_reports_every_part() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let schema = database.schema().unwrap().as_str().to_owned();
        population::seed(&database, VISITORS, 2, janitor_core::now_ms()).await;
        let scratch = std::env::temp_dir().join(format!("janitor-throughput-{schema}"));
        std::fs::create_dir_all(&scratch).unwrap();
        let cookies = scratch.join("cookies.tsv");
        seed::write_cookies(&cookies, VISITORS).unwrap();
        let run = HttpRun {
            target: Target {
                url: database_url(),
                schema: schema.clone(),
            },
            env: CapacityEnv::from_vars(&BTreeMap::new(), Run::Single).unwrap(),
            cookies,
            binary: env!("CARGO_BIN_EXE_janitor-capacity").into(),
            scratch: scratch.clone(),
        };
        let settings = SweepSettings {
            fleet: FleetSettings {
                workers: 2,
                max_in_flight: 8,
                pool: 2,
                threads: 1,
                slot_wait: None,
                // Two servers and their control ports, free a moment ago.
                base_port: free_span(CONTROL_OFFSET + 2).unwrap(),
            },
            connections: 500,
            rates: vec![50, 200],
            rate_time: Duration::from_secs(1),
            search: true,
            window_time: Duration::from_secs(1),
            limit_seconds: 2,
            overhead: (16, 2, Duration::from_millis(500)),
            output: scratch.join("out"),
        };
        let report = serde_json::to_value(measure(&run, &settings).await.unwrap()).unwrap();
        check(&report);

        let written: Value = serde_json::from_str(
            &std::fs::read_to_string(scratch.join("out").join(REPORT)).unwrap(),
        )
        .unwrap();
        assert_eq!(written["points"], report["points"]);
        let svg = std::fs::read_to_string(scratch.join("out").join(CHART)).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert_eq!(svg.matches("<circle").count(), 2 * 4, "{svg}");

        // The helper table pgbench read from is gone; the fixture is not.
        let admin = admin_client().await;
        let tables: Vec<String> = admin
            .query(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1",
                &[&schema],
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(
            !tables.iter().any(|t| t == "capacity_cookies"),
            "{tables:?}"
        );
        assert!(tables.iter().any(|t| t == "observations"), "{tables:?}");
        std::fs::remove_dir_all(&scratch).unwrap();
    })
    .await;
}

fn check(report: &Value) {
    assert_eq!(report["workload"], "throughput");
    assert_eq!(report["settings"]["connections"], 500);
    assert_eq!(report["settings"]["servers"]["database_connections"], 4);
    assert_eq!(report["fixture"]["visitors"], VISITORS);
    assert!(report["versions"]["postgresql"].is_string());
    assert!(report["limitations"].as_array().unwrap().len() >= 3);

    let points = report["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    for (point, rate) in points.iter().zip([50, 200]) {
        assert_eq!(point["offered_rate"], rate);
        assert_eq!(point["scheduled"], rate, "{point}");
        assert_eq!(point["sent"], point["scheduled"], "{point}");
        let answered =
            point["status_200"].as_u64().unwrap() + point["status_503"].as_u64().unwrap();
        assert_eq!(answered, point["sent"].as_u64().unwrap(), "{point}");
        assert!(point["status_200"].as_u64().unwrap() > 0, "{point}");
        assert!(point["completed_per_second"].as_f64().unwrap() > 0.0);
        corrected_at_least_raw(&point["latency"]["all"]);
        corrected_at_least_raw(&point["latency"]["successes"]);
    }

    let baseline = &report["generator_baseline"];
    assert_eq!(baseline["offered_rate"], 200, "{baseline}");
    assert_eq!(baseline["sent"], 200, "{baseline}");
    assert_eq!(baseline["status_200"], 200, "{baseline}");

    let burst = &report["burst"];
    assert_eq!(burst["sent"], 500, "{burst}");
    let answered = burst["status_200"].as_u64().unwrap() + burst["status_503"].as_u64().unwrap();
    assert_eq!(answered, 500);
    assert!(burst["status_200"].as_u64().unwrap() > 0, "{burst}");
    corrected_at_least_raw(&burst["latency"]["all"]);
    // The search: every probe one continuous loop judged in three windows, each reported, and a rate passes
    // only when all three do.
    let search = &report["search"];
    assert_eq!(search["windows_per_probe"], 3, "{search}");
    assert_eq!(search["seconds_per_probe"], 3.0, "{search}");
    let probes = search["probes"].as_array().unwrap();
    assert!(!probes.is_empty(), "{search}");
    for probe in probes {
        let windows = probe["windows"].as_array().unwrap();
        assert_eq!(windows.len(), 3, "{probe}");
        let in_windows: u64 = windows.iter().map(|w| w["sent"].as_u64().unwrap()).sum();
        assert_eq!(in_windows, probe["sent"].as_u64().unwrap(), "{probe}");
        let every_window = windows.iter().all(|w| w["passes_search"] == true);
        if probe["passes_search"] == true {
            assert!(every_window, "{probe}");
        }
    }
    let passed = probes.iter().filter(|p| p["passes_search"] == true);
    let best = passed.map(|p| p["offered_rate"].as_u64().unwrap()).max();
    assert_eq!(search["best_rate"].as_u64(), best, "{search}");

    let limit = &report["identify_limit"];
    assert_eq!(limit["connections"], 16);
    assert!(
        limit["result"]["status_200"].as_u64().unwrap() > 0,
        "{limit}"
    );
    // The servers ran with the library's default wait, and the search is set against the closed loop.
    let servers = &report["settings"]["servers"];
    assert_eq!(servers["admission_waiting_each"], 128, "{servers}");
    assert_eq!(servers["admission_slot_wait_ms"], 20, "{servers}");
    assert_eq!(servers["runtime"], "current_thread", "{servers}");
    let to_database = &report["identify_to_database"];
    assert!(
        to_database["search_to_closed_loop"].as_f64().unwrap() > 0.0,
        "{to_database}"
    );

    // Each side's CPU per operation: the test database runs on this machine, so the cluster is read; the
    // servers only on the identify sides, where they worked.
    let sides = limit["cpu"]["sides"].as_array().expect("cpu per side");
    assert_eq!(sides.len(), 5, "{sides:?}");
    for (i, side) in sides.iter().enumerate() {
        assert!(side["operations"].as_u64().unwrap() > 0, "{side}");
        assert!(side["database_ms"].as_f64().unwrap() > 0.0, "{side}");
        assert!(side["client_ms"].as_f64().unwrap() >= 0.0, "{side}");
        if i < 2 {
            assert!(side["servers_ms"].as_f64().unwrap() > 0.0, "{side}");
        } else {
            assert!(side["servers_ms"].is_null(), "{side}");
        }
    }

    // Both designs ran under pgbench in the same rounds: the current one statement, the previous two, each
    // after the helper round trip, and the current statement alone, resolving its visitor itself.
    for (key, design, pick, statements) in [
        ("pgbench", "refreshing", Value::Null, 3),
        ("pgbench_previous", "previous", Value::Null, 4),
        (
            "pgbench_alone",
            "refreshing",
            Value::from("in_statement"),
            2,
        ),
    ] {
        let pgbench = &report[key];
        assert_eq!(pgbench["design"], design, "{pgbench}");
        assert_eq!(pgbench["pick"], pick, "{pgbench}");
        assert!(pgbench["tps"].as_f64().unwrap() > 0.0, "{pgbench}");
        assert!(pgbench["transactions"].as_u64().unwrap() > 0, "{pgbench}");
        assert_eq!(pgbench["failed"], 0, "{pgbench}");
        assert_eq!(pgbench["clients"], 4);
        assert!(
            pgbench["latency_from_log"]["p95_ms"].as_f64().unwrap() > 0.0,
            "{pgbench}"
        );
        assert!(
            pgbench["statement_average_ms"].as_array().unwrap().len() >= statements,
            "{pgbench}"
        );
    }
    assert!(report["design_ratio"].as_f64().unwrap() > 0.0);
    let alone = report["pgbench_alone"]["statement_average_ms"]
        .as_array()
        .unwrap();
    assert!(
        alone
            .iter()
            .all(|line| !line["line"].as_str().unwrap().contains("gset")),
        "no helper round trip: {alone:?}"
    );
    for round in report["identify_limit"]["per_round"].as_array().unwrap() {
        assert!(
            round["pgbench_alone_tps"].as_f64().unwrap() > 0.0,
            "{round}"
        );
        assert!(round["ratio_alone"].as_f64().unwrap() > 0.0, "{round}");
        // Identify as janitor.js sends it and with the seeded payload unchanged, in the same round.
        assert!(
            round["identical_per_second"].as_f64().unwrap() > 0.0,
            "{round}"
        );
        assert!(
            round["real_to_identical"].as_f64().unwrap() > 0.0,
            "{round}"
        );
    }
    assert!(
        report["identify_to_database"]["real_to_identical_ratio"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        report["identify_to_database"]["closed_loop_ratio_alone"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(
        report["identify_to_database"]["closed_loop_ratio"]
            .as_f64()
            .unwrap()
            > 0.0
    );

    let overhead = &report["admission_overhead"];
    assert!(
        overhead["throughput_ratio_admitted_to_plain"]
            .as_f64()
            .unwrap()
            > 0.0,
        "{overhead}"
    );
    assert!(
        overhead["p50_ratio_admitted_to_plain"].as_f64().unwrap() > 0.0,
        "{overhead}"
    );
    for route in ["plain", "admitted"] {
        assert!(
            overhead[route]["requests_per_second"].as_f64().unwrap() > 0.0,
            "{overhead}"
        );
        assert_eq!(overhead[route]["status_503"], 0, "{overhead}");
    }
    assert!(report["servers"]["rss_bytes_total"].as_u64().unwrap() > 1_000_000);
}

fn corrected_at_least_raw(latency: &Value) {
    for percentile in ["p50_ms", "p95_ms", "p99_ms", "max_ms"] {
        let raw = latency["raw"][percentile].as_f64().unwrap();
        let corrected = latency["corrected"][percentile].as_f64().unwrap();
        assert!(corrected >= raw, "{percentile}: {latency}");
    }
}
