//! The whole configuration as plain data: from a file (TOML, JSON, anything serde reads) or from `JANITOR_*`
//! environment variables, validated by the same builders as code that sets it by hand.
//!
//! | variable | setting |
//! |---|---|
//! | `JANITOR_SECRET`, `JANITOR_NAMESPACE` | `secret`, `namespace` |
//! | `JANITOR_ENVIRONMENT` (`production` or `development`) | `environment` |
//! | `JANITOR_RETENTION_DAYS`, `JANITOR_MAX_OBSERVATIONS_PER_VISITOR`, `JANITOR_RESTORE_THRESHOLD` | `retention_days`, `max_observations_per_visitor`, `restore_threshold` |
//! | `JANITOR_MATCHING_POLICY` (`reference` or `precise`) | `matching_policy` |
//! | `JANITOR_NETWORK_EVIDENCE` | `network_evidence` |
//! | `JANITOR_EXTENDED_SIGNALS` | `extended_signals` |
//! | `JANITOR_AUTOMATION_VERDICT` | `automation_verdict` |
//! | `JANITOR_COOKIE_MAX_AGE_DAYS`, `JANITOR_COOKIE_SECURE` | `cookie.max_age_days`, `cookie.secure` |
//! | `JANITOR_ENDPOINT_PATH`, `JANITOR_SCRIPT_PATH`, `JANITOR_MAX_BODY_BYTES`, `JANITOR_REQUEST_TIMEOUT_MS`, `JANITOR_EXPOSE_CLIENT_SCORES` | `endpoint.*` |
//! | `JANITOR_ALLOWED_ORIGINS`, `JANITOR_TRUSTED_PROXIES` (comma-separated) | `origin.allowed_origins`, `origin.trusted_proxies` |
//! | `JANITOR_MAX_IN_FLIGHT`, `JANITOR_MAX_DRAIN_BYTES`, `JANITOR_DRAIN_TIMEOUT_MS`, `JANITOR_BODY_GRACE_MS`, `JANITOR_MAX_WAITING_REQUESTS`, `JANITOR_SLOT_WAIT_MS` | `admission.*` |
//! | `JANITOR_QUOTA_GLOBAL`, `_ACCOUNT`, `_SESSION`, `_NETWORK` (each switches its counter on; one not set is off), `_SHARDS`, `_WINDOW_MS`, `_NETWORK_ALGORITHM` (`gcra` or `fixed_window`), `_NETWORK_IPV4_PREFIX`, `_NETWORK_IPV6_PREFIX` (shape the counters, switch none on) | `quotas.*` |
//! | `JANITOR_SIGNIN_LOCK_FAILURES`, `_LOCK_WINDOW_MS`, `_NETWORK_FAILURES`, `_BROWSER_FAILURES`, `_SITE_FAILURES`, `_FAILURE_WINDOW_MS`, `_KNOWN_BROWSER_DAYS`, `_DRY_RUN`, `_AUTOMATED`, `_SUSPECTED` | `signin.*` |
//! | `JANITOR_RATE_LIMIT_HEADERS` | `rate_limit_headers` |
//! | `JANITOR_EVENT_RETENTION_DAYS`, `JANITOR_LINK_RETENTION_DAYS`, `JANITOR_MAX_EVENTS_PER_QUERY` | `evidence.*` |
//!
//! `JanitorSettings::from_env` (in `environment.rs`, with the list [`JanitorSettings::ENV_VARIABLES`]) also
//! warns, once per variable, about every `JANITOR_*` variable set that no reader of the library knows (these,
//! `ServeConfig`'s, `JevSettings`'s and janitor-sql's `DatabaseSettings`', as the features built in), naming the
//! known one it probably means; `JanitorSettings::from_env_with_own` declares the application's own
//! `JANITOR_*` names, and [`unknown_env_variables`](super::unknown_env_variables) is the same check without
//! logging.

use janitor_core::evidence::EvidenceConfig;
use janitor_core::protection::quota::{QuotaAlgorithm, QuotaConfig};
use janitor_core::protection::signin::{SignInConfig, Verdict};
use janitor_core::MatchingPolicy;
use serde::Deserialize;

use super::{
    AdmissionConfig, CookieConfig, EndpointConfig, Environment, JanitorConfig, JanitorConfigError,
    OriginConfig,
};

