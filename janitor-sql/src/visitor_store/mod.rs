//! The PostgreSQL visitor store.
//!
//! Round trips per call: the candidate lookup, a history read (one visitor or up to ten), a
//! [`returning_visit`](VisitorStore::returning_visit) and every [`record_visit`](VisitorStore::record_visit) are
//! one statement each. So a cookie-path identification whose browser sends what it sent last time costs one round
//! trip (history read + refresh + touch), any other cookie visit two (history, then save + prune + touch), and a
//! cookieless one three (lookup, histories, then create + save), or two when no candidate survives ranking.

use std::collections::HashMap;
use std::sync::Arc;

use janitor_core::config::clamp_cleanup_batch;
use janitor_core::identification::candidates::{LookupRow, Probe};
use janitor_core::identification::network::NetworkDigest;
use janitor_core::identification::payload::ExtendedSignals;
use janitor_core::identification::store::{
    batch_visitors, history_limit, CleanupReport, ReturningHistory, ReturningVisit, VisitWrite,
    VisitorStore, REFRESH_INTERVAL_MS,
};
use janitor_core::Retention;
use janitor_core::StoreError;
use janitor_core::{Observation, VisitorId};
use tokio_postgres::types::Json;
use tokio_postgres::Row;

use crate::database::{Connection, Database};
use crate::error::{unreadable, SetupError};
use crate::params::Param;
use crate::replica::LookupReplica;

mod covering;
pub(crate) mod lookup_rows;
pub(crate) mod statements;

pub use covering::COVERING_LOOKUP_INDEXES;
pub use lookup_rows::LookupRead;

/// Visitors and observations in PostgreSQL, in the tables of `migrations/0001_visitors.sql` (shared with
/// Janitor instances in other languages). Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct PgVisitorStore {
    database: Database,
    retention: Retention,
    lookup_read: LookupRead,
    replica: Option<LookupReplica>,
}

impl PgVisitorStore {
    /// A store over `database` applying `retention`. Run [`migrate`](crate::migrate()) once before use.
    pub fn new(database: Database, retention: Retention) -> Self {
        PgVisitorStore {
            database,
            retention,
            lookup_read: LookupRead::default(),
            replica: None,
        }
    }

    /// The same store reading candidate rows on `replica` while its lag is within the replica's bound, and on
    /// the primary otherwise or when a read there fails. Every other statement stays on the primary. The
    /// replica's pool must work in the same schema as the primary's.
    pub fn with_lookup_replica(self, replica: LookupReplica) -> Result<Self, SetupError> {
        replica.check_schema(&self.database)?;
        Ok(self.reading_on(Some(replica)))
    }

    /// The same store with `replica`, whose schema was checked.
    pub(crate) fn reading_on(mut self, replica: Option<LookupReplica>) -> Self {
        self.replica = replica;
        self
    }

    /// The same store reading candidate rows the way `read` says (the default is the fastest measured; the
    /// others are kept for comparison). The ranking is the same whichever way.
    pub fn with_lookup_read(mut self, read: LookupRead) -> Self {
        self.lookup_read = read;
        self
    }

    /// How this store reads candidate rows.
    pub fn lookup_read(&self) -> LookupRead {
        self.lookup_read
    }

    /// The lookup's rows: on the replica when it may be read, on the primary otherwise, and on the primary
    /// again when the replica fails as unavailable or does not answer within its bound (a data error is the
    /// statement's, and is returned).
    async fn lookup_rows(&self, sql: &str, params: &[&dyn Param]) -> Result<Vec<Row>, StoreError> {
        if let Some(replica) = &self.replica {
            if let Some(done) = replica.query(sql, params).await {
                return done;
            }
        }
        let mut connection = self.database.connection().await?;
        connection.query(sql, params).await
    }

    /// The database handle (for its counters, or the application's own statements).
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// The retention rules this store applies.
    pub fn retention(&self) -> Retention {
        self.retention
    }

    fn keep(&self) -> i64 {
        self.retention.max_per_visitor() as i64
    }
}

/// The columns of an observation row: the write statements' `$3`–`$7`, the network digest and the extended
/// signals.
struct ObservationColumns<'a> {
    platform: Option<&'a str>,
    browser: Option<&'a str>,
    timezone: Option<&'a str>,
    renderer: Option<&'a str>,
    json: Json<&'a Observation>,
    network: Option<&'a str>,
    extended: Option<Json<&'a ExtendedSignals>>,
}

impl<'a> ObservationColumns<'a> {
    fn of(o: &'a Observation) -> Self {
        ObservationColumns {
            platform: o.platform.as_deref(),
            browser: o.browser.as_deref(),
            timezone: o.timezone.as_deref(),
            renderer: o.webgl_renderer(),
            json: Json(o),
            network: o.network.as_ref().map(NetworkDigest::as_str),
            extended: o.extended.as_ref().map(Json),
        }
    }
}

