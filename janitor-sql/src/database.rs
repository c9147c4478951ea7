//! The shared handle: a connection pool, the schema it works in, and counters of the work sent to the server.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use janitor_core::StoreError;
use tokio_postgres::types::ToSql;
use tokio_postgres::{NoTls, Row};

use crate::config::{DatabaseConfig, SchemaName};
use crate::error::{ends_session, from_pool, from_postgres, SetupError};
use crate::migrate::{MigrateError, MigrationReport};

/// A pool of PostgreSQL connections shared by every store of one process. Cheap to clone.
///
/// Creating it opens no connection; the first statement does. Connections are plain TCP or Unix sockets
/// (no TLS): keep the database on a private network or loopback.
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    config: DatabaseConfig,
    statements: AtomicU64,
    prepares: AtomicU64,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("schema", &self.inner.config.schema)
            .field("status", &self.inner.pool.status())
            .finish_non_exhaustive()
    }
}

impl Database {
    /// A pool for `config`. Opens nothing yet; the pool's timeouts need a Tokio runtime (with its time driver)
    /// when connections are requested.
    pub fn new(config: DatabaseConfig) -> Result<Self, SetupError> {
        let manager = Manager::from_config(
            config.postgres.clone(),
            NoTls,
            ManagerConfig {
                // A pooled connection is checked only for being closed: no extra round trip per checkout. A
                // connection the server dropped fails its next statement (reported as unavailable) and is
                // discarded by the pool.
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(config.max_connections)
            .wait_timeout(Some(config.wait_timeout))
            .create_timeout(Some(config.connect_timeout))
            .recycle_timeout(Some(config.connect_timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| SetupError::Pool(e.to_string()))?;
        Ok(Database {
            inner: Arc::new(Inner {
                pool,
                config,
                statements: AtomicU64::new(0),
                prepares: AtomicU64::new(0),
            }),
        })
    }

    /// A pool for `url` with the default options (see [`DatabaseConfig::builder`] for the others).
    pub fn from_url(url: &str) -> Result<Database, SetupError> {
        Database::new(DatabaseConfig::builder(url).build()?)
    }

    /// Applies the pending migrations (see [`migrate()`](crate::migrate())).
    pub async fn migrate(&self) -> Result<MigrationReport, MigrateError> {
        crate::migrate::migrate(self).await
    }

    /// The schema statements run in, if the configuration named one.
    pub fn schema(&self) -> Option<&SchemaName> {
        self.inner.config.schema.as_ref()
    }

    /// The configuration this pool was built from.
    pub fn config(&self) -> &DatabaseConfig {
        &self.inner.config
    }

    /// The underlying pool, for an application's own statements (they run with the same timeout and schema).
    pub fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// Statements executed through this handle so far: each one is one round trip to the server.
    pub fn statements_executed(&self) -> u64 {
        self.inner.statements.load(Ordering::Relaxed)
    }

    /// Statements prepared so far (once per statement text and connection; an extra round trip each).
    pub fn statements_prepared(&self) -> u64 {
        self.inner.prepares.load(Ordering::Relaxed)
    }

    /// Checks that a connection can be had and answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.connection()
            .await?
            .query("SELECT 1", &[])
            .await
            .map(drop)
    }

    pub(crate) async fn connection(&self) -> Result<Connection<'_>, StoreError> {
        let client = self.inner.pool.get().await.map_err(from_pool)?;
        Ok(Connection {
            client: Some(client),
            broken: false,
            inner: &self.inner,
        })
    }
}

/// One checked-out connection; returns to the pool when dropped, unless it broke.
pub(crate) struct Connection<'a> {
    client: Option<Object>,
    broken: bool,
    inner: &'a Inner,
}

impl Drop for Connection<'_> {
    fn drop(&mut self) {
        if self.broken {
            // The server or the socket ended this session. Returned to the pool it would fail the next caller
            // too (its task may not have noticed the closed socket yet), so it leaves the pool here.
            if let Some(client) = self.client.take() {
                drop(Object::take(client));
            }
        }
    }
}

impl Connection<'_> {
    fn client(&self) -> &Object {
        self.client.as_ref().expect("present until drop")
    }

    pub(crate) fn client_mut(&mut self) -> &mut Object {
        self.client.as_mut().expect("present until drop")
    }

    /// Maps a failure, and marks the connection broken when the session is gone.
    pub(crate) fn fail(&mut self, error: &tokio_postgres::Error) -> StoreError {
        if ends_session(error) {
            self.broken = true;
        }
        from_postgres(error)
    }

    async fn prepare(&mut self, sql: &str) -> Result<tokio_postgres::Statement, StoreError> {
        let cached = self.client().statement_cache.size();
        let prepared = self.client().prepare_cached(sql).await;
        let statement = prepared.map_err(|e| self.fail(&e))?;
        if self.client().statement_cache.size() != cached {
            self.inner.prepares.fetch_add(1, Ordering::Relaxed);
        }
        Ok(statement)
    }

    /// Runs a prepared statement and returns its rows.
    pub(crate) async fn query(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, StoreError> {
        let statement = self.prepare(sql).await?;
        self.inner.statements.fetch_add(1, Ordering::Relaxed);
        let rows = self.client().query(&statement, params).await;
        rows.map_err(|e| self.fail(&e))
    }

    /// Runs a prepared statement and returns how many rows it changed.
    pub(crate) async fn execute(
        &mut self,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, StoreError> {
        let statement = self.prepare(sql).await?;
        self.inner.statements.fetch_add(1, Ordering::Relaxed);
        let changed = self.client().execute(&statement, params).await;
        changed.map_err(|e| self.fail(&e))
    }

    /// Counts a statement run outside [`query`](Self::query) and [`execute`](Self::execute).
    pub(crate) fn count_statement(&self) {
        self.inner.statements.fetch_add(1, Ordering::Relaxed);
    }
}
