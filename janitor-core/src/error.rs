//! The failure every store reports, whatever it stores.

/// A storage failure of any of the four stores (visitors, quotas, the inference budget, evidence).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store cannot answer now (pool exhausted, connection lost, statement timeout); the HTTP edge answers
    /// 503 and the caller may retry later.
    #[error("storage is unavailable: {0}")]
    Unavailable(String),
    /// The store answered but refused the operation (a missing visitor, a constraint, a row it cannot read,
    /// migrations not applied): the HTTP edge answers 503, as no client can fix it.
    #[error("storage rejected the operation: {0}")]
    Data(String),
    /// The store refused a value it was given as invalid (PostgreSQL's data exceptions, SQLSTATE class 22: a
    /// NUL character, a number out of range). The input is at fault and a retry cannot help: the HTTP edge
    /// answers 400, and the validation that let the value through has a gap worth reporting.
    #[error("storage refused a value: {0}")]
    Invalid(String),
}
