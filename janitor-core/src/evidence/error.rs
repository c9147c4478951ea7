//! What can go wrong with evidence: refused input, the two reuse conflicts, and storage.

use crate::config::ConfigError;
use crate::error::StoreError;

/// Input that breaks a rule: the field (as the JSON names it, `verification.verifiedAt` for nested ones) and
/// the rule, with its bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid evidence input at `{field}`: {problem}")]
pub struct InputError {
    /// The offending field (`$` for the document itself).
    pub field: String,
    /// The rule it broke.
    pub problem: String,
}

impl InputError {
    pub(crate) fn new(field: impl Into<String>, problem: impl Into<String>) -> Self {
        InputError {
            field: field.into(),
            problem: problem.into(),
        }
    }
}

impl From<ConfigError> for InputError {
    fn from(error: ConfigError) -> Self {
        InputError {
            field: error.field.to_owned(),
            problem: format!("must be {}, got {}", error.range, error.value),
        }
    }
}

/// Why an evidence operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    /// The input breaks a rule; nothing was read or written.
    #[error(transparent)]
    Invalid(#[from] InputError),
    /// An event with the same id was recorded before with a different content. Idempotency keys must not be
    /// reused for other events.
    #[error("event idempotency conflict: this event id was recorded with a different content")]
    IdempotencyConflict,
    /// The verification (issuer and event id) already created a link to another subject, browser, method or
    /// time.
    #[error("device verification already used for another association")]
    VerificationReused,
    /// The subject exists with the other kind; a subject's kind never changes.
    #[error("identity subject kind cannot change")]
    SubjectKindConflict,
    /// Storage failed or refused the write (a visitor that does not exist, for one).
    #[error(transparent)]
    Store(#[from] StoreError),
}
