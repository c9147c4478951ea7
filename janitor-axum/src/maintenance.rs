//! Background maintenance: bounded cleanup of every store on a cadence, safe to run in every instance at once.
//!
//! Each pass runs [`Janitor::cleanup`] steps until the visitor scan completes and no store reports more work,
//! or until the pass's step budget is spent (the next pass goes on where it stopped). Every step deletes at
//! most `batch` rows per store, and the statements only delete what is due, so instances racing on the same
//! rows do each other no harm; the first pass starts after a random share of the period, so instances started
//! together do not pass together.

use std::time::Duration;

use janitor_core::config::{cleanup_batch, ConfigError, Limit, CLEANUP_BATCH};
use janitor_core::directory::DirectoryError;
use janitor_core::evidence::{EvidenceCleanup, EvidenceError};
use janitor_core::identification::store::{CleanupReport, VisitorStore};
use janitor_core::learning::LearningError;
use janitor_core::StoreError;
use rand::Rng;

use crate::Janitor;

/// Time between passes, in milliseconds.
pub const MAINTENANCE_EVERY_MS: Limit<u64> = Limit::new("every_ms", 300_000, 100, 86_400_000);
/// Steps one pass may run at most.
pub const MAINTENANCE_STEPS: Limit<usize> = Limit::new("steps_per_pass", 100, 1, 10_000);

/// When background maintenance runs and how much it does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaintenanceSchedule {
    every: Duration,
    batch: usize,
    steps: usize,
}

impl Default for MaintenanceSchedule {
    fn default() -> Self {
        MaintenanceSchedule {
            every: Duration::from_millis(MAINTENANCE_EVERY_MS.default),
            batch: CLEANUP_BATCH.default,
            steps: MAINTENANCE_STEPS.default,
        }
    }
}

impl MaintenanceSchedule {
    /// A schedule: a pass every `every_ms` (100 ms–1 day, default 5 minutes), steps of `batch` rows per store
    /// (1–1000, default 100), at most `steps` steps a pass (1–10,000, default 100).
    pub fn new(every_ms: u64, batch: usize, steps: usize) -> Result<Self, ConfigError> {
        Ok(MaintenanceSchedule {
            every: Duration::from_millis(MAINTENANCE_EVERY_MS.check(every_ms)?),
            batch: CLEANUP_BATCH.check(batch)?,
            steps: MAINTENANCE_STEPS.check(steps)?,
        })
    }

    /// Time between passes.
    pub fn every(&self) -> Duration {
        self.every
    }
}

/// What one [`Janitor::cleanup`] call did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Maintenance {
    /// Visitors and observations.
    pub visitors: CleanupReport,
    /// Quota rows whose window ended.
    pub quotas: usize,
    /// Expired events and retired links.
    pub evidence: EvidenceCleanup,
    /// Delegations that ended.
    pub delegations: u64,
    /// Learning sessions retired (ended anonymous flows, disputed flows, rows out of retention, surplus
    /// examples).
    pub learning_sessions: u64,
}

