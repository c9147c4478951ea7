//! Options of application evidence, each a named constant with its range, checked when the value is built.

use crate::config::{ConfigError, Limit, CLEANUP_BATCH, DAY_MS};

/// Days an application event counts and is kept: default and range.
pub const EVENT_RETENTION_DAYS: Limit<u32> = Limit::new("event_retention_days", 7, 1, 30);
/// Days a retired (expired or revoked) device link is kept before cleanup deletes it: default and range.
pub const LINK_RETENTION_DAYS: Limit<u32> = Limit::new("link_retention_days", 90, 1, 365);
/// Most events one activity query counts: default and range.
pub const MAX_EVENTS_PER_QUERY: Limit<u32> = Limit::new("max_events_per_query", 1000, 1, 1000);
/// Width of the activity window in milliseconds: default and range (one second to one day).
pub const VELOCITY_WINDOW_MS: Limit<i64> = Limit::new("windowMs", 900_000, 1_000, DAY_MS);
/// Rows of each table one cleanup call deletes at most: default and range.
pub const EVIDENCE_CLEANUP_BATCH: Limit<usize> = CLEANUP_BATCH.named("batch");
/// Device links one listing returns at most: default and range.
pub const DEVICE_LINK_LIST_LIMIT: Limit<usize> = Limit::new("limit", 20, 1, 100);

/// Hard ceiling on the rows an activity read fetches: the largest `max_events_per_query` plus one, so that a
/// full window can be told apart from an overflowing one.
pub const MAX_ACTIVITY_ROWS: u32 = 1001;

/// Validated evidence options; [`EvidenceConfig::builder`] starts from the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvidenceConfig {
    event_retention_days: u32,
    link_retention_days: u32,
    max_events_per_query: u32,
}

impl Default for EvidenceConfig {
    fn default() -> Self {
        EvidenceConfig {
            event_retention_days: EVENT_RETENTION_DAYS.default,
            link_retention_days: LINK_RETENTION_DAYS.default,
            max_events_per_query: MAX_EVENTS_PER_QUERY.default,
        }
    }
}

impl EvidenceConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> EvidenceConfigBuilder {
        EvidenceConfigBuilder::default()
    }

    /// Days an event is kept and counted.
    pub fn event_retention_days(&self) -> u32 {
        self.event_retention_days
    }

    /// Days a retired device link is kept.
    pub fn link_retention_days(&self) -> u32 {
        self.link_retention_days
    }

    /// Most events one activity query counts.
    pub fn max_events_per_query(&self) -> u32 {
        self.max_events_per_query
    }

    /// When an event recorded at `now_ms` expires.
    pub fn event_expiry(&self, now_ms: i64) -> i64 {
        now_ms.saturating_add(i64::from(self.event_retention_days) * DAY_MS)
    }

    /// Links whose `retire_at` is at or before this are deleted by cleanup at `now_ms`.
    pub fn link_cutoff(&self, now_ms: i64) -> i64 {
        now_ms.saturating_sub(i64::from(self.link_retention_days) * DAY_MS)
    }

    /// Rows an activity read asks for: one more than it counts, so saturation shows.
    pub fn activity_rows(&self) -> u32 {
        (self.max_events_per_query + 1).min(MAX_ACTIVITY_ROWS)
    }
}

/// Builds an [`EvidenceConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct EvidenceConfigBuilder {
    event_retention_days: Option<u32>,
    link_retention_days: Option<u32>,
    max_events_per_query: Option<u32>,
}

impl EvidenceConfigBuilder {
    /// Days an event is kept and counted: 1–30, default 7.
    pub fn event_retention_days(mut self, days: u32) -> Self {
        self.event_retention_days = Some(days);
        self
    }

    /// Days a retired device link is kept: 1–365, default 90.
    pub fn link_retention_days(mut self, days: u32) -> Self {
        self.link_retention_days = Some(days);
        self
    }

    /// Most events one activity query counts: 1–1000, default 1000.
    pub fn max_events_per_query(mut self, max: u32) -> Self {
        self.max_events_per_query = Some(max);
        self
    }

    /// Checks the values; the error names the first option out of range and its range.
    pub fn build(self) -> Result<EvidenceConfig, ConfigError> {
        Ok(EvidenceConfig {
            event_retention_days: EVENT_RETENTION_DAYS.or_default(self.event_retention_days)?,
            link_retention_days: LINK_RETENTION_DAYS.or_default(self.link_retention_days)?,
            max_events_per_query: MAX_EVENTS_PER_QUERY.or_default(self.max_events_per_query)?,
        })
    }
}

/// A validated velocity window (1,000–86,400,000 ms).
pub fn velocity_window(window_ms: i64) -> Result<i64, ConfigError> {
    VELOCITY_WINDOW_MS.check(window_ms)
}

