//! Options of identification: how long observations live, how many each visitor keeps, and the engine's
//! restore threshold, with the fixed weights of the restore decision.

use crate::config::{ConfigError, Limit, DAY_MS};
use crate::identification::policy::MatchingPolicy;

/// Days an observation stays visible.
pub const OBSERVATION_RETENTION_DAYS: Limit<u32> =
    Limit::new("observation_retention_days", 90, 1, 36_500);
/// Observations kept per visitor.
pub const MAX_OBSERVATIONS_PER_VISITOR: Limit<usize> =
    Limit::new("max_observations_per_visitor", 10, 1, 100);
/// Recent observations used for matching.
pub const HISTORY_LIMIT: usize = 5;
/// Confidence needed to restore an id.
pub const RESTORE_THRESHOLD: Limit<f64> = Limit::new("restore_threshold", 0.9, 0.8, 1.0);
/// Lead the best candidate needs over the runner-up.
pub const AMBIGUITY_MARGIN: f64 = 0.03;
/// Share of the deterministic score in a blended confidence.
pub const DETERMINISTIC_WEIGHT: f64 = 0.35;
/// Share of the evaluator's `sameVisitor` in a blended confidence.
pub const EVALUATOR_WEIGHT: f64 = 0.65;

/// How long observations live and how many each visitor keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    observation_days: u32,
    max_per_visitor: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            observation_days: OBSERVATION_RETENTION_DAYS.default,
            max_per_visitor: MAX_OBSERVATIONS_PER_VISITOR.default,
        }
    }
}

impl Retention {
    /// Validated retention: `observation_days` 1–36,500 (default 90), `max_per_visitor` 1–100 (default 10).
    pub fn new(observation_days: u32, max_per_visitor: usize) -> Result<Self, ConfigError> {
        Ok(Retention {
            observation_days: OBSERVATION_RETENTION_DAYS.check(observation_days)?,
            max_per_visitor: MAX_OBSERVATIONS_PER_VISITOR.check(max_per_visitor)?,
        })
    }

    /// Days an observation stays visible.
    pub fn observation_days(&self) -> u32 {
        self.observation_days
    }

    /// Observations kept per visitor.
    pub fn max_per_visitor(&self) -> usize {
        self.max_per_visitor
    }

    /// Oldest `seen_at` still visible at `now_ms`.
    pub fn cutoff(&self, now_ms: i64) -> i64 {
        now_ms - i64::from(self.observation_days) * DAY_MS
    }
}

/// Options of the identification engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineConfig {
    restore_threshold: f64,
    policy: MatchingPolicy,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            restore_threshold: RESTORE_THRESHOLD.default,
            policy: MatchingPolicy::default(),
        }
    }
}

impl EngineConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> EngineConfigBuilder {
        EngineConfigBuilder::default()
    }

    /// Confidence needed to restore an id without a cookie.
    pub fn restore_threshold(&self) -> f64 {
        self.restore_threshold
    }

    /// How a missing-cookie visit decides to restore.
    pub fn policy(&self) -> MatchingPolicy {
        self.policy
    }
}

/// Builds an [`EngineConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct EngineConfigBuilder {
    restore_threshold: Option<f64>,
    policy: MatchingPolicy,
}

impl EngineConfigBuilder {
    /// Confidence needed to restore an id without a cookie: 0.8–1, default 0.9.
    pub fn restore_threshold(mut self, value: f64) -> Self {
        self.restore_threshold = Some(value);
        self
    }

    /// How a missing-cookie visit decides to restore: [`MatchingPolicy::Reference`] (the default) or the
    /// opt-in [`MatchingPolicy::Precise`].
    pub fn policy(mut self, policy: MatchingPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Checks the values.
    pub fn build(self) -> Result<EngineConfig, ConfigError> {
        // NaN fails the range check and is refused like any other out-of-range value.
        Ok(EngineConfig {
            restore_threshold: RESTORE_THRESHOLD.or_default(self.restore_threshold)?,
            policy: self.policy,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_bounds() {
        assert_eq!(Retention::default(), Retention::new(90, 10).unwrap());
        assert!(Retention::new(1, 1).is_ok());
        assert!(Retention::new(36_500, 100).is_ok());
        let err = Retention::new(0, 10).unwrap_err();
        assert_eq!(err.field, "observation_retention_days");
        assert!(err.to_string().contains("from 1 to 36500"), "{err}");
        assert_eq!(
            Retention::new(90, 0).unwrap_err().field,
            "max_observations_per_visitor"
        );
        assert_eq!(
            Retention::new(90, 101).unwrap_err().field,
            "max_observations_per_visitor"
        );
        assert_eq!(
            Retention::new(90, 10).unwrap().cutoff(100 * DAY_MS),
            10 * DAY_MS
        );
    }

    #[test]
    fn restore_threshold_bounds() {
        assert_eq!(
            EngineConfig::builder().build().unwrap().restore_threshold(),
            0.9
        );
        assert!(EngineConfig::builder()
            .restore_threshold(0.8)
            .build()
            .is_ok());
        assert!(EngineConfig::builder()
            .restore_threshold(1.0)
            .build()
            .is_ok());
        for bad in [0.7999999, 1.0000001, f64::NAN] {
            let err = EngineConfig::builder()
                .restore_threshold(bad)
                .build()
                .unwrap_err();
            assert_eq!(err.field, "restore_threshold");
        }
    }
}
