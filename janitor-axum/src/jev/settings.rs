//! The provider and its inference budget as data: from the `JANITOR_JEV_*` variables or from any format serde
//! reads, built through the same checks as [`JevConfig::builder`] and [`BudgetConfig::builder`].

use std::fmt;
use std::path::PathBuf;

use janitor_core::config::{EnvError, EnvSource};
use janitor_core::protection::budget::BudgetConfig;
use serde::Deserialize;

use super::config::{JevConfig, JevConfigError};

/// A Jev provider as data. Each field is the builder method of the same name; unknown keys are refused.
/// `Debug` never shows the key.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JevSettings {
    /// The provider's URL (`https://`, or `http://` to a loopback host); required.
    pub endpoint: Option<String>,
    /// The bearer key; required.
    pub api_key: Option<String>,
    /// The model alias (default `jev-latest`).
    pub model: Option<String>,
    /// 1–5,000 ms, default 1,200.
    pub timeout_ms: Option<u32>,
    /// A PEM file of the CAs to trust instead of the system's store.
    pub root_certificates: Option<PathBuf>,
    /// The shared inference budget the calls go through.
    pub budget: BudgetSettings,
}

/// [`BudgetConfig`] as data; each field is the builder method of the same name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[allow(missing_docs)] // each field is the builder method of the same name
pub struct BudgetSettings {
    pub max_calls: Option<u32>,
    pub window_ms: Option<u32>,
    pub max_concurrent: Option<u32>,
    pub failure_threshold: Option<u32>,
    pub cooldown_ms: Option<u32>,
}

impl fmt::Debug for JevSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JevSettings")
            .field("endpoint", &self.endpoint)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("model", &self.model)
            .field("timeout_ms", &self.timeout_ms)
            .field("root_certificates", &self.root_certificates)
            .field("budget", &self.budget)
            .finish()
    }
}

impl JevSettings {
    /// Every variable [`from_env`](Self::from_env) reads.
    pub const ENV_VARIABLES: &'static [&'static str] = &[
        "JANITOR_JEV_ENDPOINT",
        "JANITOR_JEV_API_KEY",
        "JANITOR_JEV_MODEL",
        "JANITOR_JEV_TIMEOUT_MS",
        "JANITOR_JEV_ROOT_CERTIFICATES",
        "JANITOR_JEV_BUDGET_MAX_CALLS",
        "JANITOR_JEV_BUDGET_WINDOW_MS",
        "JANITOR_JEV_BUDGET_MAX_CONCURRENT",
        "JANITOR_JEV_BUDGET_FAILURE_THRESHOLD",
        "JANITOR_JEV_BUDGET_COOLDOWN_MS",
    ];

    /// The provider of `JANITOR_JEV_ENDPOINT`, with `JANITOR_JEV_API_KEY`, `JANITOR_JEV_MODEL`,
    /// `JANITOR_JEV_TIMEOUT_MS`, `JANITOR_JEV_ROOT_CERTIFICATES` and the budget's
    /// `JANITOR_JEV_BUDGET_MAX_CALLS`, `_WINDOW_MS`, `_MAX_CONCURRENT`, `_FAILURE_THRESHOLD` and
    /// `_COOLDOWN_MS`. `None` when no endpoint is set; another `JANITOR_JEV_*` variable without one is refused,
    /// since it would be silently unused.
    pub fn from_env(env: &EnvSource) -> Result<Option<JevSettings>, JevConfigError> {
        let Some(endpoint) = env.text("JANITOR_JEV_ENDPOINT") else {
            if env.any_with_prefix("JANITOR_JEV_") {
                return Err(JevConfigError::Environment(EnvError {
                    variable: "JANITOR_JEV_ENDPOINT".to_owned(),
                    expected: "set when another JANITOR_JEV_ variable is",
                    value: String::new(),
                }));
            }
            return Ok(None);
        };
        Ok(Some(JevSettings {
            endpoint: Some(endpoint),
            api_key: env.text("JANITOR_JEV_API_KEY"),
            model: env.text("JANITOR_JEV_MODEL"),
            timeout_ms: env.number("JANITOR_JEV_TIMEOUT_MS")?,
            root_certificates: env.text("JANITOR_JEV_ROOT_CERTIFICATES").map(PathBuf::from),
            budget: BudgetSettings {
                max_calls: env.number("JANITOR_JEV_BUDGET_MAX_CALLS")?,
                window_ms: env.number("JANITOR_JEV_BUDGET_WINDOW_MS")?,
                max_concurrent: env.number("JANITOR_JEV_BUDGET_MAX_CONCURRENT")?,
                failure_threshold: env.number("JANITOR_JEV_BUDGET_FAILURE_THRESHOLD")?,
                cooldown_ms: env.number("JANITOR_JEV_BUDGET_COOLDOWN_MS")?,
            },
        }))
    }

    /// The provider and its budget, through the builders: every value is checked as if set by hand.
    pub fn build(self) -> Result<(JevConfig, BudgetConfig), JevConfigError> {
        let mut builder = JevConfig::builder();
        if let Some(endpoint) = self.endpoint {
            builder = builder.endpoint(endpoint);
        }
        if let Some(key) = self.api_key {
            builder = builder.api_key(key);
        }
        if let Some(model) = self.model {
            builder = builder.model(model);
        }
        if let Some(timeout_ms) = self.timeout_ms {
            builder = builder.timeout_ms(timeout_ms);
        }
        if let Some(path) = self.root_certificates {
            builder = builder.root_certificates_file(path);
        }
        Ok((builder.build()?, self.budget.build()?))
    }
}

