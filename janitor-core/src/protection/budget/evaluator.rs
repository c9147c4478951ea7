//! An evaluator behind the shared budget: every call is reserved first and finished afterwards.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::config::{EVALUATION_TIMEOUT_MS, REQUEST_COST};
use super::driver::{BudgetLease, InferenceBudget};
use super::record::CallOutcome;
use super::store::BudgetStore;
use crate::config::{check, ConfigError};
use crate::identification::evaluator::{Evaluation, EvaluationInput, Evaluator, EvaluatorError};

/// What a batch evaluation reserves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchCost {
    /// One provider call per candidate: right for an evaluator that answers a batch with one call per
    /// candidate, as [`Evaluator::evaluate_batch`] does by default. A batch costing more than `max_concurrent`
    /// is always refused, so raise `max_concurrent` to the largest batch (10 candidates) or use `Fixed`.
    PerCandidate,
    /// A fixed number of provider calls (1–16) whatever the batch size: right for an evaluator with a batch
    /// protocol; `Fixed(1)` for one request per batch.
    Fixed(u32),
}

/// Options of a [`BudgetedEvaluator`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetedEvaluatorConfig {
    timeout_ms: u32,
    evaluate_cost: u32,
    batch_cost: BatchCost,
}

impl Default for BudgetedEvaluatorConfig {
    fn default() -> Self {
        BudgetedEvaluatorConfig {
            timeout_ms: EVALUATION_TIMEOUT_MS.default,
            evaluate_cost: REQUEST_COST.default,
            batch_cost: BatchCost::Fixed(REQUEST_COST.default),
        }
    }
}

impl BudgetedEvaluatorConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> BudgetedEvaluatorConfigBuilder {
        BudgetedEvaluatorConfigBuilder::default()
    }

    /// The evaluator's deadline, milliseconds.
    pub fn timeout_ms(&self) -> u32 {
        self.timeout_ms
    }

    /// Provider calls one `evaluate` reserves.
    pub fn evaluate_cost(&self) -> u32 {
        self.evaluate_cost
    }

    /// What one `evaluate_batch` reserves.
    pub fn batch_cost(&self) -> BatchCost {
        self.batch_cost
    }
}

/// Builds a [`BudgetedEvaluatorConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct BudgetedEvaluatorConfigBuilder {
    timeout_ms: Option<u32>,
    evaluate_cost: Option<u32>,
    batch_cost: Option<BatchCost>,
}

impl BudgetedEvaluatorConfigBuilder {
    /// The deadline the wrapped evaluator enforces: 1–5000 ms, default 1200. Leases last this plus 5 s.
    pub fn timeout_ms(mut self, value: u32) -> Self {
        self.timeout_ms = Some(value);
        self
    }

    /// Provider calls one `evaluate` may make: 1–16, default 1.
    pub fn evaluate_cost(mut self, value: u32) -> Self {
        self.evaluate_cost = Some(value);
        self
    }

    /// What one `evaluate_batch` reserves: default `Fixed(1)`, one request per batch (the provider protocol
    /// answers every candidate in one call).
    pub fn batch_cost(mut self, value: BatchCost) -> Self {
        self.batch_cost = Some(value);
        self
    }

    /// Checks the values.
    pub fn build(self) -> Result<BudgetedEvaluatorConfig, ConfigError> {
        let batch_cost = match self
            .batch_cost
            .unwrap_or(BatchCost::Fixed(REQUEST_COST.default))
        {
            BatchCost::PerCandidate => BatchCost::PerCandidate,
            BatchCost::Fixed(cost) => {
                BatchCost::Fixed(check("batch_cost", cost, &REQUEST_COST.range())?)
            }
        };
        Ok(BudgetedEvaluatorConfig {
            timeout_ms: EVALUATION_TIMEOUT_MS.or_default(self.timeout_ms)?,
            evaluate_cost: REQUEST_COST.or_default(self.evaluate_cost)?,
            batch_cost,
        })
    }
}

