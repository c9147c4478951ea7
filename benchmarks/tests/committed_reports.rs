//! The reports committed in docs/benchmarks/ read into the harness's report types and come back unchanged:
//! the harness writes the same field names, nesting and kinds of numbers as the files hold, and its charts
//! draw from them.

use std::path::PathBuf;

use janitor_benchmarks::accuracy::Report as AccuracyReport;
use janitor_benchmarks::capacity::connections::{self, report::ConnectionsReport};
use janitor_benchmarks::capacity::growth::GrowthReport;
use janitor_benchmarks::capacity::replica::ReplicaReport;
use janitor_benchmarks::capacity::run::LookupReport;
use janitor_benchmarks::capacity::security::SecurityReport;
use janitor_benchmarks::capacity::throughput::{self, report::ThroughputReport};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// Reads `docs/benchmarks/<name>` as `T` and checks that `T` writes exactly what was read.
fn round_trip<T: Serialize + DeserializeOwned>(name: &str) -> T {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/benchmarks")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let committed: Value = serde_json::from_str(&text).unwrap();
    let report: T = serde_json::from_value(committed.clone())
        .unwrap_or_else(|e| panic!("{name} does not read as its report type: {e}"));
    assert_eq!(serde_json::to_value(&report).unwrap(), committed, "{name}");
    report
}

#[test]
fn the_accuracy_reports_read_back_unchanged() {
    let folder = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/benchmarks/accuracy");
    let mut names: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names.len(),
        40,
        "four logs, two policies, two scenarios; two logs with networks, three ways, two scenarios; three logs \
         with extended signals, two sets, two scenarios: {names:?}"
    );
    for name in names {
        let report: AccuracyReport = round_trip(&format!("accuracy/{name}"));
        let signals = match report.signals.as_str() {
            "payload" => String::new(),
            other => format!("-{other}"),
        };
        let stem = format!("-{}{signals}-{}.json", report.policy, report.scenario);
        assert!(name.ends_with(&stem), "{name} holds {stem}");
    }
}

/// The native run's reports, the Docker run's beside them (`cargo xtask benchmark-capacity --docker`), the
/// native run made right after it and the Docker run without CPU limits (docs/CAPACITY.md, "The Docker path").
const RUNS: [&str; 4] = [
    "{}-current.json",
    "{}-docker.json",
    "native-pair/{}-current.json",
    "docker-no-cpu-limits/{}-docker.json",
];

fn reports(kind: &str) -> impl Iterator<Item = String> + '_ {
    RUNS.iter().map(move |pattern| pattern.replace("{}", kind))
}

#[test]
fn the_security_and_lookup_reports_read_back_unchanged() {
    for name in reports("security") {
        let security: SecurityReport = round_trip(&name);
        assert!(security.passed && security.problems.is_empty(), "{name}");
    }
    // The run without CPU limits left the lookup test out.
    for name in reports("lookup").take(3) {
        let lookup: LookupReport = round_trip(&name);
        assert!(lookup.figures.candidate_lookup.latency.is_some(), "{name}");
    }
}

#[test]
fn the_connections_report_reads_back_and_charts() {
    for name in reports("connections") {
        let report: ConnectionsReport = round_trip(&name);
        let chart = connections::chart::svg(&report.steps);
        assert_eq!(chart.matches("<circle").count(), 2 * report.steps.len());
    }
}

/// The connection runs before and after the overload window, and the two trials of shorter windows
/// (docs/CAPACITY.md, "Refusals under a burst"): each burst has its servers' answer times, and the summary's
/// refusal p99 is the one those times give.
#[test]
fn the_burst_refusal_reports_read_back_with_their_answer_times() {
    let runs = [
        "no-window-1",
        "no-window-2",
        "window-1s-1",
        "window-1s-2",
        "window-200ms",
        "window-50ms",
    ];
    for run in runs {
        for driver in ["", "-hyper"] {
            let name = format!("admission-wait/connections-{run}{driver}.json");
            let report: ConnectionsReport = round_trip(&name);
            let burst = report.stages.burst.expect("a burst");
            let times = burst.figures.server_answer_times.expect("answer times");
            assert_eq!(
                Some(times.overloaded.answers),
                report.summary.burst_overloads,
                "{name}"
            );
            assert_eq!(
                times.overloaded.p99_ms_at_most, report.summary.burst_refusal_p99_ms_at_most,
                "{name}"
            );
        }
    }
}

#[test]
fn the_throughput_report_reads_back_and_charts() {
    // The sweep run before the current one, on another processor, kept for the spread between runs, and the
    // searches alternated without and with the overload window (docs/CAPACITY.md, "Refusals under a burst").
    let earlier = "xeon-run/throughput-current.json".to_owned();
    let searches = [
        "no-window-a",
        "window-a",
        "no-window-b",
        "window-b",
        "64-window-a",
        "64-window-b",
    ]
    .map(|run| format!("admission-wait/search-{run}.json"));
    for name in reports("throughput").chain([earlier]).chain(searches) {
        let report: ThroughputReport = round_trip(&name);
        let points = throughput::chart_points(&report.sweep.points);
        assert_eq!(points.len(), report.sweep.points.len());
        let chart = throughput::chart::svg("committed", &points);
        assert_eq!(chart.matches("<circle").count(), 4 * points.len());
        assert!(
            report.sweep.settings.servers.external == name.contains("docker"),
            "{name}"
        );
    }
}

/// The full run's security report measures grouped event inserts beside the reference's insert statement
/// (docs/CAPACITY.md, "Grouped event inserts").
#[test]
fn the_grouped_insert_report_reads_back_with_its_comparison() {
    let report: SecurityReport = round_trip("security-current.json");
    assert!(report.passed && report.problems.is_empty());
    let statements = report.statements.expect("statements");
    let inserts: Vec<_> = statements
        .comparisons
        .iter()
        .filter(|c| c.workload == "event-insert")
        .collect();
    assert_eq!(inserts.len(), 4);
    for c in inserts {
        assert!(c.grouped.is_some() && c.grouped_ratio.is_some(), "{c:?}");
    }
}

#[test]
fn the_replica_report_reads_back_unchanged() {
    let report: ReplicaReport = round_trip("replica-current.json");
    let sides: Vec<bool> = report.rounds.iter().map(|r| r.with_replica).collect();
    assert_eq!(sides, [false, true, true, false]);
}

#[test]
fn the_growth_report_reads_back_unchanged() {
    let report: GrowthReport = round_trip("growth-current.json");
    assert!(report.events >= 10_000_000, "{}", report.events);
}
