//! [`JanitorSettings`] from `JANITOR_*` environment variables (the table of names is in `settings.rs`), and
//! the list of the names read, which the check for misspelled variables ([`super::unknown_env`]) knows.

use janitor_core::config::{EnvError, EnvSource};

use janitor_core::protection::quota::{self, QuotaAlgorithm};
use janitor_core::protection::signin;
use janitor_core::Limit;

use super::settings::{
    AdmissionSettings, CookieSettings, EndpointSettings, EvidenceSettings, JanitorSettings,
    OriginSettings, QuotaSettings, SignInSettings,
};
use super::unknown_env::warn_unknown_env;
use super::{Environment, JanitorConfig, JanitorConfigError};

impl JanitorSettings {
    /// Every variable [`from_env`](Self::from_env) reads.
    pub const ENV_VARIABLES: &'static [&'static str] = &[
        "JANITOR_SECRET",
        "JANITOR_NAMESPACE",
        "JANITOR_ENVIRONMENT",
        "JANITOR_RETENTION_DAYS",
        "JANITOR_MAX_OBSERVATIONS_PER_VISITOR",
        "JANITOR_RESTORE_THRESHOLD",
        "JANITOR_MATCHING_POLICY",
        "JANITOR_NETWORK_EVIDENCE",
        "JANITOR_EXTENDED_SIGNALS",
        "JANITOR_AUTOMATION_VERDICT",
        "JANITOR_COOKIE_MAX_AGE_DAYS",
        "JANITOR_COOKIE_SECURE",
        "JANITOR_ENDPOINT_PATH",
        "JANITOR_SCRIPT_PATH",
        "JANITOR_MAX_BODY_BYTES",
        "JANITOR_REQUEST_TIMEOUT_MS",
        "JANITOR_EXPOSE_CLIENT_SCORES",
        "JANITOR_ALLOWED_ORIGINS",
        "JANITOR_TRUSTED_PROXIES",
        "JANITOR_MAX_IN_FLIGHT",
        "JANITOR_MAX_DRAIN_BYTES",
        "JANITOR_DRAIN_TIMEOUT_MS",
        "JANITOR_BODY_GRACE_MS",
        "JANITOR_MAX_WAITING_REQUESTS",
        "JANITOR_SLOT_WAIT_MS",
        "JANITOR_QUOTA_GLOBAL",
        "JANITOR_QUOTA_ACCOUNT",
        "JANITOR_QUOTA_SESSION",
        "JANITOR_QUOTA_SHARDS",
        "JANITOR_QUOTA_WINDOW_MS",
        "JANITOR_QUOTA_NETWORK",
        "JANITOR_QUOTA_NETWORK_ALGORITHM",
        "JANITOR_QUOTA_NETWORK_IPV4_PREFIX",
        "JANITOR_QUOTA_NETWORK_IPV6_PREFIX",
        "JANITOR_SIGNIN_LOCK_FAILURES",
        "JANITOR_SIGNIN_LOCK_WINDOW_MS",
        "JANITOR_SIGNIN_NETWORK_FAILURES",
        "JANITOR_SIGNIN_BROWSER_FAILURES",
        "JANITOR_SIGNIN_SITE_FAILURES",
        "JANITOR_SIGNIN_FAILURE_WINDOW_MS",
        "JANITOR_SIGNIN_KNOWN_BROWSER_DAYS",
        "JANITOR_SIGNIN_DRY_RUN",
        "JANITOR_SIGNIN_AUTOMATED",
        "JANITOR_SIGNIN_SUSPECTED",
        "JANITOR_RATE_LIMIT_HEADERS",
        "JANITOR_EVENT_RETENTION_DAYS",
        "JANITOR_LINK_RETENTION_DAYS",
        "JANITOR_MAX_EVENTS_PER_QUERY",
    ];

    /// The settings the `JANITOR_*` variables of `env` give (see the table in [`JanitorSettings`]'s module).
    /// A `JANITOR_*` variable that no part of the library reads is logged as a warning, once per variable, with
    /// the known name it probably means; an application with `JANITOR_*` variables of its own declares them
    /// with [`from_env_with_own`](Self::from_env_with_own).
    pub fn from_env(env: &EnvSource) -> Result<JanitorSettings, JanitorConfigError> {
        JanitorSettings::from_env_with_own(env, &[])
    }

    /// [`from_env`](Self::from_env), with `own`: the application's own `JANITOR_*` variables (such as
    /// `JANITOR_ADDR`), which are then not reported as unknown.
    pub fn from_env_with_own(
        env: &EnvSource,
        own: &[&str],
    ) -> Result<JanitorSettings, JanitorConfigError> {
        warn_unknown_env(env, own);
        JanitorSettings::read_env(env)
    }

    /// The settings of `env`'s variables, without the check for unknown ones.
    fn read_env(env: &EnvSource) -> Result<JanitorSettings, JanitorConfigError> {
        let environment = env
            .choice("JANITOR_ENVIRONMENT", "production or development")?
            .map(|e| {
                if e == "development" {
                    Environment::Development
                } else {
                    Environment::Production
                }
            });
        Ok(JanitorSettings {
            secret: env.text("JANITOR_SECRET"),
            namespace: env.text("JANITOR_NAMESPACE"),
            environment,
            retention_days: env.number("JANITOR_RETENTION_DAYS")?,
            max_observations_per_visitor: env.number("JANITOR_MAX_OBSERVATIONS_PER_VISITOR")?,
            restore_threshold: env.number("JANITOR_RESTORE_THRESHOLD")?,
            matching_policy: env
                .choice("JANITOR_MATCHING_POLICY", "reference or precise")?
                .map(|name| name.parse().expect("a listed choice")),
            network_evidence: env.flag("JANITOR_NETWORK_EVIDENCE")?,
            extended_signals: env.flag("JANITOR_EXTENDED_SIGNALS")?,
            automation_verdict: env.flag("JANITOR_AUTOMATION_VERDICT")?,
            cookie: CookieSettings {
                max_age_days: env.number("JANITOR_COOKIE_MAX_AGE_DAYS")?,
                secure: env.flag("JANITOR_COOKIE_SECURE")?,
            },
            endpoint: EndpointSettings {
                path: env.text("JANITOR_ENDPOINT_PATH"),
                script_path: env.text("JANITOR_SCRIPT_PATH"),
                max_body_bytes: env.number("JANITOR_MAX_BODY_BYTES")?,
                request_timeout_ms: env.number("JANITOR_REQUEST_TIMEOUT_MS")?,
                expose_client_scores: env.flag("JANITOR_EXPOSE_CLIENT_SCORES")?,
            },
            origin: OriginSettings {
                allowed_origins: env.list("JANITOR_ALLOWED_ORIGINS"),
                trusted_proxies: env.list("JANITOR_TRUSTED_PROXIES"),
            },
            admission: AdmissionSettings {
                max_in_flight_requests: env.number("JANITOR_MAX_IN_FLIGHT")?,
                max_drain_bytes: env.number("JANITOR_MAX_DRAIN_BYTES")?,
                drain_timeout_ms: env.number("JANITOR_DRAIN_TIMEOUT_MS")?,
                body_grace_ms: env.number("JANITOR_BODY_GRACE_MS")?,
                max_waiting_requests: env.number("JANITOR_MAX_WAITING_REQUESTS")?,
                slot_wait_ms: env.number("JANITOR_SLOT_WAIT_MS")?,
            },
            quotas: quotas_from_env(env)?,
            signin: signin_from_env(env)?,
            rate_limit_headers: env.flag("JANITOR_RATE_LIMIT_HEADERS")?,
            evidence: EvidenceSettings {
                event_retention_days: env.number("JANITOR_EVENT_RETENTION_DAYS")?,
                link_retention_days: env.number("JANITOR_LINK_RETENTION_DAYS")?,
                max_events_per_query: env.number("JANITOR_MAX_EVENTS_PER_QUERY")?,
            },
        })
    }
}

