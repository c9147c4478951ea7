//! Connection options, checked once when the configuration is built.

mod pool;
mod schema;
mod settings;
mod ssl;
mod url;

use std::time::Duration;

use janitor_core::config::Limit;

use crate::error::SetupError;

pub use pool::{PoolMode, PoolOptions, PoolOptionsBuilder};
pub use schema::SchemaName;
pub use settings::{DatabaseSettings, ENV_VARIABLES};
pub use ssl::{RootCerts, SslMode, SslSettings};

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

/// Where and how to connect. Build it with [`DatabaseConfig::builder`].
///
/// `Debug` never shows the password.
#[derive(Debug, Clone)]
pub struct DatabaseConfig {
    pub(crate) postgres: tokio_postgres::Config,
    pub(crate) ssl: SslSettings,
    pub(crate) options: PoolOptions,
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
            pool_mode: PoolMode::default(),
            statement_timeout_ms: STATEMENT_TIMEOUT_MS.default,
            wait_timeout_ms: POOL_WAIT_TIMEOUT_MS.default,
            connect_timeout_ms: CONNECT_TIMEOUT_MS.default,
            max_connections: MAX_CONNECTIONS.default,
        }
    }

    /// The schema every statement runs in, if one was named (otherwise the server's `search_path`).
    pub fn schema(&self) -> Option<&SchemaName> {
        self.options.schema()
    }

    /// The statement timeout.
    pub fn statement_timeout(&self) -> Duration {
        self.options.statement_timeout()
    }

    /// How connections reach PostgreSQL.
    pub fn pool_mode(&self) -> PoolMode {
        self.options.pool_mode()
    }

    /// The TLS settings read from the URL.
    pub fn ssl(&self) -> &SslSettings {
        &self.ssl
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
    pool_mode: PoolMode,
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
            .field("pool_mode", &self.pool_mode)
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

    /// How connections reach PostgreSQL (default [`PoolMode::Session`]): [`PoolMode::Transaction`] behind a
    /// pooler such as PgBouncer, in any of its pool modes.
    pub fn pool_mode(mut self, mode: PoolMode) -> Self {
        self.pool_mode = mode;
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

    /// Checks the values and parses the URL, with libpq's `sslmode` and `sslrootcert` (see [`SslMode`]).
    pub fn build(self) -> Result<DatabaseConfig, SetupError> {
        let wait_timeout_ms = POOL_WAIT_TIMEOUT_MS.check(self.wait_timeout_ms)?;
        let connect_timeout_ms = CONNECT_TIMEOUT_MS.check(self.connect_timeout_ms)?;
        let max_connections = MAX_CONNECTIONS.check(self.max_connections)?;
        let mut options = PoolOptions::builder()
            .statement_timeout_ms(self.statement_timeout_ms)
            .pool_mode(self.pool_mode);
        if let Some(schema) = &self.schema {
            options = options.schema(schema);
        }
        let options = options.build()?;

        let (mut postgres, ssl) = url::parse(&self.url)?;
        check_tls(&ssl)?;
        postgres.ssl_mode(match ssl.mode {
            SslMode::Disable => tokio_postgres::config::SslMode::Disable,
            SslMode::Prefer => tokio_postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                tokio_postgres::config::SslMode::Require
            }
        });
        if options.pool_mode() == PoolMode::Session {
            // Server-side settings travel in the startup packet: no extra round trip per connection, and they
            // hold for every statement the connection runs. A transaction pooler refuses them.
            let mut startup = postgres.get_options().unwrap_or_default().to_owned();
            startup.push_str(&format!(
                " -c statement_timeout={}",
                options.statement_timeout().as_millis()
            ));
            if let Some(schema) = options.schema() {
                startup.push_str(&format!(" -c search_path={schema}"));
            }
            postgres.options(startup.trim_start());
        }
        if postgres.get_application_name().is_none() {
            postgres.application_name(APPLICATION_NAME);
        }
        postgres.connect_timeout(Duration::from_millis(connect_timeout_ms));
        Ok(DatabaseConfig {
            postgres,
            ssl,
            options,
            wait_timeout: Duration::from_millis(wait_timeout_ms),
            connect_timeout: Duration::from_millis(connect_timeout_ms),
            max_connections,
        })
    }
}

/// Builds the TLS connector once, so that an unreadable `sslrootcert` or an empty system store is a
/// configuration error, before anything touches the network.
#[cfg(feature = "tls")]
fn check_tls(ssl: &SslSettings) -> Result<(), SetupError> {
    if ssl.mode != SslMode::Disable {
        crate::tls::connector(ssl)?;
    }
    Ok(())
}

/// Without the `tls` feature, only plain connections are possible.
#[cfg(not(feature = "tls"))]
fn check_tls(ssl: &SslSettings) -> Result<(), SetupError> {
    match ssl.mode {
        SslMode::Disable | SslMode::Prefer => Ok(()),
        mode => Err(SetupError::Tls(format!(
            "sslmode={} needs TLS, which this build leaves out: enable janitor-sql's `tls` feature",
            mode.as_str()
        ))),
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