/// Every option of a [`JanitorConfig`], each optional (absent means the default). Unknown keys are refused.
/// `Debug` never shows the secret.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JanitorSettings {
    /// The identity secret (required by [`build`](Self::build)).
    pub secret: Option<String>,
    /// The label namespace.
    pub namespace: Option<String>,
    /// Production (the default) or development.
    pub environment: Option<Environment>,
    /// Days observations stay visible.
    pub retention_days: Option<u32>,
    /// Observations kept per visitor.
    pub max_observations_per_visitor: Option<usize>,
    /// Confidence needed to restore an id without a cookie.
    pub restore_threshold: Option<f64>,
    /// How a visit without a cookie decides to restore (`reference`, the default, or `precise`).
    pub matching_policy: Option<MatchingPolicy>,
    /// Keep each visit's network digest for the precise policy (off when absent; see
    /// [`JanitorConfigBuilder::network_evidence`](crate::config::JanitorConfigBuilder::network_evidence)).
    pub network_evidence: Option<bool>,
    /// Read and keep the browser client's extended signals for the precise policy (off when absent; see
    /// [`JanitorConfigBuilder::extended_signals`](crate::config::JanitorConfigBuilder::extended_signals)).
    pub extended_signals: Option<bool>,
    /// Give each identification an automation verdict (off when absent; see
    /// [`JanitorConfigBuilder::automation_verdict`](crate::config::JanitorConfigBuilder::automation_verdict)).
    pub automation_verdict: Option<bool>,
    /// The cookie's options.
    pub cookie: CookieSettings,
    /// The endpoint's options.
    pub endpoint: EndpointSettings,
    /// Allowed origins and trusted proxies.
    pub origin: OriginSettings,
    /// The admission limits.
    pub admission: AdmissionSettings,
    /// Request quotas; absent means off. Only the counters named are on (`{account = 3}` counts accounts
    /// and nothing else); `shards` and `window_ms` alone switch none on and are refused.
    pub quotas: Option<QuotaSettings>,
    /// The sign-in defence ([`SignInConfig`]); absent values are its defaults.
    pub signin: SignInSettings,
    /// Whether refusals carry the IETF `RateLimit-Policy` and `RateLimit` fields (off when absent).
    pub rate_limit_headers: Option<bool>,
    /// Evidence options.
    pub evidence: EvidenceSettings,
}

impl std::fmt::Debug for JanitorSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JanitorSettings")
            .field("secret", &self.secret.as_ref().map(|_| "<redacted>"))
            .field("namespace", &self.namespace)
            .field("environment", &self.environment)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

/// [`CookieConfig`] as data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(missing_docs)] // each field is the builder method of the same name
pub struct CookieSettings {
    pub max_age_days: Option<u32>,
    pub secure: Option<bool>,
}

/// [`EndpointConfig`] as data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(missing_docs)] // each field is the builder method of the same name
pub struct EndpointSettings {
    pub path: Option<String>,
    pub script_path: Option<String>,
    pub max_body_bytes: Option<usize>,
    pub request_timeout_ms: Option<u64>,
    pub expose_client_scores: Option<bool>,
}

/// [`OriginConfig`] as data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(missing_docs)] // each entry is one call of the builder method of the singular name
pub struct OriginSettings {
    pub allowed_origins: Vec<String>,
    pub trusted_proxies: Vec<String>,
}

/// [`AdmissionConfig`] as data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(missing_docs)] // each field is the builder method of the same name
pub struct AdmissionSettings {
    pub max_in_flight_requests: Option<usize>,
    pub max_drain_bytes: Option<u64>,
    pub drain_timeout_ms: Option<u64>,
    pub body_grace_ms: Option<u64>,
    pub max_waiting_requests: Option<usize>,
    pub slot_wait_ms: Option<u64>,
}

/// [`QuotaConfig`] as data. Unlike the builder, which starts with every counter on, a counter not given here
/// is off: settings switch on exactly the counters they name. At least one of `global`, `account`, `session`
/// and `network` is required.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(missing_docs)] // each field is the builder method of the same name
pub struct QuotaSettings {
    pub global: Option<u32>,
    pub account: Option<u32>,
    pub session: Option<u32>,
    pub network: Option<u32>,
    pub network_algorithm: Option<QuotaAlgorithm>,
    pub network_ipv4_prefix: Option<u8>,
    pub network_ipv6_prefix: Option<u8>,
    pub shards: Option<u32>,
    pub window_ms: Option<i64>,
}

