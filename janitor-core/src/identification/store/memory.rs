//! The in-memory visitor store: the embedded default for quick starts and the reference for other stores.
//!
//! It keeps the same indexes a database would (one ordered bucket per probe key, one per visitor, one by time),
//! so lookups cost what they cost on PostgreSQL — a bounded walk of a few buckets — and never scan every
//! observation. Everything sits behind one mutex, held only for the synchronous work of a call.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{
    batch_visitors, history_limit, CleanupReport, ReturningHistory, ReturningVisit, StoreError,
    VisitorStore, REFRESH_INTERVAL_MS,
};
use crate::config::{check, clamp_cleanup_batch, ConfigError};
use crate::identification::candidates::{probes_for, LookupRow, Probe, ROWS_PER_PROBE};
use crate::identification::config::Retention;
use crate::identification::observation::Observation;
use crate::visitor::VisitorId;

/// Expired observations each write retires.
const EXPIRE_PER_WRITE: usize = 8;

/// Visitors a store holds by default before it evicts (see [`MemoryVisitorStore::with_max_visitors`]).
pub const DEFAULT_MAX_VISITORS: usize = 50_000;

/// The range of [`MemoryVisitorStore::with_max_visitors`].
pub const MAX_VISITORS: std::ops::RangeInclusive<usize> = 1..=10_000_000;

/// `(seen_at, insertion number)`: newest last, ties broken by insertion order, as `ORDER BY seen_at, id`.
type Slot = (i64, u64);

/// A thread-safe visitor store held in process memory, bounded by [`Retention`] and by a number of visitors.
///
/// It is for quick starts, tests and one small instance: nothing survives a restart, and nothing is shared
/// between processes (use the PostgreSQL store for that). Past its capacity ([`DEFAULT_MAX_VISITORS`] unless
/// [`with_max_visitors`](Self::with_max_visitors) says otherwise) a new visitor evicts the one holding the
/// oldest observation, so a flood of cookieless requests costs a bounded amount of memory and the visitors
/// seen most recently stay; docs/security.md gives the memory per visitor.
///
/// A cheap handle: clones share the same visitors, so the engine, cleanup tasks and erasure can each hold one.
/// Data lives as long as the last handle.
#[derive(Debug, Clone)]
pub struct MemoryVisitorStore {
    retention: Retention,
    max_visitors: usize,
    inner: Arc<Mutex<Inner>>,
}

impl Default for MemoryVisitorStore {
    fn default() -> Self {
        MemoryVisitorStore::new(Retention::default())
    }
}

/// The visitors behind the lock. [`MemoryStores`](crate::MemoryStores) holds it, with every other store's
/// lock, while it erases a browser.
#[derive(Debug, Default)]
pub(crate) struct Inner {
    next_slot: u64,
    evicted: u64,
    visitors: BTreeMap<String, VisitorEntry>,
    observations: HashMap<u64, StoredObservation>,
    by_time: BTreeSet<Slot>,
    buckets: HashMap<Probe, BTreeSet<Slot>>,
}

#[derive(Debug)]
struct VisitorEntry {
    last_seen_at: i64,
    history: BTreeSet<Slot>,
}

#[derive(Debug)]
struct StoredObservation {
    visitor: VisitorId,
    seen_at: i64,
    observation: Arc<Observation>,
    probes: Vec<Probe>,
}

impl MemoryVisitorStore {
    /// An empty store with the given retention.
    pub fn new(retention: Retention) -> Self {
        MemoryVisitorStore {
            retention,
            max_visitors: DEFAULT_MAX_VISITORS,
            inner: Arc::default(),
        }
    }

    /// A handle on the same visitors that applies `retention` instead.
    pub fn with_retention(&self, retention: Retention) -> Self {
        MemoryVisitorStore {
            retention,
            ..self.clone()
        }
    }

    /// A handle on the same visitors that holds at most `max` of them (1–10,000,000): creating one more evicts
    /// the visitor holding the oldest observation, with its observations.
    pub fn with_max_visitors(&self, max: usize) -> Result<Self, ConfigError> {
        Ok(MemoryVisitorStore {
            max_visitors: check("max_visitors", max, &MAX_VISITORS)?,
            ..self.clone()
        })
    }