/// A validated evidence cleanup batch (1–1000).
pub fn evidence_cleanup_batch(batch: usize) -> Result<usize, ConfigError> {
    EVIDENCE_CLEANUP_BATCH.check(batch)
}

/// A validated device-link listing limit (1–100).
pub fn device_link_list_limit(limit: usize) -> Result<usize, ConfigError> {
    DEVICE_LINK_LIST_LIMIT.check(limit)
}

/// The rows a store's activity read fetches for a requested `limit`: at most [`MAX_ACTIVITY_ROWS`]. Stores clamp
/// rather than refuse, since [`Evidence`](super::Evidence) has already checked the caller's value.
pub fn store_activity_rows(limit: u32) -> u32 {
    limit.min(MAX_ACTIVITY_ROWS)
}

/// The links a store's listing returns for a requested `limit`: clamped into the range of
/// [`DEVICE_LINK_LIST_LIMIT`].
pub fn store_link_list_limit(limit: usize) -> usize {
    DEVICE_LINK_LIST_LIMIT.clamp(limit)
}

/// The rows of each table a store's cleanup step deletes for a requested `batch`: clamped into the range of
/// [`EVIDENCE_CLEANUP_BATCH`].
pub fn store_cleanup_batch(batch: usize) -> usize {
    EVIDENCE_CLEANUP_BATCH.clamp(batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let config = EvidenceConfig::builder().build().unwrap();
        assert_eq!(config, EvidenceConfig::default());
        assert_eq!(config.event_retention_days(), 7);
        assert_eq!(config.link_retention_days(), 90);
        assert_eq!(config.max_events_per_query(), 1000);
        assert_eq!(config.activity_rows(), 1001);
        assert_eq!(config.event_expiry(0), 7 * DAY_MS);
        assert_eq!(config.link_cutoff(100 * DAY_MS), 10 * DAY_MS);
    }

    #[test]
    fn every_bound_plus_and_minus_one() {
        let b = EvidenceConfig::builder;
        for (days, ok) in [(0, false), (1, true), (30, true), (31, false)] {
            let built = b().event_retention_days(days).build();
            assert_eq!(built.is_ok(), ok, "event_retention_days {days}");
            if let Err(e) = built {
                assert_eq!(e.field, "event_retention_days");
                assert!(e.to_string().contains("from 1 to 30"), "{e}");
            }
        }
        for (days, ok) in [(0, false), (1, true), (365, true), (366, false)] {
            let built = b().link_retention_days(days).build();
            assert_eq!(built.is_ok(), ok, "link_retention_days {days}");
            if let Err(e) = built {
                assert_eq!(e.field, "link_retention_days");
                assert!(e.to_string().contains("from 1 to 365"), "{e}");
            }
        }
        for (max, ok) in [(0, false), (1, true), (1000, true), (1001, false)] {
            let built = b().max_events_per_query(max).build();
            assert_eq!(built.is_ok(), ok, "max_events_per_query {max}");
            if let Err(e) = built {
                assert_eq!(e.field, "max_events_per_query");
                assert!(e.to_string().contains("from 1 to 1000"), "{e}");
            }
        }
        assert_eq!(
            b().max_events_per_query(1).build().unwrap().activity_rows(),
            2
        );
    }

    #[test]
    fn per_call_bounds() {
        assert!(velocity_window(999).is_err());
        assert_eq!(velocity_window(1_000), Ok(1_000));
        assert_eq!(velocity_window(86_400_000), Ok(86_400_000));
        let err = velocity_window(86_400_001).unwrap_err();
        assert_eq!(err.field, "windowMs");
        assert!(err.to_string().contains("from 1000 to 86400000"), "{err}");
        assert!(evidence_cleanup_batch(0).is_err());
        assert_eq!(evidence_cleanup_batch(1), Ok(1));
        assert_eq!(evidence_cleanup_batch(1000), Ok(1000));
        assert_eq!(evidence_cleanup_batch(1001).unwrap_err().field, "batch");
        assert!(device_link_list_limit(0).is_err());
        assert_eq!(device_link_list_limit(1), Ok(1));
        assert_eq!(device_link_list_limit(100), Ok(100));
        assert_eq!(device_link_list_limit(101).unwrap_err().field, "limit");
    }

    #[test]
    fn store_bounds_clamp() {
        assert_eq!(store_activity_rows(5), 5);
        assert_eq!(store_activity_rows(u32::MAX), 1001);
        assert_eq!(store_link_list_limit(0), 1);
        assert_eq!(store_link_list_limit(20), 20);
        assert_eq!(store_link_list_limit(usize::MAX), 100);
        assert_eq!(store_cleanup_batch(0), 1);
        assert_eq!(store_cleanup_batch(100), 100);
        assert_eq!(store_cleanup_batch(usize::MAX), 1000);
    }
}
