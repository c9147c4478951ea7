//! Quota counters in process memory: exact for one instance (the embedded default and the reference).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{
    claim_row, release_row, ChainOutcome, ChainSettle, ClaimChain, ClaimOutcome, CounterRow,
    QuotaClaim, QuotaStore,
};
use crate::error::StoreError;

/// Counters behind one mutex, with an index by reset time so cleanup reads only ended windows. A cheap handle:
/// clones share the same counters.
#[derive(Debug, Clone, Default)]
pub struct MemoryQuotaStore {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    rows: HashMap<String, CounterRow>,
    by_reset: BTreeSet<(i64, String)>,
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
    /// One claim, as the store's `claim` makes it under the lock.
    pub(super) fn claim(&mut self, claim: &QuotaClaim) -> ClaimOutcome {
        let row = self.rows.get(&claim.id).copied();
        let claimed = claim_row(
            claim.algorithm,
            row,
            claim.limit,
            claim.window_start,
            claim.window_ms,
        );
        match claimed {
            Ok(row) => {
                self.set(&claim.id, row);
                ClaimOutcome::Allowed
            }
            Err(reset_at) => ClaimOutcome::Denied {
                reset_at: Some(reset_at),
            },
        }
    }

    fn set(&mut self, id: &str, row: CounterRow) {
        if let Some(old) = self.rows.insert(id.to_owned(), row) {
            self.by_reset.remove(&(old.reset_at, id.to_owned()));
        }
        self.by_reset.insert((row.reset_at, id.to_owned()));
    }
}

impl QuotaStore for MemoryQuotaStore {
    async fn claim(&self, claim: &QuotaClaim) -> Result<ClaimOutcome, StoreError> {
        Ok(self.lock().claim(claim))
    }

    async fn claim_chain(&self, chain: &ClaimChain) -> Result<ChainOutcome, StoreError> {
        let mut inner = self.lock();
        let known = chain
            .known_mark
            .as_ref()
            .and_then(|mark| inner.rows.get(mark))
            .is_some_and(|row| row.reset_at > chain.now_ms);
        if chain.all_or_nothing {
            // Every link that applies must have room before any is claimed.
            let full = chain.links.iter().enumerate().find_map(|(i, link)| {
                let claim = &link.claim;
                let row = inner.rows.get(&claim.id).copied();
                let room = claim_row(
                    claim.algorithm,
                    row,
                    claim.limit,
                    claim.window_start,
                    claim.window_ms,
                );
                match room {
                    Err(reset_at) if link.applies(known) => Some((i, reset_at)),
                    _ => None,
                }
            });
            if let Some((full, reset_at)) = full {
                return Ok(ChainOutcome::stopped_at(chain, known, full, Some(reset_at)));
            }
        }
        Ok(ChainOutcome::from_claims(chain, known, |_, claim| {
            inner.claim(claim)
        }))
    }

    async fn settle_chain(&self, settle: &ChainSettle) -> Result<(), StoreError> {
        let mut inner = self.lock();
        for claim in &settle.releases {
            if let Some(row) = inner.rows.get(&claim.id).copied() {
                let row = release_row(claim.algorithm, row, claim.limit, claim.window_ms);
                inner.set(&claim.id, row);
            }
        }
        if let Some((mark, until)) = &settle.mark {
            let used = inner.rows.get(mark).map_or(1, |row| row.used);
            let reset_at = inner
                .rows
                .get(mark)
                .map_or(*until, |row| row.reset_at.max(*until));
            inner.set(mark, CounterRow { used, reset_at });
        }
        Ok(())
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