impl BudgetSettings {
    fn build(self) -> Result<BudgetConfig, janitor_core::ConfigError> {
        let mut builder = BudgetConfig::builder();
        if let Some(v) = self.max_calls {
            builder = builder.max_calls(v);
        }
        if let Some(v) = self.window_ms {
            builder = builder.window_ms(v);
        }
        if let Some(v) = self.max_concurrent {
            builder = builder.max_concurrent(v);
        }
        if let Some(v) = self.failure_threshold {
            builder = builder.failure_threshold(v);
        }
        if let Some(v) = self.cooldown_ms {
            builder = builder.cooldown_ms(v);
        }
        builder.build()
    }
}

impl JevConfig {
    /// The provider and budget the process's `JANITOR_JEV_*` variables name, or `None` without
    /// `JANITOR_JEV_ENDPOINT` (see [`JevSettings::from_env`]).
    pub fn from_env() -> Result<Option<(JevConfig, BudgetConfig)>, JevConfigError> {
        JevSettings::from_env(&EnvSource::process())?
            .map(JevSettings::build)
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(pairs: Vec<(&str, &str)>) -> Result<Option<(JevConfig, BudgetConfig)>, JevConfigError> {
        JevSettings::from_env(&EnvSource::from_pairs(pairs))?
            .map(JevSettings::build)
            .transpose()
    }

    #[test]
    fn the_environment_names_a_provider_or_none() {
        assert!(from(vec![("JANITOR_SECRET", "x")]).unwrap().is_none());
        let (config, budget) = from(vec![
            ("JANITOR_JEV_ENDPOINT", "http://127.0.0.1:9/v1/systemone"),
            ("JANITOR_JEV_API_KEY", "sk-env-123"),
            ("JANITOR_JEV_MODEL", "jev-small"),
            ("JANITOR_JEV_TIMEOUT_MS", "800"),
            ("JANITOR_JEV_BUDGET_MAX_CALLS", "10"),
        ])
        .unwrap()
        .unwrap();
        assert_eq!((config.model(), config.timeout_ms()), ("jev-small", 800));
        assert_eq!(config.authorization(), "Bearer sk-env-123");
        assert_eq!(budget.max_calls(), 10);
        let provider = [
            ("JANITOR_JEV_ENDPOINT", "http://127.0.0.1:9/v1"),
            ("JANITOR_JEV_API_KEY", "sk-env-123"),
        ];
        for (extra, error) in [
            (None, "JANITOR_JEV_ENDPOINT must be set"),
            (Some(("JANITOR_JEV_TIMEOUT_MS", "5001")), "timeout_ms"),
            (
                Some(("JANITOR_JEV_TIMEOUT_MS", "soon")),
                "JANITOR_JEV_TIMEOUT_MS must be a number",
            ),
            (
                Some(("JANITOR_JEV_BUDGET_MAX_CONCURRENT", "33")),
                "max_concurrent",
            ),
        ] {
            let pairs = match extra {
                None => vec![provider[1]],
                Some(extra) => vec![provider[0], provider[1], extra],
            };
            let err = from(pairs).unwrap_err();
            assert!(err.to_string().contains(error), "{err}");
            assert!(!format!("{err:?}").contains("sk-env-123"), "{err:?}");
        }
        let keyless = from(vec![provider[0]]).unwrap_err();
        assert_eq!(keyless, JevConfigError::MissingApiKey);
    }

    #[test]
    fn env_variables_lists_every_name_from_env_reads() {
        let env = EnvSource::from_pairs([("JANITOR_JEV_ENDPOINT", "http://127.0.0.1:9/v1")]);
        JevSettings::from_env(&env).unwrap();
        let mut listed = JevSettings::ENV_VARIABLES.to_vec();
        listed.sort_unstable();
        assert_eq!(env.names_read(), listed);
    }

    #[test]
    fn a_file_reads_through_serde_and_hides_the_key() {
        let settings: JevSettings = serde_json::from_str(
            r#"{"endpoint": "http://localhost:9/v1", "api_key": "sk-file-1", "budget": {"max_calls": 5}}"#,
        )
        .unwrap();
        assert!(!format!("{settings:?}").contains("sk-file-1"));
        let (_, budget) = settings.build().unwrap();
        assert_eq!(budget.max_calls(), 5);
        let unknown = serde_json::from_str::<JevSettings>(r#"{"key": "x"}"#).unwrap_err();
        assert!(unknown.to_string().contains("unknown field"), "{unknown}");
    }
}
