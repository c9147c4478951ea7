//! The optional evaluator: a second opinion on identity and risk (the Jev protocol lives in `janitor-axum`).
//!
//! The engine never waits on anything but the future it is given: an evaluator owns its deadline and answers
//! [`EvaluatorError::Timeout`] when it passes. Every error, and every answer outside finite [0, 1], makes the
//! engine fall back to deterministic matching with `riskStatus: "unavailable"`.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;

use crate::identification::observation::Observation;

/// An evaluator's answer. Every value must be finite and within [0, 1].
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evaluation {
    /// Probability that the history and the current observation are the same browser.
    pub same_visitor: f64,
    /// Probability of browser automation.
    pub automation: f64,
    /// Probability of manipulated or inconsistent signals.
    pub suspicious: f64,
}

impl Evaluation {
    /// Whether every value is a finite number in [0, 1]; nothing is coerced.
    pub fn is_valid(&self) -> bool {
        [self.same_visitor, self.automation, self.suspicious]
            .iter()
            .all(|v| v.is_finite() && (0.0..=1.0).contains(v))
    }
}

/// One question to an evaluator: a visitor's history against the current observation.
#[derive(Debug, Clone, Copy)]
pub struct EvaluationInput<'a> {
    /// Up to five recent observations, newest first; empty on a first visit.
    pub history: &'a [Arc<Observation>],
    /// The observation being identified.
    pub current: &'a Observation,
    /// The deterministic similarity the engine found.
    pub deterministic_similarity: f64,
}

/// Why an evaluator gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvaluatorError {
    /// The deadline passed.
    #[error("evaluator timed out")]
    Timeout,
    /// A budget, concurrency limit or open circuit refused the call before it was made.
    #[error("evaluator call refused: {0}")]
    Refused(String),
    /// The call was made and failed, or its answer could not be read.
    #[error("evaluator failed: {0}")]
    Failed(String),
}

/// An identity and risk evaluator.
pub trait Evaluator: Send + Sync {
    /// Evaluates one history (the cookie path, or a first visit with an empty history).
    fn evaluate(
        &self,
        input: EvaluationInput<'_>,
    ) -> impl Future<Output = Result<Evaluation, EvaluatorError>> + Send;

    /// Evaluates every candidate of a cookieless identification in one call, answering one evaluation per
    /// candidate, in order; any other count is ignored by the engine. The default asks [`evaluate`](Self::evaluate)
    /// once per candidate, one after the other; implementations with a batch protocol should override it.
    fn evaluate_batch(
        &self,
        candidates: &[EvaluationInput<'_>],
    ) -> impl Future<Output = Result<Vec<Evaluation>, EvaluatorError>> + Send {
        async move {
            let mut answers = Vec::with_capacity(candidates.len());
            for input in candidates {
                answers.push(self.evaluate(*input).await?);
            }
            Ok(answers)
        }
    }
}

/// The evaluator type of an engine without one: never called, so `riskStatus` is always `"disabled"`.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEvaluator;

impl Evaluator for NoEvaluator {
    async fn evaluate(&self, _input: EvaluationInput<'_>) -> Result<Evaluation, EvaluatorError> {
        Err(EvaluatorError::Refused("no evaluator is configured".into()))
    }
}

/// A shared evaluator is an evaluator.
impl<E: Evaluator> Evaluator for Arc<E> {
    fn evaluate(
        &self,
        input: EvaluationInput<'_>,
    ) -> impl Future<Output = Result<Evaluation, EvaluatorError>> + Send {
        (**self).evaluate(input)
    }

    fn evaluate_batch(
        &self,
        candidates: &[EvaluationInput<'_>],
    ) -> impl Future<Output = Result<Vec<Evaluation>, EvaluatorError>> + Send {
        (**self).evaluate_batch(candidates)
    }
}
