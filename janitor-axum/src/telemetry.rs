//! What an operator sees: counters and histograms through the `metrics` facade (feature `metrics`; the
//! application installs a recorder, such as a Prometheus exporter), and tracing events. Neither ever carries a
//! visitor id, a cookie, an account, a session or a signal.
//!
//! | metric | labels | what |
//! |---|---|---|
//! | `janitor_identifications_total` | `outcome` (cookie, restored, minted), `risk_status` | identifications |
//! | `janitor_identification_seconds` | `outcome` | the engine's time per identification |
//! | `janitor_refusals_total` | `reason` ([`Refusal::reason`]) | answers that were not an identification |
//! | `janitor_jev_calls_total` | `outcome` (answered, timeout, failed, refused) | provider calls |
//! | `janitor_budget_denials_total` | `reason` (budget, concurrency, circuit-open, storage) | calls the shared budget refused |
//! | `janitor_db_pool_wait_seconds` | | waits for a pooled connection |
//! | `janitor_db_pool_timeouts_total` | | waits that ran out |
//! | `janitor_db_statement_timeouts_total` | | statements the client cancelled (transaction pooling) |
//! | `janitor_db_unavailable_total` | | statements that failed as "unavailable" |
//! | `janitor_maintenance_deleted_total` | `what` (observations, visitors, quotas, events, links) | rows cleanup removed |
//!
//! Logs: one `janitor.identify` span per identification with its outcome and risk status; warnings for
//! overload, storage failures and provider failures, and info for quota denials, each at most once a second
//! with the count of those left out.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use janitor_core::identification::engine::{IdentifyMetrics, IdentifyPath};
use janitor_core::Identity;

use crate::janitor::Maintenance;
use crate::refusal::Refusal;

/// How an identification ended: by its cookie, by restoring an id without one, or with a new id.
pub(crate) fn outcome(metrics: &IdentifyMetrics, identity: &Identity) -> &'static str {
    match (metrics.path, identity.is_returning) {
        (IdentifyPath::Cookie, _) => "cookie",
        (IdentifyPath::Cookieless, true) => "restored",
        (IdentifyPath::Cookieless, false) => "minted",
    }
}

/// Records one identification.
pub(crate) fn identified(metrics: &IdentifyMetrics, identity: &Identity, elapsed: Duration) {
    let outcome = outcome(metrics, identity);
    let span = tracing::Span::current();
    span.record("outcome", outcome);
    span.record("risk_status", identity.risk_status.as_str());
    #[cfg(feature = "metrics")]
    {
        metrics::counter!(
            "janitor_identifications_total",
            "outcome" => outcome,
            "risk_status" => identity.risk_status.as_str()
        )
        .increment(1);
        metrics::histogram!("janitor_identification_seconds", "outcome" => outcome)
            .record(elapsed.as_secs_f64());
    }
    #[cfg(not(feature = "metrics"))]
    let _ = elapsed;
}

/// Records one refusal, and logs the ones an operator acts on.
pub(crate) fn refused(refusal: Refusal) {
    #[cfg(feature = "metrics")]
    metrics::counter!("janitor_refusals_total", "reason" => refusal.reason()).increment(1);
    match refusal {
        Refusal::Busy => {
            if let Some(left_out) = BUSY.allow() {
                tracing::warn!(left_out, "every measurement slot is taken: answering 503");
            }
        }
        Refusal::RateLimited { .. } => {
            if let Some(left_out) = RATE_LIMITED.allow() {
                tracing::info!(left_out, "a request quota is spent: answering 429");
            }
        }
        Refusal::Unavailable => {
            if let Some(left_out) = UNAVAILABLE.allow() {
                tracing::warn!(left_out, "storage is unavailable: answering 503");
            }
        }
        _ => {}
    }
}

/// Records one provider call.
#[cfg_attr(not(feature = "jev"), allow(dead_code))]
pub(crate) fn provider_call(outcome: &'static str) {
    #[cfg(feature = "metrics")]
    metrics::counter!("janitor_jev_calls_total", "outcome" => outcome).increment(1);
    if outcome != "answered" {
        if let Some(left_out) = PROVIDER.allow() {
            tracing::warn!(
                outcome,
                left_out,
                "the Jev provider gave no answer: risk is unavailable"
            );
        }
    }
}

/// Records the rows a maintenance step removed, whether the background task or the application ran it.
pub(crate) fn maintained(step: &Maintenance) {
    #[cfg(feature = "metrics")]
    {
        let observations = step.visitors.expired_deleted + step.visitors.pruned;
        for (what, rows) in [
            ("observations", observations as u64),
            ("visitors", step.visitors.visitors_removed as u64),
            ("quotas", step.quotas as u64),
            ("events", step.evidence.events_deleted),
            ("links", step.evidence.links_deleted),
            ("delegations", step.delegations),
        ] {
            metrics::counter!("janitor_maintenance_deleted_total", "what" => what).increment(rows);
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = step;
}

/// At most one log line a second for one kind of event, counting the ones it leaves out.
struct Throttle {
    second: AtomicU64,
    left_out: AtomicU64,
}

impl Throttle {
    const fn new() -> Throttle {
        Throttle {
            second: AtomicU64::new(0),
            left_out: AtomicU64::new(0),
        }
    }

    /// `Some(left out since the last line)` when this second has no line yet.
    fn allow(&self) -> Option<u64> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let last = self.second.load(Ordering::Relaxed);
        if last != now
            && self
                .second
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            Some(self.left_out.swap(0, Ordering::Relaxed))
        } else {
            self.left_out.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

static BUSY: Throttle = Throttle::new();
static RATE_LIMITED: Throttle = Throttle::new();
static UNAVAILABLE: Throttle = Throttle::new();
#[cfg_attr(not(feature = "jev"), allow(dead_code))]
static PROVIDER: Throttle = Throttle::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_lets_one_line_a_second_and_counts_the_rest() {
        let throttle = Throttle::new();
        assert_eq!(throttle.allow(), Some(0));
        assert_eq!(throttle.allow(), None);
        assert_eq!(throttle.allow(), None);
        // The next second's line reports the two left out.
        throttle.second.store(1, Ordering::Relaxed);
        assert_eq!(throttle.allow(), Some(2));
    }
}
