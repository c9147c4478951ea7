//! The shared handle: a connection pool, the schema it works in, and counters of the work sent to the server.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use janitor_core::StoreError;
use tokio_postgres::{NoTls, Row};

use crate::cancel::CancelTarget;
use crate::config::{DatabaseConfig, PoolMode, PoolOptions, SchemaName, SslMode};
use crate::error::{
    ends_session, from_pool, from_postgres, not_migrated, SetupError, Target, Throttle,
};
use crate::migrate::{MigrateError, MigrationReport};
use crate::params::Param;

/// A pool of PostgreSQL connections shared by every store of one process. Cheap to clone.
///
/// Creating it opens no connection; the first statement does. Connections use TLS as the URL's `sslmode` says
/// (feature `tls`, on by default).
#[derive(Clone)]
pub struct Database {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    /// The configuration the pool was built from; `None` for a pool handed in.
    config: Option<DatabaseConfig>,
    options: PoolOptions,
    /// The startup packet set the schema and the statement timeout (a pool this crate built, in session mode);
    /// otherwise tables are qualified and the client keeps the timeout.
    session_settings: bool,
    /// Where connections go, as connection errors name it.
    target: Target,
    cancel: CancelTarget,
    /// The warnings that the schema is not migrated.
    not_migrated: Throttle,
    statements: AtomicU64,
    prepares: AtomicU64,
    /// `observations` was seen with planner statistics: they are not looked for again (see `statistics.rs`).
    statistics_seen: std::sync::atomic::AtomicBool,
}

/// The longest wait for a cancel request to be handled.
const CANCEL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1);

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database")
            .field("options", &self.inner.options)
            .field("status", &self.inner.pool.status())
            .finish_non_exhaustive()
    }
}

