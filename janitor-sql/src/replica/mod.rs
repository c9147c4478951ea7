//! A read replica for the cookieless lookup: a pool on a hot standby (PostgreSQL's own streaming replication),
//! used while its replay lag is within a bound, with the primary as the fall-back.
//!
//! Only the candidate lookup goes there: it is read-only, the heaviest read of an identification, and a little
//! lag costs at most a match it could have made (a browser first seen less than the bound ago is not yet a
//! candidate). Everything that writes, or reads what the same identification wrote, stays on the primary.

mod env;
mod lag;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use janitor_core::config::Limit;
use janitor_core::StoreError;
use tokio_postgres::Row;

use crate::config::SchemaName;
use crate::database::Database;
use crate::error::SetupError;
use crate::params::Param;

pub use env::REPLICA_ENV_VARIABLES;
pub use lag::ReplicaState;

/// The most replay lag the lookup accepts before it reads the primary instead (milliseconds; default 1 s).
pub const REPLICA_MAX_LAG_MS: Limit<u64> = Limit::new("replica_max_lag_ms", 1_000, 1, 600_000);
/// How often the lag is read from the replica (milliseconds; default 500 ms): at most one extra statement per
/// interval and process, made by the lookup that finds the last reading too old.
pub const REPLICA_CHECK_INTERVAL_MS: Limit<u64> =
    Limit::new("replica_check_interval_ms", 500, 10, 60_000);
/// The longest a lookup waits on the replica before it reads the primary instead (milliseconds; default
/// 1 s): once for a connection and the lookup's statement together, and once for a lag reading. A standby
/// that stops answering without closing its connections (a lost machine, a partition) never enforces its own
/// statement timeout, so this bound is the client's.
pub const REPLICA_TIMEOUT_MS: Limit<u64> = Limit::new("replica_timeout_ms", 1_000, 10, 60_000);

/// Where the cookieless lookup may read: a pool on a replica, its accepted lag, and what it last found there.
/// Cheap to clone; clones share the pool and the last reading.
#[derive(Clone)]
pub struct LookupReplica {
    inner: Arc<Inner>,
    timeout: Duration,
}

struct Inner {
    database: Database,
    max_lag: Duration,
    check_every: Duration,
    /// The last reading and when it was taken; `None` before the first.
    last: Mutex<Option<(Instant, ReplicaState)>>,
    /// A lookup is reading the lag now: the others go on with the last reading. Taken through [`Checking`].
    checking: AtomicBool,
}

impl std::fmt::Debug for LookupReplica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LookupReplica")
            .field("max_lag", &self.inner.max_lag)
            .field("check_every", &self.inner.check_every)
            .field("timeout", &self.timeout)
            .field("last", &self.last_state())
            .finish_non_exhaustive()
    }
}

impl LookupReplica {
    /// The replica behind `database` (built like the primary's, with the same schema), accepting up to
    /// `max_lag_ms` of replay lag and reading it every `check_interval_ms`, waiting on it at most
    /// [`REPLICA_TIMEOUT_MS`]'s default (see [`with_timeout_ms`](Self::with_timeout_ms)). Opens nothing yet.
    pub fn new(
        database: Database,
        max_lag_ms: u64,
        check_interval_ms: u64,
    ) -> Result<LookupReplica, SetupError> {
        let max_lag = REPLICA_MAX_LAG_MS.check(max_lag_ms)?;
        let check_every = REPLICA_CHECK_INTERVAL_MS.check(check_interval_ms)?;
        Ok(LookupReplica {
            inner: Arc::new(Inner {
                database,
                max_lag: Duration::from_millis(max_lag),
                check_every: Duration::from_millis(check_every),
                last: Mutex::new(None),
                checking: AtomicBool::new(false),
            }),
            timeout: Duration::from_millis(REPLICA_TIMEOUT_MS.default),
        })
    }