    /// Visitors this handle holds at most.
    pub fn max_visitors(&self) -> usize {
        self.max_visitors
    }

    /// Visitors evicted to stay within the capacity since the store was made (for tests and metrics).
    pub fn evicted_count(&self) -> u64 {
        self.lock().evicted
    }

    /// The retention rules this store applies.
    pub fn retention(&self) -> Retention {
        self.retention
    }

    /// Number of visitors held (for tests and metrics).
    pub fn visitor_count(&self) -> usize {
        self.lock().visitors.len()
    }

    /// Number of observations held, expired or not (for tests and metrics).
    pub fn observation_count(&self) -> usize {
        self.lock().observations.len()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        // No call panics while holding the lock, and every mutation leaves the indexes consistent before it
        // could; a poisoned lock therefore still guards consistent data.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Inner {
    /// Evicts visitors until fewer than `max` are left: the one holding the oldest observation first, then
    /// (when none holds any) the first by id.
    fn make_room(&mut self, max: usize) {
        while self.visitors.len() >= max {
            let oldest = match self.by_time.first() {
                Some((_, id)) => self.observations[id].visitor.as_str().to_owned(),
                None => match self.visitors.keys().next() {
                    Some(first) => first.clone(),
                    None => return,
                },
            };
            if let Some(entry) = self.visitors.remove(&oldest) {
                for (_, id) in entry.history {
                    self.remove(id);
                }
            }
            self.evicted += 1;
        }
    }

    /// Whether a visitor row exists.
    pub(crate) fn has_visitor(&self, visitor: &VisitorId) -> bool {
        self.visitors.contains_key(visitor.as_str())
    }

    /// Deletes a visitor with its observations; returns whether it existed.
    pub(crate) fn remove_visitor(&mut self, visitor: &VisitorId) -> bool {
        let Some(entry) = self.visitors.remove(visitor.as_str()) else {
            return false;
        };
        for (_, id) in entry.history {
            self.remove(id);
        }
        true
    }

    fn remove(&mut self, id: u64) {
        let Some(stored) = self.observations.remove(&id) else {
            return;
        };
        let slot = (stored.seen_at, id);
        self.by_time.remove(&slot);
        if let Some(visitor) = self.visitors.get_mut(stored.visitor.as_str()) {
            visitor.history.remove(&slot);
        }
        for probe in stored.probes {
            if let Some(bucket) = self.buckets.get_mut(&probe) {
                bucket.remove(&slot);
                if bucket.is_empty() {
                    self.buckets.remove(&probe);
                }
            }
        }
    }

    /// Drops a visitor's expired observations and all but its `keep` newest.
    fn prune(&mut self, visitor: &str, keep: usize, cutoff: i64) -> usize {
        let Some(entry) = self.visitors.get(visitor) else {
            return 0;
        };
        let doomed: Vec<u64> = entry
            .history
            .iter()
            .rev()
            .enumerate()
            .filter(|(rank, (seen_at, _))| *rank >= keep || *seen_at < cutoff)
            .map(|(_, (_, id))| *id)
            .collect();
        let count = doomed.len();
        for id in doomed {
            self.remove(id);
        }
        count
    }

    /// Deletes at most `limit` expired observations, oldest first, and the visitors they leave empty and
    /// stale. Returns the observations and visitors removed.
    fn expire(&mut self, cutoff: i64, limit: usize) -> (usize, usize) {
        let expired: Vec<u64> = self
            .by_time
            .iter()
            .take_while(|(seen_at, _)| *seen_at < cutoff)
            .take(limit)
            .map(|(_, id)| *id)
            .collect();
        let mut visitors_removed = 0;
        for id in &expired {
            let Some(owner) = self.observations.get(id).map(|o| o.visitor.clone()) else {
                continue;
            };
            self.remove(*id);
            let stale = self
                .visitors
                .get(owner.as_str())
                .is_some_and(|v| v.history.is_empty() && v.last_seen_at < cutoff);
            if stale {
                self.visitors.remove(owner.as_str());
                visitors_removed += 1;
            }
        }
        (expired.len(), visitors_removed)
    }

    fn history(&self, visitor: &str, limit: usize, cutoff: i64) -> Vec<Arc<Observation>> {
        let Some(entry) = self.visitors.get(visitor) else {
            return Vec::new();
        };
        entry
            .history
            .iter()
            .rev()
            .take_while(|(seen_at, _)| *seen_at >= cutoff)
            .take(limit)
            .map(|(_, id)| Arc::clone(&self.observations[id].observation))
            .collect()
    }

    /// Moves observation `id`, at `slot`, to `seen_at` in every index that holds it, as `observation` (the
    /// same signals, so the same probes; its behaviour may be newer).
    fn refresh(&mut self, slot: Slot, seen_at: i64, observation: &Observation) {
        let id = slot.1;
        let Some(stored) = self.observations.get_mut(&id) else {
            return;
        };
        stored.seen_at = seen_at;
        if *stored.observation != *observation {
            stored.observation = Arc::new(observation.clone());
        }
        let moved = (seen_at, id);
        self.by_time.remove(&slot);
        self.by_time.insert(moved);
        if let Some(visitor) = self.visitors.get_mut(stored.visitor.as_str()) {
            visitor.history.remove(&slot);
            visitor.history.insert(moved);
        }
        for probe in &stored.probes {
            if let Some(bucket) = self.buckets.get_mut(probe) {
                bucket.remove(&slot);
                bucket.insert(moved);
            }
        }
    }
}

impl VisitorStore for MemoryVisitorStore {
    async fn find_candidate_rows(
        &self,
        probes: &[Probe],
        now_ms: i64,
    ) -> Result<Vec<LookupRow>, StoreError> {
        if probes.is_empty() {
            return Ok(Vec::new());
        }
        let cutoff = self.retention.cutoff(now_ms);
        let inner = self.lock();
        let mut rows = Vec::new();
        for (position, probe) in probes.iter().enumerate() {
            let Some(bucket) = inner.buckets.get(probe) else {
                continue;
            };
            for (seen_at, id) in bucket
                .iter()
                .rev()
                .take_while(|(seen_at, _)| *seen_at >= cutoff)
                .take(ROWS_PER_PROBE + 1)
            {
                let stored = &inner.observations[id];
                rows.push(LookupRow {
                    visitor_id: stored.visitor.clone(),
                    seen_at: *seen_at,
                    probe: position,
                    observation: Arc::clone(&stored.observation),
                });
            }
        }
        Ok(rows)
    }

