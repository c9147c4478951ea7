//! One configuration for the whole handle, checked when it is built.

use std::ops::RangeInclusive;

use janitor_core::config::{check, ConfigError, Retention};
use janitor_core::evidence::EvidenceConfig;
use janitor_core::label::{LabelError, LabelKey};
use janitor_core::protection::quota::QuotaConfig;
use janitor_core::EngineConfig;

use crate::admission::AdmissionConfig;

/// Largest accepted request body in bytes (default 16,384).
pub const MAX_BODY_BYTES: (usize, RangeInclusive<usize>) = (16_384, 1..=65_536);
/// Longest wait for the whole request body, in milliseconds (default 5,000).
pub const REQUEST_TIMEOUT_MS: (u64, RangeInclusive<u64>) = (5_000, 100..=30_000);
/// Lifetime of the `__visitor` cookie in days (default: the observation retention, at most 400).
pub const COOKIE_MAX_AGE_DAYS: RangeInclusive<u32> = 1..=400;
pub use crate::admission::MAX_IN_FLIGHT_REQUESTS;
/// The endpoint's default path.
pub const ENDPOINT_PATH: &str = "/api/visitor";
pub use crate::script::SCRIPT_PATH;

/// Where the handle runs: production refuses development-only settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Environment {
    /// The default: cookies are always `Secure`.
    #[default]
    Production,
    /// Allows `cookie_secure(false)`, which still only works for loopback hosts.
    Development,
}

/// Why a configuration was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JanitorConfigError {
    /// A value outside its range.
    #[error(transparent)]
    OutOfRange(#[from] ConfigError),
    /// The secret or namespace.
    #[error("identity key: {0}")]
    Label(#[from] LabelError),
    /// No secret was given.
    #[error("a secret (32 to 4096 characters) is required")]
    MissingSecret,
    /// Another rule.
    #[error("{field}: {reason}")]
    Invalid {
        /// The option.
        field: &'static str,
        /// The rule it breaks.
        reason: &'static str,
    },
}

/// The validated configuration of a [`Janitor`](crate::Janitor) handle. `Debug` never shows the secret.
#[derive(Debug, Clone)]
pub struct JanitorConfig {
    pub(crate) key: LabelKey,
    pub(crate) environment: Environment,
    pub(crate) retention: Retention,
    pub(crate) engine: EngineConfig,
    pub(crate) cookie_max_age_days: u32,
    pub(crate) cookie_secure: bool,
    pub(crate) max_body_bytes: usize,
    pub(crate) request_timeout_ms: u64,
    pub(crate) admission: AdmissionConfig,
    pub(crate) endpoint_path: String,
    pub(crate) script_path: String,
    pub(crate) expose_client_scores: bool,
    pub(crate) quotas: Option<QuotaConfig>,
    pub(crate) evidence: EvidenceConfig,
}

impl JanitorConfig {
    /// A builder; only the secret is required.
    pub fn builder() -> JanitorConfigBuilder {
        JanitorConfigBuilder::default()
    }

    /// The label key made from the secret and namespace.
    pub fn label_key(&self) -> &LabelKey {
        &self.key
    }

    /// Production or development.
    pub fn environment(&self) -> Environment {
        self.environment
    }

    /// Observation retention.
    pub fn retention(&self) -> Retention {
        self.retention
    }

    /// The endpoint's path.
    pub fn endpoint_path(&self) -> &str {
        &self.endpoint_path
    }

    /// Where the browser client is served.
    pub fn script_path(&self) -> &str {
        &self.script_path
    }

    /// Requests in flight per handle.
    pub fn max_in_flight_requests(&self) -> usize {
        self.admission.max_in_flight_requests()
    }

    /// Whether the browser receives the full identity.
    pub fn expose_client_scores(&self) -> bool {
        self.expose_client_scores
    }

    /// Cookie lifetime in seconds.
    pub fn cookie_max_age_secs(&self) -> u64 {
        u64::from(self.cookie_max_age_days) * 86_400
    }
}

/// Builds a [`JanitorConfig`]; [`build`](Self::build) checks every value and names the range it broke.
#[derive(Clone, Default)]
pub struct JanitorConfigBuilder {
    secret: Option<String>,
    namespace: Option<String>,
    environment: Environment,
    retention: Option<(u32, usize)>,
    restore_threshold: Option<f64>,
    cookie_max_age_days: Option<u32>,
    cookie_secure: Option<bool>,
    max_body_bytes: Option<usize>,
    request_timeout_ms: Option<u64>,
    max_in_flight_requests: Option<usize>,
    endpoint_path: Option<String>,
    script_path: Option<String>,
    expose_client_scores: bool,
    quotas: Option<QuotaConfig>,
    evidence: Option<EvidenceConfig>,
}

impl std::fmt::Debug for JanitorConfigBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JanitorConfigBuilder")
            .field("namespace", &self.namespace)
            .field("environment", &self.environment)
            .field("endpoint_path", &self.endpoint_path)
            .field("script_path", &self.script_path)
            .finish_non_exhaustive()
    }
}

