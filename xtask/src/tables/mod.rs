//! `cargo xtask capacity-tables [--check]`: the result tables of docs/CAPACITY.md, docs/signin-defence.md and
//! docs/automation.md, written from the committed reports in docs/benchmarks/, so that no figure in them is
//! typed by hand.
//!
//! Each table sits between `<!-- table: NAME -->` and `<!-- /table -->` on the page; the command rewrites what
//! is between them, and `--check` (run by the tests) fails when the page and the reports disagree.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

/// The page, relative to the workspace root.
pub const PAGE: &str = "docs/CAPACITY.md";

/// The throughput run's report, relative to the workspace root.
pub const THROUGHPUT: &str = "docs/benchmarks/throughput-current.json";

/// The security SQL run's report (grouped event inserts among its points).
pub const SECURITY: &str = "docs/benchmarks/security-current.json";

/// The connection run's report (both drivers' summaries) and the hyper driver's own.
pub const CONNECTIONS: &str = "docs/benchmarks/connections-current.json";

/// The hyper driver's report of the connection run.
pub const CONNECTIONS_HYPER: &str = "docs/benchmarks/connections-hyper.json";

/// The missing-cookie lookup run's report.
pub const LOOKUP: &str = "docs/benchmarks/lookup-current.json";

/// The candidate lookup's plans in each statistics state, before and now (`--bin lookup-plans`).
pub const LOOKUP_PLANS: &str = "docs/benchmarks/lookup-plans.json";

/// The four short throughput runs that chose the admission wait's default (8 slots per process, without a wait
/// first), then the chosen wait at the default 64 slots, then both again with a current-thread runtime in each
/// server process, and 8 slots with a 100 ms wait on that runtime.
pub const ADMISSION_WAIT: [&str; 8] = [
    "docs/benchmarks/admission-wait/wait-0.json",
    "docs/benchmarks/admission-wait/wait-8-5.json",
    "docs/benchmarks/admission-wait/wait-32-10.json",
    "docs/benchmarks/admission-wait/wait-128-20.json",
    "docs/benchmarks/admission-wait/default-slots.json",
    "docs/benchmarks/admission-wait/current-thread-8.json",
    "docs/benchmarks/admission-wait/current-thread-64.json",
    "docs/benchmarks/admission-wait/current-thread-8-wait-100.json",
];

/// The connection runs before and after the overload window, each driver's report in turn, then the two
/// trials of shorter windows (pooled driver).
pub const BURST_REFUSALS: [&str; 10] = [
    "docs/benchmarks/admission-wait/connections-no-window-1.json",
    "docs/benchmarks/admission-wait/connections-no-window-1-hyper.json",
    "docs/benchmarks/admission-wait/connections-no-window-2.json",
    "docs/benchmarks/admission-wait/connections-no-window-2-hyper.json",
    "docs/benchmarks/admission-wait/connections-window-1s-1.json",
    "docs/benchmarks/admission-wait/connections-window-1s-1-hyper.json",
    "docs/benchmarks/admission-wait/connections-window-1s-2.json",
    "docs/benchmarks/admission-wait/connections-window-1s-2-hyper.json",
    "docs/benchmarks/admission-wait/connections-window-200ms.json",
    "docs/benchmarks/admission-wait/connections-window-50ms.json",
];

/// The evidence growth run's report (`cargo xtask benchmark-growth`).
pub const GROWTH: &str = "docs/benchmarks/growth-current.json";

/// The lookup replica run's report (`cargo xtask benchmark-replica`).
pub const REPLICA: &str = "docs/benchmarks/replica-current.json";

/// The sign-in defence's page.
pub const SIGNIN_PAGE: &str = "docs/signin-defence.md";

/// The sign-in defence benchmark's full run (`cargo xtask benchmark-stuffing --stores memory`).
pub const STUFFING: &str = "docs/benchmarks/stuffing-current.json";

/// Its run on both stores at a smaller size.
pub const STUFFING_STORES: &str = "docs/benchmarks/stuffing-postgres.json";

/// The automation verdict's page.
pub const AUTOMATION_PAGE: &str = "docs/automation.md";

/// The automation benchmark's full run (`cargo xtask benchmark-automation`).
pub const AUTOMATION: &str = "docs/benchmarks/automation-current.json";