/// The quota settings of `JANITOR_QUOTA_*`: `None` when none is set, so quotas stay off.
fn quotas_from_env(env: &EnvSource) -> Result<Option<QuotaSettings>, EnvError> {
    if !env.any_with_prefix("JANITOR_QUOTA_") {
        return Ok(None);
    }
    Ok(Some(QuotaSettings {
        global: env.number("JANITOR_QUOTA_GLOBAL")?,
        account: env.number("JANITOR_QUOTA_ACCOUNT")?,
        session: env.number("JANITOR_QUOTA_SESSION")?,
        network: within(
            env,
            "JANITOR_QUOTA_NETWORK",
            quota::NETWORK_LIMIT,
            "a number from 1 to 1000000",
        )?,
        network_algorithm: env
            .choice("JANITOR_QUOTA_NETWORK_ALGORITHM", "gcra or fixed_window")?
            .map(|name| QuotaAlgorithm::parse(&name).expect("a listed choice")),
        network_ipv4_prefix: within(
            env,
            "JANITOR_QUOTA_NETWORK_IPV4_PREFIX",
            Limit::new("network_ipv4_prefix", 24, 8, 32),
            "a prefix length from 8 to 32",
        )?,
        network_ipv6_prefix: within(
            env,
            "JANITOR_QUOTA_NETWORK_IPV6_PREFIX",
            Limit::new("network_ipv6_prefix", 48, 16, 128),
            "a prefix length from 16 to 128",
        )?,
        shards: env.number("JANITOR_QUOTA_SHARDS")?,
        window_ms: env.number("JANITOR_QUOTA_WINDOW_MS")?,
    }))
}

