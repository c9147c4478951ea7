//! The visitor store: where visitors and their observations live.
//!
//! One trait, implemented in memory here ([`MemoryVisitorStore`], the embedded default and the reference) and
//! on PostgreSQL in `janitor-sql`. Every method takes the current time from the caller, so behaviour around
//! retention is deterministic and testable. The behaviour every implementation must show is written down once,
//! as the suite in `testing::visitor_store` (feature `testing`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use crate::error::StoreError;
use crate::identification::candidates::{LookupRow, Probe};
use crate::identification::observation::Observation;
use crate::visitor::VisitorId;

mod memory;

pub use memory::{
    MemoryVisitorStore, DEFAULT_MAX_BYTES, DEFAULT_MAX_VISITORS, MAX_BYTES, MAX_VISITORS,
};

/// Most visitors whose histories are read in one call.
pub const MAX_BATCH_VISITORS: usize = crate::identification::candidates::CANDIDATE_LIMIT;

/// The visitors a batch history read considers: the first [`MAX_BATCH_VISITORS`] distinct ones, in order.
/// Every store applies this one rule.
pub fn batch_visitors(visitors: &[VisitorId]) -> Vec<&VisitorId> {
    let mut wanted: Vec<&VisitorId> = Vec::with_capacity(MAX_BATCH_VISITORS);
    for visitor in visitors {
        if wanted.len() == MAX_BATCH_VISITORS {
            break;
        }
        if !wanted.contains(&visitor) {
            wanted.push(visitor);
        }
    }
    wanted
}

/// A history read's limit as every store applies it: at least 1, at most the most observations a visitor keeps.
pub fn history_limit(limit: usize) -> usize {
    limit.clamp(
        1,
        crate::identification::config::MAX_OBSERVATIONS_PER_VISITOR.max,
    )
}

/// What one cleanup call did, and where the next should continue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanupReport {
    /// Expired observations deleted.
    pub expired_deleted: usize,
    /// Observations pruned from visitors over the per-visitor limit.
    pub pruned: usize,
    /// Visitors removed because they had no observation left and were not seen within retention.
    pub visitors_removed: usize,
    /// Pass this as `after` to the next call to continue the visitor scan; `None` when the scan is complete.
    pub next_visitor: Option<String>,
    /// A batch limit was reached: another call has more to delete.
    pub has_more_expired: bool,
}

/// The writes that end one identification, so that a store can do them in as few round trips as it can.
#[derive(Debug, Clone, Copy)]
pub struct VisitWrite<'a> {
    /// Whose visit.
    pub visitor: &'a VisitorId,
    /// The visitor was minted by this identification and must be created first.
    pub create: bool,
    /// The observation to save (and then prune the visitor's history), if it may be learned.
    pub observation: Option<&'a Observation>,
    /// Now, epoch milliseconds: creation time, `seen_at` and the touch.
    pub now_ms: i64,
}

/// How far behind a visit a returning visitor's `last_seen_at`, and the `seen_at` of an observation refreshed by
/// [`VisitorStore::returning_visit`], may stay: one minute. Within it a repeat visit writes nothing, so a browser
/// polling the endpoint costs reads only; retention (days) and candidate recency never need finer times.
pub const REFRESH_INTERVAL_MS: i64 = 60_000;

/// The first store call of a visit carrying a cookie: its history read, which may also record the visit.
#[derive(Debug, Clone, Copy)]
pub struct ReturningVisit<'a> {
    /// The visitor the cookie names.
    pub visitor: &'a VisitorId,
    /// This visit's observation.
    pub observation: &'a Observation,
    /// The engine would learn `observation` if the newest retained observation had its signals (it is not
    /// sparse: see [`compare`](crate::identification::similarity::compare)); only then may the store record
    /// the visit itself.
    pub refresh: bool,
    /// Most observations to return (see [`history_limit`]).
    pub limit: usize,
    /// Now, epoch milliseconds.
    pub now_ms: i64,
}

/// What [`VisitorStore::returning_visit`] found, and whether it recorded the visit.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReturningHistory {
    /// The retained observations as they were before the call, newest first.
    pub history: Vec<Arc<Observation>>,
    /// The newest observation had the visit's signals and `refresh` was set: the visit is recorded (the
    /// observation refreshed, the visitor touched) and needs no [`record_visit`](VisitorStore::record_visit).
    pub recorded: bool,
}