    /// The same replica, waiting at most `ms` on it before the lookup reads the primary: for a connection and
    /// the lookup's statement together, and for a lag reading ([`REPLICA_TIMEOUT_MS`]: 10–60,000). Give it a
    /// little more than the lookup takes on the replica at its busiest; what the bound costs is one wait this
    /// long per lookup in flight when the standby goes silent.
    pub fn with_timeout_ms(self, ms: u64) -> Result<LookupReplica, SetupError> {
        let timeout = Duration::from_millis(REPLICA_TIMEOUT_MS.check(ms)?);
        Ok(LookupReplica { timeout, ..self })
    }

    /// How long a lookup waits on the replica before it reads the primary.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The replica's pool (for its counters, or the application's own read-only statements).
    pub fn database(&self) -> &Database {
        &self.inner.database
    }

    /// Refuses a replica whose pool works in another schema than `primary`'s: its lookups would read other
    /// tables.
    pub(crate) fn check_schema(&self, primary: &Database) -> Result<(), SetupError> {
        let (ours, theirs) = (primary.schema(), self.inner.database.schema());
        if ours == theirs {
            return Ok(());
        }
        Err(SetupError::Pool(format!(
            "the lookup replica's schema ({}) is not the primary's ({})",
            theirs.map_or("none", SchemaName::as_str),
            ours.map_or("none", SchemaName::as_str)
        )))
    }

    /// What the last reading found, if one was taken.
    pub fn last_state(&self) -> Option<ReplicaState> {
        self.inner
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .map(|(_, state)| state)
    }

    /// Runs the lookup's statement on the replica when it may be read there now. `None` sends it to the
    /// primary: the replica may not be read, or it failed as unavailable or did not answer within
    /// [`timeout`](Self::timeout), and is left alone until the next reading. A data error is the statement's
    /// own, and is returned.
    pub(crate) async fn query(
        &self,
        sql: &str,
        params: &[&dyn Param],
    ) -> Option<Result<Vec<Row>, StoreError>> {
        let database = self.usable().await?;
        match database.query_within(self.timeout, sql, params).await {
            Err(StoreError::Unavailable(_)) => {
                self.failed();
                None
            }
            done => Some(done),
        }
    }

    /// The replica's pool when the lookup may read there now: the last reading is fresh and within the bound.
    /// A lookup that finds the reading older than the interval takes a new one first, unless another lookup
    /// is taking it.
    async fn usable(&self) -> Option<&Database> {
        let last = *self
            .inner
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let fresh = last.is_some_and(|(at, _)| at.elapsed() < self.inner.check_every);
        let state = if fresh {
            last.map(|(_, state)| state)
        } else if let Some(_taking) = Checking::take(&self.inner.checking) {
            let state = lag::read(&self.inner.database, self.timeout).await;
            self.record(state);
            Some(state)
        } else {
            last.map(|(_, state)| state)
        };
        let usable = state.is_some_and(|state| state.accepts(self.inner.max_lag));
        count_read(usable);
        usable.then_some(&self.inner.database)
    }

    /// A read on the replica failed as unavailable: the lookup goes to the primary until the next reading.
    fn failed(&self) {
        self.record(ReplicaState::Unreachable);
    }

    fn record(&self, state: ReplicaState) {
        #[cfg(feature = "metrics")]
        if let ReplicaState::Replaying { lag } = state {
            metrics::gauge!("janitor_db_replica_lag_seconds").set(lag.as_secs_f64());
        }
        *self
            .inner
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = Some((Instant::now(), state));
    }
}

/// The right to take the next lag reading, held by one lookup at a time. Dropping it gives the right back,
/// however the reading ends: a lookup whose request is dropped while it waits on the replica (its client went
/// away) must not leave the right taken, or no reading would be taken again and the last one would stand.
struct Checking<'a>(&'a AtomicBool);

impl<'a> Checking<'a> {
    /// The right, unless another lookup holds it.
    fn take(flag: &'a AtomicBool) -> Option<Checking<'a>> {
        flag.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| Checking(flag))
    }
}

impl Drop for Checking<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

fn count_read(on_replica: bool) {
    #[cfg(feature = "metrics")]
    metrics::counter!(
        "janitor_db_lookups_total",
        "on" => if on_replica { "replica" } else { "primary" }
    )
    .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = on_replica;
}
