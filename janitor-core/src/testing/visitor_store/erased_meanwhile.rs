//! An identification racing the erasure of the browser it identifies, part of the visitor store suite
//! ([`visitor_store_tests!`](crate::visitor_store_tests)): an account's erasure may delete the visitor after
//! the identification has read it and before it writes, and the identification then answers as after the
//! erasure instead of failing.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::config::DAY_MS;
use crate::error::StoreError;
use crate::identification::candidates::{LookupRow, Probe};
use crate::identification::config::{EngineConfig, Retention};
use crate::identification::engine::Engine;
use crate::identification::observation::Observation;
use crate::identification::payload::VisitorPayload;
use crate::identification::store::{
    CleanupReport, ReturningHistory, ReturningVisit, VisitWrite, VisitorStore,
};
use crate::testing::{mac_document, Fresh, T0};
use crate::visitor::VisitorId;

/// A store that deletes the visitor it is told to just before the next write naming it, as an erasure that
/// commits between an identification's read and its write does.
struct ErasedBeforeWrite<S> {
    inner: S,
    erase: Arc<Mutex<Option<VisitorId>>>,
}

impl<S: VisitorStore> VisitorStore for ErasedBeforeWrite<S> {
    fn find_candidate_rows(
        &self,
        probes: &[Probe],
        now_ms: i64,
    ) -> impl Future<Output = Result<Vec<LookupRow>, StoreError>> + Send {
        self.inner.find_candidate_rows(probes, now_ms)
    }

    fn recent_observations(
        &self,
        visitor: &VisitorId,
        limit: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<Vec<Arc<Observation>>, StoreError>> + Send {
        self.inner.recent_observations(visitor, limit, now_ms)
    }

    fn returning_visit(
        &self,
        visit: ReturningVisit<'_>,
    ) -> impl Future<Output = Result<ReturningHistory, StoreError>> + Send {
        self.inner.returning_visit(visit)
    }

    fn recent_observations_batch(
        &self,
        visitors: &[VisitorId],
        limit: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<HashMap<VisitorId, Vec<Arc<Observation>>>, StoreError>> + Send
    {
        self.inner
            .recent_observations_batch(visitors, limit, now_ms)
    }

    fn create_visitor(
        &self,
        visitor: &VisitorId,
        now_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.inner.create_visitor(visitor, now_ms)
    }

    fn save_observation(
        &self,
        visitor: &VisitorId,
        observation: &Observation,
        now_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.inner.save_observation(visitor, observation, now_ms)
    }

    fn touch_visitor(
        &self,
        visitor: &VisitorId,
        now_ms: i64,
    ) -> impl Future<Output = Result<(), StoreError>> + Send {
        self.inner.touch_visitor(visitor, now_ms)
    }

    async fn record_visit(&self, write: VisitWrite<'_>) -> Result<(), StoreError> {
        let erase = {
            let mut erase = self.erase.lock().expect("not poisoned");
            erase.take_if(|visitor| visitor == write.visitor)
        };
        if let Some(visitor) = erase {
            assert!(self.inner.delete_visitor(&visitor).await?, "erased");
        }
        self.inner.record_visit(write).await
    }

    fn cleanup(
        &self,
        after: Option<&str>,
        batch: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<CleanupReport, StoreError>> + Send {
        self.inner.cleanup(after, batch, now_ms)
    }

    fn delete_visitor(
        &self,
        visitor: &VisitorId,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send {
        self.inner.delete_visitor(visitor)
    }
}

/// Case: A visitor erased between an identification's read and its write is answered as after the erasure:
/// a cookie naming it and a restore of it both get a new visitor, not an error.
pub async fn an_erasure_between_read_and_write_is_answered_as_after_it(
    fresh: impl Fresh<Retention, Store: VisitorStore>,
) {
    let erase = Arc::new(Mutex::new(None));
    let store = ErasedBeforeWrite {
        inner: fresh.store(Retention::default()).await,
        erase: Arc::clone(&erase),
    };
    let engine = Engine::new(store, EngineConfig::default());
    let mut doc = mac_document();
    let first = VisitorPayload::from_value(&doc).expect("a payload");
    doc["signals"]["viewport"] = json!({"width": 1111, "height": 700});
    let resized = VisitorPayload::from_value(&doc).expect("a payload");
    let identify = |payload, cookie, at| engine.identify_at(payload, cookie, at);

    // A cookie visit with a new observation: its history is read, then the erasure commits, then it writes.
    let old = identify(&first, None, T0)
        .await
        .expect("first visit")
        .identity;
    *erase.lock().expect("not poisoned") = Some(old.visitor_id.clone());
    let after = identify(&resized, Some(&old.visitor_id), T0 + DAY_MS).await;
    let after = after.expect("answered as after the erasure").identity;
    assert!(!after.is_returning && after.visitor_id != old.visitor_id);

    // A restore without a cookie: the candidate is read, then erased, then the visit would be written to it.
    *erase.lock().expect("not poisoned") = Some(after.visitor_id.clone());
    let lost = identify(&resized, None, T0 + 2 * DAY_MS).await;
    let lost = lost.expect("answered as after the erasure").identity;
    assert!(!lost.is_returning && lost.visitor_id != after.visitor_id);
    assert_eq!(lost.browser_match, None, "the erased visitor is not named");

    // Without an erasure, the same visit restores: the case is the race, not a visit that cannot restore.
    let kept = identify(&resized, None, T0 + 3 * DAY_MS)
        .await
        .expect("restored")
        .identity;
    assert!(kept.is_returning && kept.visitor_id == lost.visitor_id);
}
