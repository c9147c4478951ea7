//! What tests and benchmarks need on PostgreSQL (feature `testing`): throwaway schemas, a seeded population,
//! and the statements the stores run.
//!
//! Every test works in its own schema on the PostgreSQL named by `DATABASE_URL` (default
//! [`DEFAULT_URL`]); [`with_schemas`] drops them afterwards, whether the test passed or panicked. When the
//! server cannot be reached the test fails with instructions; it is never skipped. [`with_schemas`] is also the
//! `around` runner of the core store suites:
//!
//! ```ignore
//! janitor_core::visitor_store_tests!(
//!     around: janitor_sql::testing::with_schemas,
//!     fresh: |schemas: Schemas, retention| async move {
//!         PgVisitorStore::new(schemas.fresh().await, retention)
//!     },
//! );
//! ```

pub mod lookup_rows;
pub mod population;
pub mod statements;
mod suites;

use std::future::Future;
use std::sync::{Arc, Mutex};

use rand::RngCore;
use tokio_postgres::NoTls;

use crate::{Database, DatabaseConfig, DatabaseConfigBuilder};

/// The server used when `DATABASE_URL` is not set: the machine's own, with trust authentication.
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Prefix of every schema made here, so a leftover from a killed run is easy to spot.
pub const SCHEMA_PREFIX: &str = "janitor_test_";

/// `DATABASE_URL`, or [`DEFAULT_URL`].
pub fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| DEFAULT_URL.to_owned())
}

/// A plain client on the server, outside any test schema (for `EXPLAIN`, `pg_terminate_backend`, seeding).
///
/// # Panics
/// When the server cannot be reached, with a message saying how to start it.
pub async fn admin_client() -> tokio_postgres::Client {
    let url = database_url();
    match tokio_postgres::connect(&url, NoTls).await {
        Ok((client, connection)) => {
            tokio::spawn(async move {
                let _ = connection.await;
            });
            client
        }
        Err(error) => panic!(
            "PostgreSQL is not reachable ({error}). These tests need a real server: set DATABASE_URL, or start \
             the local one with `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start` \
             (it listens on 127.0.0.1:5432 with trust authentication)."
        ),
    }
}

/// Hands out fresh schemas and remembers them for dropping.
#[derive(Debug, Clone, Default)]
pub struct Schemas {
    created: Arc<Mutex<Vec<String>>>,
}

impl Schemas {
    /// A migrated database in a new schema, with the default options.
    pub async fn fresh(&self) -> Database {
        self.fresh_with(|b| b).await
    }

    /// A migrated database in a new schema, with options adjusted by `adjust`.
    pub async fn fresh_with(
        &self,
        adjust: impl FnOnce(DatabaseConfigBuilder) -> DatabaseConfigBuilder,
    ) -> Database {
        let database = self.unmigrated_with(adjust);
        database.migrate().await.expect("migrations apply");
        database
    }

    /// A migrated database in a new schema, reached through `url` (a pooler in front of the same server, say),
    /// with options adjusted by `adjust`.
    pub async fn fresh_at(
        &self,
        url: &str,
        adjust: impl FnOnce(DatabaseConfigBuilder) -> DatabaseConfigBuilder,
    ) -> Database {
        let database = self.unmigrated_at(url, adjust);
        database.migrate().await.expect("migrations apply");
        database
    }

    /// A database in a new schema that does not exist yet (migrations create it).
    pub fn unmigrated_with(
        &self,
        adjust: impl FnOnce(DatabaseConfigBuilder) -> DatabaseConfigBuilder,
    ) -> Database {
        self.unmigrated_at(&database_url(), adjust)
    }

    fn unmigrated_at(
        &self,
        url: &str,
        adjust: impl FnOnce(DatabaseConfigBuilder) -> DatabaseConfigBuilder,
    ) -> Database {
        let mut suffix = [0u8; 8];
        rand::rng().fill_bytes(&mut suffix);
        let name: String = std::iter::once(SCHEMA_PREFIX.to_owned())
            .chain(suffix.iter().map(|b| format!("{b:02x}")))
            .collect();
        self.created
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(name.clone());
        let config = adjust(DatabaseConfig::builder(url).schema(&name))
            .build()
            .expect("test database configuration");
        Database::new(config).expect("pool")
    }

    async fn drop_all(&self) {
        let names = std::mem::take(&mut *self.created.lock().unwrap_or_else(|e| e.into_inner()));
        if names.is_empty() {
            return;
        }
        let admin = admin_client().await;
        for name in names {
            // Names are generated above from hex digits: nothing to quote.
            admin
                .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
                .await
                .unwrap_or_else(|e| panic!("dropping test schema {name}: {e}"));
        }
    }
}

/// Creates a visitor row for each of `visitors` at [`T0`](janitor_core::testing::T0): events and links name
/// visitors through a foreign key.
pub async fn create_visitors(database: &crate::Database, visitors: &[janitor_core::VisitorId]) {
    let store = crate::PgVisitorStore::new(database.clone(), janitor_core::Retention::default());
    for visitor in visitors {
        janitor_core::VisitorStore::create_visitor(&store, visitor, janitor_core::testing::T0)
            .await
            .expect("visitor");
    }
}

/// Runs `body` with a [`Schemas`] source, then drops every schema it made — also when `body` panics, whose
/// panic is then resumed so the test still fails.
///
/// # Panics
/// When PostgreSQL is unreachable (before running `body`), or when `body` panics.
pub async fn with_schemas<F, Fut>(body: F)
where
    F: FnOnce(Schemas) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    // Fail early, with instructions, rather than deep inside a pool error.
    drop(admin_client().await);
    let schemas = Schemas::default();
    let outcome = tokio::spawn(body(schemas.clone())).await;
    schemas.drop_all().await;
    if let Err(error) = outcome {
        match error.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(error) => panic!("test task did not finish: {error}"),
        }
    }
}
