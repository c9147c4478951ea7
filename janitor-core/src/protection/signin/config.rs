//! The sign-in defence's options and their ranges.

use super::decision::Verdict;
use crate::config::{ConfigError, Limit};

/// Failed sign-ins that lock an account for unknown browsers, or one known browser out of it (default 5).
pub const LOCK_FAILURES: Limit<u32> = Limit::new("lock_failures", 5, 1, 100);
/// How long failures count towards a lock, from the first (default 15 minutes).
pub const LOCK_WINDOW_MS: Limit<i64> = Limit::new("lock_window_ms", 900_000, 60_000, 86_400_000);
/// Failed sign-ins from unknown browsers one network may make per failure window (default 20).
pub const NETWORK_FAILURES: Limit<u32> = Limit::new("network_failures", 20, 1, 1_000_000);
/// Failed sign-ins one unknown browser may make per failure window, whatever the accounts (default 10). Every
/// client that sends no browser payload counts as one such browser.
pub const BROWSER_FAILURES: Limit<u32> = Limit::new("browser_failures", 10, 1, 1_000_000);
/// Failed sign-ins from unknown browsers the whole site may see per failure window (off unless set: it depends
/// on the site's size).
pub const SITE_FAILURES: Limit<u32> = Limit::new("site_failures", 100, 1, 100_000_000);
/// The window the three failure budgets spread their limits over (default one day; GCRA, so a spent budget
/// comes back one failure at a time). Each budget also has a long tier: three windows' worth over thirty.
pub const FAILURE_WINDOW_MS: Limit<i64> =
    Limit::new("failure_window_ms", 86_400_000, 60_000, 2_592_000_000);
/// Days a browser stays known to an account after its last successful sign-in (default 90).
pub const KNOWN_BROWSER_DAYS: Limit<u32> = Limit::new("known_browser_days", 90, 1, 400);

/// Validated sign-in defence options. The default locks an account for unknown browsers after 5 failures in
/// 15 minutes, budgets unknown browsers' failures per network (20 a day) and per browser (10 a day), has no
/// site-wide budget, keeps browsers known for 90 days, and enforces its decisions (no dry run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInConfig {
    pub(super) lock_failures: u32,
    pub(super) lock_window_ms: i64,
    pub(super) network_failures: Option<u32>,
    pub(super) browser_failures: Option<u32>,
    pub(super) site_failures: Option<u32>,
    pub(super) failure_window_ms: i64,
    pub(super) known_browser_days: u32,
    pub(super) dry_run: bool,
    pub(super) automated: Verdict,
    pub(super) suspected: Verdict,
}

impl Default for SignInConfig {
    fn default() -> Self {
        SignInConfig {
            lock_failures: LOCK_FAILURES.default,
            lock_window_ms: LOCK_WINDOW_MS.default,
            network_failures: Some(NETWORK_FAILURES.default),
            browser_failures: Some(BROWSER_FAILURES.default),
            site_failures: None,
            failure_window_ms: FAILURE_WINDOW_MS.default,
            known_browser_days: KNOWN_BROWSER_DAYS.default,
            dry_run: false,
            automated: Verdict::Challenge,
            suspected: Verdict::Allow,
        }
    }
}

impl SignInConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> SignInConfigBuilder {
        SignInConfigBuilder::default()
    }

    /// Failures that lock.
    pub fn lock_failures(&self) -> u32 {
        self.lock_failures
    }

    /// The lock's window.
    pub fn lock_window_ms(&self) -> i64 {
        self.lock_window_ms
    }

    /// The network failure budget, if on.
    pub fn network_failures(&self) -> Option<u32> {
        self.network_failures
    }

    /// The browser failure budget, if on.
    pub fn browser_failures(&self) -> Option<u32> {
        self.browser_failures
    }

    /// The site-wide failure budget, if on.
    pub fn site_failures(&self) -> Option<u32> {
        self.site_failures
    }

    /// The failure budgets' window.
    pub fn failure_window_ms(&self) -> i64 {
        self.failure_window_ms
    }

    /// Days a browser stays known.
    pub fn known_browser_days(&self) -> u32 {
        self.known_browser_days
    }

    /// Whether decisions are only logged and counted, never enforced.
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// What an `automated` verdict does to an attempt (default challenge), when the verdict is on.
    pub fn automated(&self) -> Verdict {
        self.automated
    }

    /// What a `suspected` verdict does to an attempt (default allow), when the verdict is on.
    pub fn suspected(&self) -> Verdict {
        self.suspected
    }
}

/// Builds a [`SignInConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Copy, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct SignInConfigBuilder {
    lock_failures: Option<u32>,
    lock_window_ms: Option<i64>,
    network_failures: Option<Option<u32>>,
    browser_failures: Option<Option<u32>>,
    site_failures: Option<u32>,
    failure_window_ms: Option<i64>,
    known_browser_days: Option<u32>,
    dry_run: bool,
    automated: Option<Verdict>,
    suspected: Option<Verdict>,
}

impl SignInConfigBuilder {
    /// Failures that lock: 1–100, default 5.
    pub fn lock_failures(mut self, failures: u32) -> Self {
        self.lock_failures = Some(failures);
        self
    }

    /// The lock's window: 60,000–86,400,000 ms, default 900,000.
    pub fn lock_window_ms(mut self, ms: i64) -> Self {
        self.lock_window_ms = Some(ms);
        self
    }

