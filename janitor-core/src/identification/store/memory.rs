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

/// Bytes of observations a store holds by default before it evicts (256 MiB; see
/// [`MemoryVisitorStore::with_max_bytes`]).
pub const DEFAULT_MAX_BYTES: usize = 256 << 20;

/// The range of [`MemoryVisitorStore::with_max_bytes`]: 1 MiB to 1 TiB.
pub const MAX_BYTES: std::ops::RangeInclusive<usize> = (1 << 20)..=(1 << 40);

/// What an observation is counted for besides its text: the observation, its entry in the store's maps, its
/// probes' entries in the lookup buckets, and its visitor's entry. Set with the text's factor so that the count
/// stays above the resident memory a store of 50,000 visitors was measured to take, for realistic and for the
/// largest payloads, one or ten per visitor (`janitor-core/examples/memory_per_visitor.rs`, docs/security.md).
const WEIGHT_FIXED: usize = 4_096;
/// What extended client signals add besides their text, and each entry of their version list.
const WEIGHT_EXTENDED: usize = 512;
const WEIGHT_PER_BRAND: usize = 64;
/// Each byte of an observation's text counts this many times: it is held in the observation and again in the
/// probes built from it.
const WEIGHT_PER_TEXT_BYTE: usize = 2;

/// `(seen_at, insertion number)`: newest last, ties broken by insertion order, as `ORDER BY seen_at, id`.
type Slot = (i64, u64);

/// A thread-safe visitor store held in process memory, bounded by [`Retention`], by a number of visitors and by
/// the bytes its observations weigh.
///
/// It is for quick starts, tests and one small instance: nothing survives a restart, and nothing is shared
/// between processes (use the PostgreSQL store for that). Past its capacity ([`DEFAULT_MAX_VISITORS`] unless
/// [`with_max_visitors`](Self::with_max_visitors) says otherwise) a new visitor evicts the one holding the
/// oldest observation, and so does an observation that takes the store past its bytes
/// ([`DEFAULT_MAX_BYTES`] unless [`with_max_bytes`](Self::with_max_bytes) says otherwise), so a flood of
/// cookieless requests, or of observations made as large as the payload allows, costs a bounded amount of
/// memory and the visitors seen most recently stay; docs/security.md gives the memory per visitor.
///
/// A cheap handle: clones share the same visitors, so the engine, cleanup tasks and erasure can each hold one.
/// Data lives as long as the last handle.
#[derive(Debug, Clone)]
pub struct MemoryVisitorStore {
    retention: Retention,
    max_visitors: usize,
    max_bytes: usize,
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
    /// What the observations held weigh ([`weight`]).
    bytes: usize,
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
    weight: usize,
}

impl MemoryVisitorStore {
    /// An empty store with the given retention.
    pub fn new(retention: Retention) -> Self {
        MemoryVisitorStore {
            retention,
            max_visitors: DEFAULT_MAX_VISITORS,
            max_bytes: DEFAULT_MAX_BYTES,
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

    /// A handle on the same visitors whose observations weigh at most `max` bytes (1 MiB to 1 TiB): an
    /// observation that takes them past it evicts the visitors holding the oldest observations, with their
    /// observations, until they fit. An observation weighs 4 KiB and twice its text, which stays above the
    /// resident memory it was measured to take (docs/security.md).
    pub fn with_max_bytes(&self, max: usize) -> Result<Self, ConfigError> {
        Ok(MemoryVisitorStore {
            max_bytes: check("max_bytes", max, &MAX_BYTES)?,
            ..self.clone()
        })
    }

    /// Bytes of observations this handle holds at most.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// What the observations held weigh, in bytes (see [`with_max_bytes`](Self::with_max_bytes)).
    pub fn weight(&self) -> usize {
        self.lock().bytes
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

/// What an observation counts for against the store's bytes: [`WEIGHT_FIXED`] (and [`WEIGHT_EXTENDED`] with its
/// brands when it has extended signals) and its text, counted [`WEIGHT_PER_TEXT_BYTE`] times.
fn weight(observation: &Observation) -> usize {
    let text = |value: &Option<String>| value.as_ref().map_or(0, String::len);
    let mut fixed = WEIGHT_FIXED;
    let mut bytes = text(&observation.user_agent)
        + text(&observation.platform)
        + text(&observation.browser)
        + text(&observation.timezone);
    bytes += observation
        .languages
        .iter()
        .flatten()
        .map(String::len)
        .sum::<usize>();
    if let Some(graphics) = &observation.graphics {
        bytes += text(&graphics.webgl_vendor) + text(&graphics.webgl_renderer);
    }
    if let Some(extended) = &observation.extended {
        bytes += text(&extended.platform_version)
            + text(&extended.calendar)
            + text(&extended.numbering_system)
            + text(&extended.hour_cycle)
            + text(&extended.color_scheme)
            + text(&extended.contrast);
        let brands = extended.full_version_list.iter().flatten();
        bytes += brands
            .clone()
            .map(|entry| entry.brand.len() + entry.version.len())
            .sum::<usize>();
        fixed += WEIGHT_EXTENDED + WEIGHT_PER_BRAND * brands.count();
    }
    fixed + WEIGHT_PER_TEXT_BYTE * bytes
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
            self.evict(&oldest);
        }
    }

    /// Evicts visitors until the observations weigh at most `max` bytes, the one holding the oldest observation
    /// first; never `keep`, the visitor whose observation was just saved.
    fn shed_bytes(&mut self, max: usize, keep: &str) {
        while self.bytes > max {
            let oldest = self.by_time.iter().find_map(|(_, id)| {
                let visitor = self.observations[id].visitor.as_str();
                (visitor != keep).then(|| visitor.to_owned())
            });
            let Some(oldest) = oldest else { return };
            self.evict(&oldest);
        }
    }

    fn evict(&mut self, visitor: &str) {
        if let Some(entry) = self.visitors.remove(visitor) {
            for (_, id) in entry.history {
                self.remove(id);
            }
        }
        self.evicted += 1;
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
        self.bytes -= stored.weight;
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
            // The same signals with another behaviour weigh the same today; counted again all the same, so the
            // count cannot drift if what a refresh may change ever grows.
            let weight = weight(observation);
            self.bytes = self.bytes - stored.weight + weight;
            stored.weight = weight;
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
        let weight = weight(observation);
        inner.bytes += weight;
        inner.observations.insert(
            id,
            StoredObservation {
                visitor: visitor.clone(),
                seen_at: now_ms,
                observation: Arc::new(observation.clone()),
                probes,
                weight,
            },
        );
        let cutoff = self.retention.cutoff(now_ms);
        inner.prune(visitor.as_str(), self.retention.max_per_visitor(), cutoff);
        inner.shed_bytes(self.max_bytes, visitor.as_str());
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
