//! One configuration for the whole handle, composed from parts and checked when it is built.
//!
//! The identity secret and the stores' policies (retention, matching, quotas, evidence) are set on
//! [`JanitorConfigBuilder`] directly; the HTTP edge comes in three parts, each with its own builder and checks:
//! [`CookieConfig`], [`EndpointConfig`] and [`AdmissionConfig`].

mod cookie;
mod endpoint;
mod environment;
mod origin;
mod settings;
mod unknown_env;

use janitor_core::evidence::EvidenceConfig;
use janitor_core::label::{check_secret_strength, LabelError, LabelKey};
use janitor_core::learning::{LearningConfig, LearningMode};
pub use janitor_core::MatchingPolicy;
use janitor_core::{EngineConfig, Retention};

pub use crate::admission::AdmissionConfig;
pub use cookie::{CookieConfig, CookieConfigBuilder, COOKIE_MAX_AGE_DAYS};
pub use endpoint::{
    EndpointConfig, EndpointConfigBuilder, ENDPOINT_PATH, MAX_BODY_BYTES, REQUEST_TIMEOUT_MS,
    SCRIPT_PATH,
};
pub use janitor_core::config::{ConfigError, EnvSource};
pub use janitor_core::protection::quota::QuotaConfig;
pub use janitor_core::protection::signin::SignInConfig;
pub use origin::{
    OriginConfig, OriginConfigBuilder, OriginError, ProxyRange, ProxyRangeError, PublicOrigin,
    MAX_ORIGIN_ENTRIES,
};
pub use settings::{
    AdmissionSettings, CookieSettings, EndpointSettings, EvidenceSettings, JanitorSettings,
    OriginSettings, QuotaSettings,
};
pub use unknown_env::{
    known_env_variables, unknown_env_variables, warn_unknown_env, UnknownEnvVariable,
};

/// Where the handle runs: production refuses development-only settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Environment {
    /// The default: cookies are always `Secure`.
    #[default]
    Production,
    /// Allows an insecure cookie ([`CookieConfigBuilder::secure`]), which still only works for loopback hosts.
    /// It only permits what production refuses: the cookie stays `Secure` and the scores stay hidden unless
    /// the configuration says otherwise (`JANITOR_COOKIE_SECURE=false`, `JANITOR_EXPOSE_CLIENT_SCORES=true`).
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
    /// No secret was given to a production run, which must not make one up (see
    /// [`JanitorSettings::fill_development_secret`]).
    #[error(
        "JANITOR_SECRET is required in production: every instance on one database must use the same secret \
         (generate one with `openssl rand -hex 32`); a random secret is made up only in development"
    )]
    ProductionWithoutSecret,
    /// An environment variable that does not read as its type.
    #[error(transparent)]
    Environment(janitor_core::config::EnvError),
    /// An entry of `allowed_origins` (`JANITOR_ALLOWED_ORIGINS`) that is not an origin.
    #[error(
        "allowed_origins entry {position} of {count} ({entry:?}): {reason}; an allowed origin is \
         scheme://host[:port] with http or https and nothing after it, as https://example.com or \
         http://localhost:3000"
    )]
    AllowedOrigin {
        /// Where it is in the list, from 1 (blank entries of the variable are not counted).
        position: usize,
        /// The list's length.
        count: usize,
        /// The entry as given.
        entry: String,
        /// What is wrong with it.
        reason: OriginError,
    },
    /// An entry of `trusted_proxies` (`JANITOR_TRUSTED_PROXIES`) that is not an address or block.
    #[error(
        "trusted_proxies entry {position} of {count} ({entry:?}): {reason}; a trusted proxy is an IP \
         address (10.0.0.1, fd00::1) or a CIDR block (10.0.0.0/8, fd00::/8)"
    )]
    TrustedProxy {
        /// Where it is in the list, from 1 (blank entries of the variable are not counted).
        position: usize,
        /// The list's length.
        count: usize,
        /// The entry as given.
        entry: String,
        /// What is wrong with it.
        reason: ProxyRangeError,
    },
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
    pub(crate) cookie: CookieConfig,
    pub(crate) cookie_max_age_days: u32,
    pub(crate) endpoint: EndpointConfig,
    pub(crate) origin: OriginConfig,
    pub(crate) admission: AdmissionConfig,
    pub(crate) quotas: Option<QuotaConfig>,
    pub(crate) signin: SignInConfig,
    pub(crate) rate_limit_headers: bool,
    pub(crate) evidence: EvidenceConfig,
    pub(crate) learning: LearningConfig,
    pub(crate) network_evidence: bool,
    pub(crate) extended_signals: bool,
    pub(crate) automation_verdict: bool,
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

    /// The cookie options.
    pub fn cookie(&self) -> &CookieConfig {
        &self.cookie
    }

    /// The endpoint options.
    pub fn endpoint(&self) -> &EndpointConfig {
        &self.endpoint
    }

    /// Which origins may call, and which proxies are trusted.
    pub fn origin(&self) -> &OriginConfig {
        &self.origin
    }

    /// The admission options.
    pub fn admission(&self) -> &AdmissionConfig {
        &self.admission
    }

    /// The request quotas, when on.
    pub fn quotas(&self) -> Option<&QuotaConfig> {
        self.quotas.as_ref()
    }

    /// The sign-in defence's options ([`Janitor::sign_in`](crate::Janitor::sign_in)).
    pub fn signin(&self) -> &SignInConfig {
        &self.signin
    }

    /// Whether refusals carry the IETF `RateLimit-Policy` and `RateLimit` fields besides `Retry-After` (off by
    /// default).
    pub fn rate_limit_headers(&self) -> bool {
        self.rate_limit_headers
    }

    /// Whether each visit's network digest is kept for the precise policy (off by default).
    pub fn network_evidence(&self) -> bool {
        self.network_evidence
    }

    /// Whether the browser client's extended signals are read and kept for the precise policy (off by default).
    pub fn extended_signals(&self) -> bool {
        self.extended_signals
    }

    /// Whether each identification carries an automation verdict (off by default).
    pub fn automation_verdict(&self) -> bool {
        self.automation_verdict
    }

    /// The learning options (off by default).
    pub fn learning(&self) -> &LearningConfig {
        &self.learning
    }

    /// Cookie lifetime in seconds: the configured days, or the retention's (at most 400).
    pub fn cookie_max_age_secs(&self) -> u64 {
        u64::from(self.cookie_max_age_days) * 86_400
    }
}

