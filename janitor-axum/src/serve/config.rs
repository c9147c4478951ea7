//! The connection limits of [`serve`](super::serve) and their ranges.

use std::time::Duration;

use janitor_core::config::{ConfigError, EnvSource, Limit};

/// Longest a request head may take to arrive in full, from its first byte, in milliseconds (default 10 s).
/// Past it the connection is closed: a client sending its headers a byte at a time holds nothing for long.
pub const HEADER_READ_TIMEOUT_MS: Limit<u64> =
    Limit::new("header_read_timeout_ms", 10_000, 100, 300_000);
/// Longest a request's body may take to arrive in full on any route, from the end of its head, in milliseconds
/// (default 10 s). Past it a handler still reading gets an error, the request is answered 408 and the
/// connection closed: a body trickled a byte at a time, or a `Content-Length` never sent, holds a handler and a
/// connection for this long at most. The endpoint's own bound (5 s, `REQUEST_TIMEOUT_MS`) comes first.
pub const BODY_READ_TIMEOUT_MS: Limit<u64> =
    Limit::new("body_read_timeout_ms", 10_000, 100, 300_000);
/// Longest a connection may wait for the first byte of its next request, in milliseconds (default 60 s), from
/// the moment it is accepted or its last answer has been sent. It also bounds a client that stops reading: an
/// answer of which it takes no byte for this long ends the connection (what was sent stays readable).
pub const KEEP_ALIVE_TIMEOUT_MS: Limit<u64> =
    Limit::new("keep_alive_timeout_ms", 60_000, 100, 3_600_000);
/// Longest a connection may wait for the first byte of a request while the server is at `max_connections`, in
/// milliseconds (default one second). At capacity, connections idle for longer are closed (checked every
/// 100 ms until a slot frees), so idle connections, a flood of them included, cannot keep new clients out for
/// the whole `keep_alive_timeout`. Connections in the middle of a request are never cut, nor one whose
/// request's first byte has reached the server when it is weighed.
pub const IDLE_AT_CAPACITY_MS: Limit<u64> = Limit::new("idle_at_capacity_ms", 1_000, 10, 3_600_000);
/// Largest request head (request line and headers), in bytes (default 16 KiB). A larger one is answered 431
/// and the connection closed. A pooled buffer holds 8 KiB and hyper reads nothing smaller at once, hence the
/// bottom of the range.
pub const MAX_HEADER_BYTES: Limit<usize> = Limit::new("max_header_bytes", 16_384, 8_192, 1_048_576);
/// Connections served at once (default 10,000). Past it the server accepts no more until one closes: the
/// rest wait in the kernel's backlog and cost the process nothing.
pub const MAX_CONNECTIONS: Limit<usize> = Limit::new("max_connections", 10_000, 1, 1_000_000);

/// What serves a connection's HTTP/1.1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Driver {
    /// Holds no buffer while a connection waits: one is borrowed from a pool when a request arrives and given
    /// back once it is answered. Heads are parsed by `httparse`.
    #[default]
    Pooled,
    /// hyper's HTTP/1 connection, which keeps an 8 KiB read buffer and an 8 KiB head buffer per connection
    /// for the connection's whole life.
    Hyper,
}

impl Driver {
    /// The name `JANITOR_SERVE_DRIVER` takes: `pooled` or `hyper`.
    pub fn name(self) -> &'static str {
        match self {
            Driver::Pooled => "pooled",
            Driver::Hyper => "hyper",
        }
    }
}

/// Validated limits of a served connection. See each constant for its meaning and range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeConfig {
    driver: Driver,
    header_read_timeout_ms: u64,
    body_read_timeout_ms: u64,
    keep_alive_timeout_ms: u64,
    idle_at_capacity_ms: u64,
    max_header_bytes: usize,
    max_connections: usize,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            driver: Driver::default(),
            header_read_timeout_ms: HEADER_READ_TIMEOUT_MS.default,
            body_read_timeout_ms: BODY_READ_TIMEOUT_MS.default,
            keep_alive_timeout_ms: KEEP_ALIVE_TIMEOUT_MS.default,
            idle_at_capacity_ms: IDLE_AT_CAPACITY_MS.default,
            max_header_bytes: MAX_HEADER_BYTES.default,
            max_connections: MAX_CONNECTIONS.default,
        }
    }
}