/// The sign-in settings of `JANITOR_SIGNIN_*`; each out-of-range value is refused naming its variable.
fn signin_from_env(env: &EnvSource) -> Result<SignInSettings, EnvError> {
    Ok(SignInSettings {
        lock_failures: within(
            env,
            "JANITOR_SIGNIN_LOCK_FAILURES",
            signin::LOCK_FAILURES,
            "a number from 1 to 100",
        )?,
        lock_window_ms: within(
            env,
            "JANITOR_SIGNIN_LOCK_WINDOW_MS",
            signin::LOCK_WINDOW_MS,
            "milliseconds from 60000 to 86400000",
        )?,
        network_failures: within(
            env,
            "JANITOR_SIGNIN_NETWORK_FAILURES",
            signin::NETWORK_FAILURES,
            "a number from 1 to 1000000",
        )?,
        browser_failures: within(
            env,
            "JANITOR_SIGNIN_BROWSER_FAILURES",
            signin::BROWSER_FAILURES,
            "a number from 1 to 1000000",
        )?,
        site_failures: within(
            env,
            "JANITOR_SIGNIN_SITE_FAILURES",
            signin::SITE_FAILURES,
            "a number from 1 to 100000000",
        )?,
        failure_window_ms: within(
            env,
            "JANITOR_SIGNIN_FAILURE_WINDOW_MS",
            signin::FAILURE_WINDOW_MS,
            "milliseconds from 60000 to 2592000000",
        )?,
        known_browser_days: within(
            env,
            "JANITOR_SIGNIN_KNOWN_BROWSER_DAYS",
            signin::KNOWN_BROWSER_DAYS,
            "a number from 1 to 400",
        )?,
        dry_run: env.flag("JANITOR_SIGNIN_DRY_RUN")?,
        automated: action(env, "JANITOR_SIGNIN_AUTOMATED")?,
        suspected: action(env, "JANITOR_SIGNIN_SUSPECTED")?,
    })
}

/// What a sign-in does for an automation verdict, when set.
fn action(env: &EnvSource, name: &str) -> Result<Option<signin::Verdict>, EnvError> {
    Ok(env
        .choice(name, "allow or challenge or deny")?
        .map(|name| name.parse().expect("a listed choice")))
}

