//! Validated configuration: retention and matching options. Every limit is a named constant with its range,
//! checked when the value is built.

use std::ops::RangeInclusive;

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// Days an observation stays visible: default and range.
pub const OBSERVATION_RETENTION_DAYS: (u32, RangeInclusive<u32>) = (90, 1..=36_500);
/// Observations kept per visitor: default and range.
pub const MAX_OBSERVATIONS_PER_VISITOR: (usize, RangeInclusive<usize>) = (10, 1..=100);
/// Recent observations used for matching.
pub const HISTORY_LIMIT: usize = 5;
/// Confidence needed to restore an id: default and range.
pub const RESTORE_THRESHOLD: (f64, RangeInclusive<f64>) = (0.9, 0.8..=1.0);
/// Lead the best candidate needs over the runner-up.
pub const AMBIGUITY_MARGIN: f64 = 0.03;
/// Share of the deterministic score in a blended confidence.
pub const DETERMINISTIC_WEIGHT: f64 = 0.35;
/// Share of the evaluator's `sameVisitor` in a blended confidence.
pub const EVALUATOR_WEIGHT: f64 = 0.65;
/// Cleanup batch: default and range.
pub const CLEANUP_BATCH: (usize, RangeInclusive<usize>) = (100, 1..=1000);

/// A configuration value outside its allowed range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} must be {range}, got {value}")]
pub struct ConfigError {
    /// The option's name.
    pub field: &'static str,
    /// The allowed range, for people.
    pub range: String,
    /// What was given.
    pub value: String,
}

/// `value` when `range` holds it, else a [`ConfigError`] naming `field` and the range. Every crate of the
/// project validates its options with this, so every range error reads the same.
pub fn check<T: PartialOrd + std::fmt::Display>(
    field: &'static str,
    value: T,
    range: &RangeInclusive<T>,
) -> Result<T, ConfigError> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError {
            field,
            range: format!("from {} to {}", range.start(), range.end()),
            value: value.to_string(),
        })
    }
}

/// How long observations live and how many each visitor keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    observation_days: u32,
    max_per_visitor: usize,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            observation_days: OBSERVATION_RETENTION_DAYS.0,
            max_per_visitor: MAX_OBSERVATIONS_PER_VISITOR.0,
        }
    }
}

impl Retention {
    /// Validated retention: `observation_days` 1–36,500 (default 90), `max_per_visitor` 1–100 (default 10).
    pub fn new(observation_days: u32, max_per_visitor: usize) -> Result<Self, ConfigError> {
        Ok(Retention {
            observation_days: check(
                "observation_retention_days",
                observation_days,
                &OBSERVATION_RETENTION_DAYS.1,
            )?,
            max_per_visitor: check(
                "max_observations_per_visitor",
                max_per_visitor,
                &MAX_OBSERVATIONS_PER_VISITOR.1,
            )?,
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

/// A validated cleanup batch size (1–1000, default 100).
pub fn cleanup_batch(size: usize) -> Result<usize, ConfigError> {
    check("cleanup_batch", size, &CLEANUP_BATCH.1)
}

/// The rows a store's cleanup step deletes for a requested `batch`: clamped into [`CLEANUP_BATCH`]'s range, so
/// every store bounds its work the same way whatever its caller asks.
pub fn clamp_cleanup_batch(batch: usize) -> usize {
    batch.clamp(*CLEANUP_BATCH.1.start(), *CLEANUP_BATCH.1.end())
}

/// Options of the identification engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineConfig {
    restore_threshold: f64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            restore_threshold: RESTORE_THRESHOLD.0,
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
}

/// Builds an [`EngineConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Default)]
pub struct EngineConfigBuilder {
    restore_threshold: Option<f64>,
}

impl EngineConfigBuilder {
    /// Confidence needed to restore an id without a cookie: 0.8–1, default 0.9.
    pub fn restore_threshold(mut self, value: f64) -> Self {
        self.restore_threshold = Some(value);
        self
    }

    /// Checks the values.
    pub fn build(self) -> Result<EngineConfig, ConfigError> {
        let threshold = self.restore_threshold.unwrap_or(RESTORE_THRESHOLD.0);
        // NaN fails `contains` and is refused like any other out-of-range value.
        Ok(EngineConfig {
            restore_threshold: check("restore_threshold", threshold, &RESTORE_THRESHOLD.1)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleanup_batches_are_clamped_to_their_range() {
        assert_eq!(clamp_cleanup_batch(0), 1);
        assert_eq!(clamp_cleanup_batch(1), 1);
        assert_eq!(clamp_cleanup_batch(500), 500);
        assert_eq!(clamp_cleanup_batch(1_000), 1_000);
        assert_eq!(clamp_cleanup_batch(1_001), 1_000);
    }

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

    #[test]
    fn cleanup_batch_bounds() {
        assert!(cleanup_batch(0).is_err());
        assert_eq!(cleanup_batch(1), Ok(1));
        assert_eq!(cleanup_batch(1000), Ok(1000));
        assert!(cleanup_batch(1001).is_err());
    }
}
