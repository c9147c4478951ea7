//! Where the budget rows live: a trait that only reads and compare-and-swaps, and its in-memory store.
//!
//! The store knows nothing of budgets: the [`InferenceBudget`](super::InferenceBudget) reads a row, computes
//! the next record and asks the store to write it only if nobody wrote in between. Rows are never hidden for
//! being past `expires_at` (the record's own times say what still counts); cleanup deletes them.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::record::BudgetRecord;
use crate::config::clamp_cleanup_batch;
use crate::error::StoreError;

/// One row of `evaluation_controls`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BudgetRow {
    /// The compare-and-swap version (the `version` column), at least 1 for a stored row.
    pub version: i64,
    /// When the row may be deleted (epoch ms).
    pub expires_at: i64,
    /// The state, as the `record` JSON document.
    pub record: BudgetRecord,
}

/// Storage of budget rows, keyed by the namespace's label. All times are epoch milliseconds.
pub trait BudgetStore: Send + Sync {
    /// The row `id`, expired or not; `None` when there is none.
    fn read(&self, id: &str) -> impl Future<Output = Result<Option<BudgetRow>, StoreError>> + Send;

    /// Writes `next` as row `id` if the row is still at `expected_version`: with 0, only if no row `id` exists
    /// (an insert); otherwise only if the row exists with that version (an update). Returns whether it wrote.
    /// The version column takes `next.version`, which the caller keeps equal to `next.record.version`.
    fn compare_and_swap(
        &self,
        id: &str,
        expected_version: i64,
        next: &BudgetRow,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes at most `batch` rows whose `expires_at` is at or before `now_ms`, soonest-expired first, and
    /// returns how many went. `batch` is 1–1000 (see [`cleanup_batch`](crate::config::cleanup_batch)); stores
    /// clamp it.
    fn cleanup(
        &self,
        batch: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;
}

/// Budget rows held in process memory behind one mutex: the budget of a single instance, and the reference
/// implementation for tests. One row per namespace, so it stays small without cleanup. A cheap handle: clones
/// share the same rows.
#[derive(Debug, Clone, Default)]
pub struct MemoryBudgetStore {
    rows: Arc<Mutex<HashMap<String, BudgetRow>>>,
}

impl MemoryBudgetStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryBudgetStore::default()
    }

    /// Number of rows held, expired or not (for tests and metrics).
    pub fn row_count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, BudgetRow>> {
        // Every write replaces a whole row, so a panic elsewhere cannot leave a half-written one behind.
        self.rows.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl BudgetStore for MemoryBudgetStore {
    async fn read(&self, id: &str) -> Result<Option<BudgetRow>, StoreError> {
        Ok(self.lock().get(id).cloned())
    }

    async fn compare_and_swap(
        &self,
        id: &str,
        expected_version: i64,
        next: &BudgetRow,
    ) -> Result<bool, StoreError> {
        let mut rows = self.lock();
        let current = rows.get(id).map(|row| row.version);
        let wins = match current {
            None => expected_version == 0,
            Some(version) => expected_version != 0 && version == expected_version,
        };
        if wins {
            rows.insert(id.to_owned(), next.clone());
        }
        Ok(wins)
    }

    async fn cleanup(&self, batch: usize, now_ms: i64) -> Result<usize, StoreError> {
        let batch = clamp_cleanup_batch(batch);
        let mut rows = self.lock();
        let mut expired: Vec<(i64, String)> = rows
            .iter()
            .filter(|(_, row)| row.expires_at <= now_ms)
            .map(|(id, row)| (row.expires_at, id.clone()))
            .collect();
        expired.sort_unstable();
        expired.truncate(batch);
        for (_, id) in &expired {
            rows.remove(id);
        }
        Ok(expired.len())
    }
}
