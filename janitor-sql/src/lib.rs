#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod config;
mod database;
mod error;
pub mod migrate;
#[cfg(feature = "test-support")]
pub mod testing;
pub mod visitor_store;

pub use config::{
    DatabaseConfig, DatabaseConfigBuilder, SchemaName, APPLICATION_NAME, CONNECT_TIMEOUT_MS,
    MAX_CONNECTIONS, POOL_WAIT_TIMEOUT_MS, STATEMENT_TIMEOUT_MS,
};
pub use database::Database;
pub use error::SetupError;
pub use migrate::{migrate, MigrateError, MigrationReport};
pub use visitor_store::PgVisitorStore;

impl Database {
    /// Connects lazily to `url` with the default options (see [`DatabaseConfig::builder`] for the others).
    pub fn from_url(url: &str) -> Result<Database, SetupError> {
        Database::new(DatabaseConfig::builder(url).build()?)
    }

    /// Applies the pending migrations (see [`migrate()`]).
    pub async fn migrate(&self) -> Result<MigrationReport, MigrateError> {
        migrate::migrate(self).await
    }
}