/// Storage of visitors and observations. All times are epoch milliseconds.
///
/// Futures are `Send` so that a store can be shared by a multi-threaded server.
pub trait VisitorStore: Send + Sync {
    /// Runs the probes in one go and returns their rows (each probe: observations matching its keys with
    /// `seen_at >= cutoff`, newest first, at most [`ROWS_PER_PROBE`](crate::identification::candidates::ROWS_PER_PROBE) + 1 rows),
    /// each tagged with the probe's position in `probes`. An empty `probes` must not touch storage. A row may
    /// carry the whole observation or only its
    /// [`compared_part`](crate::identification::similarity::compared_part); either ranks the same.
    fn find_candidate_rows(
        &self,
        probes: &[Probe],
        now_ms: i64,
    ) -> impl Future<Output = Result<Vec<LookupRow>, StoreError>> + Send;

    /// Up to `limit` retained observations of one visitor, newest first (`seen_at` then insertion order).
    fn recent_observations(
        &self,
        visitor: &VisitorId,
        limit: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<Vec<Arc<Observation>>, StoreError>> + Send;

    /// A cookie visit's history read, which records the visit in the same call when it can: when
    /// `visit.refresh` is set and the newest retained observation has the
    /// [same signals](Observation::same_signals) as `visit.observation` (its behaviour summary may differ),
    /// the store moves that observation's `seen_at` forward to `now_ms` and gives it the visit's behaviour
    /// (the whole of `visit.observation`), and moves the visitor's `last_seen_at` forward — each only when it
    /// is older than [`REFRESH_INTERVAL_MS`] — instead of saving a copy, and returns `recorded: true`.
    /// Otherwise it writes nothing. A returning browser usually describes the same device as last time, with
    /// a new page age and event counts, so its visit costs one call, and its history keeps distinct devices
    /// rather than copies of one; the newest keeps a behaviour summary at most a refresh interval old.
    ///
    /// The default reads the history and records nothing; the engine then calls `record_visit` as it would
    /// without this method.
    fn returning_visit(
        &self,
        visit: ReturningVisit<'_>,
    ) -> impl Future<Output = Result<ReturningHistory, StoreError>> + Send {
        async move {
            let history = self
                .recent_observations(visit.visitor, visit.limit, visit.now_ms)
                .await?;
            Ok(ReturningHistory {
                history,
                recorded: false,
            })
        }
    }

    /// The same for up to [`MAX_BATCH_VISITORS`] visitors at once (duplicates ignored, extra ids dropped).
    /// Visitors with no retained observation are absent from the map.
    fn recent_observations_batch(
        &self,
        visitors: &[VisitorId],
        limit: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<HashMap<VisitorId, Vec<Arc<Observation>>>, StoreError>> + Send;

    /// Creates a visitor seen first and last at `now_ms`. An id that exists already is a [`StoreError::Data`].
    fn create_visitor(
        &self,
        visitor: &VisitorId,
        now_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Saves an observation seen at `now_ms`, then prunes the visitor to the newest observations allowed by
    /// retention and drops its expired ones. An unknown visitor is a [`StoreError::Data`].
    fn save_observation(
        &self,
        visitor: &VisitorId,
        observation: &Observation,
        now_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Moves `last_seen_at` forward to `now_ms` (never backwards). Unknown visitors are ignored.
    fn touch_visitor(
        &self,
        visitor: &VisitorId,
        now_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The writes that end an identification: create (if new), save + prune (if any), touch. Stores that can
    /// do this in fewer round trips override it; the result must be the same as these calls in order.
    fn record_visit(
        &self,
        write: VisitWrite<'_>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        async move {
            if write.create {
                self.create_visitor(write.visitor, write.now_ms).await?;
            }
            if let Some(observation) = write.observation {
                self.save_observation(write.visitor, observation, write.now_ms)
                    .await?;
            }
            self.touch_visitor(write.visitor, write.now_ms).await
        }
    }

    /// One bounded maintenance step: deletes at most `batch` expired observations (oldest first), prunes the
    /// next `batch` visitors after `after` (by id) to the per-visitor limit, and removes those of them left with
    /// no observation and not seen within retention. `batch` is 1–1000 (see
    /// [`cleanup_batch`](crate::config::cleanup_batch)); stores clamp it.
    fn cleanup(
        &self,
        after: Option<&str>,
        batch: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<CleanupReport, StoreError>> + Send;

    /// Deletes a visitor and, with it, every observation. Returns whether it existed.
    ///
    /// Only the visitor store's rows: to erase a browser, call
    /// [`Stores::erase_visitor`](crate::Stores::erase_visitor), which also erases it from evidence without
    /// deleting what evidence says about accounts. (On PostgreSQL the foreign keys of `application_events` and
    /// `device_links` cascade from this row to every event and link naming the browser.)
    fn delete_visitor(
        &self,
        visitor: &VisitorId,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}