impl JanitorConfigBuilder {
    /// The identity secret: 32–4096 characters (UTF-16 units, as the other implementations count). Required.
    /// Labels depend on it: instances that share a database must share it.
    pub fn secret(mut self, secret: &str) -> Self {
        self.secret = Some(secret.to_owned());
        self
    }

    /// The label namespace (default `"janitor"`): non-blank, at most 128 characters.
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// Production (default) or development.
    pub fn environment(mut self, environment: Environment) -> Self {
        self.environment = environment;
        self
    }

    /// Observation retention: 1–36,500 days (default 90) and 1–100 kept per visitor (default 10).
    pub fn retention(mut self, days: u32, max_per_visitor: usize) -> Self {
        self.retention = Some((days, max_per_visitor));
        self
    }

    /// Confidence needed to restore an id without a cookie: 0.8–1, default 0.9.
    pub fn restore_threshold(mut self, threshold: f64) -> Self {
        self.restore_threshold = Some(threshold);
        self
    }

    /// Cookie lifetime: 1–400 days (default: the retention days, at most 400).
    pub fn cookie_max_age_days(mut self, days: u32) -> Self {
        self.cookie_max_age_days = Some(days);
        self
    }

    /// Whether the cookie carries `Secure` (default true). `false` needs [`Environment::Development`], and the
    /// endpoint then answers only loopback hosts.
    pub fn cookie_secure(mut self, secure: bool) -> Self {
        self.cookie_secure = Some(secure);
        self
    }