/// A number within `limit`'s range, when set: anything else is refused naming the variable.
fn within<T>(
    env: &EnvSource,
    name: &str,
    limit: Limit<T>,
    expected: &'static str,
) -> Result<Option<T>, EnvError>
where
    T: std::str::FromStr + PartialOrd + Copy + std::fmt::Display,
{
    let refused = |value: String| EnvError {
        variable: name.to_owned(),
        expected,
        value,
    };
    match env.text(name) {
        None => Ok(None),
        Some(text) => match text.trim().parse::<T>() {
            Ok(value) if limit.range().contains(&value) => Ok(Some(value)),
            _ => Err(refused(text)),
        },
    }
}

impl JanitorConfig {
    /// The configuration of the process's `JANITOR_*` variables (see [`JanitorSettings::from_env`], which also
    /// warns about the unknown ones).
    pub fn from_env() -> Result<JanitorConfig, JanitorConfigError> {
        JanitorSettings::from_env(&EnvSource::process())?.build()
    }
}

impl From<EnvError> for JanitorConfigError {
    fn from(error: EnvError) -> Self {
        JanitorConfigError::Environment(error)
    }
}

#[cfg(test)]
mod tests {
    use janitor_core::MatchingPolicy;

    use super::*;

    const SECRET: &str = "7c1e9a24f0b35d86e2a4c7f190b3d5e8";

    #[test]
    fn env_variables_lists_every_name_from_env_reads() {
        // Each optional part read: a quota variable turns the quota names on.
        let env = EnvSource::from_pairs([("JANITOR_QUOTA_GLOBAL", "5")]);
        JanitorSettings::read_env(&env).unwrap();
        let mut listed = JanitorSettings::ENV_VARIABLES.to_vec();
        listed.sort_unstable();
        assert_eq!(env.names_read(), listed);
    }

    #[test]
    fn variables_reach_every_part() {
        let env = EnvSource::from_pairs([
            ("JANITOR_SECRET", SECRET),
            ("JANITOR_NAMESPACE", "shop"),
            ("JANITOR_ENVIRONMENT", "development"),
            ("JANITOR_COOKIE_SECURE", "false"),
            ("JANITOR_RETENTION_DAYS", "30"),
            ("JANITOR_ENDPOINT_PATH", "/visitor"),
            (
                "JANITOR_ALLOWED_ORIGINS",
                "https://example.com, https://www.example.com",
            ),
            ("JANITOR_TRUSTED_PROXIES", "10.0.0.0/8"),
            ("JANITOR_MAX_IN_FLIGHT", "8"),
            ("JANITOR_BODY_GRACE_MS", "100"),
            ("JANITOR_MAX_WAITING_REQUESTS", "16"),
            ("JANITOR_SLOT_WAIT_MS", "20"),
            ("JANITOR_QUOTA_ACCOUNT", "5"),
            ("JANITOR_EVENT_RETENTION_DAYS", "3"),
            ("JANITOR_MATCHING_POLICY", "Precise"),
            ("JANITOR_NETWORK_EVIDENCE", "true"),
            ("JANITOR_EXTENDED_SIGNALS", "true"),
            ("JANITOR_AUTOMATION_VERDICT", "true"),
        ]);
        let config = JanitorSettings::from_env(&env).unwrap().build().unwrap();
        assert!(config.network_evidence() && config.extended_signals());
        assert!(config.automation_verdict());
        assert_eq!(config.label_key().namespace(), "shop");
        assert_eq!(config.environment(), Environment::Development);
        assert!(!config.cookie().secure());
        assert_eq!(config.retention().observation_days(), 30);
        assert_eq!(config.endpoint().path(), "/visitor");
        assert_eq!(config.origin().allowed_origins().len(), 2);
        assert_eq!(config.origin().trusted_proxies().len(), 1);
        assert_eq!(config.admission().max_in_flight_requests(), 8);
        assert_eq!(
            config.admission().body_grace(),
            std::time::Duration::from_millis(100)
        );
        assert_eq!(config.admission().max_waiting_requests(), 16);
        assert_eq!(
            config.admission().slot_wait(),
            std::time::Duration::from_millis(20)
        );
        let quotas = config.quotas().expect("quotas on");
        assert_eq!(
            (quotas.global(), quotas.account(), quotas.session()),
            (None, Some(5), None),
            "only the account counter was set"
        );
        assert_eq!(config.cookie_max_age_secs(), 30 * 86_400);
        assert_eq!(config.engine.policy(), MatchingPolicy::Precise);
        let defaults =
            JanitorSettings::from_env(&EnvSource::from_pairs([("JANITOR_SECRET", SECRET)]));
        let defaults = defaults.unwrap().build().unwrap();
        assert_eq!(defaults.engine.policy(), MatchingPolicy::Reference);
        assert!(
            !defaults.automation_verdict(),
            "the verdict is off by default"
        );
    }

