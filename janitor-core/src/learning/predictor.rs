//! The shadow predictor: an optional guess of which verified subject an anonymous snapshot belongs to, recorded
//! and compared with the later login. It never changes an identification, a risk score or a permission.

use std::future::Future;

use super::session::LearningExample;
use crate::evidence::SubjectId;
use crate::identification::observation::Observation;

/// What a predictor is given.
#[derive(Debug, Clone, Copy)]
pub struct PredictionInput<'a> {
    /// The anonymous snapshot.
    pub current: &'a Observation,
    /// 1–100 verified examples, newest verification first. Never earlier predictions.
    pub examples: &'a [LearningExample],
    /// The deadline the predictor owns: past it, answer [`PredictorError::Timeout`].
    pub timeout_ms: u64,
}

/// A predictor's answer: a subject of the examples with a score in [0, 1], or nobody.
#[derive(Debug, Clone, PartialEq)]
pub struct PredictorAnswer {
    /// The guessed subject; `None` abstains.
    pub subject_id: Option<SubjectId>,
    /// Its score in [0, 1] (required with a subject).
    pub score: Option<f64>,
}

/// Why a predictor gave no answer. Every one is recorded as `unavailable`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PredictorError {
    /// The deadline passed.
    #[error("the predictor timed out")]
    Timeout,
    /// Anything else.
    #[error("the predictor failed: {0}")]
    Failed(String),
}

/// A shadow predictor (the application's own, or a provider's).
pub trait Predictor: Send + Sync {
    /// Guesses the subject of `input.current` among `input.examples`.
    fn predict(
        &self,
        input: PredictionInput<'_>,
    ) -> impl Future<Output = Result<PredictorAnswer, PredictorError>> + Send;
}

/// The predictor type of collect mode: never called.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoPredictor;

impl Predictor for NoPredictor {
    async fn predict(
        &self,
        _input: PredictionInput<'_>,
    ) -> Result<PredictorAnswer, PredictorError> {
        Err(PredictorError::Failed("no predictor is configured".into()))
    }
}
