//! The budget's options, each a named constant `(default, range)` checked when the configuration is built.

use crate::config::{ConfigError, Limit};

/// Evaluator calls admitted per window, summed over every instance: default and range.
pub const MAX_CALLS: Limit<u32> = Limit::new("max_calls", 120, 1, 1_000_000);
/// Length of the rolling call window in milliseconds: default and range.
pub const WINDOW_MS: Limit<u32> = Limit::new("window_ms", 60_000, 1_000, 3_600_000);
/// Sum of the costs of leases held at once, over every instance: default and range.
pub const MAX_CONCURRENT: Limit<u32> = Limit::new("max_concurrent", 4, 1, 32);
/// Failures in a row that open the circuit: default and range.
pub const FAILURE_THRESHOLD: Limit<u32> = Limit::new("failure_threshold", 3, 1, 100);
/// How long an open circuit refuses every call, in milliseconds: default and range.
pub const COOLDOWN_MS: Limit<u32> = Limit::new("cooldown_ms", 30_000, 1_000, 3_600_000);
/// The evaluator's deadline in milliseconds: default and range. A lease outlives it by [`LEASE_GRACE_MS`].
pub const EVALUATION_TIMEOUT_MS: Limit<u32> = Limit::new("timeout_ms", 1_200, 1, 5_000);
/// Provider calls one evaluator method may make, reserved up front: default and range.
pub const REQUEST_COST: Limit<u32> = Limit::new("evaluate_cost", 1, 1, 16);
/// How long a lease outlives the evaluator's deadline, so that a late answer still finds its lease.
pub const LEASE_GRACE_MS: i64 = 5_000;
/// Compare-and-swap attempts per reserve or finish before giving up with
/// [`BudgetDenial::Storage`](super::BudgetDenial::Storage).
pub const CAS_ATTEMPTS: usize = 8;

/// Validated options of the shared inference budget. Every instance sharing a namespace should use the same
/// values: the row holds only counters, and each instance applies its own limits to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetConfig {
    max_calls: u32,
    window_ms: u32,
    max_concurrent: u32,
    failure_threshold: u32,
    cooldown_ms: u32,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            max_calls: MAX_CALLS.default,
            window_ms: WINDOW_MS.default,
            max_concurrent: MAX_CONCURRENT.default,
            failure_threshold: FAILURE_THRESHOLD.default,
            cooldown_ms: COOLDOWN_MS.default,
        }
    }
}

impl BudgetConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> BudgetConfigBuilder {
        BudgetConfigBuilder::default()
    }

    /// Calls admitted per window.
    pub fn max_calls(&self) -> u32 {
        self.max_calls
    }

    /// Length of the rolling window, milliseconds.
    pub fn window_ms(&self) -> u32 {
        self.window_ms
    }

    /// Most lease cost held at once.
    pub fn max_concurrent(&self) -> u32 {
        self.max_concurrent
    }

    /// Failures in a row that open the circuit.
    pub fn failure_threshold(&self) -> u32 {
        self.failure_threshold
    }

    /// How long an open circuit refuses calls, milliseconds.
    pub fn cooldown_ms(&self) -> u32 {
        self.cooldown_ms
    }

    /// When a row written at `now_ms` may be deleted: `now + 2·max(window, cooldown, timeout + grace)`. Long
    /// enough that no window, circuit or lease recorded in it is still running when it goes.
    pub fn row_expires_at(&self, now_ms: i64, timeout_ms: u32) -> i64 {
        let longest = i64::from(self.window_ms)
            .max(i64::from(self.cooldown_ms))
            .max(i64::from(timeout_ms) + LEASE_GRACE_MS);
        now_ms.saturating_add(2 * longest)
    }
}

/// Builds a [`BudgetConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct BudgetConfigBuilder {
    max_calls: Option<u32>,
    window_ms: Option<u32>,
    max_concurrent: Option<u32>,
    failure_threshold: Option<u32>,
    cooldown_ms: Option<u32>,
}

impl BudgetConfigBuilder {
    /// Calls admitted per window: 1–1,000,000, default 120.
    pub fn max_calls(mut self, value: u32) -> Self {
        self.max_calls = Some(value);
        self
    }

    /// Length of the rolling window: 1,000–3,600,000 ms, default 60,000.
    pub fn window_ms(mut self, value: u32) -> Self {
        self.window_ms = Some(value);
        self
    }

    /// Most lease cost held at once: 1–32, default 4.
    pub fn max_concurrent(mut self, value: u32) -> Self {
        self.max_concurrent = Some(value);
        self
    }

    /// Failures in a row that open the circuit: 1–100, default 3.
    pub fn failure_threshold(mut self, value: u32) -> Self {
        self.failure_threshold = Some(value);
        self
    }

    /// How long an open circuit refuses calls: 1,000–3,600,000 ms, default 30,000.
    pub fn cooldown_ms(mut self, value: u32) -> Self {
        self.cooldown_ms = Some(value);
        self
    }

    /// Checks the values; the error names the first option out of its range.
    pub fn build(self) -> Result<BudgetConfig, ConfigError> {
        Ok(BudgetConfig {
            max_calls: MAX_CALLS.or_default(self.max_calls)?,
            window_ms: WINDOW_MS.or_default(self.window_ms)?,
            max_concurrent: MAX_CONCURRENT.or_default(self.max_concurrent)?,
            failure_threshold: FAILURE_THRESHOLD.or_default(self.failure_threshold)?,
            cooldown_ms: COOLDOWN_MS.or_default(self.cooldown_ms)?,
        })
    }
}