mod automation;
mod connections;
mod growth;
mod lookup;
mod refusals;
mod replica;
mod security;
mod stuffing;
mod throughput;

/// Draws one table from its reports, given in the order the table names them.
type Draw = fn(&[Value]) -> Result<String, String>;

/// A page's tables, by name, with the reports each is drawn from and how.
type Tables = &'static [(&'static str, &'static [&'static str], Draw)];

/// The pages and their tables.
const PAGES: &[(&str, Tables)] = &[
    (PAGE, CAPACITY_TABLES),
    (SIGNIN_PAGE, SIGNIN_TABLES),
    (AUTOMATION_PAGE, AUTOMATION_TABLES),
];

const AUTOMATION_TABLES: Tables = &[
    ("automation-confusion", &[AUTOMATION], |r| {
        automation::confusion(&r[0])
    }),
    ("automation-reasons", &[AUTOMATION], |r| {
        automation::reasons(&r[0])
    }),
    ("automation-cost", &[AUTOMATION], |r| {
        automation::cost(&r[0])
    }),
];

const SIGNIN_TABLES: Tables = &[
    ("stuffing", &[STUFFING], |r| stuffing::scenarios(&r[0])),
    ("stuffing-algorithms", &[STUFFING], |r| {
        stuffing::algorithms(&r[0])
    }),
    ("stuffing-targets", &[STUFFING], |r| {
        stuffing::targets(&r[0])
    }),
    ("stuffing-stores", &[STUFFING_STORES], |r| {
        stuffing::stores(&r[0])
    }),
    ("stuffing-stores-targets", &[STUFFING_STORES], |r| {
        stuffing::targets(&r[0])
    }),
];

const CAPACITY_TABLES: Tables = &[
    ("security-points", &[SECURITY], |r| security::points(&r[0])),
    ("security-statements", &[SECURITY], |r| {
        security::statements(&r[0])
    }),
    ("grouped-inserts", &[SECURITY], |r| {
        security::grouped_inserts(&r[0])
    }),
    ("connections", &[CONNECTIONS, CONNECTIONS_HYPER], |r| {
        connections::table(&r[0], &r[1])
    }),
    ("rate-sweep", &[THROUGHPUT], |r| rate_sweep(&r[0])),
    ("database-limits", &[THROUGHPUT], |r| database_limits(&r[0])),
    ("limits-cpu", &[THROUGHPUT], |r| {
        throughput::limits_cpu(&r[0])
    }),
    ("admission-rounds", &[THROUGHPUT], |r| {
        admission_rounds(&r[0])
    }),
    ("lookup", &[LOOKUP], |r| lookup::latencies(&r[0])),
    ("lookup-covering-cost", &[LOOKUP], |r| {
        lookup::covering_cost(&r[0])
    }),
    ("lookup-plans", &[LOOKUP_PLANS], |r| lookup::plans(&r[0])),
    ("admission-wait", &ADMISSION_WAIT, admission_wait),
    ("burst-refusals", &BURST_REFUSALS, refusals::table),
    ("lookup-replica", &[REPLICA], |r| replica::rounds(&r[0])),
    ("evidence-growth", &[GROWTH], |r| growth::table(&r[0])),
];

/// Rewrites the tables of the pages under `root` from their reports; with `check`, only compares and fails on
/// any difference, naming the tables that differ.
pub fn run(root: &Path, check: bool) -> Result<(), String> {
    for (page, tables) in PAGES {
        run_page(root, page, tables, check)?;
    }
    Ok(())
}

fn run_page(root: &Path, name: &str, tables: Tables, check: bool) -> Result<(), String> {
    let read = |name: &str| {
        std::fs::read_to_string(root.join(name)).map_err(|e| format!("reading {name}: {e}"))
    };
    let report = |name: &str| -> Result<Value, String> {
        serde_json::from_str(&read(name)?).map_err(|e| format!("{name}: {e}"))
    };
    let page = read(name)?;
    let (written, changed) = fill_tables(name, &page, tables, report)?;
    if changed.is_empty() {
        println!("{name}: every table agrees with its report");
        return Ok(());
    }
    if check {
        return Err(format!(
            "{name}: the tables {} differ from their reports; run `cargo xtask capacity-tables`",
            changed.join(", ")
        ));
    }
    // Renamed into place, so a reader never sees half a page.
    let partial = root.join(format!("{name}.partial"));
    std::fs::write(&partial, written)
        .and_then(|()| std::fs::rename(&partial, root.join(name)))
        .map_err(|e| format!("writing {name}: {e}"))?;
    println!("{name}: rewrote {}", changed.join(", "));
    Ok(())
}

