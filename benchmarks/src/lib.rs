//! Shared pieces of the benchmark binaries: argument parsing, latency summaries and closed-loop load.

use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub mod accuracy;
pub mod automation;
pub mod capacity;
pub mod closed_loop;
pub mod stuffing;

/// Reads `--name value` pairs into `(name, value)`, refusing anything else.
pub fn pairs(args: impl IntoIterator<Item = String>) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut args = args.into_iter();
    while let Some(name) = args.next() {
        let Some(name) = name.strip_prefix("--") else {
            return Err(format!("expected --option, got {name:?}"));
        };
        let value = args
            .next()
            .ok_or_else(|| format!("--{name} needs a value"))?;
        out.push((name.to_owned(), value));
    }
    Ok(out)
}

/// Parses `value` for option `name` and checks it lies in `low..=high`.
pub fn number(name: &str, value: &str, low: u64, high: u64) -> Result<u64, String> {
    let n: u64 = value
        .parse()
        .map_err(|_| format!("--{name} must be a whole number, got {value:?}"))?;
    if (low..=high).contains(&n) {
        Ok(n)
    } else {
        Err(format!("--{name} must be from {low} to {high}, got {n}"))
    }
}

/// The options of a benchmark binary, or the problem printed with the binary's name and exit status 2.
pub fn options_or_exit<T>(binary: &str, options: Result<T, String>) -> T {
    options.unwrap_or_else(|problem| {
        eprintln!("{binary}: {problem}");
        std::process::exit(2);
    })
}

/// Cores this process may use, for the machine line of a report.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Writes `report` as pretty JSON to `path` and says where.
pub fn write_report(path: &Path, report: &impl Serialize) -> Result<(), String> {
    // Through a `Value`, whose keys are sorted, so that a new report lines up key for key with the committed
    // ones and a diff between two runs shows only their figures.
    let value = serde_json::to_value(report).map_err(|e| format!("report: {e}"))?;
    let text = serde_json::to_string_pretty(&value).map_err(|e| format!("report: {e}"))? + "\n";
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

/// Milliseconds to two decimals, as every report gives latencies.
pub fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 100.0
}

/// Median, 95th and 99th percentile of a set of latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Number of samples.
    pub samples: usize,
    /// Median.
    pub median: Duration,
    /// 95th percentile.
    pub p95: Duration,
    /// 99th percentile.
    pub p99: Duration,
}

impl Summary {
    /// Summarises `samples` (nearest-rank percentiles). `None` when there are none.
    pub fn of(samples: &mut [Duration]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let rank = |p: f64| {
            samples[((p * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1]
        };
        Some(Summary {
            samples: samples.len(),
            median: rank(0.5),
            p95: rank(0.95),
            p99: rank(0.99),
        })
    }
}

/// The latency figures of a report: median, 95th and 99th percentile and the largest, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// The largest.
    pub max_ms: f64,
}

impl Percentiles {
    /// The figures of `summary`, whose largest latency was `max`.
    pub fn of(summary: &Summary, max: Duration) -> Percentiles {
        Percentiles {
            p50_ms: ms(summary.median),
            p95_ms: ms(summary.p95),
            p99_ms: ms(summary.p99),
            max_ms: ms(max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let mut samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        let s = Summary::of(&mut samples).unwrap();
        assert_eq!(
            (s.median, s.p95, s.p99),
            (
                Duration::from_millis(50),
                Duration::from_millis(95),
                Duration::from_millis(99)
            )
        );
        assert_eq!(Summary::of(&mut []), None);
        let mut one = [Duration::from_millis(7)];
        assert_eq!(Summary::of(&mut one).unwrap().p99, Duration::from_millis(7));
    }

    #[test]
    fn options_are_checked() {
        let got = pairs(["--visitors".into(), "10".into()]).unwrap();
        assert_eq!(got, [("visitors".to_owned(), "10".to_owned())]);
        assert!(pairs(["visitors".into()]).is_err());
        assert!(pairs(["--visitors".into()]).is_err());
        assert_eq!(number("n", "5", 1, 5), Ok(5));
        assert!(number("n", "6", 1, 5).unwrap_err().contains("from 1 to 5"));
        assert!(number("n", "0", 1, 5).is_err());
        assert!(number("n", "x", 1, 5).is_err());
    }
}
