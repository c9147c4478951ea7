//! Evaluator admission under load: the shared inference budget on PostgreSQL in front of a mocked evaluator
//! that takes 5 ms, hit by 256 tasks at once. The mock counts the calls running at the same time; more than the
//! budget's `max_concurrent` would mean the budget let too many through, and fails the run.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use janitor_core::identification::evaluator::{
    Evaluation, EvaluationInput, Evaluator, EvaluatorError,
};
use janitor_core::protection::budget::{
    BudgetConfig, BudgetedEvaluator, BudgetedEvaluatorConfig, InferenceBudget,
};
use janitor_core::{LabelKey, Observation};
use janitor_sql::PgBudgetStore;
use serde::{Deserialize, Serialize};

use super::points::Workload;
use crate::closed_loop::{self, Outcome, Point, PointReport};

/// How long the mocked evaluator takes.
pub const MOCK_LATENCY: Duration = Duration::from_millis(5);

/// Tasks of the admission point.
pub const CONCURRENCY: u64 = 256;

/// An evaluator that answers after [`MOCK_LATENCY`] and records how many of its calls overlapped.
#[derive(Debug, Default)]
pub struct Mock {
    running: AtomicU64,
    peak: AtomicU64,
    calls: AtomicU64,
}

impl Mock {
    /// The most calls that ran at once.
    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::SeqCst)
    }

    /// Calls made.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::SeqCst)
    }
}

impl Evaluator for Mock {
    async fn evaluate(&self, _input: EvaluationInput<'_>) -> Result<Evaluation, EvaluatorError> {
        let running = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(running, Ordering::SeqCst);
        self.calls.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(MOCK_LATENCY).await;
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(Evaluation {
            same_visitor: 0.9,
            automation: 0.1,
            suspicious: 0.1,
        })
    }
}

/// The outcome name of a refusal, from the budget's reason at the end of the message.
fn refusal(message: &str) -> &'static str {
    match message.rsplit(": ").next() {
        Some("budget") => "refused-budget",
        Some("concurrency") => "refused-concurrency",
        Some("circuit-open") => "refused-circuit-open",
        Some("storage") => "refused-storage",
        _ => "refused-other",
    }
}

/// What the admission point measured, and whether the budget held.
#[derive(Debug)]
pub struct Admission {
    /// The closed-loop point.
    pub point: Point,
    /// The budget's limit on calls at once.
    pub max_concurrent: u64,
    /// The most calls the mock saw at once.
    pub peak_concurrent: u64,
    /// Calls that reached the mock.
    pub admitted: u64,
}

/// The report's `evaluator_admission` object: the point, the limits and what the mock saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdmissionReport {
    /// The closed-loop point.
    pub point: PointReport,
    /// How long the mocked evaluator took.
    pub mock_latency_ms: u64,
    /// The budget's limit on calls at once.
    pub max_concurrent: u64,
    /// The most calls the mock saw at once.
    pub peak_concurrent: u64,
    /// Calls that reached the mock.
    pub admitted: u64,
    /// Evaluations the budget refused, whatever the reason.
    pub refused: u64,
    /// The budget was never exceeded and nothing failed.
    pub budget_held: bool,
}

impl Admission {
    /// Whether the budget was never exceeded and nothing failed.
    pub fn held(&self) -> bool {
        self.peak_concurrent <= self.max_concurrent && self.point.failed == 0
    }

    /// The report's `evaluator_admission` object.
    pub fn report(&self) -> AdmissionReport {
        let refused: u64 = self
            .point
            .outcomes
            .iter()
            .filter(|(name, _)| name.starts_with("refused"))
            .map(|(_, n)| n)
            .sum();
        AdmissionReport {
            point: self.point.report(),
            mock_latency_ms: MOCK_LATENCY.as_millis() as u64,
            max_concurrent: self.max_concurrent,
            peak_concurrent: self.peak_concurrent,
            admitted: self.admitted,
            refused,
            budget_held: self.held(),
        }
    }
}

/// Runs the admission point: `workload.samples` evaluations by [`CONCURRENCY`] tasks.
pub async fn run(workload: &Workload) -> Result<Admission, String> {
    let config = BudgetConfig::default();
    // A namespace of the run's own, so the budget row starts empty.
    let key = LabelKey::new(
        &"b".repeat(64),
        &format!("benchmark-admission-{}", workload.run_tag),
    )
    .map_err(|e| format!("budget key: {e}"))?;
    let budget = InferenceBudget::new(PgBudgetStore::new(workload.database.clone()), config, &key);
    let mock = Arc::new(Mock::default());
    let evaluator = Arc::new(BudgetedEvaluator::new(
        mock.clone(),
        budget,
        BudgetedEvaluatorConfig::default(),
    ));
    let point = closed_loop::run(
        "evaluator-admission-mocked-5ms",
        CONCURRENCY,
        workload.samples,
        &workload.gauges,
        move |_| {
            let evaluator = evaluator.clone();
            async move {
                let current = Observation::default();
                let input = EvaluationInput {
                    history: &[],
                    current: &current,
                    deterministic_similarity: 0.5,
                };
                match evaluator.evaluate(input).await {
                    Ok(_) => Outcome::expected("evaluated"),
                    // Refusing is the budget's job under this load; it is not a failure.
                    Err(EvaluatorError::Refused(message)) => Outcome::expected(refusal(&message)),
                    Err(e) => Outcome::error(e),
                }
            }
        },
    )
    .await;
    Ok(Admission {
        point,
        max_concurrent: u64::from(config.max_concurrent()),
        peak_concurrent: mock.peak(),
        admitted: mock.calls(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_named_by_their_reason() {
        assert_eq!(
            refusal("inference budget: concurrency"),
            "refused-concurrency"
        );
        assert_eq!(refusal("inference budget: storage"), "refused-storage");
        assert_eq!(refusal("inference budget: budget"), "refused-budget");
        assert_eq!(
            refusal("inference budget: circuit-open"),
            "refused-circuit-open"
        );
        assert_eq!(refusal("something else"), "refused-other");
    }

    #[tokio::test]
    async fn the_mock_sees_overlapping_calls() {
        let mock = Arc::new(Mock::default());
        let current = Observation::default();
        let input = EvaluationInput {
            history: &[],
            current: &current,
            deterministic_similarity: 0.5,
        };
        let (a, b, c) = tokio::join!(
            mock.evaluate(input),
            mock.evaluate(input),
            mock.evaluate(input)
        );
        assert!(a.is_ok() && b.is_ok() && c.is_ok());
        assert_eq!((mock.calls(), mock.peak()), (3, 3));
        mock.evaluate(input).await.unwrap();
        assert_eq!((mock.calls(), mock.peak()), (4, 3));
    }
}