/// The page with every table drawn anew from the report `report` reads by path, and the names of those that
/// changed. Every table must be on the page once, and nothing else may use the markers.
pub fn fill(
    page: &str,
    report: impl Fn(&str) -> Result<Value, String>,
) -> Result<(String, Vec<String>), String> {
    fill_tables(PAGE, page, CAPACITY_TABLES, report)
}

fn fill_tables(
    page_name: &str,
    page: &str,
    tables: Tables,
    report: impl Fn(&str) -> Result<Value, String>,
) -> Result<(String, Vec<String>), String> {
    let mut out = page.to_owned();
    let mut changed = Vec::new();
    for (name, sources, draw) in tables {
        let open = format!("<!-- table: {name} -->\n");
        let close = "<!-- /table -->";
        let start = match out.matches(&open).count() {
            1 => out.find(&open).expect("counted") + open.len(),
            n => {
                return Err(format!(
                    "{page_name} has the marker of table {name} {n} times, not once"
                ))
            }
        };
        let end = start
            + out[start..]
                .find(close)
                .ok_or_else(|| format!("table {name} on {page_name} has no closing marker"))?;
        let reports = sources
            .iter()
            .map(|source| report(source))
            .collect::<Result<Vec<Value>, String>>()?;
        let table = draw(&reports).map_err(|e| format!("table {name}: {e}"))?;
        if out[start..end] != table {
            changed.push((*name).to_owned());
            out.replace_range(start..end, &table);
        }
    }
    Ok((out, changed))
}

/// A number at `path` (keys separated by `.`) of `value`.
pub(crate) fn number(value: &Value, path: &str) -> Result<f64, String> {
    path.split('.')
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("the report has no number at {path}"))
}