/// The observation of `row`: its JSON at `column`, with the network digest at `network` and the extended
/// signals next to it.
fn observation(row: &Row, column: usize, network: usize) -> Result<Arc<Observation>, StoreError> {
    let Json(mut observation) = row
        .try_get::<_, Json<Observation>>(column)
        .map_err(|e| unreadable("an observation", e))?;
    observation.network = row
        .try_get::<_, Option<String>>(network)
        .map_err(|e| unreadable("a network digest", e))?
        .map(NetworkDigest::from_stored);
    observation.extended = row
        .try_get::<_, Option<Json<ExtendedSignals>>>(network + 1)
        .map_err(|e| unreadable("extended signals", e))?
        .map(|Json(extended)| extended);
    Ok(Arc::new(observation))
}

fn visitor_id(row: &Row, column: usize) -> Result<VisitorId, StoreError> {
    let text: &str = row
        .try_get(column)
        .map_err(|e| unreadable("a visitor id", e))?;
    VisitorId::parse(text).ok_or_else(|| unreadable("a visitor id", "not vis_ and 48 hex digits"))
}

/// The store-wide history limit, as the `LIMIT` parameter.
fn limit_parameter(limit: usize) -> i64 {
    history_limit(limit) as i64
}

impl PgVisitorStore {
    /// Saves `observation` and prunes the visitor's history; `touch` also moves its `last_seen_at`.
    async fn save(
        &self,
        connection: &mut Connection<'_>,
        touch: bool,
        visitor: &VisitorId,
        observation: &Observation,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let c = ObservationColumns::of(observation);
        let cutoff = self.retention.cutoff(now_ms);
        let keep = self.keep();
        connection
            .query(
                statements::SAVE,
                &[
                    &visitor.as_str(),
                    &now_ms,
                    &c.platform,
                    &c.browser,
                    &c.timezone,
                    &c.renderer,
                    &c.json,
                    &cutoff,
                    &keep,
                    &touch,
                    &c.network,
                    &c.extended,
                ],
            )
            .await
            .map(drop)
    }
}

impl VisitorStore for PgVisitorStore {
    async fn find_candidate_rows(
        &self,
        probes: &[Probe],
        now_ms: i64,
    ) -> Result<Vec<LookupRow>, StoreError> {
        if probes.is_empty() {
            return Ok(Vec::new());
        }
        let statement = statements::lookup(probes, self.lookup_read)
            .ok_or_else(|| StoreError::Data("a probe's keys do not fit its family".into()))?;
        let cutoff = self.retention.cutoff(now_ms);
        let mut params: Vec<&dyn Param> = vec![&cutoff];
        for probe in probes {
            params.extend(probe.keys.iter().map(|k| k as &dyn Param));
        }
        let rows = self.lookup_rows(&statement, &params).await?;
        rows.iter()
            .map(|row| {
                let probe: i32 = row.try_get(3).map_err(|e| unreadable("a probe tag", e))?;
                Ok(LookupRow {
                    visitor_id: visitor_id(row, 0)?,
                    seen_at: row.try_get(1).map_err(|e| unreadable("seen_at", e))?,
                    probe: probe as usize,
                    observation: self.lookup_read.observation(row, 2)?,
                })
            })
            .collect()
    }

    async fn recent_observations(
        &self,
        visitor: &VisitorId,
        limit: usize,
        now_ms: i64,
    ) -> Result<Vec<Arc<Observation>>, StoreError> {
        let cutoff = self.retention.cutoff(now_ms);
        let mut connection = self.database.connection().await?;
        let rows = connection
            .query(
                statements::HISTORY,
                &[&visitor.as_str(), &cutoff, &limit_parameter(limit)],
            )
            .await?;
        rows.iter().map(|row| observation(row, 0, 1)).collect()
    }

    async fn returning_visit(
        &self,
        visit: ReturningVisit<'_>,
    ) -> Result<ReturningHistory, StoreError> {
        let cutoff = self.retention.cutoff(visit.now_ms);
        let c = ObservationColumns::of(visit.observation);
        let mut connection = self.database.connection().await?;
        let rows = connection
            .query(
                statements::RETURNING_VISIT,
                &[
                    &visit.visitor.as_str(),
                    &visit.now_ms,
                    &cutoff,
                    &limit_parameter(visit.limit),
                    &visit.refresh,
                    &Json(visit.observation),
                    &REFRESH_INTERVAL_MS,
                    &c.network,
                    &c.extended,
                ],
            )
            .await?;
        let recorded = match rows.first() {
            Some(row) => row
                .try_get(1)
                .map_err(|e| unreadable("a recorded flag", e))?,
            None => false,
        };
        let history = rows
            .iter()
            .map(|row| observation(row, 0, 2))
            .collect::<Result<_, _>>()?;
        Ok(ReturningHistory { history, recorded })
    }

