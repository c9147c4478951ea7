//! Connection options, checked once when the configuration is built.

use std::str::FromStr;
use std::time::Duration;

use janitor_core::config::Limit;

use crate::error::SetupError;

/// Longest a single statement may run before PostgreSQL cancels it (milliseconds; default 5 s).
pub const STATEMENT_TIMEOUT_MS: Limit<u64> = Limit::new("statement_timeout_ms", 5_000, 1, 600_000);
/// Longest a caller waits for a free pooled connection before the store reports itself unavailable
/// (milliseconds; default 1 s). Waiting is bounded so that an overloaded database turns into quick 503s
/// instead of a queue that grows without end.
pub const POOL_WAIT_TIMEOUT_MS: Limit<u64> = Limit::new("wait_timeout_ms", 1_000, 1, 60_000);
/// Longest opening a new connection may take (milliseconds; default 5 s).
pub const CONNECT_TIMEOUT_MS: Limit<u64> = Limit::new("connect_timeout_ms", 5_000, 1, 60_000);
/// Connections the pool may hold open (default 16).
pub const MAX_CONNECTIONS: Limit<usize> = Limit::new("max_connections", 16, 1, 1_000);

/// The `application_name` connections report unless the URL names one, so operators can find them in
/// `pg_stat_activity`.
pub const APPLICATION_NAME: &str = "janitor";

/// A PostgreSQL schema name the library may create and use: 1–63 characters of `a-z`, `0-9` and `_`,
/// not starting with a digit or `pg_`.
///
/// Only plain lower-case identifiers are allowed so the name never needs quoting and cannot carry SQL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SchemaName(String);

impl SchemaName {
    /// Checks `name`.
    pub fn new(name: &str) -> Result<Self, SetupError> {
        let invalid = |reason: &'static str| SetupError::InvalidSchema {
            name: name.chars().take(80).collect(),
            reason,
        };
        if name.is_empty() || name.len() > 63 {
            return Err(invalid("must be 1 to 63 characters long"));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(invalid("may hold only a-z, 0-9 and _"));
        }
        if name.as_bytes()[0].is_ascii_digit() {
            return Err(invalid("must not start with a digit"));
        }
        if name.starts_with("pg_") {
            return Err(invalid("must not start with pg_ (reserved by PostgreSQL)"));
        }
        Ok(SchemaName(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SchemaName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where and how to connect. Build it with [`DatabaseConfig::builder`].
///
/// `Debug` never shows the password.
#[derive(Debug, Clone)]
pub struct DatabaseConfig {
    pub(crate) postgres: tokio_postgres::Config,
    pub(crate) schema: Option<SchemaName>,
    pub(crate) statement_timeout: Duration,
    pub(crate) wait_timeout: Duration,
    pub(crate) connect_timeout: Duration,
    pub(crate) max_connections: usize,
}

impl DatabaseConfig {
    /// Starts from a connection URL (`postgres://user:password@host:port/database?...`) and the defaults.
    pub fn builder(url: &str) -> DatabaseConfigBuilder {
        DatabaseConfigBuilder {
            url: url.to_owned(),
            schema: None,
            statement_timeout_ms: STATEMENT_TIMEOUT_MS.default,
            wait_timeout_ms: POOL_WAIT_TIMEOUT_MS.default,
            connect_timeout_ms: CONNECT_TIMEOUT_MS.default,
            max_connections: MAX_CONNECTIONS.default,
        }
    }

    /// The schema every statement runs in, if one was named (otherwise the server's `search_path`).
    pub fn schema(&self) -> Option<&SchemaName> {
        self.schema.as_ref()
    }

    /// The statement timeout.
    pub fn statement_timeout(&self) -> Duration {
        self.statement_timeout
    }

    /// The pool wait timeout.
    pub fn wait_timeout(&self) -> Duration {
        self.wait_timeout
    }

    /// The most connections the pool opens.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }
}

/// Builds a [`DatabaseConfig`]; [`build`](Self::build) checks every value and names the range it broke.
#[derive(Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct DatabaseConfigBuilder {
    url: String,
    schema: Option<String>,
    statement_timeout_ms: u64,
    wait_timeout_ms: u64,
    connect_timeout_ms: u64,
    max_connections: usize,
}

impl std::fmt::Debug for DatabaseConfigBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may carry a password.
        f.debug_struct("DatabaseConfigBuilder")
            .field("schema", &self.schema)
            .field("statement_timeout_ms", &self.statement_timeout_ms)
            .field("wait_timeout_ms", &self.wait_timeout_ms)
            .field("connect_timeout_ms", &self.connect_timeout_ms)
            .field("max_connections", &self.max_connections)
            .finish_non_exhaustive()
    }
}

impl DatabaseConfigBuilder {
    /// Runs every statement in this schema (see [`SchemaName`] for the rules); [`migrate`](crate::migrate())
    /// creates it. Without one, the server's `search_path` decides.
    pub fn schema(mut self, name: &str) -> Self {
        self.schema = Some(name.to_owned());
        self
    }