    /// Largest request body: 1–65,536 bytes, default 16,384.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = Some(bytes);
        self
    }

    /// Longest wait for the request body: 100–30,000 ms, default 5,000.
    pub fn request_timeout_ms(mut self, ms: u64) -> Self {
        self.request_timeout_ms = Some(ms);
        self
    }

    /// Requests in flight at once: 1–1,024, default 64; the rest are refused with 503 at once.
    pub fn max_in_flight_requests(mut self, n: usize) -> Self {
        self.max_in_flight_requests = Some(n);
        self
    }

    /// The endpoint's path (default `/api/visitor`): starts with `/`, at most 256 characters.
    pub fn endpoint_path(mut self, path: &str) -> Self {
        self.endpoint_path = Some(path.to_owned());
        self
    }

    /// Where [`Janitor::router`](crate::Janitor::router) serves the browser client `janitor.js` (default
    /// `/janitor.js`): starts with `/`, at most 256 characters, not the endpoint's path.
    pub fn script_path(mut self, path: &str) -> Self {
        self.script_path = Some(path.to_owned());
        self
    }

    /// Send the full identity (confidence, risk, browser match) to the browser. Off by default: server code
    /// gets it privately through [`Janitor::assess`](crate::Janitor::assess).
    pub fn expose_client_scores(mut self, expose: bool) -> Self {
        self.expose_client_scores = expose;
        self
    }

    /// Request quotas (off unless set).
    pub fn quotas(mut self, quotas: QuotaConfig) -> Self {
        self.quotas = Some(quotas);
        self
    }

    /// Evidence options (default [`EvidenceConfig::default`]).
    pub fn evidence(mut self, evidence: EvidenceConfig) -> Self {
        self.evidence = Some(evidence);
        self
    }

    /// Checks everything.
    pub fn build(self) -> Result<JanitorConfig, JanitorConfigError> {
        let secret = self.secret.ok_or(JanitorConfigError::MissingSecret)?;
        let key = LabelKey::new(&secret, self.namespace.as_deref().unwrap_or("janitor"))?;
        let retention = match self.retention {
            Some((days, max)) => Retention::new(days, max)?,
            None => Retention::default(),
        };
        let mut engine = EngineConfig::builder();
        if let Some(threshold) = self.restore_threshold {
            engine = engine.restore_threshold(threshold);
        }
        let engine = engine.build()?;
        let cookie_max_age_days = check(
            "cookie_max_age_days",
            self.cookie_max_age_days
                .unwrap_or_else(|| retention.observation_days().min(*COOKIE_MAX_AGE_DAYS.end())),
            &COOKIE_MAX_AGE_DAYS,
        )?;
        let cookie_secure = self.cookie_secure.unwrap_or(true);
        if !cookie_secure && self.environment == Environment::Production {
            return Err(JanitorConfigError::Invalid {
                field: "cookie_secure",
                reason: "production cookies must be Secure",
            });
        }
        let endpoint_path = self
            .endpoint_path
            .unwrap_or_else(|| ENDPOINT_PATH.to_owned());
        if !is_plain_path(&endpoint_path) {
            return Err(JanitorConfigError::Invalid {
                field: "endpoint_path",
                reason: "must start with / and be a plain path of at most 256 characters",
            });
        }
        let script_path = self.script_path.unwrap_or_else(|| SCRIPT_PATH.to_owned());
        if !is_plain_path(&script_path) {
            return Err(JanitorConfigError::Invalid {
                field: "script_path",
                reason: "must start with / and be a plain path of at most 256 characters",
            });
        }
        if script_path == endpoint_path {
            return Err(JanitorConfigError::Invalid {
                field: "script_path",
                reason: "must differ from endpoint_path",
            });
        }
        Ok(JanitorConfig {
            key,
            environment: self.environment,
            retention,
            engine,
            cookie_max_age_days,
            cookie_secure,
            max_body_bytes: check(
                "max_body_bytes",
                self.max_body_bytes.unwrap_or(MAX_BODY_BYTES.0),
                &MAX_BODY_BYTES.1,
            )?,
            request_timeout_ms: check(
                "request_timeout_ms",
                self.request_timeout_ms.unwrap_or(REQUEST_TIMEOUT_MS.0),
                &REQUEST_TIMEOUT_MS.1,
            )?,
            admission: AdmissionConfig::builder()
                .max_in_flight_requests(
                    self.max_in_flight_requests
                        .unwrap_or(MAX_IN_FLIGHT_REQUESTS.0),
                )
                .build()?,
            endpoint_path,
            script_path,
            expose_client_scores: self.expose_client_scores,
            quotas: self.quotas,
            evidence: self.evidence.unwrap_or_default(),
        })
    }
}

