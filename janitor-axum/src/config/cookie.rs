//! The `__visitor` cookie's options.

use janitor_core::config::{ConfigError, Limit};

/// Lifetime of the `__visitor` cookie in days. Its default is not fixed: it is the observation retention, at
/// most 400 days (see [`CookieConfig::max_age_days`]).
pub const COOKIE_MAX_AGE_DAYS: Limit<u32> = Limit::new("cookie_max_age_days", 90, 1, 400);

/// Validated cookie options. The default is a `Secure` cookie living as long as observations do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieConfig {
    max_age_days: Option<u32>,
    secure: bool,
}

impl Default for CookieConfig {
    fn default() -> Self {
        CookieConfig {
            max_age_days: None,
            secure: true,
        }
    }
}

impl CookieConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> CookieConfigBuilder {
        CookieConfigBuilder::default()
    }

    /// The lifetime in days when one was set; `None` means the observation retention, at most 400 days.
    pub fn max_age_days(&self) -> Option<u32> {
        self.max_age_days
    }

    /// Whether the cookie carries `Secure`.
    pub fn secure(&self) -> bool {
        self.secure
    }
}

/// Builds a [`CookieConfig`]; [`build`](Self::build) checks every value and names the range it broke.
#[derive(Debug, Clone, Copy, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct CookieConfigBuilder {
    max_age_days: Option<u32>,
    secure: Option<bool>,
}

impl CookieConfigBuilder {
    /// Lifetime: 1–400 days (default: the observation retention, at most 400).
    pub fn max_age_days(mut self, days: u32) -> Self {
        self.max_age_days = Some(days);
        self
    }

    /// Whether the cookie carries `Secure` (default true). `false` needs
    /// [`Environment::Development`](crate::config::Environment::Development), and the endpoint then answers only
    /// loopback hosts.
    pub fn secure(mut self, secure: bool) -> Self {
        self.secure = Some(secure);
        self
    }

    /// Checks the values.
    pub fn build(self) -> Result<CookieConfig, ConfigError> {
        Ok(CookieConfig {
            max_age_days: self
                .max_age_days
                .map(|days| COOKIE_MAX_AGE_DAYS.check(days))
                .transpose()?,
            secure: self.secure.unwrap_or(true),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_age_bounds() {
        for days in [1, 400] {
            let config = CookieConfig::builder().max_age_days(days).build().unwrap();
            assert_eq!(config.max_age_days(), Some(days));
        }
        for days in [0, 401] {
            let err = CookieConfig::builder()
                .max_age_days(days)
                .build()
                .unwrap_err();
            assert_eq!(err.field, "cookie_max_age_days");
            assert!(err.to_string().contains("from 1 to 400"), "{err}");
        }
        let defaults = CookieConfig::builder().build().unwrap();
        assert_eq!(defaults, CookieConfig::default());
        assert!(defaults.secure() && defaults.max_age_days().is_none());
    }
}
