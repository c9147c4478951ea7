//! The shared row's record and the pure state machine over it: no clock, no randomness, no storage.
//!
//! The record is the JSON document of `evaluation_controls.record`. Instances in other languages read and
//! write the same document, so its field names and value types are fixed: camelCase names, integers for every
//! time, counter and cost, a boolean `probe`, a string lease `id`.

use serde::{Deserialize, Serialize};

use super::config::{BudgetConfig, LEASE_GRACE_MS};
use super::BudgetDenial;

/// The state of one namespace's budget, as stored in the row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetRecord {
    /// The row's compare-and-swap version, also kept in the row's `version` column (always equal to it).
    /// 0 means "no row yet"; the first write is version 1.
    pub version: i64,
    /// When the current window started (epoch ms).
    pub window_start: i64,
    /// Cost admitted in the current window.
    pub used: u64,
    /// Failures in a row since the last success (of the current epoch).
    pub failures: u64,
    /// 0 when the circuit is closed; otherwise the end of its cooldown (epoch ms). Once that time has passed
    /// the circuit is half-open: it admits one probe at a time until a probe succeeds.
    pub open_until: i64,
    /// Bumped whenever the circuit opens or closes, so that completions of calls admitted before cannot move it.
    pub epoch: u64,
    /// Calls admitted and not finished yet (or timed out and not expired yet).
    pub leases: Vec<LeaseRecord>,
}

/// One admitted call, as stored in the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaseRecord {
    /// A random UUID naming the lease.
    pub id: String,
    /// When the lease stops counting against concurrency (epoch ms): admission + timeout + grace.
    pub expires_at: i64,
    /// The record's epoch when the call was admitted.
    pub epoch: u64,
    /// Whether the call was admitted as the half-open circuit's probe.
    pub probe: bool,
    /// Provider calls reserved; leases written by versions without costs count as 1.
    #[serde(default = "one")]
    pub cost: u32,
}

fn one() -> u32 {
    1
}

/// How an admitted call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallOutcome {
    /// A valid answer.
    Success,
    /// An error or an answer that could not be used.
    Failure,
    /// The deadline passed. The provider may still be working, so the lease keeps counting until it expires.
    Timeout,
}

impl BudgetRecord {
    /// The state of a namespace that has no row yet: version 0, a window starting now, nothing used.
    pub fn fresh(now_ms: i64) -> Self {
        BudgetRecord {
            version: 0,
            window_start: now_ms,
            used: 0,
            failures: 0,
            open_until: 0,
            epoch: 0,
            leases: Vec::new(),
        }
    }

    /// Sum of the costs of the leases held (expired ones included; [`reserve`](Self::reserve) drops those).
    pub fn held(&self) -> u64 {
        self.leases.iter().map(|l| u64::from(l.cost)).sum()
    }

    /// Whether the circuit refuses calls at `now_ms`.
    pub fn is_open(&self, now_ms: i64) -> bool {
        self.open_until > now_ms
    }

    /// Tries to admit a call costing `cost` provider calls (at least 1) with a deadline of `timeout_ms`, under
    /// the lease id `lease_id`. On admission, the record to write and the lease; on denial, why — and nothing
    /// is to be written. The version is left as it was: the writer sets it.
    ///
    /// In order: expired leases go; an open circuit denies; an elapsed window restarts at `now_ms`; a cost
    /// beyond the window's remaining calls denies ("budget"); a second probe or a lease cost beyond
    /// `max_concurrent` denies ("concurrency"); otherwise the lease is added and its cost counted.
    pub fn reserve(
        &self,
        config: &BudgetConfig,
        now_ms: i64,
        cost: u32,
        timeout_ms: u32,
        lease_id: String,
    ) -> Result<(BudgetRecord, LeaseRecord), BudgetDenial> {
        let cost = cost.max(1);
        let mut next = self.clone();
        next.leases.retain(|lease| lease.expires_at > now_ms);
        if next.is_open(now_ms) {
            return Err(BudgetDenial::CircuitOpen);
        }
        if now_ms.saturating_sub(next.window_start) >= i64::from(config.window_ms()) {
            next.window_start = now_ms;
            next.used = 0;
        }
        if next.used.saturating_add(u64::from(cost)) > u64::from(config.max_calls()) {
            return Err(BudgetDenial::Budget);
        }
        // Past its cooldown an opened circuit is half-open: every call is a probe, and one probe at a time.
        let probe = next.open_until != 0;
        let over_concurrency =
            next.held().saturating_add(u64::from(cost)) > u64::from(config.max_concurrent());
        if over_concurrency || (probe && next.leases.iter().any(|lease| lease.probe)) {
            return Err(BudgetDenial::Concurrency);
        }
        let lease = LeaseRecord {
            id: lease_id,
            expires_at: now_ms
                .saturating_add(i64::from(timeout_ms))
                .saturating_add(LEASE_GRACE_MS),
            epoch: next.epoch,
            probe,
            cost,
        };
        next.leases.push(lease.clone());
        next.used = next.used.saturating_add(u64::from(cost));
        Ok((next, lease))
    }

    /// Records how the call of `lease` ended at `now_ms`. `None` when there is nothing to write: the lease is
    /// no longer in the record (it expired and was dropped, or the row was cleaned up), so the call's outcome
    /// belongs to a past that the record has forgotten.
    ///
    /// A timed-out lease stays until it expires, any other is removed. Only a lease of the current epoch moves
    /// the circuit: a success clears the failures (and a successful probe closes the circuit); a failed probe,
    /// or the failure that reaches the threshold, opens it for the cooldown. Either change bumps the epoch.
    pub fn finish(
        &self,
        config: &BudgetConfig,
        lease: &LeaseRecord,
        outcome: CallOutcome,
        now_ms: i64,
    ) -> Option<BudgetRecord> {
        if !self.leases.iter().any(|held| held.id == lease.id) {
            return None;
        }
        let mut next = self.clone();
        if outcome != CallOutcome::Timeout {
            next.leases.retain(|held| held.id != lease.id);
        }
        if lease.epoch == next.epoch {
            match outcome {
                CallOutcome::Success => {
                    next.failures = 0;
                    if lease.probe {
                        next.open_until = 0;
                        next.epoch = next.epoch.saturating_add(1);
                    }
                }
                CallOutcome::Failure | CallOutcome::Timeout => {
                    // A failed probe reopens at once and does not count as one more failure in a row.
                    let opens = lease.probe || {
                        next.failures = next.failures.saturating_add(1);
                        next.failures >= u64::from(config.failure_threshold())
                    };
                    if opens {
                        next.open_until = now_ms.saturating_add(i64::from(config.cooldown_ms()));
                        next.epoch = next.epoch.saturating_add(1);
                    }
                }
            }
        }
        Some(next)
    }
}
