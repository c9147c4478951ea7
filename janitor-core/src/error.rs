//! The failure every store reports, whatever it stores.

/// A storage failure of any of the four stores (visitors, quotas, the inference budget, evidence).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store cannot answer now (pool exhausted, connection lost, statement timeout); the HTTP edge answers
    /// 503 and the caller may retry later.
    #[error("storage is unavailable: {0}")]
    Unavailable(String),
    /// The store answered but refused the data (a missing visitor, a constraint, a row it cannot read).
    #[error("storage rejected the operation: {0}")]
    Data(String),
}
