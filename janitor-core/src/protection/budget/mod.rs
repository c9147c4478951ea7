//! The shared inference budget: calls per window, concurrent leases and a circuit breaker, for every instance.
//!
//! One row per namespace (`evaluation_controls`, id = the label of the protection key `"evaluator"`) holds a
//! JSON [`BudgetRecord`] shared with Janitor instances in other languages. Every change is read, computed by
//! the pure state machine ([`BudgetRecord::reserve`], [`BudgetRecord::finish`]) and written back by
//! compare-and-swap on the row's version, at most [`CAS_ATTEMPTS`] times.
//!
//! - [`InferenceBudget`] drives one namespace's row over a [`BudgetStore`] ([`MemoryBudgetStore`] here,
//!   `PgBudgetStore` in `janitor-sql`).
//! - [`BudgetedEvaluator`] puts any [`Evaluator`](crate::Evaluator) behind it.
//!
//! Every refusal — and every failure of the budget's own storage — means the evaluator is not called and the
//! identification goes on with `riskStatus: "unavailable"`. The behaviour every store must show is the suite in
//! `testing::budget_store` (feature `testing`).

mod config;
mod driver;
mod evaluator;
mod record;
mod store;

pub use config::{
    BudgetConfig, BudgetConfigBuilder, CAS_ATTEMPTS, COOLDOWN_MS, EVALUATION_TIMEOUT_MS,
    FAILURE_THRESHOLD, LEASE_GRACE_MS, MAX_CALLS, MAX_CONCURRENT, REQUEST_COST, WINDOW_MS,
};
pub use driver::{BudgetLease, InferenceBudget};
pub use evaluator::{
    system_clock, BatchCost, BudgetedEvaluator, BudgetedEvaluatorConfig,
    BudgetedEvaluatorConfigBuilder, Clock,
};
pub use record::{BudgetRecord, CallOutcome, LeaseRecord};
pub use store::{BudgetRow, BudgetStore, MemoryBudgetStore};

/// Why a call was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum BudgetDenial {
    /// The window's calls are spent.
    #[error("budget")]
    Budget,
    /// The leases held leave no room for this call's cost, or a probe is already running.
    #[error("concurrency")]
    Concurrency,
    /// The circuit is open: recent calls failed and the cooldown is still running.
    #[error("circuit-open")]
    CircuitOpen,
    /// The budget's row could not be read or written (store error, or it changed under every attempt).
    #[error("storage")]
    Storage,
}

impl BudgetDenial {
    /// The reason as the reference names it: `budget`, `concurrency`, `circuit-open` or `storage`.
    pub fn as_str(&self) -> &'static str {
        match self {
            BudgetDenial::Budget => "budget",
            BudgetDenial::Concurrency => "concurrency",
            BudgetDenial::CircuitOpen => "circuit-open",
            BudgetDenial::Storage => "storage",
        }
    }
}