/// Builds a [`JanitorConfig`]; [`build`](Self::build) checks every value and names the rule it broke.
#[derive(Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct JanitorConfigBuilder {
    secret: Option<String>,
    namespace: Option<String>,
    environment: Environment,
    retention: Option<(u32, usize)>,
    restore_threshold: Option<f64>,
    matching_policy: MatchingPolicy,
    network_evidence: bool,
    extended_signals: bool,
    automation_verdict: bool,
    cookie: CookieConfig,
    endpoint: EndpointConfig,
    origin: OriginConfig,
    admission: AdmissionConfig,
    quotas: Option<QuotaConfig>,
    signin: SignInConfig,
    rate_limit_headers: bool,
    evidence: Option<EvidenceConfig>,
    learning: LearningConfig,
}

impl std::fmt::Debug for JanitorConfigBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JanitorConfigBuilder")
            .field("namespace", &self.namespace)
            .field("environment", &self.environment)
            .field("cookie", &self.cookie)
            .field("endpoint", &self.endpoint)
            .field("origin", &self.origin)
            .field("admission", &self.admission)
            .finish_non_exhaustive()
    }
}

impl JanitorConfigBuilder {
    /// The identity secret: 32–4096 characters, and not a placeholder (a run of one key, a string repeated:
    /// [`check_secret_strength`] has the rules). Required. Labels depend on it: instances that share a
    /// database must share it.
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

    /// How a visit without a cookie decides to restore an id: [`MatchingPolicy::Reference`] (the default,
    /// bit-exact with the reference implementation) or the opt-in [`MatchingPolicy::Precise`], which restores
    /// far less often wrongly
    /// ([docs/accuracy.md](https://github.com/janitor-rust/janitor/blob/main/docs/accuracy.md)). Instances that share
    /// a database may use different policies.
    pub fn matching_policy(mut self, policy: MatchingPolicy) -> Self {
        self.matching_policy = policy;
        self
    }

    /// Keep a keyed digest of each visit's network prefix (IPv4 /24, IPv6 /48) with its observation, for the
    /// precise policy to tell lookalike devices apart (default off). The address is the peer's, or the one a
    /// trusted proxy forwarded ([`OriginConfigBuilder::trust_proxy`](crate::config::OriginConfigBuilder)). It
    /// is personal data: docs/security.md, "The network prefix", says what is stored and for how long. Needs
    /// [`MatchingPolicy::Precise`], the only policy that reads it.
    pub fn network_evidence(mut self, on: bool) -> Self {
        self.network_evidence = on;
        self
    }

    /// Read the extended client signals the browser client sends when the page enables them
    /// (`createVisitorClient({extendedSignals: true})`: the `janitor-extended-signals` header), validate them and
    /// keep them with each observation, for the precise policy to tell lookalike devices apart (default off).
    /// While off, the header is ignored, never refused. Needs [`MatchingPolicy::Precise`], the only policy that
    /// reads them; docs/accuracy.md, "Extended client signals", measures them.
    pub fn extended_signals(mut self, on: bool) -> Self {
        self.extended_signals = on;
        self
    }