impl Database {
    /// A pool for `config`. Opens nothing yet; the pool's timeouts need a Tokio runtime (with its time driver)
    /// when connections are requested.
    pub fn new(config: DatabaseConfig) -> Result<Self, SetupError> {
        let manager_config = ManagerConfig {
            // A pooled connection is checked only for being closed: no extra round trip per checkout. A
            // connection the server dropped fails its next statement (reported as unavailable) and is
            // discarded by the pool.
            recycling_method: RecyclingMethod::Fast,
        };
        let (manager, cancel) = manager(&config, manager_config)?;
        let pool = Pool::builder(manager)
            .max_size(config.max_connections)
            .wait_timeout(Some(config.wait_timeout))
            .create_timeout(Some(config.connect_timeout))
            .recycle_timeout(Some(config.connect_timeout))
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|e| SetupError::Pool(e.to_string()))?;
        say_tls(&config);
        let session_settings = config.options.pool_mode() == PoolMode::Session;
        let options = config.options.clone();
        Ok(Database::assemble(
            pool,
            Some(config),
            options,
            session_settings,
            cancel,
        ))
    }

    /// Uses a pool the application built (its own TLS, authentication, hooks and sizes), under `options`.
    ///
    /// Nothing is assumed of its sessions: tables are named with the schema, the client keeps the statement
    /// timeout, and statements are prepared per connection only in [`PoolMode::Session`]. Cancel requests for
    /// an overrun statement go over plain TCP; a server that insists on TLS ignores them, and the connection is
    /// discarded instead.
    pub fn from_pool(pool: Pool, options: PoolOptions) -> Database {
        Database::assemble(pool, None, options, false, CancelTarget::Driver)
    }

    fn assemble(
        pool: Pool,
        config: Option<DatabaseConfig>,
        options: PoolOptions,
        session_settings: bool,
        cancel: CancelTarget,
    ) -> Database {
        let target = config
            .as_ref()
            .map_or_else(Target::unknown, |config| Target::of(&config.postgres));
        Database {
            inner: Arc::new(Inner {
                pool,
                config,
                options,
                session_settings,
                target,
                cancel,
                not_migrated: Throttle::default(),
                statements: AtomicU64::new(0),
                prepares: AtomicU64::new(0),
                statistics_seen: std::sync::atomic::AtomicBool::new(false),
            }),
        }
    }

    /// A pool for `url` with the default options (see [`DatabaseConfig::builder`] for the others).
    pub fn from_url(url: &str) -> Result<Database, SetupError> {
        Database::new(DatabaseConfig::builder(url).build()?)
    }

    /// Applies the pending migrations (see [`migrate()`](crate::migrate())).
    pub async fn migrate(&self) -> Result<MigrationReport, MigrateError> {
        crate::migrate::migrate(self).await
    }

    /// The schema statements run in, if one was named.
    pub fn schema(&self) -> Option<&SchemaName> {
        self.inner.options.schema()
    }

    /// The configuration this pool was built from; `None` for a pool handed in with [`from_pool`](Self::from_pool).
    pub fn config(&self) -> Option<&DatabaseConfig> {
        self.inner.config.as_ref()
    }

    /// The options every statement runs under.
    pub fn options(&self) -> &PoolOptions {
        &self.inner.options
    }

    /// Whether the session carries the schema (as `search_path`) and the statement timeout: true for a pool
    /// this crate built in [`PoolMode::Session`]. Otherwise statements qualify their tables.
    pub fn session_settings(&self) -> bool {
        self.inner.session_settings
    }

    /// The underlying pool, for an application's own statements. In [`PoolMode::Session`] they run with the
    /// same timeout and schema; otherwise they must name the schema themselves.
    pub fn pool(&self) -> &Pool {
        &self.inner.pool
    }

    /// Statements executed through this handle so far: each one is one round trip to the server.
    pub fn statements_executed(&self) -> u64 {
        self.inner.statements.load(Ordering::Relaxed)
    }

    /// Statements prepared so far (once per statement text and connection; an extra round trip each). Always
    /// 0 in [`PoolMode::Transaction`], where statements are sent unnamed.
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
        #[cfg(feature = "metrics")]
        let started = std::time::Instant::now();
        let client = self.inner.pool.get().await;
        #[cfg(feature = "metrics")]
        {
            metrics::histogram!("janitor_db_pool_wait_seconds")
                .record(started.elapsed().as_secs_f64());
            if matches!(client, Err(deadpool_postgres::PoolError::Timeout(_))) {
                metrics::counter!("janitor_db_pool_timeouts_total").increment(1);
            }
        }
        let client = client.map_err(|e| {
            // A pool that cannot connect at all is the whole outage: it counts as much as a lost statement.
            count_unavailable();
            from_pool(e, &self.inner.pool, &self.inner.target)
        })?;
        Ok(Connection {
            client: Some(client),
            broken: false,
            inner: &self.inner,
        })
    }

    /// Runs one statement within `limit`, whatever holds it: the wait for a connection, connecting, or a
    /// server that took the statement and never answers. The server's own statement timeout cannot bound that
    /// last case, since a server that does not answer does not enforce it either. A connection whose statement
    /// was given up on leaves the pool: its session may still be running it, or be gone.
    pub(crate) async fn query_within(
        &self,
        limit: std::time::Duration,
        sql: &str,
        params: &[&dyn Param],
    ) -> Result<Vec<Row>, StoreError> {
        let deadline = tokio::time::Instant::now() + limit;
        let gave_up = |what: &str| {
            count_unavailable();
            StoreError::Unavailable(format!(
                "no {what} within {} ms (given up by the client)",
                limit.as_millis()
            ))
        };
        let Ok(connection) = tokio::time::timeout_at(deadline, self.connection()).await else {
            #[cfg(feature = "metrics")]
            metrics::counter!("janitor_db_pool_timeouts_total").increment(1);
            return Err(gave_up("connection"));
        };
        let mut connection = connection?;
        let outcome = tokio::time::timeout_at(deadline, connection.query(sql, params)).await;
        outcome.unwrap_or_else(|_| {
            connection.broken = true;
            #[cfg(feature = "metrics")]
            metrics::counter!("janitor_db_statement_timeouts_total").increment(1);
            Err(gave_up("answer"))
        })
    }
}

/// Says once, when a pool is built, how its connections use TLS, so that a default `prefer` (no certificate
/// checked) is seen at start: at info, or as a warning for `require` without `sslrootcert`.
fn say_tls(config: &DatabaseConfig) {
    let (warn, line) = tls_line(config);
    if warn {
        tracing::warn!("{line}");
    } else {
        tracing::info!("{line}");
    }
}

/// What [`say_tls`] says, and whether as a warning.
fn tls_line(config: &DatabaseConfig) -> (bool, String) {
    let how = config.ssl.describe();
    let target = Target::of(&config.postgres);
    let at = target.hosts().unwrap_or("PostgreSQL");
    let warn = config.ssl.encrypts_without_authenticating();
    (warn, format!("PostgreSQL connections to {at}: {how}"))
}

