//! Background maintenance: bounded cleanup of every store on a cadence, safe to run in every instance at once.
//!
//! Each pass runs [`Janitor::cleanup`] steps until the visitor scan completes and no store reports more work,
//! or until the pass's step budget is spent (the next pass goes on where it stopped). Every step deletes at
//! most `batch` rows per store, and the statements only delete what is due, so instances racing on the same
//! rows do each other no harm; the first pass starts after a random share of the period, so instances started
//! together do not pass together.

use std::time::Duration;

use janitor_core::config::{ConfigError, Limit, CLEANUP_BATCH};
use janitor_core::{Evaluator, Stores};
use rand::Rng;

use crate::janitor::Maintenance;
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

impl<S: Stores, E: Evaluator + 'static> Janitor<S, E> {
    /// Runs cleanup in the background on `schedule` until the returned task is dropped. Must be called inside a
    /// Tokio runtime. Failures are logged and retried at the next pass.
    ///
    /// The task lives only as long as what this returns: a call whose result is not bound stops at once, which
    /// the compiler points out (`unused_must_use`).
    ///
    /// ```
    /// # use janitor_axum::{Janitor, MaintenanceSchedule, MemoryStores};
    /// fn start(janitor: &Janitor<MemoryStores>) {
    ///     let _maintenance = janitor.spawn_maintenance(MaintenanceSchedule::default());
    ///     // ... serve while `_maintenance` is in scope
    /// }
    /// ```
    ///
    /// ```compile_fail
    /// #![deny(unused_must_use)]
    /// # use janitor_axum::{Janitor, MaintenanceSchedule, MemoryStores};
    /// fn start(janitor: &Janitor<MemoryStores>) {
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