/// The current time in epoch milliseconds.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// The system clock, in epoch milliseconds (0 if the clock is set before 1970).
pub fn system_clock() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// An [`Evaluator`] that asks the shared budget before every call and reports every outcome to it.
///
/// A refusal (budget, concurrency, open circuit, unavailable storage) is [`EvaluatorError::Refused`] and the
/// inner evaluator is not called. Otherwise the outcome is reported: [`EvaluatorError::Timeout`] as a timeout
/// (its lease keeps counting until it expires), any other error or an answer that is not valid as a failure.
/// The inner evaluator owns its deadline and should use the same `timeout_ms` as this configuration, which only
/// sizes the lease. A call whose future is dropped leaves its lease to expire.
pub struct BudgetedEvaluator<E, S> {
    inner: E,
    budget: InferenceBudget<S>,
    config: BudgetedEvaluatorConfig,
    clock: Clock,
}

impl<E, S> std::fmt::Debug for BudgetedEvaluator<E, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BudgetedEvaluator")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<E: Evaluator, S: BudgetStore> BudgetedEvaluator<E, S> {
    /// `inner` behind `budget`, on the system clock.
    pub fn new(inner: E, budget: InferenceBudget<S>, config: BudgetedEvaluatorConfig) -> Self {
        BudgetedEvaluator {
            inner,
            budget,
            config,
            clock: Arc::new(system_clock),
        }
    }

    /// The same with another clock (epoch milliseconds), for tests and simulations.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The budget calls are charged to.
    pub fn budget(&self) -> &InferenceBudget<S> {
        &self.budget
    }

    /// The wrapped evaluator.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// This wrapper's options.
    pub fn config(&self) -> &BudgetedEvaluatorConfig {
        &self.config
    }

    async fn admit(&self, cost: u32) -> Result<BudgetLease, EvaluatorError> {
        self.budget
            .reserve((self.clock)(), cost, self.config.timeout_ms)
            .await
            .map_err(|denial| {
                #[cfg(feature = "metrics")]
                metrics::counter!("janitor_budget_denials_total", "reason" => denial.as_str())
                    .increment(1);
                EvaluatorError::Refused(format!("inference budget: {denial}"))
            })
    }

    async fn settle(&self, lease: &BudgetLease, outcome: CallOutcome) {
        // A lost report only leaves the lease to expire; the answer is already in hand.
        let _ = self.budget.finish(lease, outcome, (self.clock)()).await;
    }
}

fn outcome_of<T>(answer: &Result<T, EvaluatorError>) -> CallOutcome {
    match answer {
        Ok(_) => CallOutcome::Success,
        Err(EvaluatorError::Timeout) => CallOutcome::Timeout,
        Err(_) => CallOutcome::Failure,
    }
}

fn malformed() -> EvaluatorError {
    EvaluatorError::Failed("the evaluator's answer is not valid".into())
}

impl<E: Evaluator, S: BudgetStore> Evaluator for BudgetedEvaluator<E, S> {
    async fn evaluate(&self, input: EvaluationInput<'_>) -> Result<Evaluation, EvaluatorError> {
        let lease = self.admit(self.config.evaluate_cost).await?;
        let answer = match self.inner.evaluate(input).await {
            Ok(evaluation) if !evaluation.is_valid() => Err(malformed()),
            answer => answer,
        };
        self.settle(&lease, outcome_of(&answer)).await;
        answer
    }

    async fn evaluate_batch(
        &self,
        candidates: &[EvaluationInput<'_>],
    ) -> Result<Vec<Evaluation>, EvaluatorError> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let cost = match self.config.batch_cost {
            BatchCost::PerCandidate => u32::try_from(candidates.len()).unwrap_or(u32::MAX),
            BatchCost::Fixed(cost) => cost,
        };
        let lease = self.admit(cost).await?;
        let answer = match self.inner.evaluate_batch(candidates).await {
            Ok(answers)
                if answers.len() != candidates.len()
                    || !answers.iter().all(Evaluation::is_valid) =>
            {
                Err(malformed())
            }
            answer => answer,
        };
        self.settle(&lease, outcome_of(&answer)).await;
        answer
    }
}
