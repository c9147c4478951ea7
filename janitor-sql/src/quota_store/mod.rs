//! Request quotas on PostgreSQL: one atomic upsert per counter on `protection_quotas`, and the sign-in's chain
//! of counters in one statement (`chain.rs`).

use janitor_core::protection::quota::{
    gcra_interval, ChainOutcome, ChainSettle, ClaimChain, ClaimOutcome, QuotaAlgorithm, QuotaClaim,
    QuotaStore,
};
use janitor_core::StoreError;

use crate::database::Database;
use crate::error::unreadable;
use crate::params::Param;

mod chain;

/// Claims one counter (`$1` id, `$2` reset time of a new window, `$3` window start, `$4` limit) in one
/// statement. The upsert is the row contract shared with Janitor instances in other languages: create at 1,
/// restart an ended window at 1, or add one while under the limit; when its `WHERE` refuses, nothing changes.
/// Then, only on a denial, the same statement reads the row's `reset_at` for the Retry-After.
const CLAIM: &str = "WITH claimed AS ( \
       INSERT INTO protection_quotas AS q (id, used, reset_at) VALUES ($1, 1, $2) \
       ON CONFLICT (id) DO UPDATE SET \
         used = CASE WHEN q.reset_at <= $3 THEN 1 ELSE q.used + 1 END, \
         reset_at = CASE WHEN q.reset_at <= $3 THEN $2 ELSE q.reset_at END \
       WHERE q.reset_at <= $3 OR q.used < $4 \
       RETURNING reset_at \
     ) \
     SELECT true, reset_at FROM claimed \
     UNION ALL \
     SELECT false, reset_at FROM protection_quotas WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM claimed)";

/// Claims one GCRA counter (`$1` id, `$2` now, `$3` emission interval, `$4` window) in one statement: the row's
/// `reset_at` is the theoretical arrival time; a claim is allowed while `max(reset_at, now) + interval` is at
/// most a window ahead of now. On a denial the same statement reads when the next claim fits.
const CLAIM_GCRA: &str = "WITH claimed AS ( \
       INSERT INTO protection_quotas AS q (id, used, reset_at) VALUES ($1::text, 1, $2::bigint + $3::bigint) \
       ON CONFLICT (id) DO UPDATE SET \
         used = CASE WHEN q.reset_at <= $2::bigint THEN 1 ELSE LEAST(q.used, 2147483646) + 1 END, \
         reset_at = GREATEST(q.reset_at, $2::bigint) + $3::bigint \
       WHERE GREATEST(q.reset_at, $2::bigint) + $3::bigint - $2::bigint <= $4::bigint \
       RETURNING reset_at \
     ) \
     SELECT true, reset_at FROM claimed \
     UNION ALL \
     SELECT false, GREATEST(reset_at, $2::bigint) + $3::bigint - $4::bigint FROM protection_quotas \
       WHERE id = $1::text AND NOT EXISTS (SELECT 1 FROM claimed)";

/// Deletes at most `$2` rows whose window ended at or before `$1`, oldest first. The repeated condition keeps
/// a row that another instance restarted in the meantime.
const CLEANUP: &str = "DELETE FROM protection_quotas WHERE id IN ( \
       SELECT id FROM protection_quotas WHERE reset_at <= $1 ORDER BY reset_at LIMIT $2) \
     AND reset_at <= $1";

/// Quota counters in PostgreSQL, shared by every instance on the database. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PgQuotaStore {
    database: Database,
}

impl PgQuotaStore {
    /// A store over `database`. Run [`migrate`](crate::migrate()) once before use.
    pub fn new(database: Database) -> Self {
        PgQuotaStore { database }
    }

    /// The database handle.
    pub fn database(&self) -> &Database {
        &self.database
    }
}

impl QuotaStore for PgQuotaStore {
    async fn claim(&self, claim: &QuotaClaim) -> Result<ClaimOutcome, StoreError> {
        // The column is an INTEGER; limits are at most 1,000,000 by configuration.
        let limit = i32::try_from(claim.limit).unwrap_or(i32::MAX);
        let mut connection = self.database.connection().await?;
        let rows = match claim.algorithm {
            QuotaAlgorithm::FixedWindow => {
                let params: [&dyn Param; 4] =
                    [&claim.id, &claim.reset_at(), &claim.window_start, &limit];
                connection.query(CLAIM, &params).await?
            }
            QuotaAlgorithm::Gcra => {
                let interval = gcra_interval(claim.limit, claim.window_ms);
                let params: [&dyn Param; 4] =
                    [&claim.id, &claim.window_start, &interval, &claim.window_ms];
                connection.query(CLAIM_GCRA, &params).await?
            }
        };
        let Some(row) = rows.first() else {
            // Denied, and the row was created after this statement's snapshot: its reset time is unknown.
            return Ok(ClaimOutcome::Denied { reset_at: None });
        };
        let allowed: bool = row.try_get(0).map_err(|e| unreadable("a claim", e))?;
        let reset_at: i64 = row.try_get(1).map_err(|e| unreadable("a claim", e))?;
        Ok(if allowed {
            ClaimOutcome::Allowed
        } else {
            // The read sees the row as of the statement's snapshot. If another instance restarted the window
            // after that, the snapshot still shows the ended window; the new one ends about a window from now,
            // which is what the caller assumes when the time is unknown.
            ClaimOutcome::Denied {
                reset_at: match claim.algorithm {
                    QuotaAlgorithm::FixedWindow => {
                        (reset_at > claim.window_start).then_some(reset_at)
                    }
                    QuotaAlgorithm::Gcra => Some(reset_at),
                },
            }
        })
    }

    async fn claim_chain(&self, chain: &ClaimChain) -> Result<ChainOutcome, StoreError> {
        chain::claim(&self.database, chain).await
    }

    async fn settle_chain(&self, settle: &ChainSettle) -> Result<(), StoreError> {
        chain::settle(&self.database, settle).await
    }

    async fn cleanup(&self, batch: usize, now_ms: i64) -> Result<usize, StoreError> {
        let limit = batch as i64;
        let mut connection = self.database.connection().await?;
        Ok(connection.execute(CLEANUP, &[&now_ms, &limit]).await? as usize)
    }
}