    /// Unknown browsers' failures per network per failure window: 1–1,000,000, default 20.
    pub fn network_failures(mut self, failures: u32) -> Self {
        self.network_failures = Some(Some(failures));
        self
    }

    /// Switches the network failure budget off.
    pub fn without_network_failures(mut self) -> Self {
        self.network_failures = Some(None);
        self
    }

    /// One unknown browser's failures per failure window: 1–1,000,000, default 10.
    pub fn browser_failures(mut self, failures: u32) -> Self {
        self.browser_failures = Some(Some(failures));
        self
    }

    /// Switches the browser failure budget off.
    pub fn without_browser_failures(mut self) -> Self {
        self.browser_failures = Some(None);
        self
    }

    /// Switches the site-wide budget on: unknown browsers' failures per failure window, 1–100,000,000.
    pub fn site_failures(mut self, failures: u32) -> Self {
        self.site_failures = Some(failures);
        self
    }

    /// The failure budgets' window: 60,000 ms to 30 days, default one day.
    pub fn failure_window_ms(mut self, ms: i64) -> Self {
        self.failure_window_ms = Some(ms);
        self
    }

    /// Days a browser stays known after its last successful sign-in: 1–400, default 90.
    pub fn known_browser_days(mut self, days: u32) -> Self {
        self.known_browser_days = Some(days);
        self
    }

    /// Decide, log and count, but never refuse (how an operator turns the defence on safely).
    pub fn dry_run(mut self, on: bool) -> Self {
        self.dry_run = on;
        self
    }

    /// What an `automated` automation verdict does to an attempt: challenge (the default), deny, or allow (the
    /// verdict is then only counted). Applies when the handle gives verdicts.
    pub fn automated(mut self, verdict: Verdict) -> Self {
        self.automated = Some(verdict);
        self
    }

    /// What a `suspected` automation verdict does to an attempt: allow (the default), challenge or deny.
    pub fn suspected(mut self, verdict: Verdict) -> Self {
        self.suspected = Some(verdict);
        self
    }

    /// Checks the values.
    pub fn build(self) -> Result<SignInConfig, ConfigError> {
        let budget = |value: Option<Option<u32>>, limit: Limit<u32>| match value {
            None => Ok(Some(limit.default)),
            Some(None) => Ok(None),
            Some(Some(n)) => limit.check(n).map(Some),
        };
        Ok(SignInConfig {
            lock_failures: LOCK_FAILURES.or_default(self.lock_failures)?,
            lock_window_ms: LOCK_WINDOW_MS.or_default(self.lock_window_ms)?,
            network_failures: budget(self.network_failures, NETWORK_FAILURES)?,
            browser_failures: budget(self.browser_failures, BROWSER_FAILURES)?,
            site_failures: self
                .site_failures
                .map(|n| SITE_FAILURES.check(n))
                .transpose()?,
            failure_window_ms: FAILURE_WINDOW_MS.or_default(self.failure_window_ms)?,
            known_browser_days: KNOWN_BROWSER_DAYS.or_default(self.known_browser_days)?,
            dry_run: self.dry_run,
            automated: self.automated.unwrap_or(Verdict::Challenge),
            suspected: self.suspected.unwrap_or(Verdict::Allow),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bound_is_checked() {
        type Setter = fn(SignInConfigBuilder, i64) -> SignInConfigBuilder;
        let cases: [(Setter, Limit<i64>); 7] = [
            (|b, v| b.lock_failures(v as u32), widen(LOCK_FAILURES)),
            (|b, v| b.lock_window_ms(v), LOCK_WINDOW_MS),
            (|b, v| b.network_failures(v as u32), widen(NETWORK_FAILURES)),
            (|b, v| b.browser_failures(v as u32), widen(BROWSER_FAILURES)),
            (|b, v| b.site_failures(v as u32), widen(SITE_FAILURES)),
            (|b, v| b.failure_window_ms(v), FAILURE_WINDOW_MS),
            (
                |b, v| b.known_browser_days(v as u32),
                widen(KNOWN_BROWSER_DAYS),
            ),
        ];
        for (set, limit) in cases {
            for ok in [limit.min, limit.max] {
                assert!(
                    set(SignInConfig::builder(), ok).build().is_ok(),
                    "{} {ok}",
                    limit.name
                );
            }
            for bad in [limit.min - 1, limit.max + 1] {
                let err = set(SignInConfig::builder(), bad).build().unwrap_err();
                assert_eq!(err.field, limit.name);
                let range = format!("from {} to {}", limit.min, limit.max);
                assert!(err.to_string().contains(&range), "{err}");
            }
        }
    }

    fn widen(limit: Limit<u32>) -> Limit<i64> {
        Limit::new(
            limit.name,
            i64::from(limit.default),
            i64::from(limit.min),
            i64::from(limit.max),
        )
    }

    #[test]
    fn budgets_switch_off_and_the_site_budget_is_off_by_default() {
        let config = SignInConfig::default();
        assert_eq!(SignInConfig::builder().build().unwrap(), config);
        assert_eq!(
            (config.network_failures(), config.browser_failures()),
            (Some(20), Some(10))
        );
        assert_eq!(config.site_failures(), None);
        assert!(!config.dry_run());
        let off = SignInConfig::builder()
            .without_network_failures()
            .without_browser_failures()
            .build()
            .unwrap();
        assert_eq!(
            (off.network_failures(), off.browser_failures()),
            (None, None)
        );
    }
}