    async fn recent_observations_batch(
        &self,
        visitors: &[VisitorId],
        limit: usize,
        now_ms: i64,
    ) -> Result<HashMap<VisitorId, Vec<Arc<Observation>>>, StoreError> {
        let wanted: Vec<&str> = batch_visitors(visitors)
            .into_iter()
            .map(VisitorId::as_str)
            .collect();
        if wanted.is_empty() {
            return Ok(HashMap::new());
        }
        let cutoff = self.retention.cutoff(now_ms);
        let mut connection = self.database.connection().await?;
        let rows = connection
            .query(
                statements::HISTORY_BATCH,
                &[&wanted, &cutoff, &limit_parameter(limit)],
            )
            .await?;
        let mut histories: HashMap<VisitorId, Vec<Arc<Observation>>> = HashMap::new();
        for row in &rows {
            histories
                .entry(visitor_id(row, 0)?)
                .or_default()
                .push(observation(row, 1, 2)?);
        }
        Ok(histories)
    }

    async fn create_visitor(&self, visitor: &VisitorId, now_ms: i64) -> Result<(), StoreError> {
        let mut connection = self.database.connection().await?;
        connection
            .execute(statements::CREATE, &[&visitor.as_str(), &now_ms])
            .await
            .map(drop)
    }

    async fn save_observation(
        &self,
        visitor: &VisitorId,
        observation: &Observation,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut connection = self.database.connection().await?;
        self.save(&mut connection, false, visitor, observation, now_ms)
            .await
    }

    async fn touch_visitor(&self, visitor: &VisitorId, now_ms: i64) -> Result<(), StoreError> {
        let mut connection = self.database.connection().await?;
        connection
            .execute(statements::TOUCH, &[&visitor.as_str(), &now_ms])
            .await
            .map(drop)
    }

    /// One statement whatever the write: a new visitor is created with its observation (nothing to prune or
    /// touch), a known one saves + prunes + touches, or only touches. A failure writes nothing.
    async fn record_visit(&self, write: VisitWrite<'_>) -> Result<(), StoreError> {
        let mut connection = self.database.connection().await?;
        let visitor = write.visitor.as_str();
        match (write.create, write.observation) {
            (true, Some(o)) => {
                let c = ObservationColumns::of(o);
                connection
                    .execute(
                        statements::CREATE_AND_SAVE,
                        &[
                            &visitor,
                            &write.now_ms,
                            &c.platform,
                            &c.browser,
                            &c.timezone,
                            &c.renderer,
                            &c.json,
                            &c.network,
                            &c.extended,
                        ],
                    )
                    .await
                    .map(drop)
            }
            (true, None) => connection
                .execute(statements::CREATE, &[&visitor, &write.now_ms])
                .await
                .map(drop),
            (false, Some(o)) => {
                self.save(&mut connection, true, write.visitor, o, write.now_ms)
                    .await
            }
            (false, None) => connection
                .execute(statements::TOUCH, &[&visitor, &write.now_ms])
                .await
                .map(drop),
        }
    }

    async fn cleanup(
        &self,
        after: Option<&str>,
        batch: usize,
        now_ms: i64,
    ) -> Result<CleanupReport, StoreError> {
        let batch = clamp_cleanup_batch(batch);
        let limit = batch as i64;
        let cutoff = self.retention.cutoff(now_ms);
        // Each step stands on its own, so a failure part-way loses nothing: the next call redoes what is left.
        let mut connection = self.database.connection().await?;
        let expired = connection
            .query(statements::EXPIRE, &[&cutoff, &limit])
            .await?;
        let mut owners = expired
            .iter()
            .map(|row| row.try_get(0).map_err(|e| unreadable("a visitor id", e)))
            .collect::<Result<Vec<&str>, _>>()?;
        owners.sort_unstable();
        owners.dedup();
        let mut visitors_removed = if owners.is_empty() {
            0
        } else {
            connection
                .execute(statements::REMOVE_EMPTY_STALE, &[&owners, &cutoff])
                .await?
        };

        let page = connection
            .query(
                statements::VISITOR_PAGE,
                &[&after.unwrap_or(""), &(limit + 1)],
            )
            .await?;
        let mut page = page
            .iter()
            .map(|row| row.try_get(0).map_err(|e| unreadable("a visitor id", e)))
            .collect::<Result<Vec<&str>, _>>()?;
        let more_visitors = page.len() > batch;
        page.truncate(batch);
        let mut pruned = 0;
        if !page.is_empty() {
            pruned = connection
                .execute(statements::PRUNE_VISITORS, &[&page, &self.keep()])
                .await?;
            visitors_removed += connection
                .execute(statements::REMOVE_EMPTY_STALE, &[&page, &cutoff])
                .await?;
        }
        let report = CleanupReport {
            expired_deleted: expired.len(),
            pruned: pruned as usize,
            visitors_removed: visitors_removed as usize,
            next_visitor: if more_visitors {
                page.last().map(|id| (*id).to_owned())
            } else {
                None
            },
            has_more_expired: expired.len() == batch || visitors_removed as usize >= batch,
        };
        // Not a failure of the cleanup: the rows above are done, and the next step checks again.
        if let Err(e) = crate::statistics::gather_if_missing(&mut connection).await {
            tracing::warn!(error = %e, "gathering the observations' missing statistics failed");
        }
        Ok(report)
    }

    async fn delete_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError> {
        let mut connection = self.database.connection().await?;
        Ok(connection
            .execute(statements::DELETE_VISITOR, &[&visitor.as_str()])
            .await?
            > 0)
    }
}
