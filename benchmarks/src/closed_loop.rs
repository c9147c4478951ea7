//! A closed-loop load: `concurrency` tasks each run one operation after another until `total` have run.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::Summary;

/// What one point of a closed-loop run measured.
#[derive(Debug, Clone)]
pub struct Point {
    /// The workload's name.
    pub name: String,
    /// Tasks running at once.
    pub concurrency: u64,
    /// Operations run.
    pub operations: u64,
    /// Operations whose outcome was not the expected one (errors, or an admission where a denial was due).
    pub failed: u64,
    /// Operations per second over the whole point.
    pub per_second: f64,
    /// Latency summary.
    pub latency: Summary,
}

impl Point {
    /// The point as JSON (milliseconds, like the reference's reports).
    pub fn to_json(&self) -> Value {
        let ms = |d: Duration| (d.as_secs_f64() * 1e5).round() / 100.0;
        json!({
            "name": self.name,
            "concurrency": self.concurrency,
            "operations": self.operations,
            "failed": self.failed,
            "operations_per_second": self.per_second.round(),
            "p50_ms": ms(self.latency.median),
            "p95_ms": ms(self.latency.p95),
            "p99_ms": ms(self.latency.p99),
        })
    }
}

/// Runs `operation(i)` for `i` in `0..total` on `concurrency` tasks; an operation returns whether its outcome was
/// the expected one.
pub async fn run<F, Fut>(name: &str, concurrency: u64, total: u64, operation: F) -> Point
where
    F: Fn(u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send,
{
    let operation = Arc::new(operation);
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|_| {
            let (operation, next) = (operation.clone(), next.clone());
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut failed = 0;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        break;
                    }
                    let began = Instant::now();
                    let ok = operation(i).await;
                    latencies.push(began.elapsed());
                    failed += u64::from(!ok);
                }
                (latencies, failed)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(total as usize);
    let mut failed = 0;
    for task in tasks {
        let (mut l, f) = task.await.expect("load task");
        latencies.append(&mut l);
        failed += f;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let latency = Summary::of(&mut latencies).expect("at least one operation");
    Point {
        name: name.to_owned(),
        concurrency,
        operations: total,
        failed,
        per_second: total as f64 / elapsed,
        latency,
    }
}