    /// Give each identification an automation verdict (`human`, `suspected`, `automated`, with reasons), on the
    /// identify endpoint ([`Assessment::automation`](crate::handle::Assessment)), on the application's routes
    /// ([`IdentifiedVisitor::automation`](crate::IdentifiedVisitor::automation)) and to the sign-in decision
    /// ([`SignInConfig`]'s `automated` and `suspected`). It reads the request's
    /// headers, the payload and, when the page sends it (`createVisitorClient({automationEvidence: true})`),
    /// the `janitor-automation-evidence` header; a bad header means no evidence, never a refusal. Default off;
    /// it never changes the visitor id or the risk fields. docs/automation.md describes every check.
    pub fn automation_verdict(mut self, on: bool) -> Self {
        self.automation_verdict = on;
        self
    }

    /// The cookie options (default [`CookieConfig::default`]).
    pub fn cookie(mut self, cookie: CookieConfig) -> Self {
        self.cookie = cookie;
        self
    }

    /// The endpoint options (default [`EndpointConfig::default`]).
    pub fn endpoint(mut self, endpoint: EndpointConfig) -> Self {
        self.endpoint = endpoint;
        self
    }

    /// Which origins may call the endpoint and which proxies are trusted (default [`OriginConfig::default`]:
    /// the request's own host, no proxy). Behind a proxy that rewrites `Host`, list the public origins.
    pub fn origin(mut self, origin: OriginConfig) -> Self {
        self.origin = origin;
        self
    }

    /// The admission options (default [`AdmissionConfig::default`]).
    pub fn admission(mut self, admission: AdmissionConfig) -> Self {
        self.admission = admission;
        self
    }

    /// Request quotas (off unless set): the counters `quotas` has on (a [`QuotaConfig`] builder starts with
    /// all three on). A configuration with every counter off is refused by [`build`](Self::build).
    pub fn quotas(mut self, quotas: QuotaConfig) -> Self {
        self.quotas = Some(quotas);
        self
    }

    /// The sign-in defence's options (default [`SignInConfig::default`]).
    pub fn signin(mut self, signin: SignInConfig) -> Self {
        self.signin = signin;
        self
    }

    /// Adds the IETF `RateLimit-Policy` and `RateLimit` fields (draft-ietf-httpapi-ratelimit-headers-11) to
    /// every 429 the library answers or hands the application, besides `Retry-After` (default off).
    pub fn rate_limit_headers(mut self, on: bool) -> Self {
        self.rate_limit_headers = on;
        self
    }

    /// Evidence options (default [`EvidenceConfig::default`]).
    pub fn evidence(mut self, evidence: EvidenceConfig) -> Self {
        self.evidence = Some(evidence);
        self
    }

    /// Login-labelled learning (default off; see
    /// [docs/learning.md](https://github.com/janitor-rust/janitor/blob/main/docs/learning.md)). The handle runs
    /// collect mode; shadow
    /// mode needs a predictor, through [`Learning`](janitor_core::learning::Learning) directly.
    pub fn learning(mut self, learning: LearningConfig) -> Self {
        self.learning = learning;
        self
    }

