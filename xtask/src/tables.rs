//! `cargo xtask capacity-tables [--check]`: the result tables of docs/CAPACITY.md, written from the committed
//! reports in docs/benchmarks/, so that no figure in them is typed by hand.
//!
//! Each table sits between `<!-- table: NAME -->` and `<!-- /table -->` on the page; the command rewrites what
//! is between them, and `--check` (run by the tests) fails when the page and the reports disagree.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

/// The page, relative to the workspace root.
pub const PAGE: &str = "docs/CAPACITY.md";

/// The report the tables come from, relative to the workspace root.
pub const THROUGHPUT: &str = "docs/benchmarks/throughput-current.json";

/// Draws one table from the throughput report.
type Draw = fn(&Value) -> Result<String, String>;

/// The tables, by name, and how each is drawn from the throughput report.
const TABLES: &[(&str, Draw)] = &[
    ("rate-sweep", rate_sweep),
    ("database-limits", database_limits),
    ("admission-rounds", admission_rounds),
];

/// Rewrites the tables of the page under `root` from its reports; with `check`, only compares and fails on
/// any difference, naming the tables that differ.
pub fn run(root: &Path, check: bool) -> Result<(), String> {
    let read = |name: &str| {
        std::fs::read_to_string(root.join(name)).map_err(|e| format!("reading {name}: {e}"))
    };
    let report: Value =
        serde_json::from_str(&read(THROUGHPUT)?).map_err(|e| format!("{THROUGHPUT}: {e}"))?;
    let page = read(PAGE)?;
    let (written, changed) = fill(&page, &report)?;
    if changed.is_empty() {
        println!("{PAGE}: every table agrees with {THROUGHPUT}");
        return Ok(());
    }
    if check {
        return Err(format!(
            "{PAGE}: the tables {} differ from {THROUGHPUT}; run `cargo xtask capacity-tables`",
            changed.join(", ")
        ));
    }
    // Renamed into place, so a reader never sees half a page.
    let partial = root.join(format!("{PAGE}.partial"));
    std::fs::write(&partial, written)
        .and_then(|()| std::fs::rename(&partial, root.join(PAGE)))
        .map_err(|e| format!("writing {PAGE}: {e}"))?;
    println!("{PAGE}: rewrote {}", changed.join(", "));
    Ok(())
}

/// The page with every table drawn anew, and the names of those that changed. Every table must be on the
/// page once, and nothing else may use the markers.
pub fn fill(page: &str, report: &Value) -> Result<(String, Vec<String>), String> {
    let mut out = page.to_owned();
    let mut changed = Vec::new();
    for (name, draw) in TABLES {
        let open = format!("<!-- table: {name} -->\n");
        let close = "<!-- /table -->";
        let start = match out.matches(&open).count() {
            1 => out.find(&open).expect("counted") + open.len(),
            n => {
                return Err(format!(
                    "{PAGE} has the marker of table {name} {n} times, not once"
                ))
            }
        };
        let end = start
            + out[start..]
                .find(close)
                .ok_or_else(|| format!("table {name} on {PAGE} has no closing marker"))?;
        let table = draw(report).map_err(|e| format!("table {name}: {e}"))?;
        if out[start..end] != table {
            changed.push((*name).to_owned());
            out.replace_range(start..end, &table);
        }
    }
    Ok((out, changed))
}

/// A number at `path` (keys separated by `.`) of `value`.
fn number(value: &Value, path: &str) -> Result<f64, String> {
    path.split('.')
        .try_fold(value, |v, key| v.get(key))
        .and_then(Value::as_f64)
        .ok_or_else(|| format!("the report has no number at {path}"))
}

/// A count with thousands separators: 30000 → "30,000".
fn count(n: f64) -> String {
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
    let alone = report.get("pgbench_alone").filter(|v| !v.is_null());
    let mut row = |label: &str, key: &str, all: String, format: fn(f64) -> String| {
        let _ = write!(table, "| {label} |");
        for round in rounds {
            let cell = round
                .get(key)
                .and_then(Value::as_f64)
                .map_or("–".to_owned(), format);
            let _ = write!(table, " {cell} |");
        }
        let _ = writeln!(table, " {all} |");
    };
    let rate = |x: f64| format!("{}/s", count(x));
    let ratio = |x: f64| format!("{x:.2}");
    let all_rate = |path: &str| number(report, path).map(rate);
    let all_ratio = |path: &str| number(report, path).map(|x| format!("**{x:.2}**"));
    // Reports that compare the two payloads name the real client's; older ones re-sent the seeded payload.
    let identical = report["identify_to_database"]
        .get("real_to_identical_ratio")
        .filter(|v| !v.is_null());
    row(
        match identical {
            Some(_) => "identify, closed loop, as janitor.js sends",
            None => "identify, closed loop",
        },
        "identify_per_second",
        all_rate("identify_limit.result.completed_per_second")?,
        rate,
    );
    if identical.is_some() {
        let each = rounds
            .iter()
            .filter_map(|r| r.get("identical_per_second")?.as_f64());
        let all = each.sum::<f64>() / rounds.len().max(1) as f64;
        row(
            "identify, the seeded payload re-sent unchanged",
            "identical_per_second",
            rate(all),
            rate,
        );
        row(
            "as janitor.js sends ÷ unchanged",
            "real_to_identical",
            all_ratio("identify_to_database.real_to_identical_ratio")?,
            ratio,
        );
    }
    row(
        "pgbench, current statement after a helper round trip",
        "pgbench_tps",
        all_rate("pgbench.tps")?,
        rate,
    );
    row(
        "pgbench, previous two statements after a helper round trip",
        "pgbench_previous_tps",
        all_rate("pgbench_previous.tps")?,
        rate,
    );
    if alone.is_some() {
        row(
            "pgbench, current statement alone",
            "pgbench_alone_tps",
            all_rate("pgbench_alone.tps")?,
            rate,
        );
    }
    row(
        "current ÷ previous on pgbench",
        "design_ratio",
        all_ratio("design_ratio")?,
        ratio,
    );
    row(
        "identify ÷ current pgbench (helper included)",
        "ratio",
        all_ratio("identify_to_database.closed_loop_ratio")?,
        ratio,
    );
    if alone.is_some() {
        row(
            "identify ÷ the statement alone",
            "ratio_alone",
            all_ratio("identify_to_database.closed_loop_ratio_alone")?,
            ratio,
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
    fn a_missing_or_repeated_marker_is_refused() {
        let report: Value = serde_json::json!({});
        let err = fill("no markers here", &report).unwrap_err();
        assert!(err.contains("rate-sweep 0 times"), "{err}");
        let twice = "<!-- table: rate-sweep -->\n<!-- /table -->\n".repeat(2);
        let err = fill(&twice, &report).unwrap_err();
        assert!(err.contains("2 times"), "{err}");
    }
}
