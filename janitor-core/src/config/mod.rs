//! Validated configuration shared by every part of the project: the [`Limit`] every numeric option is declared
//! with, the one range error, and the cleanup batch every store bounds its work by.

mod env;

use std::fmt::Display;
use std::ops::RangeInclusive;

pub use env::{EnvError, EnvSource};

/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;

/// Cleanup batch: rows one maintenance step may delete per store.
pub const CLEANUP_BATCH: Limit<usize> = Limit::new("cleanup_batch", 100, 1, 1000);

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
/// project validates its options with this (directly, or through [`Limit::check`]), so every range error reads
/// the same.
pub fn check<T: PartialOrd + Display>(
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

/// A numeric option: its name, its default and the closed range it must stay in.
///
/// Every limit of the project is declared as one of these constants, so the default, the bounds and the name an
/// error reports are written once:
///
/// ```
/// use janitor_core::config::Limit;
///
/// const WORKERS: Limit<u32> = Limit::new("workers", 4, 1, 64);
/// assert_eq!(WORKERS.check(64), Ok(64));
/// assert_eq!(WORKERS.or_default(None), Ok(4));
/// assert_eq!(WORKERS.check(65).unwrap_err().to_string(), "workers must be from 1 to 64, got 65");
/// assert_eq!(WORKERS.clamp(0), 1);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limit<T> {
    /// The option's name, as a [`ConfigError`] reports it.
    pub name: &'static str,
    /// The value used when none is given.
    pub default: T,
    /// The smallest allowed value.
    pub min: T,
    /// The largest allowed value.
    pub max: T,
}

impl<T: Copy> Limit<T> {
    /// A limit named `name`, defaulting to `default`, allowing `min..=max`.
    pub const fn new(name: &'static str, default: T, min: T, max: T) -> Self {
        Limit {
            name,
            default,
            min,
            max,
        }
    }

    /// The same bounds and default under another option name (one limit, several options).
    pub const fn named(self, name: &'static str) -> Self {
        Limit { name, ..self }
    }
}

impl<T: PartialOrd + Display + Copy> Limit<T> {
    /// The allowed values.
    pub fn range(&self) -> RangeInclusive<T> {
        self.min..=self.max
    }

    /// Whether `value` is allowed (NaN never is).
    pub fn contains(&self, value: T) -> bool {
        self.range().contains(&value)
    }

    /// `value` when allowed, else a [`ConfigError`] naming this option and its range.
    pub fn check(&self, value: T) -> Result<T, ConfigError> {
        check(self.name, value, &self.range())
    }

    /// The given value checked, or the default when none is given.
    pub fn or_default(&self, value: Option<T>) -> Result<T, ConfigError> {
        self.check(value.unwrap_or(self.default))
    }

    /// `value` moved into the range: what a store applies to a request it must bound whatever its caller asked.
    pub fn clamp(&self, value: T) -> T {
        if value < self.min {
            self.min
        } else if value > self.max {
            self.max
        } else {
            value
        }
    }
}

/// A validated cleanup batch size (1–1000, default 100).
pub fn cleanup_batch(size: usize) -> Result<usize, ConfigError> {
    CLEANUP_BATCH.check(size)
}

/// The rows a store's cleanup step deletes for a requested `batch`: clamped into [`CLEANUP_BATCH`]'s range, so
/// every store bounds its work the same way whatever its caller asks.
pub fn clamp_cleanup_batch(batch: usize) -> usize {
    CLEANUP_BATCH.clamp(batch)
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
    fn cleanup_batch_bounds() {
        assert!(cleanup_batch(0).is_err());
        assert_eq!(cleanup_batch(1), Ok(1));
        assert_eq!(cleanup_batch(1000), Ok(1000));
        assert!(cleanup_batch(1001).is_err());
    }

    #[test]
    fn limits_check_name_and_bounds() {
        const RATIO: Limit<f64> = Limit::new("ratio", 0.5, 0.0, 1.0);
        assert_eq!(RATIO.check(1.0), Ok(1.0));
        assert_eq!(RATIO.check(0.0), Ok(0.0));
        let err = RATIO.check(f64::NAN).unwrap_err();
        assert_eq!((err.field, err.range.as_str()), ("ratio", "from 0 to 1"));
        assert_eq!(RATIO.or_default(None), Ok(0.5));
        assert_eq!(RATIO.named("share").check(2.0).unwrap_err().field, "share");
        assert_eq!((RATIO.clamp(-1.0), RATIO.clamp(2.0)), (0.0, 1.0));
    }
}
