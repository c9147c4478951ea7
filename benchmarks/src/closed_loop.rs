//! A closed-loop load: `concurrency` tasks each run one operation after another until `total` have run, while
//! gauges (pool waiters, server connections, …) are read again and again and their peaks kept.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::{Percentiles, Summary};

/// How one operation ended: a named outcome, and whether it is the one the workload expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The outcome's name in the point's `outcomes` map (`recorded`, `limited`, `error`, …).
    pub name: &'static str,
    /// Whether this outcome is the expected one; anything else counts as failed.
    pub expected: bool,
    /// What went wrong, for an error.
    pub error: Option<String>,
}

impl Outcome {
    /// An expected outcome.
    pub fn expected(name: &'static str) -> Outcome {
        Outcome {
            name,
            expected: true,
            error: None,
        }
    }

    /// An outcome that should not have happened (a denial where an admission was due, a wrong count).
    pub fn unexpected(name: &'static str) -> Outcome {
        Outcome {
            name,
            expected: false,
            error: None,
        }
    }

    /// An operation that failed with `error`.
    pub fn error(error: impl std::fmt::Display) -> Outcome {
        Outcome {
            name: "error",
            expected: false,
            error: Some(error.to_string()),
        }
    }
}

/// The future a gauge's reading returns: a value, or `None` when it could not be read this time.
pub type ReadingFuture = Pin<Box<dyn Future<Output = Option<u64>> + Send>>;

/// Something read every `every` while a point runs; the point reports its highest reading under `name`.
#[derive(Clone)]
pub struct Gauge {
    /// The key of the peak in the point's JSON (`pool_waiting_peak`, …).
    pub name: &'static str,
    /// Time between readings.
    pub every: Duration,
    /// Takes one reading.
    pub read: Arc<dyn Fn() -> ReadingFuture + Send + Sync>,
}

impl std::fmt::Debug for Gauge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gauge")
            .field("name", &self.name)
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

/// What one point of a closed-loop run measured.
#[derive(Debug, Clone)]
pub struct Point {
    /// The workload's name.
    pub name: String,
    /// Tasks running at once: the concurrency asked for, or fewer when there were fewer operations.
    pub concurrency: u64,
    /// Operations run.
    pub requests: u64,
    /// Operations whose outcome was not the expected one.
    pub failed: u64,
    /// How many operations ended in each outcome.
    pub outcomes: BTreeMap<&'static str, u64>,
    /// The first error met, if any.
    pub first_error: Option<String>,
    /// Operations per second over the whole point.
    pub per_second: f64,
    /// Latency summary.
    pub latency: Summary,
    /// The slowest operation.
    pub max: Duration,
    /// The highest reading of each gauge (absent when it could never be read).
    pub peaks: BTreeMap<&'static str, u64>,
}

/// A point as a report gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointReport {
    /// The workload's name.
    pub name: String,
    /// Tasks that ran at once.
    pub concurrency: u64,
    /// Operations run.
    pub requests: u64,
    /// Operations whose outcome was not the expected one.
    pub failed: u64,
    /// How many operations ended in each outcome.
    pub outcomes: BTreeMap<String, u64>,
    /// Operations per second, to one decimal.
    pub requests_per_second: f64,
    /// Latency of the operations.
    #[serde(flatten)]
    pub latency: Percentiles,
    /// The highest reading of each gauge, under the gauge's name (`pool_waiting_peak`, …).
    #[serde(flatten)]
    pub peaks: BTreeMap<String, u64>,
    /// The first error met, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

impl Point {
    /// The point as a report gives it.
    pub fn report(&self) -> PointReport {
        let names = |map: &BTreeMap<&'static str, u64>| {
            map.iter()
                .map(|(name, n)| ((*name).to_owned(), *n))
                .collect()
        };
        PointReport {
            name: self.name.clone(),
            concurrency: self.concurrency,
            requests: self.requests,
            failed: self.failed,
            outcomes: names(&self.outcomes),
            requests_per_second: (self.per_second * 10.0).round() / 10.0,
            latency: Percentiles::of(&self.latency, self.max),
            peaks: names(&self.peaks),
            first_error: self.first_error.clone(),
        }
    }
}

/// Reads `gauge` until `stop` is set and returns its highest reading.
async fn watch(gauge: Gauge, stop: Arc<AtomicBool>) -> Option<u64> {
    let mut peak = None;
    let mut ticks = tokio::time::interval(gauge.every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        // Read once more after the stop, so the end of the point is seen too.
        let last = stop.load(Ordering::Acquire);
        if let Some(value) = (gauge.read)().await {
            peak = Some(peak.map_or(value, |p: u64| p.max(value)));
        }
        if last {
            return peak;
        }
        ticks.tick().await;
    }
}