/// Counts one outcome reported as [`StoreError::Unavailable`] (`janitor_db_unavailable_total`, feature
/// `metrics`): each path that returns one calls this once.
fn count_unavailable() {
    #[cfg(feature = "metrics")]
    metrics::counter!("janitor_db_unavailable_total").increment(1);
}

/// The deadpool manager for `config`, connecting as its `sslmode` says, and where cancel requests go.
fn manager(
    config: &DatabaseConfig,
    manager_config: ManagerConfig,
) -> Result<(Manager, CancelTarget), SetupError> {
    #[cfg(feature = "tls")]
    if config.ssl.mode != SslMode::Disable {
        let tls = crate::tls::connector(&config.ssl)?;
        let manager = Manager::from_config(config.postgres.clone(), tls.clone(), manager_config);
        return Ok((manager, CancelTarget::of(&config.postgres, Some(tls))));
    }
    let manager = Manager::from_config(config.postgres.clone(), NoTls, manager_config);
    #[cfg(feature = "tls")]
    let target = CancelTarget::of(&config.postgres, None);
    #[cfg(not(feature = "tls"))]
    let target = CancelTarget::of(&config.postgres);
    Ok((manager, target))
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

    /// Keeps this connection out of the pool once dropped: a caller changed its session settings.
    pub(crate) fn discard(&mut self) {
        self.broken = true;
    }

    pub(crate) fn client_mut(&mut self) -> &mut Object {
        self.client.as_mut().expect("present until drop")
    }

    /// The schema, when statements must name it themselves.
    pub(crate) fn schema_to_set(&self) -> Option<&SchemaName> {
        self.inner
            .options
            .schema()
            .filter(|_| !self.inner.session_settings)
    }

    /// Maps a failure, and marks the connection broken when the session is gone.
    pub(crate) fn fail(&mut self, error: &tokio_postgres::Error) -> StoreError {
        if ends_session(error) {
            self.broken = true;
        }
        let failure = from_postgres(error);
        if matches!(failure, StoreError::Unavailable(_)) {
            count_unavailable();
        }
        if not_migrated(error) {
            // The application sees a data error, which it may log only at debug level; a forgotten
            // migration must reach the operator.
            if let Some(left_out) = self.inner.not_migrated.allow() {
                tracing::warn!(
                    schema = self.inner.options.schema().map(SchemaName::as_str),
                    left_out,
                    error = %failure,
                    "a store statement found no table or function of its schema: run the migrations"
                );
            }
        }
        failure
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

    /// Runs a statement and returns its rows.
    pub(crate) async fn query(
        &mut self,
        sql: &str,
        params: &[&dyn Param],
    ) -> Result<Vec<Row>, StoreError> {
        self.inner.statements.fetch_add(1, Ordering::Relaxed);
        if self.inner.options.pool_mode() == PoolMode::Session {
            let statement = self.prepare(&self.text(sql)).await?;
            let values: Vec<_> = params.iter().map(|p| p.as_sql()).collect();
            let rows = self.bounded(self.client().query(&statement, &values)).await;
            return self.settle(rows);
        }
        let typed: Vec<_> = params
            .iter()
            .map(|p| (p.as_sql(), p.declared_type()))
            .collect();
        let text = self.text(sql);
        let rows = self.bounded(self.client().query_typed(&text, &typed)).await;
        self.settle(rows)
    }

    /// Runs a statement and returns how many rows it changed.
    pub(crate) async fn execute(
        &mut self,
        sql: &str,
        params: &[&dyn Param],
    ) -> Result<u64, StoreError> {
        self.inner.statements.fetch_add(1, Ordering::Relaxed);
        if self.inner.options.pool_mode() == PoolMode::Session {
            let statement = self.prepare(&self.text(sql)).await?;
            let values: Vec<_> = params.iter().map(|p| p.as_sql()).collect();
            let changed = self
                .bounded(self.client().execute(&statement, &values))
                .await;
            return self.settle(changed);
        }
        let typed: Vec<_> = params
            .iter()
            .map(|p| (p.as_sql(), p.declared_type()))
            .collect();
        let text = self.text(sql);
        let client = self.client();
        let changed = self
            .bounded(async {
                let stream = client.query_typed_raw(&text, typed).await?;
                let mut stream = std::pin::pin!(stream);
                while futures_util::StreamExt::next(&mut stream)
                    .await
                    .transpose()?
                    .is_some()
                {}
                Ok(stream.rows_affected().unwrap_or(0))
            })
            .await;
        self.settle(changed)
    }

    /// The outcome of a bounded statement: a timeout leaves the session busy, so the connection goes.
    fn settle<T>(
        &mut self,
        outcome: Result<Result<T, tokio_postgres::Error>, StoreError>,
    ) -> Result<T, StoreError> {
        match outcome {
            Ok(done) => done.map_err(|e| self.fail(&e)),
            Err(timed_out) => {
                self.broken = true;
                #[cfg(feature = "metrics")]
                metrics::counter!("janitor_db_statement_timeouts_total").increment(1);
                count_unavailable();
                Err(timed_out)
            }
        }
    }

    /// `sql` as this connection must send it: with qualified tables when the session has no `search_path`.
    fn text<'s>(&self, sql: &'s str) -> std::borrow::Cow<'s, str> {
        match self.schema_to_set() {
            Some(schema) => std::borrow::Cow::Owned(crate::qualify::qualify(sql, schema)),
            None => std::borrow::Cow::Borrowed(sql),
        }
    }

    /// Runs `statement` under the client's statement timeout when the session has none of its own: an overrun
    /// is cancelled on the server, and the connection is not reused.
    async fn bounded<T>(
        &self,
        statement: impl std::future::Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> Result<Result<T, tokio_postgres::Error>, StoreError> {
        if self.inner.session_settings {
            return Ok(statement.await);
        }
        let limit = self.inner.options.statement_timeout();
        match tokio::time::timeout(limit, statement).await {
            Ok(done) => Ok(done),
            Err(_) => {
                // Sent before the connection is dropped: a pooler matches the cancel to its client, and forgets
                // the match once the client is gone. Bounded, so an unreachable server cannot hold the caller.
                if let Err(e) = self
                    .inner
                    .cancel
                    .cancel(self.client(), CANCEL_TIMEOUT)
                    .await
                {
                    tracing::warn!(error = %e, "cancelling a statement that overran its timeout failed");
                }
                Err(StoreError::Unavailable(format!(
                    "statement timed out after {} ms (cancelled by the client)",
                    limit.as_millis()
                )))
            }
        }
    }

    /// Starts a transaction. Until [`commit`](Self::commit) succeeds the connection counts as broken: if a
    /// statement fails or the caller's future is dropped midway, the connection leaves the pool instead of
    /// handing an open transaction to the next caller, and the server rolls it back when the session ends.
    pub(crate) async fn begin(&mut self) -> Result<(), StoreError> {
        self.broken = true;
        self.execute("BEGIN", &[]).await.map(drop)
    }

    /// Commits the transaction [`begin`](Self::begin) started; the connection goes back to the pool.
    pub(crate) async fn commit(&mut self) -> Result<(), StoreError> {
        self.execute("COMMIT", &[]).await?;
        self.broken = false;
        Ok(())
    }

    /// Runs `sql`, which takes no parameters, through the simple protocol (never prepared nor cached), under the
    /// same bound as every other statement.
    pub(crate) async fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.inner.statements.fetch_add(1, Ordering::Relaxed);
        let text = self.text(sql);
        let done = self.bounded(self.client().batch_execute(&text)).await;
        self.settle(done)
    }

    /// Whether `observations` was seen with planner statistics through this pool.
    pub(crate) fn statistics_seen(&self) -> bool {
        self.inner.statistics_seen.load(Ordering::Relaxed)
    }

    /// Records that `observations` has planner statistics, which nothing this crate runs removes.
    pub(crate) fn mark_statistics_seen(&self) {
        self.inner.statistics_seen.store(true, Ordering::Relaxed);
    }

    /// Counts a statement run outside [`query`](Self::query) and [`execute`](Self::execute).
    pub(crate) fn count_statement(&self) {
        self.inner.statements.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_says_its_tls_mode_when_built() {
        let line = |query: &str| {
            let url = format!("postgres://janitor:secret-password@db.internal:6432/app{query}");
            tls_line(&DatabaseConfig::builder(&url).build().unwrap())
        };
        let (warn, default) = line("");
        assert!(!warn, "{default}");
        let prefix = "PostgreSQL connections to db.internal:6432: sslmode=prefer (the default)";
        assert!(default.starts_with(prefix), "{default}");
        let (warn, disabled) = line("?sslmode=disable");
        assert!(!warn && disabled.contains("sslmode=disable"), "{disabled}");
        let (warn, required) = line("?sslmode=require");
        assert!(warn && required.contains("sslmode=require"), "{required}");
        assert!(!required.contains("secret-password"), "{required}");
    }
}