impl ServeConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> ServeConfigBuilder {
        ServeConfigBuilder::default()
    }

    /// Every variable [`from_env`](Self::from_env) reads.
    pub const ENV_VARIABLES: &'static [&'static str] = &[
        "JANITOR_SERVE_DRIVER",
        "JANITOR_HEADER_READ_TIMEOUT_MS",
        "JANITOR_BODY_READ_TIMEOUT_MS",
        "JANITOR_KEEP_ALIVE_TIMEOUT_MS",
        "JANITOR_IDLE_AT_CAPACITY_MS",
        "JANITOR_MAX_HEADER_BYTES",
        "JANITOR_MAX_CONNECTIONS",
    ];

    /// The limits the process's `JANITOR_HEADER_READ_TIMEOUT_MS`, `JANITOR_BODY_READ_TIMEOUT_MS`,
    /// `JANITOR_KEEP_ALIVE_TIMEOUT_MS`,
    /// `JANITOR_IDLE_AT_CAPACITY_MS`, `JANITOR_MAX_HEADER_BYTES` and `JANITOR_MAX_CONNECTIONS` set, the driver
    /// `JANITOR_SERVE_DRIVER` names (`pooled` or `hyper`), the defaults for the others.
    pub fn from_env(env: &EnvSource) -> Result<ServeConfig, ServeConfigError> {
        let mut builder = ServeConfig::builder();
        if let Some(name) = env.choice("JANITOR_SERVE_DRIVER", "pooled or hyper")? {
            builder = builder.driver(if name == "hyper" {
                Driver::Hyper
            } else {
                Driver::Pooled
            });
        }
        if let Some(v) = env.number("JANITOR_HEADER_READ_TIMEOUT_MS")? {
            builder = builder.header_read_timeout_ms(v);
        }
        if let Some(v) = env.number("JANITOR_BODY_READ_TIMEOUT_MS")? {
            builder = builder.body_read_timeout_ms(v);
        }
        if let Some(v) = env.number("JANITOR_KEEP_ALIVE_TIMEOUT_MS")? {
            builder = builder.keep_alive_timeout_ms(v);
        }
        if let Some(v) = env.number("JANITOR_IDLE_AT_CAPACITY_MS")? {
            builder = builder.idle_at_capacity_ms(v);
        }
        if let Some(v) = env.number("JANITOR_MAX_HEADER_BYTES")? {
            builder = builder.max_header_bytes(v);
        }
        if let Some(v) = env.number("JANITOR_MAX_CONNECTIONS")? {
            builder = builder.max_connections(v);
        }
        Ok(builder.build()?)
    }

    /// What serves each connection.
    pub fn driver(&self) -> Driver {
        self.driver
    }

    /// Longest wait for a request head to arrive in full, from its first byte.
    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_millis(self.header_read_timeout_ms)
    }

    /// Longest wait for a request's body to arrive in full, from the end of its head.
    pub fn body_read_timeout(&self) -> Duration {
        Duration::from_millis(self.body_read_timeout_ms)
    }

    /// Longest wait for the first byte of the next request.
    pub fn keep_alive_timeout(&self) -> Duration {
        Duration::from_millis(self.keep_alive_timeout_ms)
    }

    /// Longest wait for a request's first byte while the server is at `max_connections`.
    pub fn idle_at_capacity(&self) -> Duration {
        Duration::from_millis(self.idle_at_capacity_ms)
    }

    /// Largest request head, in bytes.
    pub fn max_header_bytes(&self) -> usize {
        self.max_header_bytes
    }

    /// Connections served at once.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }
}

/// Why [`ServeConfig::from_env`] refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServeConfigError {
    /// A value outside its range.
    #[error(transparent)]
    OutOfRange(#[from] ConfigError),
    /// A variable that does not read as a number.
    #[error(transparent)]
    Environment(#[from] janitor_core::config::EnvError),
}

/// Builds a [`ServeConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Copy, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ServeConfigBuilder {
    driver: Option<Driver>,
    header_read_timeout_ms: Option<u64>,
    body_read_timeout_ms: Option<u64>,
    keep_alive_timeout_ms: Option<u64>,
    idle_at_capacity_ms: Option<u64>,
    max_header_bytes: Option<usize>,
    max_connections: Option<usize>,
}

impl ServeConfigBuilder {
    /// What serves each connection: [`Driver::Pooled`] by default.
    pub fn driver(mut self, driver: Driver) -> Self {
        self.driver = Some(driver);
        self
    }

    /// Longest wait for a whole request head from its first byte: 100–300,000 ms, default 10,000.
    pub fn header_read_timeout_ms(mut self, ms: u64) -> Self {
        self.header_read_timeout_ms = Some(ms);
        self
    }

    /// Longest wait for a whole request body from the end of its head: 100–300,000 ms, default 10,000.
    pub fn body_read_timeout_ms(mut self, ms: u64) -> Self {
        self.body_read_timeout_ms = Some(ms);
        self
    }

    /// Longest wait for the next request's first byte: 100–3,600,000 ms, default 60,000.
    pub fn keep_alive_timeout_ms(mut self, ms: u64) -> Self {
        self.keep_alive_timeout_ms = Some(ms);
        self
    }

    /// Longest wait for a request's first byte while at `max_connections`: 10–3,600,000 ms, default 1,000.
    pub fn idle_at_capacity_ms(mut self, ms: u64) -> Self {
        self.idle_at_capacity_ms = Some(ms);
        self
    }

    /// Largest request head: 8,192–1,048,576 bytes, default 16,384.
    pub fn max_header_bytes(mut self, bytes: usize) -> Self {
        self.max_header_bytes = Some(bytes);
        self
    }

