//! How connections reach PostgreSQL, and the options that hold for every statement whatever the pool.

use std::time::Duration;

use super::{SchemaName, STATEMENT_TIMEOUT_MS};
use crate::error::SetupError;

/// How connections reach PostgreSQL, which decides what a server session may be trusted to keep.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PoolMode {
    /// Each connection is one server session for its whole life: a direct connection to PostgreSQL. The schema
    /// and the statement timeout travel in the startup packet (its `options` parameter), and each statement is
    /// prepared once per connection. PgBouncer refuses that parameter in each of its pool modes, `session`
    /// included: use [`Transaction`](Self::Transaction) through it.
    #[default]
    Session,
    /// Server sessions may change between transactions, or the pooler takes no startup options: PgBouncer in any
    /// `pool_mode`, and the poolers of Supabase, Neon and most managed platforms. Nothing is set on a session: statements are sent unnamed with
    /// their parameter types (one round trip each, as prepared ones), tables are named with their schema, and
    /// the statement timeout is kept by the client, which cancels a statement that overruns it.
    Transaction,
}

/// The options every statement runs under, for a pool this crate builds ([`DatabaseConfig`](super::DatabaseConfig))
/// or one the application hands in ([`Database::from_pool`](crate::Database::from_pool)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolOptions {
    schema: Option<SchemaName>,
    statement_timeout: Duration,
    pool_mode: PoolMode,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            schema: None,
            statement_timeout: Duration::from_millis(STATEMENT_TIMEOUT_MS.default),
            pool_mode: PoolMode::default(),
        }
    }
}

impl PoolOptions {
    /// A builder starting from the defaults.
    pub fn builder() -> PoolOptionsBuilder {
        PoolOptionsBuilder::default()
    }

    /// The schema statements run in, if one was named.
    pub fn schema(&self) -> Option<&SchemaName> {
        self.schema.as_ref()
    }

    /// The statement timeout.
    pub fn statement_timeout(&self) -> Duration {
        self.statement_timeout
    }

    /// How connections reach PostgreSQL.
    pub fn pool_mode(&self) -> PoolMode {
        self.pool_mode
    }
}

/// Builds [`PoolOptions`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct PoolOptionsBuilder {
    schema: Option<String>,
    statement_timeout_ms: Option<u64>,
    pool_mode: PoolMode,
}

impl PoolOptionsBuilder {
    /// Runs every statement in this schema (see [`SchemaName`] for the rules).
    pub fn schema(mut self, name: &str) -> Self {
        self.schema = Some(name.to_owned());
        self
    }

    /// Statement timeout in milliseconds: 1–600,000, default 5,000.
    pub fn statement_timeout_ms(mut self, ms: u64) -> Self {
        self.statement_timeout_ms = Some(ms);
        self
    }

    /// How connections reach PostgreSQL (default [`PoolMode::Session`]).
    pub fn pool_mode(mut self, mode: PoolMode) -> Self {
        self.pool_mode = mode;
        self
    }

    /// Checks the values.
    pub fn build(self) -> Result<PoolOptions, SetupError> {
        Ok(PoolOptions {
            schema: self.schema.as_deref().map(SchemaName::new).transpose()?,
            statement_timeout: Duration::from_millis(
                STATEMENT_TIMEOUT_MS.or_default(self.statement_timeout_ms)?,
            ),
            pool_mode: self.pool_mode,
        })
    }
}
