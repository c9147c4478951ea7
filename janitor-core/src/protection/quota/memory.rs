//! Quota counters in process memory: exact for one instance (the embedded default and the reference).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{ClaimOutcome, QuotaClaim, QuotaStore};
use crate::error::StoreError;

/// Counters behind one mutex, with an index by reset time so cleanup reads only ended windows. A cheap handle:
/// clones share the same counters.
#[derive(Debug, Clone, Default)]
pub struct MemoryQuotaStore {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    rows: HashMap<String, Row>,
    by_reset: BTreeSet<(i64, String)>,
}

#[derive(Debug, Clone, Copy)]
struct Row {
    used: u32,
    reset_at: i64,
}

impl MemoryQuotaStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryQuotaStore::default()
    }

    /// `(used, reset_at)` of a counter, for tests and metrics.
    pub fn counter(&self, id: &str) -> Option<(u32, i64)> {
        self.lock().rows.get(id).map(|r| (r.used, r.reset_at))
    }

    /// Number of counters held.
    pub fn len(&self) -> usize {
        self.lock().rows.len()
    }

    /// Whether no counter is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every mutation keeps the map and the index consistent before anything could panic.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Inner {
    fn set(&mut self, id: &str, row: Row) {
        if let Some(old) = self.rows.insert(id.to_owned(), row) {
            self.by_reset.remove(&(old.reset_at, id.to_owned()));
        }
        self.by_reset.insert((row.reset_at, id.to_owned()));
    }
}

impl QuotaStore for MemoryQuotaStore {
    async fn claim(&self, claim: &QuotaClaim) -> Result<ClaimOutcome, StoreError> {
        let mut inner = self.lock();
        let fresh = Row {
            used: 1,
            reset_at: claim.reset_at(),
        };
        match inner.rows.get(&claim.id).copied() {
            None => inner.set(&claim.id, fresh),
            Some(row) if row.reset_at <= claim.window_start => inner.set(&claim.id, fresh),
            Some(row) if row.used < claim.limit => inner.set(
                &claim.id,
                Row {
                    used: row.used + 1,
                    ..row
                },
            ),
            Some(row) => {
                return Ok(ClaimOutcome::Denied {
                    reset_at: Some(row.reset_at),
                })
            }
        }
        Ok(ClaimOutcome::Allowed)
    }

    async fn cleanup(&self, batch: usize, now_ms: i64) -> Result<usize, StoreError> {
        let mut inner = self.lock();
        let ended: Vec<(i64, String)> = inner
            .by_reset
            .iter()
            .take_while(|(reset_at, _)| *reset_at <= now_ms)
            .take(batch)
            .cloned()
            .collect();
        for entry in &ended {
            inner.by_reset.remove(entry);
            inner.rows.remove(&entry.1);
        }
        Ok(ended.len())
    }
}
