//! The behaviour every [`EvidenceStore`] must show, run through [`Evidence`] as server code uses it:
//! [`evidence_store_tests!`](crate::evidence_store_tests) runs each case as its own test.
//!
//! The factory must return an empty store in which the given visitors exist (for a database: a fresh schema
//! holding those visitor rows).

mod erasure;
mod events;
mod links;

pub use erasure::*;
pub use events::*;
pub use links::*;

use super::Fresh;
pub use super::{label_key, visitor, T0};
use crate::evidence::*;
use crate::visitor::VisitorId;
use crate::Clock;

/// The browsers every case may use; the factory must make them exist.
pub fn visitors() -> Vec<VisitorId> {
    (1..=3).map(visitor).collect()
}

fn evidence<S: EvidenceStore>(store: S, config: EvidenceConfig) -> Evidence<S> {
    Evidence::new(store, label_key("suite"), config).with_clock(Clock::manual(0))
}

fn defaults() -> EvidenceConfig {
    EvidenceConfig::default()
}

/// Counts at most three events per query.
fn small() -> EvidenceConfig {
    EvidenceConfig::builder()
        .max_events_per_query(3)
        .build()
        .expect("valid")
}

/// Keeps events and retired links for one day.
fn short() -> EvidenceConfig {
    EvidenceConfig::builder()
        .event_retention_days(1)
        .link_retention_days(1)
        .build()
        .expect("valid")
}

/// A subject id for the fixture account `n`.
pub fn subject<S: EvidenceStore>(evidence: &Evidence<S>, n: u32) -> SubjectId {
    evidence.subject_id(&format!("account-{n}"))
}

fn event(id: &str, event_type: EventType) -> EventInputBuilder {
    EventInput::builder(id, event_type)
}

/// Records each of `inputs` at `at`, expecting every one to be valid and accepted.
async fn record_all<S: EvidenceStore>(
    e: &Evidence<S>,
    inputs: impl IntoIterator<Item = EventInputBuilder>,
    at: i64,
) {
    for input in inputs {
        e.at(at)
            .record(&input.build().expect("valid"))
            .await
            .expect("record");
    }
}

async fn count<S: EvidenceStore>(
    e: &Evidence<S>,
    query: VelocityQuery,
    now: i64,
) -> ActivitySummary {
    e.at(now).velocity(&query).await.expect("velocity")
}

/// One `#[tokio::test]` per case of the [`EvidenceStore`] suite ([`crate::testing`] shows the forms).
///
/// `fresh` makes an empty store in which the given visitors exist.
///
/// ```ignore
/// janitor_core::evidence_store_tests!(fresh: |_visitors| async { MemoryEvidenceStore::new() });
/// ```
#[macro_export]
macro_rules! evidence_store_tests {
    ($($setup:tt)+) => {
        $crate::__store_suite!(
            evidence_store [
            recording_is_idempotent,
            velocity_counts_the_window,
            velocity_reads_each_key_and_action,
            velocity_saturates_newest_first,
            expired_events_do_not_count,
            namespaces_are_isolated,
            links_check_their_times,
            links_are_idempotent_per_verification,
            assessment_reasons_in_order,
            listing_is_newest_first_and_bounded,
            revocation_happens_once,
            erasure_removes_exactly_the_owner,
            subject_deletion_cascades,
            visitor_erasure_keeps_events_about_subjects,
            cleanup_is_bounded,
            subject_kinds_do_not_change,
            ]
            $($setup)+
        );
    };
}
