//! The tables of the security SQL run (`security-current.json`): the library's points beside the reference's
//! published figures, our statements against the reference's on pgbench, and the grouped inserts.

use std::fmt::Write as _;

use serde_json::Value;

use super::{count, number};

/// The concurrencies of the run, in the order of the columns.
const CONCURRENCIES: [f64; 4] = [1.0, 16.0, 64.0, 256.0];

/// The workloads of the points table with the reference's published optimized run (eight cores) at each
/// concurrency, as its page prints them: operations per second (p95 ms).
const PUBLISHED: [(&str, [&str; 4]); 5] = [
    (
        "event-insert",
        [
            "1,093 (1.99)",
            "6,630 (3.18)",
            "7,604 (9.71)",
            "7,830 (33.9)",
        ],
    ),
    (
        "velocity-sparse",
        [
            "1,730 (1.06)",
            "8,264 (2.94)",
            "7,997 (9.94)",
            "8,218 (30.9)",
        ],
    ),
    (
        "velocity-hot",
        ["870 (1.65)", "3,027 (6.98)", "2,717 (27.2)", "2,797 (73.6)"],
    ),
    (
        "shared-global-quota",
        [
            "2,436 (0.50)",
            "9,038 (2.26)",
            "6,940 (14.6)",
            "8,347 (38.0)",
        ],
    ),
    (
        "exhausted-global-quota",
        [
            "2,246 (0.66)",
            "5,236 (3.50)",
            "5,385 (12.8)",
            "5,226 (55.5)",
        ],
    ),
];

/// The workloads pgbench runs on both sides' statements.
const COMPARED: [&str; 3] = ["event-insert", "velocity-sparse", "velocity-hot"];

/// A latency in ms with three significant figures, as the reference prints them: 2.11, 11.5, 118.
fn ms3(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.0}")
    } else if ms >= 10.0 {
        format!("{ms:.1}")
    } else {
        format!("{ms:.2}")
    }
}

/// The entry of `list` for `workload` at concurrency `c`.
fn at<'a>(list: &'a [Value], key: &str, workload: &str, c: f64) -> Result<&'a Value, String> {
    list.iter()
        .find(|p| p[key] == workload && p["concurrency"].as_f64() == Some(c))
        .ok_or_else(|| format!("the report has no {workload} at c = {c}"))
}

/// The header of a table with one column per concurrency.
const HEADER: &str = "| workload | c = 1 | c = 16 | c = 64 | c = 256 |\n|---|---|---|---|---|\n";

/// Writes the row `label` of `workload` to `table`: one cell per concurrency, drawn by `cell` from the entry
/// of `list` (matched on `key`) at that concurrency.
fn row(
    table: &mut String,
    label: &str,
    (list, key, workload): (&[Value], &str, &str),
    cell: impl Fn(&Value) -> Result<String, String>,
) -> Result<(), String> {
    let _ = write!(table, "| {label} |");
    for c in CONCURRENCIES {
        let _ = write!(table, " {} |", cell(at(list, key, workload, c)?)?);
    }
    table.push('\n');
    Ok(())
}

/// Operations per second (p95 ms) of each workload at each concurrency, with the published row below it.
pub fn points(report: &Value) -> Result<String, String> {
    let points = report["points"]
        .as_array()
        .ok_or("the report has no points")?;
    let mut table = HEADER.to_owned();
    for (workload, published) in PUBLISHED {
        row(&mut table, workload, (points, "name", workload), |p| {
            Ok(format!(
                "{} ({})",
                count(number(p, "requests_per_second")?),
                ms3(number(p, "p95_ms")?)
            ))
        })?;
        let _ = writeln!(
            table,
            "| reference (published) | {} |",
            published.join(" | ")
        );
    }
    Ok(table)
}

/// pgbench on our statement and on the reference's, ours ÷ theirs, at each concurrency.
pub fn statements(report: &Value) -> Result<String, String> {
    let comparisons = report["statements"]["comparisons"]
        .as_array()
        .ok_or("the report has no statements.comparisons")?;
    let mut table = HEADER.to_owned();
    for (i, workload) in COMPARED.into_iter().enumerate() {
        let label = if i == 0 {
            format!("{workload}: ours / theirs")
        } else {
            workload.to_owned()
        };
        row(
            &mut table,
            &label,
            (comparisons, "workload", workload),
            |c| {
                Ok(format!(
                    "{} / {}: **{:.2}**",
                    count(number(c, "pgbench_ours.tps")?),
                    count(number(c, "pgbench_reference.tps")?),
                    number(c, "statements_ratio")?
                ))
            },
        )?;
    }
    Ok(table)
}

/// The insert at each concurrency: the library alone and grouped, and pgbench on the reference's statement.
pub fn grouped_inserts(report: &Value) -> Result<String, String> {
    let comparisons = report["statements"]["comparisons"]
        .as_array()
        .ok_or("the report has no statements.comparisons")?;
    let mut table = "| c | library | library, inserts grouped | pgbench, the reference's insert | library ÷ reference | \
                     grouped ÷ reference |\n|---|---|---|---|---|---|\n"
        .to_owned();
    for c in comparisons
        .iter()
        .filter(|c| c["workload"] == "event-insert")
    {
        let _ = writeln!(
            table,
            "| {} | {}/s | {}/s | {}/s | {:.2} | **{:.2}** |",
            number(c, "concurrency")?,
            count(number(c, "ours")?),
            count(number(c, "grouped")?),
            count(number(c, "pgbench_reference.tps")?),
            number(c, "library_ratio")?,
            number(c, "grouped_ratio")?
        );
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_keep_three_significant_figures() {
        assert_eq!(ms3(2.114), "2.11");
        assert_eq!(ms3(11.54), "11.5");
        assert_eq!(ms3(118.4), "118");
        assert_eq!(ms3(0.5), "0.50");
    }

    #[test]
    fn a_missing_point_is_named() {
        let report = serde_json::json!({"points": [
            {"name": "event-insert", "concurrency": 1, "requests_per_second": 830.0, "p95_ms": 2.11}
        ]});
        let err = points(&report).unwrap_err();
        assert_eq!(err, "the report has no event-insert at c = 16");
    }
}
