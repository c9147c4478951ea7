#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod budget_store;
mod config;
mod database;
mod error;
pub mod evidence_store;
pub mod migrate;
pub mod quota_store;
#[cfg(feature = "test-support")]
pub mod testing;
pub mod visitor_store;

pub use budget_store::PgBudgetStore;
pub use config::{
    DatabaseConfig, DatabaseConfigBuilder, SchemaName, APPLICATION_NAME, CONNECT_TIMEOUT_MS,
    MAX_CONNECTIONS, POOL_WAIT_TIMEOUT_MS, STATEMENT_TIMEOUT_MS,
};
pub use database::Database;
pub use error::SetupError;
pub use evidence_store::PgEvidenceStore;
pub use migrate::{migrate, MigrateError, MigrationReport};
pub use quota_store::PgQuotaStore;
pub use visitor_store::PgVisitorStore;
