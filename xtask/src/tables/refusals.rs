//! The burst's refusals as the servers timed them, before and after the overload window: one row per
//! connection report of docs/benchmarks/admission-wait/ ([`BURST_REFUSALS`](super::BURST_REFUSALS)).

use std::fmt::Write as _;

use serde_json::Value;

use super::{count, number};

/// What each report of [`BURST_REFUSALS`](super::BURST_REFUSALS) ran, in its order.
pub const LABELS: [&str; 10] = [
    "wait without the window (run 1)",
    "wait without the window (run 1)",
    "wait without the window (run 2)",
    "wait without the window (run 2)",
    "window of 1 s, the default (run 1)",
    "window of 1 s, the default (run 1)",
    "window of 1 s, the default (run 2)",
    "window of 1 s, the default (run 2)",
    "window of 200 ms (trial)",
    "window of 50 ms (trial)",
];

/// The answer-time buckets whose bounds are at most 20 ms, the slot wait the runs' servers had: the first 21
/// of the harness's `BOUNDS_MICROS` (benchmarks/src/capacity/server/answer_times.rs; a test reads it).
const WITHIN_THE_WAIT: usize = 21;

/// A bound in ms of the summary `times` at `key`, as the page writes it.
fn bound(times: &Value, key: &str) -> Result<String, String> {
    let ms = number(times, key)?;
    Ok(if ms >= 1_000.0 {
        format!("≤ {} s", ms / 1_000.0)
    } else {
        format!("≤ {ms} ms")
    })
}

/// The burst's refusals that took longer than the slot wait, summed over the server processes.
fn after_a_wait(burst: &Value) -> Result<f64, String> {
    let servers = burst["servers"]
        .as_array()
        .ok_or("the burst has no servers")?;
    let mut late = 0.0;
    for server in servers {
        let counts = server["overload_times"]["counts"]
            .as_array()
            .ok_or("a server of the burst has no overload_times")?;
        late += counts
            .iter()
            .skip(WITHIN_THE_WAIT)
            .filter_map(Value::as_f64)
            .sum::<f64>();
    }
    Ok(late)
}

/// The table: the library, the driver, the burst's 503s, how many came after a wait, their p50 / p99 / max,
/// the 200s' p99, and the recovery.
pub fn table(reports: &[Value]) -> Result<String, String> {
    let mut table =
        "| library | driver | burst's 503s | after a wait (over 20 ms) | 503s' p50 / p99 / max | \
                     200s' p99 | recovery |\n|---|---|---|---|---|---|---|\n"
            .to_owned();
    if reports.len() != LABELS.len() {
        return Err(format!(
            "{} reports for {} labels",
            reports.len(),
            LABELS.len()
        ));
    }
    for (label, report) in LABELS.iter().zip(reports) {
        let burst = &report["stages"]["burst"];
        let times = &burst["server_answer_times"];
        let (refused, completed) = (&times["overloaded"], &times["completed"]);
        let refusals = number(refused, "answers")?;
        let late = after_a_wait(burst)?;
        let _ = writeln!(
            table,
            "| {label} | {} | {} | {} ({:.1} %) | {} / {} / {} | {} | {} |",
            report["driver"]
                .as_str()
                .ok_or("the report names no driver")?,
            count(refusals),
            count(late),
            100.0 * late / refusals,
            bound(refused, "p50_ms_at_most")?,
            bound(refused, "p99_ms_at_most")?,
            bound(refused, "max_ms_at_most")?,
            bound(completed, "p99_ms_at_most")?,
            report["summary"]["recovery"]
                .as_str()
                .ok_or("the report has no recovery")?,
        );
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_buckets_within_the_wait_are_the_harness_s_first_21() {
        let source = include_str!("../../../benchmarks/src/capacity/server/answer_times.rs");
        let array = source
            .split("pub const BOUNDS_MICROS")
            .nth(1)
            .and_then(|rest| rest.split('[').nth(2))
            .and_then(|rest| rest.split(']').next())
            .expect("the harness defines BOUNDS_MICROS");
        let bounds: Vec<u64> = array
            .split(',')
            .map(|b| b.trim().replace('_', ""))
            .filter(|b| !b.is_empty())
            .map(|b| b.parse().unwrap())
            .collect();
        assert_eq!(bounds[WITHIN_THE_WAIT - 1], 20_000);
        assert!(bounds[WITHIN_THE_WAIT] > 20_000);
    }

    #[test]
    fn bounds_read_as_the_page_writes_them() {
        let times = serde_json::json!({"a": 0.1, "b": 2500.0, "c": 1000.0});
        assert_eq!(bound(&times, "a").unwrap(), "≤ 0.1 ms");
        assert_eq!(bound(&times, "b").unwrap(), "≤ 2.5 s");
        assert_eq!(bound(&times, "c").unwrap(), "≤ 1 s");
        assert!(
            bound(&times, "d").is_err(),
            "a refusal time that was not measured"
        );
    }
}
