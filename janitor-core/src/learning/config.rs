//! Options of login-labelled learning, each a named constant with its range, checked when the value is built.

use crate::config::{ConfigError, Limit, DAY_MS};

/// Days a learning row is kept and used (from its last snapshot): default and range.
pub const LEARNING_RETENTION_DAYS: Limit<u32> = Limit::new("retention_days", 30, 1, 90);
/// Minutes an anonymous learning session lives, counted from its start and never extended: default and range.
pub const LEARNING_SESSION_MINUTES: Limit<u32> = Limit::new("session_minutes", 30, 1, 60);
/// Milliseconds the shadow predictor may take: default and range.
pub const PREDICTOR_TIMEOUT_MS: Limit<u64> = Limit::new("predictor_timeout_ms", 1200, 1, 5000);
/// Confirmed sessions kept per subject; older ones are deleted when a newer one is confirmed.
pub const MAX_CONFIRMED_PER_SUBJECT: usize = 20;
/// Examples a shadow predictor receives at most, and rows each bounded retrieval reads before it counts as
/// saturated.
pub const MAX_EXAMPLES: usize = 100;
/// Reports one call returns: default and range.
pub const REPORT_LIMIT: Limit<usize> = Limit::new("limit", 100, 1, 100);

/// What learning does with the sessions it collects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LearningMode {
    /// Collect and label sessions; no predictor runs (`prediction_status` stays `not-run`).
    #[default]
    Collect,
    /// Also ask a predictor for its guess on every anonymous snapshot and record it beside the later label.
    Shadow,
}

/// Which requests are collected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CollectionPolicy {
    /// Only requests whose context carries learning consent `true`.
    #[default]
    PerRequest,
    /// Every request unless its context carries learning consent `false` (the application obtained consent
    /// itself, or has another basis for it).
    Application,
}

impl CollectionPolicy {
    /// Whether a request with this consent is collected.
    pub fn allows(self, consent: Option<bool>) -> bool {
        match self {
            CollectionPolicy::PerRequest => consent == Some(true),
            CollectionPolicy::Application => consent != Some(false),
        }
    }
}

/// Validated learning options; off unless [`LearningConfigBuilder::enabled`] turns it on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LearningConfig {
    enabled: bool,
    mode: LearningMode,
    collection: CollectionPolicy,
    retention_days: u32,
    session_minutes: u32,
    predictor_timeout_ms: u64,
}

impl Default for LearningConfig {
    fn default() -> Self {
        LearningConfig {
            enabled: false,
            mode: LearningMode::Collect,
            collection: CollectionPolicy::PerRequest,
            retention_days: LEARNING_RETENTION_DAYS.default,
            session_minutes: LEARNING_SESSION_MINUTES.default,
            predictor_timeout_ms: PREDICTOR_TIMEOUT_MS.default,
        }
    }
}

impl LearningConfig {
    /// A builder starting from the defaults (learning off).
    pub fn builder() -> LearningConfigBuilder {
        LearningConfigBuilder::default()
    }

    /// Whether learning runs at all.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Collect or shadow.
    pub fn mode(&self) -> LearningMode {
        self.mode
    }

    /// Which requests are collected.
    pub fn collection(&self) -> CollectionPolicy {
        self.collection
    }

    /// Days a row is kept.
    pub fn retention_days(&self) -> u32 {
        self.retention_days
    }

    /// Minutes a session lives.
    pub fn session_minutes(&self) -> u32 {
        self.session_minutes
    }

    /// Milliseconds the predictor may take.
    pub fn predictor_timeout_ms(&self) -> u64 {
        self.predictor_timeout_ms
    }

    /// Rows last observed before this are out of retention at `now_ms`.
    pub fn cutoff(&self, now_ms: i64) -> i64 {
        now_ms.saturating_sub(i64::from(self.retention_days) * DAY_MS)
    }

    /// When a session started at `now_ms` ends.
    pub fn session_end(&self, now_ms: i64) -> i64 {
        now_ms.saturating_add(i64::from(self.session_minutes) * 60_000)
    }
}

/// Builds a [`LearningConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct LearningConfigBuilder {
    enabled: bool,
    mode: LearningMode,
    collection: CollectionPolicy,
    retention_days: Option<u32>,
    session_minutes: Option<u32>,
    predictor_timeout_ms: Option<u64>,
}

impl LearningConfigBuilder {
    /// Turns learning on (default off).
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Collect (default) or shadow. Shadow needs a predictor where the learning service is built.
    pub fn mode(mut self, mode: LearningMode) -> Self {
        self.mode = mode;
        self
    }

    /// Per-request consent (default) or the application's policy.
    pub fn collection(mut self, policy: CollectionPolicy) -> Self {
        self.collection = policy;
        self
    }

    /// Days a row is kept: 1–90, default 30.
    pub fn retention_days(mut self, days: u32) -> Self {
        self.retention_days = Some(days);
        self
    }

    /// Minutes a session lives: 1–60, default 30.
    pub fn session_minutes(mut self, minutes: u32) -> Self {
        self.session_minutes = Some(minutes);
        self
    }

    /// Milliseconds the predictor may take: 1–5000, default 1200.
    pub fn predictor_timeout_ms(mut self, ms: u64) -> Self {
        self.predictor_timeout_ms = Some(ms);
        self
    }

    /// Checks the values; the error names the first option out of range and its range.
    pub fn build(self) -> Result<LearningConfig, ConfigError> {
        Ok(LearningConfig {
            enabled: self.enabled,
            mode: self.mode,
            collection: self.collection,
            retention_days: LEARNING_RETENTION_DAYS.or_default(self.retention_days)?,
            session_minutes: LEARNING_SESSION_MINUTES.or_default(self.session_minutes)?,
            predictor_timeout_ms: PREDICTOR_TIMEOUT_MS.or_default(self.predictor_timeout_ms)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bound_and_one_past_it() {
        let ok = |b: LearningConfigBuilder| b.build().is_ok();
        let b = LearningConfig::builder;
        assert!(ok(b().retention_days(1)) && ok(b().retention_days(90)));
        assert!(!ok(b().retention_days(0)) && !ok(b().retention_days(91)));
        assert!(ok(b().session_minutes(1)) && ok(b().session_minutes(60)));
        assert!(!ok(b().session_minutes(0)) && !ok(b().session_minutes(61)));
        assert!(ok(b().predictor_timeout_ms(1)) && ok(b().predictor_timeout_ms(5000)));
        assert!(!ok(b().predictor_timeout_ms(0)) && !ok(b().predictor_timeout_ms(5001)));
        let error = b().session_minutes(61).build().unwrap_err();
        assert_eq!(error.field, "session_minutes");
    }

    #[test]
    fn off_by_default_and_consent_rules() {
        let config = LearningConfig::default();
        assert!(!config.enabled());
        assert_eq!(config.mode(), LearningMode::Collect);
        assert_eq!(config.session_end(0), 30 * 60_000);
        assert!(CollectionPolicy::PerRequest.allows(Some(true)));
        assert!(!CollectionPolicy::PerRequest.allows(None));
        assert!(!CollectionPolicy::PerRequest.allows(Some(false)));
        assert!(CollectionPolicy::Application.allows(None));
        assert!(!CollectionPolicy::Application.allows(Some(false)));
    }
}
