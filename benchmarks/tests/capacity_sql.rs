//! The SQL side of the capacity harness against the local PostgreSQL (`DATABASE_URL`, default 127.0.0.1:5432), in
//! a schema of the test's own that is dropped afterwards: schema refusal, the event fixture (10,000 events) and
//! its reuse, the known-cookie visitors, and the whole security run with small settings — its report's shape,
//! its plan assertions, and no failed operation; and the missing-cookie lookup test at its smallest scale.

use std::collections::BTreeMap;
use std::path::PathBuf;

use janitor_benchmarks::capacity::env::{CapacityEnv, Run};
use janitor_benchmarks::capacity::{security, seed, Target};
use janitor_sql::testing::{admin_client, database_url, population};
use serde::Serialize;
use serde_json::Value;

fn env(reuse: bool) -> CapacityEnv {
    let vars: BTreeMap<String, String> = [
        ("EVENTS", "10000"),
        ("SAMPLES", "256"),
        ("SHARDS", "4"),
        ("LABEL", "test"),
        ("VISITORS", "100"),
        ("REUSE", if reuse { "1" } else { "0" }),
    ]
    .into_iter()
    .map(|(k, v)| (format!("JANITOR_BENCHMARK_{k}"), v.to_owned()))
    .collect();
    CapacityEnv::from_vars(&vars, Run::Single).expect("valid settings")
}

/// A report as it is written, so that the checks below read the file's own keys.
fn json(report: &impl Serialize) -> Value {
    serde_json::to_value(report).expect("a report serializes")
}

struct Scratch {
    target: Target,
    reports: PathBuf,
}

async fn exercise(scratch: &Scratch) -> Result<Value, String> {
    let (target, fresh) = (&scratch.target, env(false));
    seed::prepare_schema(target, &fresh).await?;
    let refused = seed::prepare_schema(target, &fresh).await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("already exists") && e.contains("JANITOR_BENCHMARK_REUSE=1")),
        "an existing schema is refused: {refused:?}"
    );
    seed::prepare_schema(target, &env(true)).await?;

    let fixture = seed::events(target, &fresh).await?;
    let dataset = json(&fixture);
    assert_eq!(dataset["events"], 10_001);
    assert_eq!(dataset["subjects"], 100_001);
    assert_eq!(dataset["hot_subject_events"], 5_001);
    assert_eq!(dataset["reused"], false);
    for part in ["total", "table", "indexes"] {
        assert!(
            dataset["bytes"][part].as_u64().unwrap_or(0) > 0,
            "{dataset}"
        );
    }
    for part in ["load", "index_build", "vacuum_analyze", "total"] {
        assert!(dataset["seconds"][part].is_number(), "{dataset}");
    }
    let again = json(&seed::events(target, &env(true)).await?);
    assert_eq!(again["reused"], true, "{again}");
    assert_eq!(again["fixture_now_ms"], dataset["fixture_now_ms"]);

    std::fs::create_dir_all(&scratch.reports).map_err(|e| e.to_string())?;
    let cookies = scratch.reports.join("cookies.tsv");
    let visitors = json(&seed::visitors(target, &fresh, &cookies).await?);
    assert_eq!(visitors["visitors"], 100);
    let lines = std::fs::read_to_string(&cookies).map_err(|e| e.to_string())?;
    assert_eq!(lines.lines().count(), 100);
    let first = lines.lines().next().unwrap_or_default();
    assert_eq!(
        first.split_once('\t').map(|(id, _)| id),
        Some(population::visitor(1).as_str())
    );

    let report = security::run_in(target, &fresh, &fixture, &scratch.reports).await?;
    Ok(json(&report))
}

