//! [`DatabaseConfig`] as data: from the environment (`DATABASE_URL`, `JANITOR_SCHEMA`, `JANITOR_DATABASE_*`)
//! or from any format serde reads, built through the same checks as the builder.

use std::fmt;

use janitor_core::config::EnvSource;
use serde::Deserialize;

use super::{DatabaseConfig, PoolMode};
use crate::error::SetupError;

/// Every environment variable [`DatabaseSettings::from_env`] reads, for an application that checks its
/// `JANITOR_*` variables for misspellings (janitor-axum warns about the ones no reader knows).
pub const ENV_VARIABLES: &[&str] = &[
    "DATABASE_URL",
    "JANITOR_SCHEMA",
    "JANITOR_DATABASE_POOL_MODE",
    "JANITOR_DATABASE_MAX_CONNECTIONS",
    "JANITOR_DATABASE_STATEMENT_TIMEOUT_MS",
    "JANITOR_DATABASE_WAIT_TIMEOUT_MS",
    "JANITOR_DATABASE_CONNECT_TIMEOUT_MS",
];

/// The database options as data. Each field is the builder method of the same name; unknown keys are refused.
/// `Debug` never shows the URL, which may hold a password.
#[derive(Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    /// The connection string (libpq's URL or `key=value` form); required.
    pub url: Option<String>,
    /// The schema (`search_path`).
    pub schema: Option<String>,
    /// `session` or `transaction`.
    pub pool_mode: Option<PoolMode>,
    /// Pool size, 1–1,000.
    pub max_connections: Option<usize>,
    /// 1–600,000 ms.
    pub statement_timeout_ms: Option<u64>,
    /// 1–60,000 ms.
    pub wait_timeout_ms: Option<u64>,
    /// 1–60,000 ms.
    pub connect_timeout_ms: Option<u64>,
}

impl fmt::Debug for DatabaseSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DatabaseSettings")
            .field("url", &self.url.as_ref().map(|_| "<redacted>"))
            .field("schema", &self.schema)
            .field("pool_mode", &self.pool_mode)
            .field("max_connections", &self.max_connections)
            .field("statement_timeout_ms", &self.statement_timeout_ms)
            .field("wait_timeout_ms", &self.wait_timeout_ms)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .finish()
    }
}

impl DatabaseSettings {
    /// The settings of `DATABASE_URL`, `JANITOR_SCHEMA`, `JANITOR_DATABASE_POOL_MODE` (`session` or
    /// `transaction`), `JANITOR_DATABASE_MAX_CONNECTIONS`, `JANITOR_DATABASE_STATEMENT_TIMEOUT_MS`,
    /// `JANITOR_DATABASE_WAIT_TIMEOUT_MS` and `JANITOR_DATABASE_CONNECT_TIMEOUT_MS` in `env`.
    pub fn from_env(env: &EnvSource) -> Result<DatabaseSettings, SetupError> {
        let pool_mode = env
            .choice("JANITOR_DATABASE_POOL_MODE", "session or transaction")?
            .map(|mode| {
                if mode == "transaction" {
                    PoolMode::Transaction
                } else {
                    PoolMode::Session
                }
            });
        Ok(DatabaseSettings {
            url: env.text("DATABASE_URL"),
            schema: env.text("JANITOR_SCHEMA"),
            pool_mode,
            max_connections: env.number("JANITOR_DATABASE_MAX_CONNECTIONS")?,
            statement_timeout_ms: env.number("JANITOR_DATABASE_STATEMENT_TIMEOUT_MS")?,
            wait_timeout_ms: env.number("JANITOR_DATABASE_WAIT_TIMEOUT_MS")?,
            connect_timeout_ms: env.number("JANITOR_DATABASE_CONNECT_TIMEOUT_MS")?,
        })
    }

    /// The configuration, through the builder: every value is checked as if set by hand.
    pub fn build(self) -> Result<DatabaseConfig, SetupError> {
        let url = self
            .url
            .ok_or_else(|| SetupError::InvalidUrl("DATABASE_URL (url) is not set".into()))?;
        let mut builder = DatabaseConfig::builder(&url);
        if let Some(schema) = &self.schema {
            builder = builder.schema(schema);
        }
        if let Some(mode) = self.pool_mode {
            builder = builder.pool_mode(mode);
        }
        if let Some(n) = self.max_connections {
            builder = builder.max_connections(n);
        }
        if let Some(ms) = self.statement_timeout_ms {
            builder = builder.statement_timeout_ms(ms);
        }
        if let Some(ms) = self.wait_timeout_ms {
            builder = builder.wait_timeout_ms(ms);
        }
        if let Some(ms) = self.connect_timeout_ms {
            builder = builder.connect_timeout_ms(ms);
        }
        builder.build()
    }
}