/// A count with thousands separators: 30000 → "30,000".
pub(crate) fn count(n: f64) -> String {
    let digits = format!("{:.0}", n.round());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `p50 / p95 / p99` of a latency summary, in ms as the report holds them.
fn percentiles(latency: &Value) -> Result<String, String> {
    let p = |key| number(latency, key).map(|ms| ms.to_string());
    Ok(format!(
        "{} / {} / {}",
        p("p50_ms")?,
        p("p95_ms")?,
        p("p99_ms")?
    ))
}

fn rate_sweep(report: &Value) -> Result<String, String> {
    let mut table = "| offered/s | sent | 200 | 503 | misses | success p50 / p95 / p99 ms, raw \
                     | corrected for coordinated omission |\n|---|---|---|---|---|---|---|\n"
        .to_owned();
    let points = report["points"]
        .as_array()
        .ok_or("the report has no points")?;
    for point in points {
        let successes = &point["latency"]["successes"];
        let _ = writeln!(
            table,
            "| {} | {} | {} | {} | {} | {} | {} |",
            count(number(point, "offered_rate")?),
            count(number(point, "sent")?),
            count(number(point, "status_200")?),
            count(number(point, "status_503")?),
            count(number(point, "schedule_misses")?),
            percentiles(&successes["raw"])?,
            percentiles(&successes["corrected"])?,
        );
    }
    Ok(table)
}

/// How a figure of the limits table is written.
#[derive(Clone, Copy)]
enum Cell {
    Rate,
    Ratio,
}

/// When a row of the limits table is drawn: newer reports hold more figures.
#[derive(Clone, Copy)]
enum When {
    Always,
    /// The report has a value at this path.
    Has(&'static str),
    /// The report has no value at this path.
    Lacks(&'static str),
}

/// A row of the limits table: its label, the per-round key, the overall figure's path (the rounds' mean when
/// the report holds none), how it is written, and when it is drawn.
type LimitRow = (&'static str, &'static str, Option<&'static str>, Cell, When);

/// Reports that compare the two payloads name the real client's; older ones re-sent the seeded payload.
const REAL: &str = "identify_to_database.real_to_identical_ratio";

const LIMIT_ROWS: &[LimitRow] = &[
    (
        "identify, closed loop",
        "identify_per_second",
        Some("identify_limit.result.completed_per_second"),
        Cell::Rate,
        When::Lacks(REAL),
    ),
    (
        "identify, closed loop, as janitor.js sends",
        "identify_per_second",
        Some("identify_limit.result.completed_per_second"),
        Cell::Rate,
        When::Has(REAL),
    ),
    (
        "identify, the seeded payload re-sent unchanged",
        "identical_per_second",
        None,
        Cell::Rate,
        When::Has(REAL),
    ),
    (
        "as janitor.js sends ÷ unchanged",
        "real_to_identical",
        Some(REAL),
        Cell::Ratio,
        When::Has(REAL),
    ),
    (
        "pgbench, current statement after a helper round trip",
        "pgbench_tps",
        Some("pgbench.tps"),
        Cell::Rate,
        When::Always,
    ),
    (
        "pgbench, previous two statements after a helper round trip",
        "pgbench_previous_tps",
        Some("pgbench_previous.tps"),
        Cell::Rate,
        When::Always,
    ),
    (
        "pgbench, current statement alone",
        "pgbench_alone_tps",
        Some("pgbench_alone.tps"),
        Cell::Rate,
        When::Has("pgbench_alone.tps"),
    ),
    (
        "current ÷ previous on pgbench",
        "design_ratio",
        Some("design_ratio"),
        Cell::Ratio,
        When::Always,
    ),
    (
        "identify ÷ current pgbench (helper included)",
        "ratio",
        Some("identify_to_database.closed_loop_ratio"),
        Cell::Ratio,
        When::Always,
    ),
    (
        "identify ÷ the statement alone",
        "ratio_alone",
        Some("identify_to_database.closed_loop_ratio_alone"),
        Cell::Ratio,
        When::Has("identify_to_database.closed_loop_ratio_alone"),
    ),
];

fn database_limits(report: &Value) -> Result<String, String> {
    let rounds = report["identify_limit"]["per_round"]
        .as_array()
        .ok_or("the report has no identify_limit.per_round")?;
    let mut table = String::from("| |");
    for i in 1..=rounds.len() {
        let _ = write!(table, " round {i} |");
    }
    table.push_str(" all |\n|---|");
    table.push_str(&"---|".repeat(rounds.len() + 1));
    table.push('\n');
    let has = |path: &str| number(report, path).is_ok();
    for &(label, key, all, cell, when) in LIMIT_ROWS {
        let drawn = match when {
            When::Always => true,
            When::Has(path) => has(path),
            When::Lacks(path) => !has(path),
        };
        if !drawn {
            continue;
        }
        let each: Vec<Option<f64>> = rounds
            .iter()
            .map(|r| r.get(key).and_then(Value::as_f64))
            .collect();
        let overall = match all {
            Some(path) => number(report, path)?,
            None => each.iter().flatten().sum::<f64>() / rounds.len().max(1) as f64,
        };
        let write = |x: f64| match cell {
            Cell::Rate => format!("{}/s", count(x)),
            Cell::Ratio => format!("{x:.2}"),
        };
        let _ = write!(table, "| {label} |");
        for value in &each {
            let _ = write!(table, " {} |", value.map_or("–".to_owned(), write));
        }
        let overall = match cell {
            Cell::Rate => write(overall),
            Cell::Ratio => format!("**{}**", write(overall)),
        };
        let _ = writeln!(table, " {overall} |");
    }
    Ok(table)
}

/// One row per run of [`ADMISSION_WAIT`]: the slots and the wait, the search's sustained zero-503 rate and
/// its success p95, the closed loop, their ratio, and the burst's answers.
fn admission_wait(reports: &[Value]) -> Result<String, String> {
    let mut table =
        "| slots × requests waiting × wait | server runtime | sustained rate without a 503 | its success p95 | \
                     closed-loop identify | rate ÷ closed loop | burst of 10,000: 200 / 503 |\n\
                     |---|---|---|---|---|---|---|\n"
            .to_owned();
    for report in reports {
        let best = number(report, "search.best_rate")?;
        let probe = report["search"]["probes"]
            .as_array()
            .and_then(|probes| {
                probes
                    .iter()
                    .find(|p| p["offered_rate"].as_f64() == Some(best))
            })
            .ok_or_else(|| "the search has no probe at its best rate".to_owned())?;
        let _ = writeln!(
            table,
            "| {} × {} × {} ms | {} | {}/s | {} ms | {}/s | {} | {} / {} |",
            number(report, "settings.servers.admission_slots_each")?,
            number(report, "settings.servers.admission_waiting_each")?,
            number(report, "settings.servers.admission_slot_wait_ms")?,
            // Reports before the runtime was a setting ran a worker per core.
            match report["settings"]["servers"]["runtime"].as_str() {
                Some("current_thread") => "current-thread",
                Some(other) => other,
                None => "multi-thread",
            },
            count(best),
            number(probe, "latency.successes.corrected.p95_ms")?,
            count(number(
                report,
                "identify_limit.result.completed_per_second"
            )?),
            number(report, "identify_to_database.search_to_closed_loop")?,
            count(number(report, "burst.status_200")?),
            count(number(report, "burst.status_503")?),
        );
    }
    Ok(table)
}

fn admission_rounds(report: &Value) -> Result<String, String> {
    let overhead = &report["admission_overhead"];
    let rounds = overhead["rounds_detail"]
        .as_array()
        .ok_or("the report has no admission_overhead.rounds_detail")?;
    let mut table = "| round | bare axum | axum with the admission layer | with ÷ without |\n|---|---|---|---|\n"
        .to_owned();
    for round in rounds {
        let (bare, with) = (
            number(round, "plain_per_second")?,
            number(round, "admitted_per_second")?,
        );
        let _ = writeln!(
            table,
            "| {} | {}/s | {}/s | {:.2} |",
            number(round, "round")?,
            count(bare),
            count(with),
            with / bare
        );
    }
    let _ = writeln!(
        table,
        "| all | {}/s | {}/s | **{:.3}** |",
        count(number(overhead, "plain.requests_per_second")?),
        count(number(overhead, "admitted.requests_per_second")?),
        number(overhead, "throughput_ratio_admitted_to_plain")?
    );
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(count(0.0), "0");
        assert_eq!(count(999.0), "999");
        assert_eq!(count(1_000.0), "1,000");
        assert_eq!(count(29_817.0), "29,817");
        assert_eq!(count(1_400.8), "1,401");
        assert_eq!(count(2_000_000.0), "2,000,000");
    }

    #[test]
    fn an_older_report_draws_only_the_rows_it_holds() {
        let round = serde_json::json!({"identify_per_second": 2210.0, "pgbench_tps": 4247.9,
            "pgbench_previous_tps": 1378.6, "design_ratio": 3.081, "ratio": 0.52});
        let report = serde_json::json!({
            "identify_limit": {"per_round": [round], "result": {"completed_per_second": 2210.0}},
            "pgbench": {"tps": 4247.9}, "pgbench_previous": {"tps": 1378.6}, "design_ratio": 3.081,
            "identify_to_database": {"closed_loop_ratio": 0.52}
        });
        let table = database_limits(&report).unwrap();
        assert!(
            table.contains("| identify, closed loop | 2,210/s | 2,210/s |\n"),
            "{table}"
        );
        for newer in ["as janitor.js", "unchanged", "alone"] {
            assert!(!table.contains(newer), "{newer} in {table}");
        }
        assert!(
            table.contains("| identify ÷ current pgbench (helper included) | 0.52 | **0.52** |"),
            "{table}"
        );
        let mut broken = report.clone();
        broken["pgbench"] = serde_json::json!({});
        assert!(database_limits(&broken)
            .unwrap_err()
            .contains("pgbench.tps"));
    }

    #[test]
    fn a_missing_or_repeated_marker_is_refused() {
        let report = |_: &str| Ok(serde_json::json!({}));
        let err = fill("no markers here", report).unwrap_err();
        assert!(err.contains("security-points 0 times"), "{err}");
        let twice = "<!-- table: security-points -->\n<!-- /table -->\n".repeat(2);
        let err = fill(&twice, report).unwrap_err();
        assert!(err.contains("2 times"), "{err}");
    }
}
