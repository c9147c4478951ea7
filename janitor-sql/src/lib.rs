#![doc = include_str!("lib.md")]
#![forbid(unsafe_code)]

// The README is what crates.io shows: plain Markdown, no rustdoc links or hidden lines. Its example is compiled
// here so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod budget_store;
mod cancel;
mod config;
mod database;
mod directory_store;
mod erasure;
mod error;
mod evidence_store;
mod key_check;
mod learning_store;
pub mod migrate;
mod params;
mod qualify;
mod quota_store;
mod replica;
mod statistics;
mod stores;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "tls")]
mod tls;
mod visitor_store;

pub use budget_store::PgBudgetStore;
pub use config::{
    DatabaseConfig, DatabaseConfigBuilder, DatabaseSettings, PoolMode, PoolOptions,
    PoolOptionsBuilder, RootCerts, SchemaName, SslMode, SslSettings, APPLICATION_NAME,
    CONNECT_TIMEOUT_MS, ENV_VARIABLES, MAX_CONNECTIONS, POOL_WAIT_TIMEOUT_MS, STATEMENT_TIMEOUT_MS,
};
pub use database::Database;
pub use directory_store::PgDirectoryStore;
pub use error::SetupError;
pub use evidence_store::{GroupedInserts, PgEvidenceStore, GROUP_WRITERS, MAX_EVENTS_PER_GROUP};
pub use learning_store::PgLearningStore;
pub use migrate::{migrate, MigrateError, MigrationReport};
pub use quota_store::PgQuotaStore;
pub use replica::{
    LookupReplica, ReplicaState, REPLICA_CHECK_INTERVAL_MS, REPLICA_ENV_VARIABLES,
    REPLICA_MAX_LAG_MS, REPLICA_TIMEOUT_MS,
};
pub use stores::PgStores;
pub use visitor_store::{LookupRead, PgVisitorStore, COVERING_LOOKUP_INDEXES};