    #[test]
    fn refusals_name_the_variable_or_the_option() {
        let with = |name, value| {
            JanitorSettings::from_env(&EnvSource::from_pairs([
                ("JANITOR_SECRET", SECRET),
                (name, value),
            ]))
            .and_then(JanitorSettings::build)
            .unwrap_err()
            .to_string()
        };
        assert!(with("JANITOR_MAX_IN_FLIGHT", "many")
            .contains("JANITOR_MAX_IN_FLIGHT must be a number"));
        assert!(with("JANITOR_MAX_IN_FLIGHT", "1025").contains("from 1 to 1024"));
        assert!(with("JANITOR_BODY_GRACE_MS", "30001")
            .contains("body_grace_ms must be from 0 to 30000"));
        assert!(
            with("JANITOR_SLOT_WAIT_MS", "1001").contains("slot_wait_ms must be from 0 to 1000")
        );
        // The wait is on by default: turning one of its bounds off alone is refused, naming it.
        assert!(with("JANITOR_MAX_WAITING_REQUESTS", "0")
            .contains("max_waiting_requests must be above 0 when slot_wait_ms is"));
        assert!(with("JANITOR_SLOT_WAIT_MS", "0")
            .contains("slot_wait_ms must be above 0 when max_waiting_requests is"));
        assert!(with("JANITOR_MAX_WAITING_REQUESTS", "many")
            .contains("JANITOR_MAX_WAITING_REQUESTS must be a number"));
        assert!(with("JANITOR_ENVIRONMENT", "staging").contains("production or development"));
        assert!(with("JANITOR_MATCHING_POLICY", "strict")
            .contains("JANITOR_MATCHING_POLICY must be reference or precise"));
        assert!(with("JANITOR_NETWORK_EVIDENCE", "maybe")
            .contains("JANITOR_NETWORK_EVIDENCE must be true or false"));
        assert!(with("JANITOR_NETWORK_EVIDENCE", "true").contains("network_evidence"));
        assert!(with("JANITOR_EXTENDED_SIGNALS", "maybe")
            .contains("JANITOR_EXTENDED_SIGNALS must be true or false"));
        assert!(with("JANITOR_EXTENDED_SIGNALS", "true").contains("extended_signals"));
        assert!(with("JANITOR_AUTOMATION_VERDICT", "maybe")
            .contains("JANITOR_AUTOMATION_VERDICT must be true or false"));
        assert!(
            with("JANITOR_COOKIE_SECURE", "false").contains("production cookies must be Secure")
        );
        assert!(with("JANITOR_ALLOWED_ORIGINS", "example.com").contains("allowed_origins"));
        let origins = with(
            "JANITOR_ALLOWED_ORIGINS",
            "https://example.com, ,https://example.com/shop",
        );
        assert!(
            origins.contains(
                "allowed_origins entry 2 of 2 (\"https://example.com/shop\"): it has a path"
            ),
            "{origins}"
        );
        let proxies = with("JANITOR_TRUSTED_PROXIES", "10.0.0.0/8,proxy.internal");
        assert!(
            proxies.contains("trusted_proxies entry 2 of 2 (\"proxy.internal\")"),
            "{proxies}"
        );
        let missing = JanitorSettings::from_env(&EnvSource::from_pairs([]))
            .unwrap()
            .build()
            .unwrap_err();
        assert_eq!(missing, JanitorConfigError::MissingSecret);
    }

