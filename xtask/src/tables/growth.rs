//! The evidence growth table (`growth-current.json`): sizes at the run's scale and per million events, the
//! cleanup of the due rows in both step sizes, and the vacuum after it.

use std::fmt::Write as _;

use serde_json::Value;

use super::{count, number};

/// What the run loaded, what it cost to age out a tenth of it, and what is left.
pub fn table(report: &Value) -> Result<String, String> {
    let gb = |path: &str| number(report, path).map(|b| format!("{:.2} GB", b / 1e9));
    let mb = |path: &str| number(report, path).map(|b| format!("{:.0} MB", b / 1e6));
    let mut table = "| what | figure |\n|---|---|\n".to_owned();
    let mut row = |what: &str, figure: String| {
        let _ = writeln!(table, "| {what} | {figure} |");
    };
    row("events loaded", count(number(report, "events")?));
    row(
        "load (`COPY`, constraints and indexes, `VACUUM ANALYZE`)",
        format!("{} s", number(report, "load_seconds")?),
    );
    row(
        "`application_events`: table, indexes, in all",
        format!(
            "{}, {}, {}",
            gb("bytes.table")?,
            gb("bytes.indexes")?,
            gb("bytes.total")?
        ),
    );
    row(
        "per million events: table, indexes, in all",
        format!(
            "{}, {}, {}",
            mb("bytes_per_million.table")?,
            mb("bytes_per_million.indexes")?,
            mb("bytes_per_million.total")?
        ),
    );
    for key in ["cleanup_small_steps", "cleanup_large_steps"] {
        let at = &report[key];
        row(
            &format!(
                "cleanup in steps of {} (`Evidence::cleanup`)",
                count(number(at, "batch")?)
            ),
            format!(
                "{} rows in {} s: {}/s",
                count(number(at, "deleted")?),
                number(at, "seconds")?,
                count(number(at, "rows_per_second")?)
            ),
        );
    }
    row(
        "`VACUUM application_events` after the cleanup",
        format!("{} s", number(report, "vacuum_seconds")?),
    );
    row(
        "`application_events` after it (space reusable, not returned)",
        gb("bytes_after.total")?,
    );
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_of_the_report() {
        let bytes = serde_json::json!({"total": 16_000_000_000_i64, "table": 8_200_000_000_i64,
            "indexes": 7_800_000_000_i64});
        let report = serde_json::json!({
            "events": 10_000_001, "load_seconds": 300.5, "bytes": bytes, "bytes_after": bytes,
            "bytes_per_million": {"total": 1_600_000_000, "table": 820_000_000, "indexes": 780_000_000},
            "cleanup_small_steps": {"batch": 100, "deleted": 100_000, "seconds": 9.5, "rows_per_second": 10_526.0},
            "cleanup_large_steps": {"batch": 1000, "deleted": 900_001, "seconds": 60.0, "rows_per_second": 15_000.0},
            "vacuum_seconds": 42.0
        });
        let table = table(&report).unwrap();
        for line in [
            "| events loaded | 10,000,001 |",
            "| `application_events`: table, indexes, in all | 8.20 GB, 7.80 GB, 16.00 GB |",
            "| per million events: table, indexes, in all | 820 MB, 780 MB, 1600 MB |",
            "| cleanup in steps of 100 (`Evidence::cleanup`) | 100,000 rows in 9.5 s: 10,526/s |",
            "| cleanup in steps of 1,000 (`Evidence::cleanup`) | 900,001 rows in 60 s: 15,000/s |",
            "| `VACUUM application_events` after the cleanup | 42 s |",
        ] {
            assert!(table.contains(line), "{line}\n{table}");
        }
        assert!(super::table(&serde_json::json!({})).is_err());
    }
}
