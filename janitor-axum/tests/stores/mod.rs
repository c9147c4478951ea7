//! Store helpers shared by the endpoint tests: running a scenario on both stores, and a backend whose candidate
//! lookup first runs a hook (to block it, slow it or count it).
#![allow(dead_code, unused_macros, unused_imports)] // Each test file uses its own subset.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use janitor_axum::Backend;
use janitor_core::candidates::{LookupRow, Probe};
use janitor_core::store::{CleanupReport, StoreError, VisitWrite, VisitorStore};
use janitor_core::{Observation, Retention, VisitorId};

/// Runs each named `async fn scenario<B: Backend>(backend: B)` as two tests: on the in-memory store and on a
/// fresh PostgreSQL schema.
macro_rules! on_both_stores {
    ($($scenario:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario(janitor_axum::InMemory).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    janitor_sql::testing::with_schemas(|schemas| async move {
                        super::$scenario(janitor_axum::Postgres(schemas.fresh().await)).await;
                    })
                    .await;
                }
            )*
        }
    };
}
pub(crate) use on_both_stores;

/// What runs before every candidate lookup.
pub type Hook = Arc<dyn Fn() -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// `B` with a [`Hook`] in front of its visitor store's candidate lookup.
pub struct Hooked<B> {
    pub backend: B,
    pub before_lookup: Hook,
}

/// A visitor store that runs a hook, then delegates everything.
#[derive(Clone)]
pub struct HookedVisitors<V> {
    inner: V,
    before_lookup: Hook,
}

impl<B: Backend> Backend for Hooked<B> {
    type Visitors = HookedVisitors<B::Visitors>;
    type Quotas = B::Quotas;
    type Budget = B::Budget;
    type Evidence = B::Evidence;

    const VISITOR_DELETE_CASCADES: bool = B::VISITOR_DELETE_CASCADES;

    fn visitors(&self, retention: Retention) -> Self::Visitors {
        HookedVisitors {
            inner: self.backend.visitors(retention),
            before_lookup: Arc::clone(&self.before_lookup),
        }
    }
    fn quotas(&self) -> Self::Quotas {
        self.backend.quotas()
    }
    fn budget(&self) -> Self::Budget {
        self.backend.budget()
    }
    fn evidence(&self) -> Self::Evidence {
        self.backend.evidence()
    }
}

impl<V: VisitorStore> VisitorStore for HookedVisitors<V> {
    async fn find_candidate_rows(
        &self,
        probes: &[Probe],
        now_ms: i64,
    ) -> Result<Vec<LookupRow>, StoreError> {
        (self.before_lookup)().await;
        self.inner.find_candidate_rows(probes, now_ms).await
    }
    async fn recent_observations(
        &self,
        v: &VisitorId,
        limit: usize,
        now_ms: i64,
    ) -> Result<Vec<Arc<Observation>>, StoreError> {
        self.inner.recent_observations(v, limit, now_ms).await
    }
    async fn recent_observations_batch(
        &self,
        visitors: &[VisitorId],
        limit: usize,
        now_ms: i64,
    ) -> Result<HashMap<VisitorId, Vec<Arc<Observation>>>, StoreError> {
        self.inner
            .recent_observations_batch(visitors, limit, now_ms)
            .await
    }
    async fn create_visitor(&self, v: &VisitorId, now_ms: i64) -> Result<(), StoreError> {
        self.inner.create_visitor(v, now_ms).await
    }
    async fn save_observation(
        &self,
        v: &VisitorId,
        o: &Observation,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        self.inner.save_observation(v, o, now_ms).await
    }
    async fn touch_visitor(&self, v: &VisitorId, now_ms: i64) -> Result<(), StoreError> {
        self.inner.touch_visitor(v, now_ms).await
    }
    async fn record_visit(&self, write: VisitWrite<'_>) -> Result<(), StoreError> {
        self.inner.record_visit(write).await
    }
    async fn cleanup(
        &self,
        after: Option<&str>,
        batch: usize,
        now_ms: i64,
    ) -> Result<CleanupReport, StoreError> {
        self.inner.cleanup(after, batch, now_ms).await
    }
    async fn delete_visitor(&self, v: &VisitorId) -> Result<bool, StoreError> {
        self.inner.delete_visitor(v).await
    }
}