    #[test]
    fn only_the_quota_counters_set_are_on() {
        let quotas = |pairs: &[(&str, &str)]| {
            let env = EnvSource::from_pairs(
                [("JANITOR_SECRET", SECRET)]
                    .into_iter()
                    .chain(pairs.iter().copied()),
            );
            JanitorSettings::from_env(&env).and_then(JanitorSettings::build)
        };
        let counters = |pairs: &[(&str, &str)]| {
            let config = quotas(pairs).unwrap();
            let q = *config.quotas().expect("quotas on");
            (
                q.global(),
                q.account(),
                q.session(),
                q.effective_shards(),
                q.window_ms(),
            )
        };
        assert_eq!(
            counters(&[("JANITOR_QUOTA_ACCOUNT", "3")]),
            (None, Some(3), None, 0, 60_000)
        );
        assert_eq!(
            counters(&[
                ("JANITOR_QUOTA_SESSION", "4"),
                ("JANITOR_QUOTA_WINDOW_MS", "5000")
            ]),
            (None, None, Some(4), 0, 5_000)
        );
        assert_eq!(
            counters(&[
                ("JANITOR_QUOTA_GLOBAL", "21"),
                ("JANITOR_QUOTA_SHARDS", "4"),
                ("JANITOR_QUOTA_ACCOUNT", "3")
            ]),
            (Some(21), Some(3), None, 4, 60_000)
        );
        assert!(quotas(&[]).unwrap().quotas().is_none(), "no variable: off");
        for shape_only in [
            &[("JANITOR_QUOTA_SHARDS", "4")][..],
            &[("JANITOR_QUOTA_WINDOW_MS", "5000")],
            &[("JANITOR_QUOTA_ACOUNT", "3")],
        ] {
            let err = quotas(shape_only).unwrap_err();
            assert!(
                matches!(
                    err,
                    JanitorConfigError::Invalid {
                        field: "quotas",
                        ..
                    }
                ),
                "{err:?}"
            );
            assert!(err.to_string().contains("no quota counter set"), "{err}");
        }
        // A settings file: the same rule.
        let file = |quotas: serde_json::Value| {
            serde_json::from_value::<JanitorSettings>(
                serde_json::json!({"secret": SECRET, "quotas": quotas}),
            )
            .unwrap()
            .build()
        };
        let config = file(serde_json::json!({"account": 3})).unwrap();
        let q = config.quotas().expect("quotas on");
        assert_eq!(
            (q.global(), q.account(), q.session()),
            (None, Some(3), None)
        );
        let err = file(serde_json::json!({})).unwrap_err();
        assert!(err.to_string().contains("no quota counter set"), "{err}");
        let err = file(serde_json::json!({"shards": 2})).unwrap_err();
        assert!(err.to_string().contains("no quota counter set"), "{err}");
    }

    /// What a bounded variable's value reads as in the built configuration.
    type Shown = fn(&JanitorConfig) -> Option<i64>;

