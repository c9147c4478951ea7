//! Running a scenario on both stores, and stores whose candidate lookup first runs a hook (to block it, slow it
//! or count it).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use janitor_core::erasure::AccountErasure;
use janitor_core::evidence::SubjectId;
use janitor_core::identification::candidates::{LookupRow, Probe};
use janitor_core::identification::store::{CleanupReport, VisitWrite, VisitorStore};
use janitor_core::{Observation, Retention, StoreError, Stores, StoresKind, VisitorId};

/// Runs each named `async fn scenario<S: Stores>(stores: S)` as a test on the in-memory stores and, with the
/// `postgres` feature, as another on a fresh PostgreSQL schema.
macro_rules! on_both_stores {
    ($($scenario:ident),* $(,)?) => {
        mod memory {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    super::$scenario(janitor_axum::MemoryStores::new()).await;
                }
            )*
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $scenario() {
                    janitor_sql::testing::with_schemas(|schemas| async move {
                        super::$scenario(janitor_axum::postgres::PgStores::new(schemas.fresh().await)).await;
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

/// `S` with a [`Hook`] in front of its visitor store's candidate lookup.
#[derive(Clone)]
pub struct Hooked<S> {
    pub stores: S,
    pub before_lookup: Hook,
}

/// A visitor store that runs a hook, then delegates everything.
#[derive(Clone)]
pub struct HookedVisitors<V> {
    inner: V,
    before_lookup: Hook,
}

impl<S: Stores> Stores for Hooked<S> {
    type Visitors = HookedVisitors<S::Visitors>;
    type Quotas = S::Quotas;
    type Budget = S::Budget;
    type Evidence = S::Evidence;
    type Directory = S::Directory;
    type Learning = S::Learning;

    fn visitors(&self, retention: Retention) -> Self::Visitors {
        HookedVisitors {
            inner: self.stores.visitors(retention),
            before_lookup: Arc::clone(&self.before_lookup),
        }
    }
    fn quotas(&self) -> Self::Quotas {
        self.stores.quotas()
    }
    fn budget(&self) -> Self::Budget {
        self.stores.budget()
    }
    fn evidence(&self) -> Self::Evidence {
        self.stores.evidence()
    }
    fn directory(&self) -> Self::Directory {
        self.stores.directory()
    }
    fn learning(&self) -> Self::Learning {
        self.stores.learning()
    }
    fn kind(&self) -> StoresKind {
        self.stores.kind()
    }
    async fn erase_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError> {
        self.stores.erase_visitor(visitor).await
    }
    async fn erase_account(
        &self,
        subject: &SubjectId,
        browser: Option<&VisitorId>,
    ) -> Result<AccountErasure, StoreError> {
        self.stores.erase_account(subject, browser).await
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