    /// Connections served at once: 1–1,000,000, default 10,000.
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = Some(connections);
        self
    }

    /// Checks every value against its range.
    pub fn build(self) -> Result<ServeConfig, ConfigError> {
        Ok(ServeConfig {
            driver: self.driver.unwrap_or_default(),
            header_read_timeout_ms: HEADER_READ_TIMEOUT_MS
                .or_default(self.header_read_timeout_ms)?,
            body_read_timeout_ms: BODY_READ_TIMEOUT_MS.or_default(self.body_read_timeout_ms)?,
            keep_alive_timeout_ms: KEEP_ALIVE_TIMEOUT_MS.or_default(self.keep_alive_timeout_ms)?,
            idle_at_capacity_ms: IDLE_AT_CAPACITY_MS.or_default(self.idle_at_capacity_ms)?,
            max_header_bytes: MAX_HEADER_BYTES.or_default(self.max_header_bytes)?,
            max_connections: MAX_CONNECTIONS.or_default(self.max_connections)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bound_at_and_past_its_edge() {
        let b = ServeConfig::builder;
        for (at, past) in [
            (
                b().header_read_timeout_ms(100),
                b().header_read_timeout_ms(99),
            ),
            (
                b().header_read_timeout_ms(300_000),
                b().header_read_timeout_ms(300_001),
            ),
            (b().body_read_timeout_ms(100), b().body_read_timeout_ms(99)),
            (
                b().body_read_timeout_ms(300_000),
                b().body_read_timeout_ms(300_001),
            ),
            (
                b().keep_alive_timeout_ms(100),
                b().keep_alive_timeout_ms(99),
            ),
            (
                b().keep_alive_timeout_ms(3_600_000),
                b().keep_alive_timeout_ms(3_600_001),
            ),
            (b().idle_at_capacity_ms(10), b().idle_at_capacity_ms(9)),
            (
                b().idle_at_capacity_ms(3_600_000),
                b().idle_at_capacity_ms(3_600_001),
            ),
            (b().max_header_bytes(8_192), b().max_header_bytes(8_191)),
            (
                b().max_header_bytes(1_048_576),
                b().max_header_bytes(1_048_577),
            ),
            (b().max_connections(1), b().max_connections(0)),
            (
                b().max_connections(1_000_000),
                b().max_connections(1_000_001),
            ),
        ] {
            assert!(at.build().is_ok(), "{at:?}");
            let error = past.build().unwrap_err();
            assert!(error.to_string().contains("must be from"), "{error}");
        }
        assert_eq!(ServeConfig::builder().build(), Ok(ServeConfig::default()));
    }

    #[test]
    fn env_variables_lists_every_name_from_env_reads() {
        let env = EnvSource::from_pairs([]);
        ServeConfig::from_env(&env).unwrap();
        let mut listed = ServeConfig::ENV_VARIABLES.to_vec();
        listed.sort_unstable();
        assert_eq!(env.names_read(), listed);
    }

    #[test]
    fn the_environment_sets_each_limit() {
        let env = EnvSource::from_pairs([
            ("JANITOR_HEADER_READ_TIMEOUT_MS", "2000"),
            ("JANITOR_BODY_READ_TIMEOUT_MS", "3000"),
            ("JANITOR_KEEP_ALIVE_TIMEOUT_MS", "5000"),
            ("JANITOR_IDLE_AT_CAPACITY_MS", "250"),
            ("JANITOR_MAX_HEADER_BYTES", "8192"),
            ("JANITOR_MAX_CONNECTIONS", "3"),
            ("JANITOR_SERVE_DRIVER", "Hyper"),
        ]);
        let config = ServeConfig::from_env(&env).unwrap();
        assert_eq!(config.driver(), Driver::Hyper);
        let pooled = EnvSource::from_pairs([("JANITOR_SERVE_DRIVER", "pooled")]);
        assert_eq!(
            ServeConfig::from_env(&pooled).unwrap().driver(),
            Driver::Pooled
        );
        let unknown = EnvSource::from_pairs([("JANITOR_SERVE_DRIVER", "h2")]);
        assert!(ServeConfig::from_env(&unknown).is_err());
        assert_eq!(config.header_read_timeout(), Duration::from_secs(2));
        assert_eq!(config.body_read_timeout(), Duration::from_secs(3));
        assert_eq!(config.keep_alive_timeout(), Duration::from_secs(5));
        assert_eq!(config.idle_at_capacity(), Duration::from_millis(250));
        assert_eq!(config.max_header_bytes(), 8192);
        assert_eq!(config.max_connections(), 3);
        let wrong = EnvSource::from_pairs([("JANITOR_MAX_CONNECTIONS", "many")]);
        assert!(matches!(
            ServeConfig::from_env(&wrong),
            Err(ServeConfigError::Environment(_))
        ));
        let out = EnvSource::from_pairs([("JANITOR_MAX_CONNECTIONS", "0")]);
        assert!(matches!(
            ServeConfig::from_env(&out),
            Err(ServeConfigError::OutOfRange(_))
        ));
    }
}