/// A path the router can take literally: no query, fragment or route pattern characters.
fn is_plain_path(path: &str) -> bool {
    path.starts_with('/') && path.len() <= 256 && !path.contains(['?', '#', '{', '}', '*', ':'])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    fn base() -> JanitorConfigBuilder {
        JanitorConfig::builder().secret(SECRET)
    }

    #[test]
    fn defaults() {
        let c = base().build().unwrap();
        assert_eq!(c.endpoint_path(), "/api/visitor");
        assert_eq!(c.script_path(), "/janitor.js");
        assert_eq!(c.cookie_max_age_secs(), 90 * 86_400);
        assert_eq!(
            (
                c.max_body_bytes,
                c.request_timeout_ms,
                c.max_in_flight_requests()
            ),
            (16_384, 5_000, 64)
        );
        assert!(c.cookie_secure && !c.expose_client_scores && c.quotas.is_none());
        // Long retention: the cookie stops at 400 days.
        assert_eq!(
            base()
                .retention(1000, 10)
                .build()
                .unwrap()
                .cookie_max_age_days,
            400
        );
    }

    #[test]
    fn every_bound_is_checked() {
        type Setter = fn(JanitorConfigBuilder, u64) -> JanitorConfigBuilder;
        let cases: [(Setter, u64, u64, &str); 4] = [
            (
                |b, v| b.max_body_bytes(v as usize),
                1,
                65_536,
                "max_body_bytes",
            ),
            (
                |b, v| b.request_timeout_ms(v),
                100,
                30_000,
                "request_timeout_ms",
            ),
            (
                |b, v| b.max_in_flight_requests(v as usize),
                1,
                1_024,
                "max_in_flight_requests",
            ),
            (
                |b, v| b.cookie_max_age_days(v as u32),
                1,
                400,
                "cookie_max_age_days",
            ),
        ];
        for (set, low, high, field) in cases {
            for ok in [low, high] {
                assert!(set(base(), ok).build().is_ok(), "{field} {ok}");
            }
            for bad in [low - 1, high + 1] {
                match set(base(), bad).build() {
                    Err(JanitorConfigError::OutOfRange(e)) => {
                        assert_eq!(e.field, field);
                        assert!(
                            e.to_string().contains(&format!("from {low} to {high}")),
                            "{e}"
                        );
                    }
                    other => panic!("{field} {bad}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn refusals() {
        assert_eq!(
            JanitorConfig::builder().build().unwrap_err(),
            JanitorConfigError::MissingSecret
        );
        assert!(matches!(
            JanitorConfig::builder().secret("short").build(),
            Err(JanitorConfigError::Label(_))
        ));
        assert!(matches!(
            base().namespace("  ").build(),
            Err(JanitorConfigError::Label(_))
        ));
        assert!(matches!(
            base().cookie_secure(false).build(),
            Err(JanitorConfigError::Invalid {
                field: "cookie_secure",
                ..
            })
        ));
        assert!(base()
            .cookie_secure(false)
            .environment(Environment::Development)
            .build()
            .is_ok());
        for path in ["api", "/a?b", "/a/{id}", &format!("/{}", "a".repeat(256))] {
            assert!(
                matches!(
                    base().endpoint_path(path).build(),
                    Err(JanitorConfigError::Invalid {
                        field: "endpoint_path",
                        ..
                    })
                ),
                "{path}"
            );
        }
        for path in [
            "janitor.js",
            "/a?b",
            "/static/*file",
            "/api/visitor",
            &format!("/{}", "a".repeat(256)),
        ] {
            assert!(
                matches!(
                    base().script_path(path).build(),
                    Err(JanitorConfigError::Invalid {
                        field: "script_path",
                        ..
                    })
                ),
                "{path}"
            );
        }
        let longest = format!("/{}", "a".repeat(255));
        assert_eq!(
            base().script_path(&longest).build().unwrap().script_path(),
            longest
        );
        assert!(base()
            .endpoint_path("/v")
            .script_path("/api/visitor")
            .build()
            .is_ok());
        assert!(matches!(
            base().retention(0, 10).build(),
            Err(JanitorConfigError::OutOfRange(_))
        ));
        assert!(matches!(
            base().restore_threshold(0.79).build(),
            Err(JanitorConfigError::OutOfRange(_))
        ));
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let builder = base();
        assert!(!format!("{builder:?}").contains(SECRET));
        assert!(!format!("{:?}", builder.build().unwrap()).contains(SECRET));
    }
}