/// [`SignInConfig`] as data: each absent value is the default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(missing_docs)] // each field is the builder method of the same name
pub struct SignInSettings {
    pub lock_failures: Option<u32>,
    pub lock_window_ms: Option<i64>,
    pub network_failures: Option<u32>,
    pub browser_failures: Option<u32>,
    pub site_failures: Option<u32>,
    pub failure_window_ms: Option<i64>,
    pub known_browser_days: Option<u32>,
    pub dry_run: Option<bool>,
    /// What an `automated` verdict does: `allow`, `challenge` (the default) or `deny`.
    pub automated: Option<Verdict>,
    /// What a `suspected` verdict does: `allow` (the default), `challenge` or `deny`.
    pub suspected: Option<Verdict>,
}

impl SignInSettings {
    fn build(self) -> Result<SignInConfig, JanitorConfigError> {
        let mut b = SignInConfig::builder();
        if let Some(n) = self.lock_failures {
            b = b.lock_failures(n);
        }
        if let Some(ms) = self.lock_window_ms {
            b = b.lock_window_ms(ms);
        }
        if let Some(n) = self.network_failures {
            b = b.network_failures(n);
        }
        if let Some(n) = self.browser_failures {
            b = b.browser_failures(n);
        }
        if let Some(n) = self.site_failures {
            b = b.site_failures(n);
        }
        if let Some(ms) = self.failure_window_ms {
            b = b.failure_window_ms(ms);
        }
        if let Some(days) = self.known_browser_days {
            b = b.known_browser_days(days);
        }
        if let Some(verdict) = self.automated {
            b = b.automated(verdict);
        }
        if let Some(verdict) = self.suspected {
            b = b.suspected(verdict);
        }
        Ok(b.dry_run(self.dry_run.unwrap_or(false)).build()?)
    }
}

/// [`EvidenceConfig`](crate::evidence::EvidenceConfig) as data.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(missing_docs)] // each field is the builder method of the same name
pub struct EvidenceSettings {
    pub event_retention_days: Option<u32>,
    pub link_retention_days: Option<u32>,
    pub max_events_per_query: Option<u32>,
}

impl JanitorSettings {
    /// Makes up a random secret (64 hex digits from the operating system's CSPRNG) for a development run that
    /// has none, as the quick start does: `Ok(true)` when it did, `Ok(false)` when a secret was given. Without
    /// a secret in production (which an absent `environment` means) it refuses with
    /// [`JanitorConfigError::ProductionWithoutSecret`]: instances on one database must share their secret, and
    /// one made up per run would split their counters and could never pass the key check.
    pub fn fill_development_secret(&mut self) -> Result<bool, JanitorConfigError> {
        if self.secret.as_deref().is_some_and(|s| !s.is_empty()) {
            return Ok(false);
        }
        if self.environment != Some(Environment::Development) {
            return Err(JanitorConfigError::ProductionWithoutSecret);
        }
        let bytes: [u8; 32] = rand::random();
        self.secret = Some(bytes.iter().map(|b| format!("{b:02x}")).collect());
        Ok(true)
    }

    /// The configuration, through the builders: every value is checked as if set by hand.
    pub fn build(self) -> Result<JanitorConfig, JanitorConfigError> {
        let mut builder = JanitorConfig::builder()
            .environment(self.environment.unwrap_or_default())
            .cookie(self.cookie.build()?)
            .endpoint(self.endpoint.build()?)
            .origin(self.origin.build()?)
            .admission(self.admission.build()?)
            .evidence(self.evidence.build()?);
        if let Some(secret) = &self.secret {
            builder = builder.secret(secret);
        }
        if let Some(namespace) = &self.namespace {
            builder = builder.namespace(namespace);
        }
        if self.retention_days.is_some() || self.max_observations_per_visitor.is_some() {
            let defaults = janitor_core::Retention::default();
            builder = builder.retention(
                self.retention_days.unwrap_or(defaults.observation_days()),
                self.max_observations_per_visitor
                    .unwrap_or(defaults.max_per_visitor()),
            );
        }
        if let Some(threshold) = self.restore_threshold {
            builder = builder.restore_threshold(threshold);
        }
        if let Some(policy) = self.matching_policy {
            builder = builder.matching_policy(policy);
        }
        if let Some(on) = self.network_evidence {
            builder = builder.network_evidence(on);
        }
        if let Some(on) = self.extended_signals {
            builder = builder.extended_signals(on);
        }
        if let Some(on) = self.automation_verdict {
            builder = builder.automation_verdict(on);
        }
        if let Some(quotas) = self.quotas {
            builder = builder.quotas(quotas.build()?);
        }
        builder
            .signin(self.signin.build()?)
            .rate_limit_headers(self.rate_limit_headers.unwrap_or(false))
            .build()
    }
}