/// The constraint and index definitions of a schema's `application_events`, as the catalog gives them.
async fn index_definitions(schema: &str) -> Vec<String> {
    let admin = admin_client().await;
    admin
        .query(
            "SELECT indexname || ': ' || indexdef FROM pg_indexes \
             WHERE schemaname = $1 AND tablename = 'application_events' \
             UNION ALL \
             SELECT c.conname || ': ' || pg_get_constraintdef(c.oid) FROM pg_constraint c \
             JOIN pg_class t ON t.oid = c.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace \
             WHERE n.nspname = $1 AND t.relname = 'application_events' \
             ORDER BY 1",
            &[&schema],
        )
        .await
        .expect("index definitions")
        .iter()
        .map(|row| row.get::<_, String>(0).replace(schema, "SCHEMA"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_security_run_passes_on_a_small_fixture() {
    let schema = format!("janitor_capacity_test_{}", std::process::id());
    let scratch = Scratch {
        target: Target {
            url: database_url(),
            schema: schema.clone(),
        },
        reports: std::env::temp_dir().join(format!("{schema}_reports")),
    };
    // A freshly migrated schema's indexes, to compare with the fixture's afterwards.
    let reference = format!("{schema}_reference");
    let migrated = Target {
        url: database_url(),
        schema: reference.clone(),
    };
    let expected = match seed::prepare_schema(&migrated, &env(false)).await {
        Ok(()) => index_definitions(&reference).await,
        Err(e) => panic!("migrating the reference schema: {e}"),
    };
    seed::drop_schema(&migrated)
        .await
        .expect("dropping the reference schema");

    let outcome = tokio::spawn(async move {
        let outcome = exercise(&scratch).await;
        (outcome, scratch)
    })
    .await;
    let indexes = index_definitions(&schema).await;
    // Whatever happened, the schema and the reports go.
    let cleanup = seed::drop_schema(&Target {
        url: database_url(),
        schema: schema.clone(),
    })
    .await;
    let _ = std::fs::remove_dir_all(std::env::temp_dir().join(format!("{schema}_reports")));
    let (outcome, _) = outcome.expect("the test body does not panic");
    cleanup.expect("dropping the test schema");
    let report = outcome.expect("the security run passes");

    assert_eq!(
        indexes, expected,
        "the fixture keeps the migration's indexes"
    );
    assert_eq!(report["benchmark"], "security");
    assert_eq!(report["passed"], true);
    assert_eq!(
        (report["pool"].as_u64(), report["shards"].as_u64()),
        (Some(8), Some(4))
    );
    assert!(report["machine"]["cores"].as_u64().is_some());
    assert!(report["versions"]["postgresql"].is_string());
    assert_eq!(report["dataset"]["events"], 10_001);
    assert!(!report["limitations"]
        .as_array()
        .expect("limitations")
        .is_empty());

    let assertions = report["plans"]["assertions"]
        .as_array()
        .expect("assertions");
    assert_eq!(
        assertions.len(),
        13,
        "four per plan, three plans, and the hot read's index-only scan"
    );
    assert!(
        assertions.iter().all(|a| a["passed"] == true),
        "{assertions:?}"
    );
    assert_eq!(report["plans"]["hot"][0]["Plan"]["Actual Rows"], 1001);

    // pgbench on both sides' statements at every concurrency, beside the library's rate.
    let comparisons = report["statements"]["comparisons"]
        .as_array()
        .expect("statement comparisons");
    assert_eq!(
        comparisons.len(),
        12,
        "three workloads at four concurrencies"
    );
    for c in comparisons {
        let clients = c["concurrency"].as_u64().map(|n| n.min(8));
        assert_eq!(c["pgbench_clients"].as_u64(), clients, "{c}");
        for side in ["pgbench_ours", "pgbench_reference"] {
            assert_eq!(c[side]["failed"], 0, "{c}");
            assert!(c[side]["tps"].as_f64().unwrap_or(0.0) > 0.0, "{c}");
        }
        for key in ["ours", "statements_ratio", "library_ratio"] {
            assert!(c[key].as_f64().unwrap_or(0.0) > 0.0, "{key} in {c}");
        }
        // The grouped insert is compared with the reference's insert statement, and only there.
        let insert = c["workload"] == "event-insert";
        for key in ["grouped", "grouped_ratio"] {
            assert_eq!(
                c[key].as_f64().is_some_and(|v| v > 0.0),
                insert,
                "{key} in {c}"
            );
        }
    }
    let scripts = report["statements"]["scripts"]
        .as_object()
        .expect("scripts");
    assert_eq!(scripts.len(), 6);
    assert!(scripts["velocity-hot/reference"]
        .as_str()
        .is_some_and(|s| s.contains("record->>'type'")));

    let points = report["points"].as_array().expect("points");
    let names: Vec<&str> = points.iter().filter_map(|p| p["name"].as_str()).collect();
    for name in [
        "event-insert",
        "event-insert-grouped",
        "velocity-sparse",
        "velocity-hot",
        "shared-global-quota",
        "exhausted-global-quota",
    ] {
        let at: Vec<u64> = points
            .iter()
            .filter(|p| p["name"] == name)
            .filter_map(|p| p["concurrency"].as_u64())
            .collect();
        assert_eq!(at, [1, 16, 64, 256], "{name}");
    }
    assert!(names.contains(&"device-association-read"));
    for point in points {
        assert_eq!(point["failed"], 0, "{point}");
        // The other fields are the point's type's (see committed_reports.rs); the gauges are the run's own.
        for key in ["pool_waiting_peak", "db_connections_peak"] {
            assert!(point.get(key).is_some(), "{key} missing from {point}");
        }
        let outcomes: u64 = point["outcomes"]
            .as_object()
            .expect("outcomes")
            .values()
            .filter_map(Value::as_u64)
            .sum();
        assert_eq!(Some(outcomes), point["requests"].as_u64(), "{point}");
    }
    let hot_256 = points
        .iter()
        .find(|p| p["name"] == "velocity-hot" && p["concurrency"] == 256)
        .expect("velocity-hot at 256");
    assert_eq!(hot_256["outcomes"]["saturated"], 256);
    let wide = points
        .iter()
        .find(|p| p["name"] == "velocity-sparse" && p["concurrency"] == 256)
        .expect("velocity-sparse at 256");
    assert!(
        wide["pool_waiting_peak"].as_u64().unwrap_or(0) > 0,
        "{wide}"
    );
    assert!(
        wide["db_connections_peak"].as_u64().unwrap_or(0) >= 1,
        "{wide}"
    );

    let admission = &report["evaluator_admission"];
    assert_eq!(admission["budget_held"], true);
    assert!(admission["peak_concurrent"].as_u64() <= admission["max_concurrent"].as_u64());
    assert!(
        admission["admitted"].as_u64().unwrap_or(0) >= 1,
        "{admission}"
    );
    assert_eq!(admission["point"]["concurrency"], 256);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lookup_scale_test_measures_and_cleans_up() {
    let target = Target {
        url: database_url(),
        schema: format!("janitor_capacity_test_{}_l", std::process::id()),
    };
    let lookup = seed::lookup_schema(&target.schema);
    // Below the settings' lower bound of 100,000, to stay quick: the test is about the steps, not the scale.
    let settings = CapacityEnv {
        lookup_visitors: 20_000,
        samples: 100,
        rate_seconds: 2,
        ..env(false)
    };
    let skipped = seed::lookup_scale(&target, &env(false)).await;
    assert!(
        matches!(skipped, Ok(None)),
        "0 visitors skips it: {skipped:?}"
    );

    let report = seed::lookup_scale(&target, &settings).await;
    let admin = admin_client().await;
    let left = seed::schema_exists(&admin, &lookup)
        .await
        .expect("schema lookup");
    if left {
        seed::drop_schema(&Target {
            url: database_url(),
            schema: lookup.clone(),
        })
        .await
        .expect("dropping the leftover");
    }
    assert!(!left, "the lookup schema is dropped afterwards");
    let report = json(&report.expect("the lookup test runs").expect("a report"));
    assert_eq!(report["visitors"], 20_000);
    for part in [
        "candidate_lookup",
        "cold_candidate_lookup",
        "missing_cookie_identify",
        "cookie_identify",
    ] {
        assert_eq!(report[part]["samples"], 100, "{report}");
        let (p50, p99) = (
            report[part]["p50_ms"].as_f64(),
            report[part]["p99_ms"].as_f64(),
        );
        assert!(p50 > Some(0.0) && p50 <= p99, "{part}: {report}");
    }
    assert!(
        report["missing_cookie_cpu_ms"].as_f64() > Some(0.0),
        "{report}"
    );
    for way in ["computed_design", "previous_design", "covering_design"] {
        assert_eq!(
            report[way]["cold_candidate_lookup"]["samples"], 100,
            "{report}"
        );
        assert!(
            report[way]["missing_cookie_cpu_ms"].as_f64() > Some(0.0),
            "{way}: {report}"
        );
    }
    let covering = &report["covering_indexes"];
    for bytes in ["covering_index_bytes", "probe_index_bytes", "table_bytes"] {
        assert!(covering[bytes].as_i64() > Some(0), "{bytes}: {report}");
    }
    assert!(
        report["covering_cold_p95_speedup"].as_f64() > Some(0.0),
        "{report}"
    );
    assert_eq!(report["kept_with_cookie"], 100, "{report}");
    assert!(
        report["restored_without_cookie"].as_u64() > Some(0),
        "{report}"
    );

    // An existing lookup schema is refused and left alone.
    admin
        .batch_execute(&format!("CREATE SCHEMA {lookup}"))
        .await
        .expect("creating a squatter");
    let refused = seed::lookup_scale(&target, &settings).await;
    let still_there = seed::schema_exists(&admin, &lookup)
        .await
        .expect("schema lookup");
    admin
        .batch_execute(&format!("DROP SCHEMA {lookup}"))
        .await
        .expect("dropping the squatter");
    assert!(refused.is_err_and(|e| e.contains("already exists")));
    assert!(still_there, "a refused run removes nothing");
}
