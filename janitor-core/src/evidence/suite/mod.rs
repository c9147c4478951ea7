//! The behaviour every [`EvidenceStore`] must show, run through [`Evidence`] as server code uses it.
//!
//! ```text
//! janitor_core::evidence::suite::run(|visitors| async move { MyStore::fresh(&visitors).await }).await;
//! ```
//!
//! The factory must return an empty store in which the given visitors exist (for a database: a fresh schema
//! holding those visitor rows). Each case asks for its own store. A failed expectation panics with the case's
//! name.

mod erasure;
mod events;
mod links;

use std::future::Future;
use std::sync::Arc;

use erasure::*;
use events::*;
use links::*;

use super::*;
use crate::label::LabelKey;
use crate::visitor::VisitorId;

/// A fixed time, epoch milliseconds.
pub const T0: i64 = 1_735_689_600_000;

/// The browsers every case may use; the factory must make them exist.
pub fn visitors() -> Vec<VisitorId> {
    (1..=3).map(visitor).collect()
}

/// A fixed, well-formed visitor id: `vis_` + `n` as 48 hex digits.
pub fn visitor(n: u64) -> VisitorId {
    crate::store::suite::visitor(n)
}

/// The label key of the suite (namespace `"suite"` unless another is given).
pub fn label_key(namespace: &str) -> LabelKey {
    LabelKey::new(&"s".repeat(32), namespace).expect("valid fixture key")
}

pub(super) fn evidence<S: EvidenceStore>(store: S, config: EvidenceConfig) -> Evidence<Arc<S>> {
    Evidence::new(Arc::new(store), label_key("suite"), config)
}

pub(super) fn defaults() -> EvidenceConfig {
    EvidenceConfig::default()
}

/// A subject id for the fixture account `n`.
pub fn subject<S: EvidenceStore>(evidence: &Evidence<S>, n: u32) -> SubjectId {
    evidence.subject_id(&format!("account-{n}"))
}

pub(super) fn event(id: &str, event_type: EventType) -> EventInputBuilder {
    EventInput::builder(id, event_type)
}

/// Records each of `inputs` at `at`, expecting every one to be valid and accepted.
pub(super) async fn record_all<S: EvidenceStore>(
    e: &Evidence<S>,
    inputs: impl IntoIterator<Item = EventInputBuilder>,
    at: i64,
) {
    for input in inputs {
        e.record(&input.build().expect("valid"), at)
            .await
            .expect("record");
    }
}

pub(super) async fn count<S: EvidenceStore>(
    e: &Evidence<S>,
    query: VelocityQuery,
    now: i64,
) -> ActivitySummary {
    e.velocity(&query, now).await.expect("velocity")
}

/// Runs every case, each on a fresh store from `fresh`.
pub async fn run<S, F, Fut>(mut fresh: F)
where
    S: EvidenceStore,
    F: FnMut(Vec<VisitorId>) -> Fut,
    Fut: Future<Output = S>,
{
    recording_is_idempotent(evidence(fresh(visitors()).await, defaults())).await;
    velocity_counts_the_window(evidence(fresh(visitors()).await, defaults())).await;
    velocity_reads_each_key_and_action(evidence(fresh(visitors()).await, defaults())).await;
    let small = EvidenceConfig::builder()
        .max_events_per_query(3)
        .build()
        .expect("valid");
    velocity_saturates_newest_first(evidence(fresh(visitors()).await, small)).await;
    let short = EvidenceConfig::builder()
        .event_retention_days(1)
        .link_retention_days(1)
        .build()
        .expect("valid");
    expired_events_do_not_count(evidence(fresh(visitors()).await, short)).await;
    namespaces_are_isolated(fresh(visitors()).await).await;
    links_check_their_times(evidence(fresh(visitors()).await, defaults())).await;
    links_are_idempotent_per_verification(evidence(fresh(visitors()).await, defaults())).await;
    assessment_reasons_in_order(evidence(fresh(visitors()).await, defaults())).await;
    listing_is_newest_first_and_bounded(evidence(fresh(visitors()).await, defaults())).await;
    revocation_happens_once(evidence(fresh(visitors()).await, short)).await;
    erasure_removes_exactly_the_owner(evidence(fresh(visitors()).await, defaults())).await;
    subject_deletion_cascades(evidence(fresh(visitors()).await, defaults())).await;
    visitor_erasure_removes_events_and_links(evidence(fresh(visitors()).await, defaults())).await;
    cleanup_is_bounded(evidence(fresh(visitors()).await, short)).await;
    subject_kinds_do_not_change(evidence(fresh(visitors()).await, defaults())).await;
}