impl CookieSettings {
    fn build(self) -> Result<CookieConfig, JanitorConfigError> {
        let mut b = CookieConfig::builder();
        if let Some(days) = self.max_age_days {
            b = b.max_age_days(days);
        }
        if let Some(secure) = self.secure {
            b = b.secure(secure);
        }
        Ok(b.build()?)
    }
}

impl EndpointSettings {
    fn build(self) -> Result<EndpointConfig, JanitorConfigError> {
        let mut b = EndpointConfig::builder();
        if let Some(path) = &self.path {
            b = b.path(path);
        }
        if let Some(path) = &self.script_path {
            b = b.script_path(path);
        }
        if let Some(bytes) = self.max_body_bytes {
            b = b.max_body_bytes(bytes);
        }
        if let Some(ms) = self.request_timeout_ms {
            b = b.request_timeout_ms(ms);
        }
        b.expose_client_scores(self.expose_client_scores.unwrap_or(false))
            .build()
    }
}

impl OriginSettings {
    fn build(self) -> Result<OriginConfig, JanitorConfigError> {
        let b = self
            .allowed_origins
            .iter()
            .fold(OriginConfig::builder(), |b, o| b.allow_origin(o));
        self.trusted_proxies
            .iter()
            .fold(b, |b, r| b.trust_proxy(r))
            .build()
    }
}

impl AdmissionSettings {
    fn build(self) -> Result<AdmissionConfig, JanitorConfigError> {
        let mut b = AdmissionConfig::builder();
        if let Some(n) = self.max_in_flight_requests {
            b = b.max_in_flight_requests(n);
        }
        if let Some(bytes) = self.max_drain_bytes {
            b = b.max_drain_bytes(bytes);
        }
        if let Some(ms) = self.drain_timeout_ms {
            b = b.drain_timeout_ms(ms);
        }
        if let Some(ms) = self.body_grace_ms {
            b = b.body_grace_ms(ms);
        }
        if let Some(n) = self.max_waiting_requests {
            b = b.max_waiting_requests(n);
        }
        if let Some(ms) = self.slot_wait_ms {
            b = b.slot_wait_ms(ms);
        }
        Ok(b.build()?)
    }
}

impl QuotaSettings {
    /// Only the counters given are on: a file or environment that names one counter means that one, not the
    /// contract's three defaults (the builder's default, which would cap the whole site at 600 a minute).
    fn build(self) -> Result<QuotaConfig, JanitorConfigError> {
        let mut b = QuotaConfig::builder();
        b = match self.global {
            Some(n) => b.global(n),
            None => b.without_global(),
        };
        b = match self.account {
            Some(n) => b.account(n),
            None => b.without_account(),
        };
        b = match self.session {
            Some(n) => b.session(n),
            None => b.without_session(),
        };
        if let Some(n) = self.network {
            b = b.network(n);
        }
        if let Some(algorithm) = self.network_algorithm {
            b = b.network_algorithm(algorithm);
        }
        if let Some(bits) = self.network_ipv4_prefix {
            b = b.network_ipv4_prefix(bits);
        }
        if let Some(bits) = self.network_ipv6_prefix {
            b = b.network_ipv6_prefix(bits);
        }
        if let Some(n) = self.shards {
            b = b.shards(n);
        }
        if let Some(ms) = self.window_ms {
            b = b.window_ms(ms);
        }
        let quotas = b.build()?;
        // Settings switch on the counters they name; naming none is a mistake, not "quotas off".
        if !quotas.any_counter_on() {
            return Err(JanitorConfigError::Invalid {
                field: "quotas",
                reason: "no quota counter set: set global, account, session or network \
                         (JANITOR_QUOTA_GLOBAL, _ACCOUNT, _SESSION, _NETWORK); the others only shape them",
            });
        }
        Ok(quotas)
    }
}