    /// Checks everything, and the rules between parts.
    pub fn build(self) -> Result<JanitorConfig, JanitorConfigError> {
        let secret = self.secret.ok_or(JanitorConfigError::MissingSecret)?;
        check_secret_strength(&secret)?;
        let key = LabelKey::new(&secret, self.namespace.as_deref().unwrap_or("janitor"))?;
        let retention = match self.retention {
            Some((days, max)) => Retention::new(days, max)?,
            None => Retention::default(),
        };
        let mut engine = EngineConfig::builder().policy(self.matching_policy);
        if let Some(threshold) = self.restore_threshold {
            engine = engine.restore_threshold(threshold);
        }
        let engine = engine.build()?;
        let needs_precise = [
            (self.network_evidence, "network_evidence"),
            (self.extended_signals, "extended_signals"),
        ];
        if let Some((_, field)) = needs_precise
            .into_iter()
            .find(|(on, _)| *on && self.matching_policy != MatchingPolicy::Precise)
        {
            return Err(JanitorConfigError::Invalid {
                field,
                reason: "only the precise matching policy reads it: set matching_policy = precise, or leave it off",
            });
        }
        if self.learning.mode() == LearningMode::Shadow {
            return Err(JanitorConfigError::Invalid {
                field: "learning.mode",
                reason:
                    "shadow mode needs a predictor: build janitor_core::learning::Learning with one",
            });
        }
        if !self.cookie.secure() && self.environment == Environment::Production {
            return Err(JanitorConfigError::Invalid {
                field: "cookie_secure",
                reason: "production cookies must be Secure",
            });
        }
        if self.quotas.is_some_and(|q| !q.any_counter_on()) {
            return Err(JanitorConfigError::Invalid {
                field: "quotas",
                reason: "every quota counter is off: leave the quotas out instead",
            });
        }
        let cookie_max_age_days = self
            .cookie
            .max_age_days()
            .unwrap_or_else(|| retention.observation_days().min(COOKIE_MAX_AGE_DAYS.max));
        Ok(JanitorConfig {
            key,
            environment: self.environment,
            retention,
            engine,
            cookie: self.cookie,
            cookie_max_age_days,
            endpoint: self.endpoint,
            origin: self.origin,
            admission: self.admission,
            quotas: self.quotas,
            signin: self.signin,
            rate_limit_headers: self.rate_limit_headers,
            evidence: self.evidence.unwrap_or_default(),
            learning: self.learning,
            network_evidence: self.network_evidence,
            extended_signals: self.extended_signals,
            automation_verdict: self.automation_verdict,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "7c1e9a24f0b35d86e2a4c7f190b3d5e8";

    fn base() -> JanitorConfigBuilder {
        JanitorConfig::builder().secret(SECRET)
    }

    #[test]
    fn network_evidence_and_extended_signals_are_off_by_default_and_need_the_precise_policy() {
        let read = |c: &JanitorConfig| (c.network_evidence(), c.extended_signals());
        assert_eq!(read(&base().build().unwrap()), (false, false));
        type Turn = fn(JanitorConfigBuilder) -> JanitorConfigBuilder;
        let options: [(&str, Turn, (bool, bool)); 2] = [
            (
                "network_evidence",
                |b| b.network_evidence(true),
                (true, false),
            ),
            (
                "extended_signals",
                |b| b.extended_signals(true),
                (false, true),
            ),
        ];
        for (field, turn_on, on) in options {
            let refused = turn_on(base()).build().unwrap_err().to_string();
            assert!(
                refused.starts_with(&format!("{field}: only the precise")),
                "{refused}"
            );
            let precise = turn_on(base().matching_policy(MatchingPolicy::Precise));
            assert_eq!(read(&precise.build().unwrap()), on, "{field}");
        }
    }

    #[test]
    fn defaults() {
        let c = base().build().unwrap();
        assert_eq!(c.endpoint(), &EndpointConfig::default());
        assert_eq!(c.admission(), &AdmissionConfig::default());
        assert_eq!(c.cookie(), &CookieConfig::default());
        assert_eq!(c.cookie_max_age_secs(), 90 * 86_400);
        assert!(c.quotas().is_none());
        // Long retention: the cookie stops at 400 days; a set lifetime wins.
        assert_eq!(
            base()
                .retention(1000, 10)
                .build()
                .unwrap()
                .cookie_max_age_days,
            400
        );
        let set = CookieConfig::builder().max_age_days(7).build().unwrap();
        assert_eq!(
            base().cookie(set).build().unwrap().cookie_max_age_secs(),
            7 * 86_400
        );
    }

    #[test]
    fn the_parts_reach_the_handle() {
        let admission = AdmissionConfig::builder()
            .max_in_flight_requests(3)
            .max_drain_bytes(10)
            .drain_timeout_ms(20)
            .build()
            .unwrap();
        let endpoint = EndpointConfig::builder().path("/v").build().unwrap();
        let c = base()
            .admission(admission)
            .endpoint(endpoint)
            .build()
            .unwrap();
        assert_eq!(c.admission().max_drain_bytes(), 10);
        assert_eq!(c.admission().max_in_flight_requests(), 3);
        assert_eq!(c.endpoint().path(), "/v");
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
        for placeholder in [" ".repeat(32), "x".repeat(40), "0123456789abcdef".repeat(2)] {
            assert!(matches!(
                JanitorConfig::builder().secret(&placeholder).build(),
                Err(JanitorConfigError::Label(LabelError::WeakSecret(_)))
            ));
        }
        assert!(matches!(
            base().namespace("  ").build(),
            Err(JanitorConfigError::Label(_))
        ));
        let insecure = CookieConfig::builder().secure(false).build().unwrap();
        assert!(matches!(
            base().cookie(insecure).build(),
            Err(JanitorConfigError::Invalid {
                field: "cookie_secure",
                ..
            })
        ));
        assert!(base()
            .cookie(insecure)
            .environment(Environment::Development)
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
    fn quotas_with_every_counter_off_are_refused_in_code_words() {
        let off = QuotaConfig::builder()
            .without_global()
            .without_account()
            .without_session()
            .build()
            .unwrap();
        let err = JanitorConfig::builder()
            .secret(SECRET)
            .quotas(off)
            .build()
            .unwrap_err()
            .to_string();
        assert!(err.contains("every quota counter is off"), "{err}");
        assert!(!err.contains("JANITOR_"), "{err}");
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let builder = base();
        assert!(!format!("{builder:?}").contains(SECRET));
        assert!(!format!("{:?}", builder.build().unwrap()).contains(SECRET));
    }
}