/// Why a cleanup step failed.
#[derive(Debug, thiserror::Error)]
pub enum CleanupError {
    /// The batch size.
    #[error(transparent)]
    Batch(#[from] ConfigError),
    /// A store.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The evidence store.
    #[error(transparent)]
    Evidence(#[from] EvidenceError),
    /// The identity directory.
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    /// The learning store.
    #[error(transparent)]
    Learning(#[from] LearningError),
}

/// The background maintenance of one handle. Dropping it aborts the task: keep it for as long as the handle
/// serves (`let _maintenance = janitor.spawn_maintenance(..)`; `let _ = ..` drops it at once).
#[derive(Debug)]
#[must_use = "maintenance stops when its task is dropped: bind it (`let _maintenance = ...`)"]
pub struct MaintenanceTask {
    handle: tokio::task::JoinHandle<()>,
}

impl MaintenanceTask {
    /// Stops the task (also what dropping it does).
    pub fn stop(self) {}
}

impl Drop for MaintenanceTask {
    fn drop(&mut self) {
        self.handle.abort();
    }
}

impl Janitor {
    /// One bounded maintenance step of every store (`batch` 1–1000). Pass the returned
    /// `visitors.next_visitor` as `after` to continue the visitor scan.
    pub async fn cleanup(
        &self,
        after: Option<&str>,
        batch: usize,
    ) -> Result<Maintenance, CleanupError> {
        let batch = cleanup_batch(batch)?;
        let now = self.inner.clock.now_ms();
        let visitors = self.inner.engine.store().cleanup(after, batch, now).await?;
        let quotas = match &self.inner.quotas {
            Some(q) => q.cleanup(batch, now).await?,
            None => 0,
        };
        let evidence = self.inner.evidence.cleanup(batch).await?;
        let delegations = self.inner.directory.cleanup(batch).await?;
        let learning_sessions = self.inner.learning.cleanup().await?;
        let step = Maintenance {
            visitors,
            quotas,
            evidence,
            delegations,
            learning_sessions,
        };
        crate::telemetry::maintained(&step);
        Ok(step)
    }

    /// Runs cleanup in the background on `schedule` until the returned task is dropped. Must be called inside a
    /// Tokio runtime. Failures are logged and retried at the next pass.
    ///
    /// The task lives only as long as what this returns: a call whose result is not bound stops at once, which
    /// the compiler points out (`unused_must_use`).
    ///
    /// ```
    /// # use janitor_axum::{maintenance::MaintenanceSchedule, Janitor};
    /// fn start(janitor: &Janitor) {
    ///     let _maintenance = janitor.spawn_maintenance(MaintenanceSchedule::default());
    ///     // ... serve while `_maintenance` is in scope
    /// }
    /// ```
    ///
    /// ```compile_fail
    /// #![deny(unused_must_use)]
    /// # use janitor_axum::{maintenance::MaintenanceSchedule, Janitor};
    /// fn start(janitor: &Janitor) {
    ///     janitor.spawn_maintenance(MaintenanceSchedule::default()); // dropped here: nothing would run
    /// }
    /// ```
    pub fn spawn_maintenance(&self, schedule: MaintenanceSchedule) -> MaintenanceTask {
        let janitor = self.clone();
        let first = schedule.every.mul_f64(rand::rng().random_range(0.0..1.0));
        let handle = tokio::spawn(async move {
            tokio::time::sleep(first).await;
            let mut ticks = tokio::time::interval(schedule.every);
            loop {
                ticks.tick().await;
                janitor.maintenance_pass(&schedule).await;
            }
        });
        MaintenanceTask { handle }
    }

    /// One pass: steps until nothing is left to do or the step budget is spent.
    async fn maintenance_pass(&self, schedule: &MaintenanceSchedule) {
        let mut after: Option<String> = None;
        let mut total = Maintenance::default();
        for _ in 0..schedule.steps {
            let step = match self.cleanup(after.as_deref(), schedule.batch).await {
                Ok(step) => step,
                Err(e) => {
                    tracing::warn!(error = %e, "a maintenance step failed; the next pass tries again");
                    return;
                }
            };
            let more = step.visitors.has_more_expired
                || step.quotas == schedule.batch
                || step.evidence.events_deleted == schedule.batch as u64
                || step.evidence.links_deleted == schedule.batch as u64
                || step.delegations == schedule.batch as u64;
            after = step.visitors.next_visitor.clone();
            add(&mut total, &step);
            if after.is_none() && !more {
                break;
            }
        }
        tracing::info!(
            observations = total.visitors.expired_deleted + total.visitors.pruned,
            visitors = total.visitors.visitors_removed,
            quotas = total.quotas,
            events = total.evidence.events_deleted,
            links = total.evidence.links_deleted,
            delegations = total.delegations,
            "maintenance pass done"
        );
    }
}

fn add(total: &mut Maintenance, step: &Maintenance) {
    total.visitors.expired_deleted += step.visitors.expired_deleted;
    total.visitors.pruned += step.visitors.pruned;
    total.visitors.visitors_removed += step.visitors.visitors_removed;
    total.quotas += step.quotas;
    total.evidence.events_deleted += step.evidence.events_deleted;
    total.evidence.links_deleted += step.evidence.links_deleted;
    total.delegations += step.delegations;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_bounds() {
        assert_eq!(
            MaintenanceSchedule::default().every(),
            Duration::from_secs(300)
        );
        assert!(MaintenanceSchedule::new(100, 1, 1).is_ok());
        assert!(MaintenanceSchedule::new(86_400_000, 1000, 10_000).is_ok());
        for (every, batch, steps, field) in [
            (99, 100, 10, "every_ms"),
            (86_400_001, 100, 10, "every_ms"),
            (1_000, 0, 10, "cleanup_batch"),
            (1_000, 1001, 10, "cleanup_batch"),
            (1_000, 100, 0, "steps_per_pass"),
            (1_000, 100, 10_001, "steps_per_pass"),
        ] {
            let err = MaintenanceSchedule::new(every, batch, steps).unwrap_err();
            assert_eq!(err.field, field);
        }
    }
}