impl EvidenceSettings {
    fn build(self) -> Result<EvidenceConfig, JanitorConfigError> {
        let mut b = EvidenceConfig::builder();
        if let Some(days) = self.event_retention_days {
            b = b.event_retention_days(days);
        }
        if let Some(days) = self.link_retention_days {
            b = b.link_retention_days(days);
        }
        if let Some(n) = self.max_events_per_query {
            b = b.max_events_per_query(n);
        }
        Ok(b.build()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "7c1e9a24f0b35d86e2a4c7f190b3d5e8";

    #[test]
    fn a_secret_is_made_up_only_in_development() {
        // No secret, or an empty one (read as none), in production or with no environment (production).
        for environment in [None, Some(Environment::Production)] {
            let mut settings = JanitorSettings {
                environment,
                ..JanitorSettings::default()
            };
            assert_eq!(
                settings.fill_development_secret(),
                Err(JanitorConfigError::ProductionWithoutSecret)
            );
            assert_eq!(settings.secret, None, "nothing made up");
            settings.secret = Some(String::new());
            assert_eq!(
                settings.fill_development_secret(),
                Err(JanitorConfigError::ProductionWithoutSecret)
            );
        }
        let mut development = JanitorSettings {
            environment: Some(Environment::Development),
            ..JanitorSettings::default()
        };
        assert_eq!(development.fill_development_secret(), Ok(true));
        let made = development.secret.clone().unwrap();
        assert_eq!(made.len(), 64);
        assert!(janitor_core::label::check_secret_strength(&made).is_ok());
        let mut other = JanitorSettings {
            environment: Some(Environment::Development),
            ..JanitorSettings::default()
        };
        other.fill_development_secret().unwrap();
        assert_ne!(other.secret.unwrap(), made, "a new one each run");
        // A given secret is kept, in either environment.
        let mut given = JanitorSettings {
            secret: Some(SECRET.to_owned()),
            ..JanitorSettings::default()
        };
        assert_eq!(given.fill_development_secret(), Ok(false));
        assert_eq!(given.secret.as_deref(), Some(SECRET));
    }

    #[test]
    fn a_file_reads_through_serde_and_unknown_keys_are_refused() {
        let settings: JanitorSettings = serde_json::from_value(serde_json::json!({
            "secret": SECRET,
            "endpoint": {"path": "/v", "max_body_bytes": 4096},
            "quotas": {"global": 100},
            "admission": {"max_drain_bytes": 0},
            "matching_policy": "precise"
        }))
        .unwrap();
        assert!(!format!("{settings:?}").contains(SECRET));
        let config = settings.build().unwrap();
        assert_eq!(config.endpoint().max_body_bytes(), 4096);
        let quotas = config.quotas().expect("quotas on");
        assert_eq!(
            (quotas.global(), quotas.account(), quotas.session()),
            (Some(100), None, None)
        );
        assert_eq!(config.engine.policy(), MatchingPolicy::Precise);
        let origins = serde_json::from_value::<JanitorSettings>(serde_json::json!({
            "secret": SECRET,
            "origin": {"allowed_origins": ["https://example.com/", "https://user@example.com"]}
        }));
        let err = origins.unwrap().build().unwrap_err().to_string();
        assert!(err.contains("allowed_origins entry 2 of 2"), "{err}");
        assert!(err.contains("user information"), "{err}");
        let slash = serde_json::from_value::<JanitorSettings>(serde_json::json!({
            "secret": SECRET,
            "origin": {"allowed_origins": ["https://example.com/"]}
        }));
        let config = slash.unwrap().build().unwrap();
        assert_eq!(
            config.origin().allowed_origins()[0].as_str(),
            "https://example.com"
        );
        let policy = serde_json::from_value::<JanitorSettings>(
            serde_json::json!({"matching_policy": "strict"}),
        );
        assert!(policy
            .unwrap_err()
            .to_string()
            .contains("unknown variant `strict`"));
        let unknown = serde_json::from_value::<JanitorSettings>(
            serde_json::json!({"endpoint": {"pth": "/v"}}),
        );
        assert!(unknown
            .unwrap_err()
            .to_string()
            .contains("unknown field `pth`"));
    }
}
