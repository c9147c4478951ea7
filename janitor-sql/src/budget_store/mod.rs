//! The shared inference budget on PostgreSQL: compare-and-swap on the `evaluation_controls` row.
//!
//! One statement per call: a read, an insert or an update (the compare-and-swap), or a bounded delete. The
//! budget logic itself lives in `janitor_core::protection::budget`; this store only reads and swaps rows.

use janitor_core::config::clamp_cleanup_batch;
use janitor_core::protection::budget::{BudgetRecord, BudgetRow, BudgetStore};
use janitor_core::StoreError;
use tokio_postgres::types::Json;

use crate::database::Database;
use crate::error::unreadable;

pub(crate) mod statements;

/// Budget rows in PostgreSQL, in the table of `migrations/0002_protection.sql` (shared with Janitor instances
/// in other languages: same row id, same JSON record). Cheap to clone; clones share the pool.
#[derive(Debug, Clone)]
pub struct PgBudgetStore {
    database: Database,
}

impl PgBudgetStore {
    /// A store over `database`. Run [`migrate`](crate::migrate()) once before use.
    pub fn new(database: Database) -> Self {
        PgBudgetStore { database }
    }

    /// The database handle.
    pub fn database(&self) -> &Database {
        &self.database
    }
}

impl BudgetStore for PgBudgetStore {
    async fn read(&self, id: &str) -> Result<Option<BudgetRow>, StoreError> {
        let mut connection = self.database.connection().await?;
        let rows = connection.query(statements::READ, &[&id]).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let Json(record) = row
            .try_get::<_, Json<BudgetRecord>>(2)
            .map_err(|e| unreadable("an inference budget record", e))?;
        Ok(Some(BudgetRow {
            version: row
                .try_get(0)
                .map_err(|e| unreadable("a budget version", e))?,
            expires_at: row
                .try_get(1)
                .map_err(|e| unreadable("a budget expiry", e))?,
            record,
        }))
    }

    async fn compare_and_swap(
        &self,
        id: &str,
        expected_version: i64,
        next: &BudgetRow,
    ) -> Result<bool, StoreError> {
        let record = Json(&next.record);
        let mut connection = self.database.connection().await?;
        let changed = if expected_version == 0 {
            connection
                .execute(
                    statements::INSERT,
                    &[&id, &next.version, &next.expires_at, &record],
                )
                .await?
        } else {
            connection
                .execute(
                    statements::UPDATE,
                    &[
                        &id,
                        &next.version,
                        &next.expires_at,
                        &record,
                        &expected_version,
                    ],
                )
                .await?
        };
        Ok(changed == 1)
    }

    async fn cleanup(&self, batch: usize, now_ms: i64) -> Result<usize, StoreError> {
        let batch = clamp_cleanup_batch(batch) as i64;
        let mut connection = self.database.connection().await?;
        let deleted = connection
            .execute(statements::CLEANUP, &[&now_ms, &batch])
            .await?;
        Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
    }
}