    /// The network-quota and sign-in variables that take a number, their ranges (as documented, not read from
    /// the limits, so that a limit that drifts from its documentation fails here), and where the built
    /// configuration shows the value.
    fn bounded() -> [(&'static str, i64, i64, Shown); 10] {
        fn quota_config(config: &JanitorConfig) -> &quota::QuotaConfig {
            config.quotas().expect("quotas on")
        }
        fn signin_config(config: &JanitorConfig) -> &signin::SignInConfig {
            config.signin()
        }
        [
            ("JANITOR_QUOTA_NETWORK", 1, 1_000_000, |c| {
                quota_config(c).network().map(i64::from)
            }),
            ("JANITOR_QUOTA_NETWORK_IPV4_PREFIX", 8, 32, |c| {
                Some(quota_config(c).network_prefix().ipv4().into())
            }),
            ("JANITOR_QUOTA_NETWORK_IPV6_PREFIX", 16, 128, |c| {
                Some(quota_config(c).network_prefix().ipv6().into())
            }),
            ("JANITOR_SIGNIN_LOCK_FAILURES", 1, 100, |c| {
                Some(signin_config(c).lock_failures().into())
            }),
            ("JANITOR_SIGNIN_LOCK_WINDOW_MS", 60_000, 86_400_000, |c| {
                Some(signin_config(c).lock_window_ms())
            }),
            ("JANITOR_SIGNIN_NETWORK_FAILURES", 1, 1_000_000, |c| {
                signin_config(c).network_failures().map(i64::from)
            }),
            ("JANITOR_SIGNIN_BROWSER_FAILURES", 1, 1_000_000, |c| {
                signin_config(c).browser_failures().map(i64::from)
            }),
            ("JANITOR_SIGNIN_SITE_FAILURES", 1, 100_000_000, |c| {
                signin_config(c).site_failures().map(i64::from)
            }),
            (
                "JANITOR_SIGNIN_FAILURE_WINDOW_MS",
                60_000,
                2_592_000_000,
                |c| Some(signin_config(c).failure_window_ms()),
            ),
            ("JANITOR_SIGNIN_KNOWN_BROWSER_DAYS", 1, 400, |c| {
                Some(signin_config(c).known_browser_days().into())
            }),
        ]
    }

    /// The configuration of a secret, the account quota (so that the variables that only shape the quotas have
    /// a counter to shape) and `name=value`.
    fn with(name: &str, value: &str) -> Result<JanitorConfig, JanitorConfigError> {
        let env = EnvSource::from_pairs([
            ("JANITOR_SECRET", SECRET),
            ("JANITOR_QUOTA_ACCOUNT", "5"),
            (name, value),
        ]);
        JanitorSettings::from_env(&env).and_then(JanitorSettings::build)
    }

    /// `name=value` is refused by the reading of the variables, with an error that names `name`.
    #[track_caller]
    fn refused_naming(name: &str, value: &str) {
        match with(name, value) {
            Err(JanitorConfigError::Environment(error)) => {
                assert_eq!(error.variable, name, "{name}={value}: {error}");
                assert!(error.to_string().starts_with(name), "{error}");
            }
            other => panic!("{name}={value} should be refused naming it: {other:?}"),
        }
    }

    #[test]
    fn each_bound_of_the_sign_in_and_network_variables_is_checked_and_reaches_the_config() {
        for (name, min, max, shown) in bounded() {
            for accepted in [min, max] {
                let config = with(name, &accepted.to_string())
                    .unwrap_or_else(|e| panic!("{name}={accepted}: {e}"));
                assert_eq!(shown(&config), Some(accepted), "{name}={accepted}");
            }
            for outside in [min - 1, max + 1] {
                refused_naming(name, &outside.to_string());
            }
            refused_naming(name, "many");
        }
        for algorithm in [QuotaAlgorithm::Gcra, QuotaAlgorithm::FixedWindow] {
            let config = with("JANITOR_QUOTA_NETWORK_ALGORITHM", algorithm.as_str()).unwrap();
            assert_eq!(config.quotas().unwrap().network_algorithm(), algorithm);
        }
        refused_naming("JANITOR_QUOTA_NETWORK_ALGORITHM", "leaky_bucket");
        let dry_run = with("JANITOR_SIGNIN_DRY_RUN", "true").unwrap();
        assert!(dry_run.signin().dry_run());
        refused_naming("JANITOR_SIGNIN_DRY_RUN", "maybe");
        let strict = with("JANITOR_SIGNIN_AUTOMATED", "Deny").unwrap();
        assert_eq!(strict.signin().automated(), signin::Verdict::Deny);
        let watchful = with("JANITOR_SIGNIN_SUSPECTED", "challenge").unwrap();
        assert_eq!(watchful.signin().suspected(), signin::Verdict::Challenge);
        refused_naming("JANITOR_SIGNIN_AUTOMATED", "block");
        refused_naming("JANITOR_SIGNIN_SUSPECTED", "sometimes");
        let headers = with("JANITOR_RATE_LIMIT_HEADERS", "true").unwrap();
        assert!(headers.rate_limit_headers());
        refused_naming("JANITOR_RATE_LIMIT_HEADERS", "maybe");
        // Unset (only the secret and the account quota), each is the default.
        let defaults = with("JANITOR_QUOTA_ACCOUNT", "5").unwrap();
        assert_eq!(*defaults.signin(), signin::SignInConfig::default());
        assert_eq!(defaults.quotas().unwrap().network(), None);
        assert!(!defaults.rate_limit_headers());
    }

    #[test]
    fn a_settings_file_reaches_the_same_sign_in_and_network_options() {
        let file = serde_json::json!({
            "secret": SECRET,
            "quotas": {"network": 3},
            "signin": {
                "lock_failures": 3,
                "lock_window_ms": 120_000,
                "network_failures": 7,
                "browser_failures": 4,
                "site_failures": 1_000,
                "failure_window_ms": 3_600_000,
                "known_browser_days": 30,
                "dry_run": true
            },
            "rate_limit_headers": true
        });
        let settings: JanitorSettings = serde_json::from_value(file).unwrap();
        let config = settings.build().unwrap();
        let quotas = config.quotas().expect("quotas on");
        assert_eq!(
            (quotas.network(), quotas.global(), quotas.account()),
            (Some(3), None, None),
            "only the network counter was named"
        );
        let s = config.signin();
        assert_eq!((s.lock_failures(), s.lock_window_ms()), (3, 120_000));
        assert_eq!(
            (
                s.network_failures(),
                s.browser_failures(),
                s.site_failures()
            ),
            (Some(7), Some(4), Some(1_000))
        );
        assert_eq!(
            (s.failure_window_ms(), s.known_browser_days()),
            (3_600_000, 30)
        );
        assert!(s.dry_run() && config.rate_limit_headers());
        // The variables of the same values give the same options.
        let env = EnvSource::from_pairs([
            ("JANITOR_SECRET", SECRET),
            ("JANITOR_QUOTA_NETWORK", "3"),
            ("JANITOR_SIGNIN_LOCK_FAILURES", "3"),
            ("JANITOR_SIGNIN_LOCK_WINDOW_MS", "120000"),
            ("JANITOR_SIGNIN_NETWORK_FAILURES", "7"),
            ("JANITOR_SIGNIN_BROWSER_FAILURES", "4"),
            ("JANITOR_SIGNIN_SITE_FAILURES", "1000"),
            ("JANITOR_SIGNIN_FAILURE_WINDOW_MS", "3600000"),
            ("JANITOR_SIGNIN_KNOWN_BROWSER_DAYS", "30"),
            ("JANITOR_SIGNIN_DRY_RUN", "true"),
            ("JANITOR_RATE_LIMIT_HEADERS", "true"),
        ]);
        let from_env = JanitorSettings::from_env(&env).unwrap().build().unwrap();
        assert_eq!(from_env.signin(), config.signin());
        assert_eq!(from_env.quotas(), config.quotas());
        assert!(from_env.rate_limit_headers());
    }

    #[test]
    fn a_settings_file_refuses_an_unknown_sign_in_key_and_a_value_out_of_range() {
        let unknown = serde_json::from_value::<JanitorSettings>(
            serde_json::json!({"signin": {"lock_failure": 3}}),
        );
        let err = unknown.unwrap_err().to_string();
        assert!(err.contains("unknown field `lock_failure`"), "{err}");
        let file = serde_json::json!({"secret": SECRET, "signin": {"lock_failures": 101}});
        let settings: JanitorSettings = serde_json::from_value(file).unwrap();
        let err = settings.build().unwrap_err().to_string();
        assert!(
            err.contains("lock_failures") && err.contains("from 1 to 100"),
            "{err}"
        );
    }
}
