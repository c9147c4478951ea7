//! The connection run's table: the same stages on the pooled driver (`connections-current.json`) and on hyper
//! (`connections-hyper.json`), beside the reference's published figures.

use std::fmt::Write as _;

use serde_json::Value;

use super::{count, number};

const GIB: f64 = (1u64 << 30) as f64;

/// One driver's column of the table, top to bottom: its stages from its own `report`, its summary from the
/// run's list of both drivers' (`drivers`, in the pooled driver's report).
fn column(report: &Value, drivers: &Value) -> Result<Vec<String>, String> {
    let driver = report["driver"]
        .as_str()
        .ok_or("the report names no driver")?;
    let summary = drivers
        .as_array()
        .and_then(|all| all.iter().find(|d| d["driver"] == driver))
        .ok_or_else(|| format!("the run's report has no summary of the {driver} driver"))?;
    let stages = &report["stages"];
    let ramp = &stages["ramp"]["totals"];
    let equal = number(ramp, "client_open")? == number(ramp, "server_open")?;
    let steps = stages["ramp"]["steps"]
        .as_array()
        .ok_or("the report has no ramp steps")?;
    let step_seconds = steps
        .iter()
        .map(|s| number(s, "ramp_seconds").map(|x| format!("{x:.1}")))
        .collect::<Result<Vec<_>, _>>()?;
    let burst = &stages["burst"]["totals"];
    let gib = |path: &str| number(summary, path).map(|b| format!("{:.2}", b / GIB));
    Ok(vec![
        format!(
            "{}, {}",
            count(number(summary, "held")?),
            if equal {
                "counts equal on both sides"
            } else {
                "**counts differ**"
            }
        ),
        format!("{} s", step_seconds.join(" / ")),
        format!(
            "{}, {}",
            number(summary, "unexpected_closes")?,
            number(summary, "socket_errors")?
        ),
        format!(
            "{} × 200 of {}",
            count(number(&stages["steady"]["totals"], "ok")?),
            count(number(&stages["steady"], "requests")?)
        ),
        format!(
            "answered in {:.1} s: {} × 200, {} × 503",
            number(summary, "burst_seconds")?,
            count(number(burst, "ok")?),
            count(number(burst, "overloaded")?)
        ),
        summary["recovery"]
            .as_str()
            .ok_or("the report has no recovery")?
            .to_owned(),
        format!(
            "{} / {} GiB",
            gib("server_rss_after_ramp_bytes")?,
            gib("server_rss_after_burst_bytes")?
        ),
        format!("{} bytes", count(number(summary, "bytes_per_connection")?)),
        format!("{:.2} GiB", number(ramp, "client_rss_bytes")? / GIB),
    ])
}

/// The rows' labels (the ramp's and the steady stage's from the pooled report) and the reference's column.
fn labels(report: &Value) -> Result<Vec<(String, &'static str)>, String> {
    let steps = report["stages"]["ramp"]["steps"]
        .as_array()
        .ok_or("the report has no ramp steps")?;
    let marks = steps
        .iter()
        .map(|s| number(s, "connections").map(|n| format!("{}k", n / 1000.0)))
        .collect::<Result<Vec<_>, _>>()?;
    let steady = &report["settings"];
    Ok(vec![
        ("connections held".to_owned(), "200,000"),
        (format!("ramp {}", marks.join(" / ")), ""),
        ("unexpected closes, socket errors".to_owned(), "0"),
        (
            format!(
                "steady, {}/s for {} s",
                number(steady, "steady_rate")?,
                number(steady, "steady_seconds")?
            ),
            "",
        ),
        (
            "burst, one request on every socket".to_owned(),
            "5.7–14.6 s, 16–609 successes",
        ),
        ("recovery".to_owned(), "100/100"),
        (
            "server RSS, summed, after the ramp / after the burst".to_owned(),
            "1.64–1.70 GiB",
        ),
        (
            "per connection (growth over the ramp ÷ connections)".to_owned(),
            "about 8,800–9,100 bytes",
        ),
        ("load processes' RSS after the ramp".to_owned(), ""),
    ])
}

/// The table: one row per stage figure, the pooled driver, hyper, the reference.
pub fn table(pooled: &Value, hyper: &Value) -> Result<String, String> {
    let labels = labels(pooled)?;
    let drivers = &pooled["drivers"];
    let (pooled, hyper) = (column(pooled, drivers)?, column(hyper, drivers)?);
    let mut table =
        "| | pooled driver (default) | hyper driver | reference |\n|---|---|---|---|\n".to_owned();
    for (((label, reference), ours), theirs) in labels.iter().zip(&pooled).zip(&hyper) {
        let _ = writeln!(table, "| {label} | {ours} | {theirs} | {reference} |");
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_driver_without_a_summary_in_the_run_is_named() {
        let pooled = serde_json::json!({"driver": "pooled", "drivers": [{"driver": "pooled"}]});
        let hyper = serde_json::json!({"driver": "hyper"});
        let err = column(&hyper, &pooled["drivers"]).unwrap_err();
        assert_eq!(err, "the run's report has no summary of the hyper driver");
        let err = column(&serde_json::json!({}), &pooled["drivers"]).unwrap_err();
        assert_eq!(err, "the report names no driver");
    }
}