    async fn recent_observations(
        &self,
        visitor: &VisitorId,
        limit: usize,
        now_ms: i64,
    ) -> Result<Vec<Arc<Observation>>, StoreError> {
        let cutoff = self.retention.cutoff(now_ms);
        Ok(self
            .lock()
            .history(visitor.as_str(), history_limit(limit), cutoff))
    }

    async fn returning_visit(
        &self,
        visit: ReturningVisit<'_>,
    ) -> Result<ReturningHistory, StoreError> {
        let cutoff = self.retention.cutoff(visit.now_ms);
        let mut inner = self.lock();
        let key = visit.visitor.as_str();
        let history = inner.history(key, history_limit(visit.limit), cutoff);
        let recorded = visit.refresh
            && history
                .first()
                .is_some_and(|o| o.same_signals(visit.observation));
        if recorded {
            let stale = visit.now_ms - REFRESH_INTERVAL_MS;
            let newest = inner
                .visitors
                .get(key)
                .and_then(|v| v.history.last().copied());
            if let Some(slot) = newest.filter(|(seen_at, _)| *seen_at < stale) {
                inner.refresh(slot, visit.now_ms, visit.observation);
            }
            if let Some(entry) = inner.visitors.get_mut(key) {
                if entry.last_seen_at < stale {
                    entry.last_seen_at = visit.now_ms;
                }
            }
        }
        Ok(ReturningHistory { history, recorded })
    }

