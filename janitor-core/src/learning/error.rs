//! Why a learning call failed.

use crate::config::ConfigError;
use crate::error::StoreError;

/// A refused or failed learning call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LearningError {
    /// An argument is out of its range (a report limit).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Shadow mode without a predictor, or collect mode with one.
    #[error("{0}")]
    Mode(&'static str),
    /// A session id that is not `ses_` and 48 hex digits.
    #[error("a learning session id is ses_ and 48 lower-case hex digits")]
    InvalidSession,
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