    /// Statement timeout in milliseconds: 1–600,000, default 5,000.
    pub fn statement_timeout_ms(mut self, ms: u64) -> Self {
        self.statement_timeout_ms = ms;
        self
    }

    /// Pool wait timeout in milliseconds: 1–60,000, default 1,000.
    pub fn wait_timeout_ms(mut self, ms: u64) -> Self {
        self.wait_timeout_ms = ms;
        self
    }

    /// Connect timeout in milliseconds: 1–60,000, default 5,000.
    pub fn connect_timeout_ms(mut self, ms: u64) -> Self {
        self.connect_timeout_ms = ms;
        self
    }

    /// Pool size: 1–1,000, default 16.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.max_connections = n;
        self
    }

    /// Checks the values and parses the URL.
    pub fn build(self) -> Result<DatabaseConfig, SetupError> {
        let statement_timeout_ms = STATEMENT_TIMEOUT_MS.check(self.statement_timeout_ms)?;
        let wait_timeout_ms = POOL_WAIT_TIMEOUT_MS.check(self.wait_timeout_ms)?;
        let connect_timeout_ms = CONNECT_TIMEOUT_MS.check(self.connect_timeout_ms)?;
        let max_connections = MAX_CONNECTIONS.check(self.max_connections)?;
        let schema = self.schema.as_deref().map(SchemaName::new).transpose()?;

        // The parser's messages name the offending part, never the password.
        let mut postgres = tokio_postgres::Config::from_str(&self.url)
            .map_err(|e| SetupError::InvalidUrl(e.to_string()))?;
        // Server-side settings travel in the startup packet: no extra round trip per connection, and they hold
        // for every statement the connection runs.
        let mut options = postgres.get_options().unwrap_or_default().to_owned();
        options.push_str(&format!(" -c statement_timeout={statement_timeout_ms}"));
        if let Some(schema) = &schema {
            options.push_str(&format!(" -c search_path={schema}"));
        }
        postgres.options(options.trim_start());
        if postgres.get_application_name().is_none() {
            postgres.application_name(APPLICATION_NAME);
        }
        postgres.connect_timeout(Duration::from_millis(connect_timeout_ms));
        Ok(DatabaseConfig {
            postgres,
            schema,
            statement_timeout: Duration::from_millis(statement_timeout_ms),
            wait_timeout: Duration::from_millis(wait_timeout_ms),
            connect_timeout: Duration::from_millis(connect_timeout_ms),
            max_connections,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const URL: &str = "postgres://janitor:secret-password@127.0.0.1:5432/janitor";

    #[test]
    fn schema_names() {
        for good in ["janitor", "_j", "a1_b2", &"a".repeat(63)] {
            assert!(SchemaName::new(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Janitor",
            "1abc",
            "pg_temp",
            "a-b",
            "a b",
            "x;drop",
            "\"q\"",
            "é",
            &"a".repeat(64),
        ] {
            assert!(
                matches!(SchemaName::new(bad), Err(SetupError::InvalidSchema { .. })),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn every_bound_is_checked() {
        type Setter = fn(DatabaseConfigBuilder, u64) -> DatabaseConfigBuilder;
        let cases: [(Setter, u64, u64); 4] = [
            (|b, v| b.statement_timeout_ms(v), 1, 600_000),
            (|b, v| b.wait_timeout_ms(v), 1, 60_000),
            (|b, v| b.connect_timeout_ms(v), 1, 60_000),
            (|b, v| b.max_connections(v as usize), 1, 1_000),
        ];
        for (set, low, high) in cases {
            for ok in [low, high] {
                assert!(set(DatabaseConfig::builder(URL), ok).build().is_ok());
            }
            for bad in [low - 1, high + 1] {
                let err = set(DatabaseConfig::builder(URL), bad).build().unwrap_err();
                let text = err.to_string();
                assert!(
                    matches!(err, SetupError::OutOfRange(_))
                        && text.contains(&format!("from {low} to {high}")),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn options_reach_the_startup_packet() {
        let config = DatabaseConfig::builder(&format!("{URL}?options=-c%20work_mem%3D4MB"))
            .schema("tenant_a")
            .statement_timeout_ms(250)
            .build()
            .unwrap();
        assert_eq!(
            config.postgres.get_options(),
            Some("-c work_mem=4MB -c statement_timeout=250 -c search_path=tenant_a")
        );
        assert_eq!(
            config.postgres.get_application_name(),
            Some(APPLICATION_NAME)
        );
        assert_eq!(config.schema().map(SchemaName::as_str), Some("tenant_a"));
    }

    #[test]
    fn bad_urls_and_debug_output_keep_the_password() {
        let err = DatabaseConfig::builder("postgres://u:pw@host:notaport/db")
            .build()
            .unwrap_err();
        assert!(matches!(err, SetupError::InvalidUrl(_)));
        assert!(!err.to_string().contains("pw"), "{err}");
        let config = DatabaseConfig::builder(URL).build().unwrap();
        assert!(!format!("{config:?}").contains("secret-password"));
        assert!(!format!("{:?}", DatabaseConfig::builder(URL)).contains("secret-password"));
    }
}