    async fn recent_observations_batch(
        &self,
        visitors: &[VisitorId],
        limit: usize,
        now_ms: i64,
    ) -> Result<HashMap<VisitorId, Vec<Arc<Observation>>>, StoreError> {
        let cutoff = self.retention.cutoff(now_ms);
        let inner = self.lock();
        let mut out = HashMap::new();
        for visitor in batch_visitors(visitors) {
            let history = inner.history(visitor.as_str(), history_limit(limit), cutoff);
            if !history.is_empty() {
                out.insert(visitor.clone(), history);
            }
        }
        Ok(out)
    }

    async fn create_visitor(&self, visitor: &VisitorId, now_ms: i64) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if inner.visitors.contains_key(visitor.as_str()) {
            return Err(StoreError::Data("visitor already exists".into()));
        }
        inner.make_room(self.max_visitors);
        inner.visitors.insert(
            visitor.as_str().to_owned(),
            VisitorEntry {
                last_seen_at: now_ms,
                history: BTreeSet::new(),
            },
        );
        Ok(())
    }

    async fn save_observation(
        &self,
        visitor: &VisitorId,
        observation: &Observation,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        // Indexed under every bucket whose keys it has: the buckets a later lookup may probe.
        let probes = probes_for(observation);
        let mut inner = self.lock();
        let inner = &mut *inner;
        let Some(entry) = inner.visitors.get_mut(visitor.as_str()) else {
            return Err(StoreError::Data("unknown visitor".into()));
        };
        let id = inner.next_slot;
        inner.next_slot += 1;
        let slot = (now_ms, id);
        entry.history.insert(slot);
        inner.by_time.insert(slot);
        for probe in &probes {
            inner.buckets.entry(probe.clone()).or_default().insert(slot);
        }
        inner.observations.insert(
            id,
            StoredObservation {
                visitor: visitor.clone(),
                seen_at: now_ms,
                observation: Arc::new(observation.clone()),
                probes,
            },
        );
        let cutoff = self.retention.cutoff(now_ms);
        inner.prune(visitor.as_str(), self.retention.max_per_visitor(), cutoff);
        // With no maintenance task running, expired rows would pile up; each write retires a few, so memory
        // stays bounded by what retention allows.
        inner.expire(cutoff, EXPIRE_PER_WRITE);
        Ok(())
    }

    async fn touch_visitor(&self, visitor: &VisitorId, now_ms: i64) -> Result<(), StoreError> {
        if let Some(entry) = self.lock().visitors.get_mut(visitor.as_str()) {
            entry.last_seen_at = entry.last_seen_at.max(now_ms);
        }
        Ok(())
    }

    async fn cleanup(
        &self,
        after: Option<&str>,
        batch: usize,
        now_ms: i64,
    ) -> Result<CleanupReport, StoreError> {
        let batch = clamp_cleanup_batch(batch);
        let cutoff = self.retention.cutoff(now_ms);
        let mut inner = self.lock();
        let (expired, expired_visitors) = inner.expire(cutoff, batch);
        let lower = after.map_or(Bound::Unbounded, |a| Bound::Excluded(a.to_owned()));
        let page: Vec<String> = inner
            .visitors
            .range((lower, Bound::Unbounded))
            .take(batch + 1)
            .map(|(id, _)| id.clone())
            .collect();
        let more_visitors = page.len() > batch;
        let page = &page[..page.len().min(batch)];
        let mut report = CleanupReport {
            expired_deleted: expired,
            visitors_removed: expired_visitors,
            ..CleanupReport::default()
        };
        for id in page {
            report.pruned += inner.prune(id, self.retention.max_per_visitor(), i64::MIN);
            let stale = inner
                .visitors
                .get(id)
                .is_some_and(|v| v.history.is_empty() && v.last_seen_at < cutoff);
            if stale {
                inner.visitors.remove(id);
                report.visitors_removed += 1;
            }
        }
        report.next_visitor = if more_visitors {
            page.last().cloned()
        } else {
            None
        };
        report.has_more_expired = expired == batch || report.visitors_removed >= batch;
        Ok(report)
    }

    async fn delete_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError> {
        Ok(self.lock().remove_visitor(visitor))
    }
}