/// Runs `operation(i)` for `i` in `0..total` on `concurrency` tasks, reading `gauges` meanwhile.
pub async fn run<F, Fut>(
    name: &str,
    concurrency: u64,
    total: u64,
    gauges: &[Gauge],
    operation: F,
) -> Point
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Outcome> + Send,
{
    let stop = Arc::new(AtomicBool::new(false));
    let watchers: Vec<_> = gauges
        .iter()
        .map(|gauge| (gauge.name, tokio::spawn(watch(gauge.clone(), stop.clone()))))
        .collect();
    let operation = Arc::new(operation);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    // More tasks than operations would only wait for nothing: the point reports the tasks that ran.
    let concurrency = concurrency.min(total).max(1);
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (operation, next) = (operation.clone(), next.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut outcomes = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    let began = Instant::now();
                    let outcome = operation(i).await;
                    latencies.push(began.elapsed());
                    outcomes.push(outcome);
                }
                (latencies, outcomes)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(total as usize);
    let mut outcomes = BTreeMap::new();
    let (mut failed, mut first_error) = (0, None);
    for task in tasks {
        let (mut l, o) = match task.await {
            Ok(done) => done,
            // A panicking operation is a failed one, not a crash of the harness.
            Err(e) => (
                Vec::new(),
                vec![Outcome::error(format!("operation task: {e}"))],
            ),
        };
        latencies.append(&mut l);
        for outcome in o {
            *outcomes.entry(outcome.name).or_insert(0) += 1;
            failed += u64::from(!outcome.expected);
            if first_error.is_none() {
                first_error = outcome.error;
            }
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Release);
    let mut peaks = BTreeMap::new();
    for (name, watcher) in watchers {
        if let Ok(Some(peak)) = watcher.await {
            peaks.insert(name, peak);
        }
    }
    let max = latencies.iter().copied().max().unwrap_or_default();
    let latency = Summary::of(&mut latencies).unwrap_or(Summary {
        samples: 0,
        median: Duration::ZERO,
        p95: Duration::ZERO,
        p99: Duration::ZERO,
    });
    Point {
        name: name.to_owned(),
        concurrency,
        requests: total,
        failed,
        outcomes,
        first_error,
        per_second: total as f64 / elapsed.max(1e-9),
        latency,
        max,
        peaks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn outcomes_failures_and_peaks_are_counted() {
        let in_flight = Arc::new(AtomicU64::new(0));
        let gauge = {
            let in_flight = in_flight.clone();
            Gauge {
                name: "in_flight_peak",
                every: Duration::from_millis(1),
                read: Arc::new(move || {
                    let n = in_flight.load(Ordering::Relaxed);
                    Box::pin(async move { Some(n) })
                }),
            }
        };
        let flight = in_flight.clone();
        let point = run("test", 4, 40, &[gauge], move |i| {
            let flight = flight.clone();
            async move {
                flight.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(2)).await;
                flight.fetch_sub(1, Ordering::Relaxed);
                match i % 10 {
                    0 => Outcome::error("boom"),
                    1 => Outcome::unexpected("limited"),
                    _ => Outcome::expected("allowed"),
                }
            }
        })
        .await;
        assert_eq!(point.requests, 40);
        assert_eq!(point.failed, 8);
        assert_eq!(
            point
                .outcomes
                .iter()
                .map(|(k, v)| (*k, *v))
                .collect::<Vec<_>>(),
            [("allowed", 32), ("error", 4), ("limited", 4)]
        );
        assert_eq!(point.first_error.as_deref(), Some("boom"));
        let peak = point.peaks["in_flight_peak"];
        assert!((1..=4).contains(&peak), "{peak}");
        assert!(point.max >= Duration::from_millis(2));
        let json = serde_json::to_value(point.report()).unwrap();
        for key in [
            "name",
            "concurrency",
            "requests",
            "failed",
            "outcomes",
            "requests_per_second",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "max_ms",
            "in_flight_peak",
            "first_error",
        ] {
            assert!(json.get(key).is_some(), "{key} missing from {json}");
        }
        assert_eq!(json["outcomes"]["allowed"], 32);
    }

    #[tokio::test]
    async fn a_point_without_operations_reports_zeros() {
        let point = run("empty", 4, 0, &[], |_| async { Outcome::expected("x") }).await;
        assert_eq!((point.requests, point.failed), (0, 0));
        assert!(point.outcomes.is_empty());
        assert_eq!(point.max, Duration::ZERO);
    }
}