impl DatabaseConfig {
    /// The configuration of the process's variables (see [`DatabaseSettings::from_env`]).
    pub fn from_env() -> Result<DatabaseConfig, SetupError> {
        DatabaseConfig::from_env_source(&EnvSource::process())
    }

    /// The same from `env`.
    pub fn from_env_source(env: &EnvSource) -> Result<DatabaseConfig, SetupError> {
        DatabaseSettings::from_env(env)?.build()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::SchemaName;

    const URL: &str = "postgres://janitor:secret-password@127.0.0.1:5432/janitor";

    #[test]
    fn the_environment_reaches_every_option() {
        let env = EnvSource::from_pairs([
            ("DATABASE_URL", URL),
            ("JANITOR_SCHEMA", "tenant"),
            ("JANITOR_DATABASE_POOL_MODE", "transaction"),
            ("JANITOR_DATABASE_MAX_CONNECTIONS", "4"),
            ("JANITOR_DATABASE_STATEMENT_TIMEOUT_MS", "900"),
        ]);
        let config = DatabaseConfig::from_env_source(&env).unwrap();
        assert_eq!(config.schema().map(SchemaName::as_str), Some("tenant"));
        assert_eq!(config.pool_mode(), PoolMode::Transaction);
        assert_eq!(config.max_connections(), 4);
        assert_eq!(config.statement_timeout(), Duration::from_millis(900));
        let missing = DatabaseConfig::from_env_source(&EnvSource::from_pairs([])).unwrap_err();
        assert!(missing
            .to_string()
            .contains("DATABASE_URL (url) is not set"));
        let bad = EnvSource::from_pairs([
            ("DATABASE_URL", URL),
            ("JANITOR_DATABASE_POOL_MODE", "statement"),
        ]);
        let err = DatabaseConfig::from_env_source(&bad).unwrap_err();
        assert!(err.to_string().contains("session or transaction"), "{err}");
        let over = EnvSource::from_pairs([
            ("DATABASE_URL", URL),
            ("JANITOR_DATABASE_MAX_CONNECTIONS", "1001"),
        ]);
        assert!(matches!(
            DatabaseConfig::from_env_source(&over),
            Err(SetupError::OutOfRange(_))
        ));
    }

    /// libpq's failover lists, in both forms, from the environment and from a settings file: every host with
    /// its port, and the session check that picks the primary.
    #[test]
    fn failover_lists_reach_the_driver_from_the_environment_and_a_settings_file() {
        use tokio_postgres::config::{Host, TargetSessionAttrs};
        for url in [
            "postgres://app@db-a:5432,db-b:5433/app?target_session_attrs=read-write",
            "host=db-a,db-b port=5432,5433 user=app dbname=app target_session_attrs=read-write",
        ] {
            let env = EnvSource::from_pairs([("DATABASE_URL", url)]);
            let file: DatabaseSettings =
                serde_json::from_value(serde_json::json!({ "url": url })).unwrap();
            for config in [
                DatabaseConfig::from_env_source(&env).unwrap(),
                file.build().unwrap(),
            ] {
                assert_eq!(
                    config.postgres.get_hosts(),
                    [Host::Tcp("db-a".into()), Host::Tcp("db-b".into())],
                    "{url}"
                );
                assert_eq!(config.postgres.get_ports(), [5432, 5433], "{url}");
                assert_eq!(
                    config.postgres.get_target_session_attrs(),
                    TargetSessionAttrs::ReadWrite,
                    "{url}"
                );
            }
        }
    }

    #[test]
    fn env_variables_lists_every_name_from_env_reads() {
        let env = EnvSource::from_pairs([("DATABASE_URL", URL)]);
        DatabaseSettings::from_env(&env).unwrap();
        let mut listed: Vec<&str> = ENV_VARIABLES.to_vec();
        listed.sort_unstable();
        assert_eq!(env.names_read(), listed);
    }

    #[test]
    fn a_file_reads_through_serde_and_hides_the_url() {
        let settings: DatabaseSettings = serde_json::from_str(&format!(
            r#"{{"url": "{URL}", "pool_mode": "transaction", "wait_timeout_ms": 250}}"#
        ))
        .unwrap();
        assert!(!format!("{settings:?}").contains("secret-password"));
        let config = settings.build().unwrap();
        assert_eq!(config.pool_mode(), PoolMode::Transaction);
        let unknown = serde_json::from_str::<DatabaseSettings>(r#"{"uri": "x"}"#).unwrap_err();
        assert!(unknown.to_string().contains("unknown field"), "{unknown}");
        let range = serde_json::from_str::<DatabaseSettings>(&format!(
            r#"{{"url": "{URL}", "statement_timeout_ms": 0}}"#
        ))
        .unwrap();
        assert!(matches!(range.build(), Err(SetupError::OutOfRange(_))));
    }
}
