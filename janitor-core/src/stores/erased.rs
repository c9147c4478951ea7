//! A family of stores and an evaluator with their types erased, once, where a handle is built.
//!
//! The store traits return `impl Future` so that [`Engine`](crate::Engine) and the services compile to direct
//! calls over a known family. A handle that an application names without type parameters holds
//! [`ErasedStores`] instead: each store behind an `Arc<dyn …>` whose futures are boxed, in the manner of
//! tower-sessions' `Arc<dyn SessionStore>`. One allocation per store call is the price (measured on the cookie
//! path in docs/benchmarks); every behaviour is the wrapped store's, default methods included.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;

use super::{KeyCheck, Stores, StoresKind};
use crate::directory::{
    Delegation, DelegationId, DirectoryStore, KeyRecord, KeyWrite, SubjectKind, SubjectRecord,
};
use crate::erasure::AccountErasure;
use crate::error::StoreError;
use crate::evidence::{
    ActivityRead, ApplicationEvent, DeviceLink, EventOwner, EventType, EventWrite, EvidenceCleanup,
    EvidenceStore, LinkId, LinkWrite, Revocation, SubjectId,
};
use crate::identification::candidates::{LookupRow, Probe};
use crate::identification::config::Retention;
use crate::identification::evaluator::{Evaluation, EvaluationInput, Evaluator, EvaluatorError};
use crate::identification::observation::Observation;
use crate::identification::store::{
    CleanupReport, ReturningHistory, ReturningVisit, VisitWrite, VisitorStore,
};
use crate::learning::{
    Confirmation, ExamplePool, LearningReport, LearningSession, LearningStore, SessionId,
};
use crate::protection::budget::{BudgetRow, BudgetStore};
use crate::protection::quota::{
    ChainOutcome, ChainSettle, ClaimChain, ClaimOutcome, QuotaClaim, QuotaStore,
};
use crate::visitor::VisitorId;

/// A store (or evaluator) whose futures get boxed: the one implementation of each object-safe twin, so that
/// the `Arc` of a twin, which implements the store trait, is not a twin itself (its methods would be
/// ambiguous).
struct Erase<T>(T);

/// Writes, for one store trait, its object-safe twin (futures boxed), the twin for every implementation, and
/// the trait for the twin's `Arc`, so that each method is listed once.
macro_rules! erase {
    (
        $(#[$meta:meta])*
        $object:ident erases $store:ident {
            $( fn $name:ident(&self $(, $arg:ident: $ty:ty)* $(,)?) -> $out:ty; )*
        }
    ) => {
        $(#[$meta])*
        #[async_trait]
        pub trait $object: Send + Sync {
            $(
                #[doc = concat!("[`", stringify!($store), "::", stringify!($name), "`], its future boxed.")]
                async fn $name(&self $(, $arg: $ty)*) -> $out;
            )*
        }

        #[async_trait]
        impl<T: $store> $object for Erase<T> {
            $(
                async fn $name(&self $(, $arg: $ty)*) -> $out {
                    <T as $store>::$name(&self.0 $(, $arg)*).await
                }
            )*
        }

        impl<'a> $store for Arc<dyn $object + 'a> {
            $(
                async fn $name(&self $(, $arg: $ty)*) -> $out {
                    (**self).$name($($arg),*).await
                }
            )*
        }
    };
}

erase! {
    /// A [`VisitorStore`] of any type.
    ErasedVisitorStore erases VisitorStore {
        fn find_candidate_rows(&self, probes: &[Probe], now_ms: i64) -> Result<Vec<LookupRow>, StoreError>;
        fn recent_observations(&self, visitor: &VisitorId, limit: usize, now_ms: i64)
            -> Result<Vec<Arc<Observation>>, StoreError>;
        fn returning_visit(&self, visit: ReturningVisit<'_>) -> Result<ReturningHistory, StoreError>;
        fn recent_observations_batch(&self, visitors: &[VisitorId], limit: usize, now_ms: i64)
            -> Result<HashMap<VisitorId, Vec<Arc<Observation>>>, StoreError>;
        fn create_visitor(&self, visitor: &VisitorId, now_ms: i64) -> Result<(), StoreError>;
        fn save_observation(&self, visitor: &VisitorId, observation: &Observation, now_ms: i64)
            -> Result<(), StoreError>;
        fn touch_visitor(&self, visitor: &VisitorId, now_ms: i64) -> Result<(), StoreError>;
        fn record_visit(&self, write: VisitWrite<'_>) -> Result<(), StoreError>;
        fn cleanup(&self, after: Option<&str>, batch: usize, now_ms: i64) -> Result<CleanupReport, StoreError>;
        fn delete_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError>;
    }
}

erase! {
    /// A [`QuotaStore`] of any type.
    ErasedQuotaStore erases QuotaStore {
        fn claim(&self, claim: &QuotaClaim) -> Result<ClaimOutcome, StoreError>;
        fn claim_chain(&self, chain: &ClaimChain) -> Result<ChainOutcome, StoreError>;
        fn settle_chain(&self, settle: &ChainSettle) -> Result<(), StoreError>;
        fn cleanup(&self, batch: usize, now_ms: i64) -> Result<usize, StoreError>;
    }
}

erase! {
    /// A [`BudgetStore`] of any type.
    ErasedBudgetStore erases BudgetStore {
        fn read(&self, id: &str) -> Result<Option<BudgetRow>, StoreError>;
        fn compare_and_swap(&self, id: &str, expected_version: i64, next: &BudgetRow) -> Result<bool, StoreError>;
        fn cleanup(&self, batch: usize, now_ms: i64) -> Result<usize, StoreError>;
    }
}

erase! {
    /// An [`EvidenceStore`] of any type.
    ErasedEvidenceStore erases EvidenceStore {
        fn put_event(&self, event: &ApplicationEvent) -> Result<EventWrite, StoreError>;
        fn recent_event_types(&self, read: &ActivityRead<'_>) -> Result<Vec<EventType>, StoreError>;
        fn put_device_link(&self, link: &DeviceLink) -> Result<LinkWrite, StoreError>;
        fn device_link(&self, scope: &str, id: &LinkId) -> Result<Option<DeviceLink>, StoreError>;
        fn device_links(&self, scope: &str, subject: &SubjectId, limit: usize) -> Result<Vec<DeviceLink>, StoreError>;
        fn revoke_device_link(&self, scope: &str, id: &LinkId, revocation: &Revocation) -> Result<bool, StoreError>;
        fn delete_events(&self, scope: &str, owner: EventOwner<'_>) -> Result<u64, StoreError>;
        fn put_subject(&self, subject: &SubjectId, kind: SubjectKind, now_ms: i64) -> Result<bool, StoreError>;
        fn delete_subject(&self, subject: &SubjectId) -> Result<bool, StoreError>;
        fn delete_visitor_evidence(&self, visitor: &VisitorId) -> Result<u64, StoreError>;
        fn cleanup(&self, scope: &str, link_cutoff: i64, batch: usize, now_ms: i64)
            -> Result<EvidenceCleanup, StoreError>;
    }
}

erase! {
    /// An [`DirectoryStore`] of any type.
    ErasedDirectoryStore erases DirectoryStore {
        fn put_subject(&self, subject: &SubjectId, kind: SubjectKind, now_ms: i64) -> Result<bool, StoreError>;
        fn subject(&self, subject: &SubjectId) -> Result<Option<SubjectRecord>, StoreError>;
        fn delete_subject(&self, subject: &SubjectId) -> Result<bool, StoreError>;
        fn put_key(&self, key: &KeyRecord) -> Result<KeyWrite, StoreError>;
        fn key_owner(&self, digest: &str) -> Result<Option<SubjectId>, StoreError>;
        fn remove_key(&self, subject: &SubjectId, digest: &str) -> Result<bool, StoreError>;
        fn put_delegation(&self, delegation: &Delegation) -> Result<bool, StoreError>;
        fn delegation(&self, id: &DelegationId) -> Result<Option<Delegation>, StoreError>;
        fn revoke_delegation(&self, id: &DelegationId, now_ms: i64) -> Result<bool, StoreError>;
        fn cleanup(&self, batch: usize, now_ms: i64) -> Result<u64, StoreError>;
    }
}

erase! {
    /// A [`LearningStore`] of any type.
    ErasedLearningStore erases LearningStore {
        fn insert_session(&self, session: &LearningSession) -> Result<(), StoreError>;
        fn session(&self, scope: &str, id: &SessionId) -> Result<Option<LearningSession>, StoreError>;
        fn update_session(&self, session: &LearningSession, now_ms: i64) -> Result<bool, StoreError>;
        fn confirm_session(&self, scope: &str, id: &SessionId, subject: &SubjectId, keep: usize, now_ms: i64)
            -> Result<Confirmation, StoreError>;
        fn delete_session(&self, scope: &str, id: &SessionId) -> Result<bool, StoreError>;
        fn examples(&self, scope: &str, current: &Observation, cutoff: i64, limit: usize)
            -> Result<ExamplePool, StoreError>;
        fn reports(&self, scope: &str, cutoff: i64, limit: usize) -> Result<Vec<LearningReport>, StoreError>;
        fn cleanup(&self, scope: &str, cutoff: i64, keep: usize, now_ms: i64) -> Result<u64, StoreError>;
        fn delete_subject_sessions(&self, subject: &SubjectId) -> Result<u64, StoreError>;
    }
}

erase! {
    /// An [`Evaluator`] of any type.
    ErasedEvaluator erases Evaluator {
        fn evaluate(&self, input: EvaluationInput<'_>) -> Result<Evaluation, EvaluatorError>;
        fn evaluate_batch(&self, candidates: &[EvaluationInput<'_>]) -> Result<Vec<Evaluation>, EvaluatorError>;
    }
}

/// What a family does beyond handing out its stores, object-safe.
#[async_trait]
trait ErasedFamily: Send + Sync {
    fn visitors(&self, retention: Retention) -> Arc<dyn ErasedVisitorStore>;
    fn quotas(&self) -> Arc<dyn ErasedQuotaStore>;
    fn budget(&self) -> Arc<dyn ErasedBudgetStore>;
    fn evidence(&self) -> Arc<dyn ErasedEvidenceStore>;
    fn directory(&self) -> Arc<dyn ErasedDirectoryStore>;
    fn learning(&self) -> Arc<dyn ErasedLearningStore>;
    fn kind(&self) -> StoresKind;
    async fn check_key(&self, namespace: &str, fingerprint: &str) -> Result<KeyCheck, StoreError>;
    async fn erase_account(
        &self,
        subject: &SubjectId,
        browser: Option<&VisitorId>,
    ) -> Result<AccountErasure, StoreError>;
    async fn erase_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError>;
}

#[async_trait]
impl<S: Stores> ErasedFamily for Erase<S> {
    fn visitors(&self, retention: Retention) -> Arc<dyn ErasedVisitorStore> {
        Arc::new(Erase(Stores::visitors(&self.0, retention)))
    }
    fn quotas(&self) -> Arc<dyn ErasedQuotaStore> {
        Arc::new(Erase(Stores::quotas(&self.0)))
    }
    fn budget(&self) -> Arc<dyn ErasedBudgetStore> {
        Arc::new(Erase(Stores::budget(&self.0)))
    }
    fn evidence(&self) -> Arc<dyn ErasedEvidenceStore> {
        Arc::new(Erase(Stores::evidence(&self.0)))
    }
    fn directory(&self) -> Arc<dyn ErasedDirectoryStore> {
        Arc::new(Erase(Stores::directory(&self.0)))
    }
    fn learning(&self) -> Arc<dyn ErasedLearningStore> {
        Arc::new(Erase(Stores::learning(&self.0)))
    }
    fn kind(&self) -> StoresKind {
        Stores::kind(&self.0)
    }
    async fn check_key(&self, namespace: &str, fingerprint: &str) -> Result<KeyCheck, StoreError> {
        Stores::check_key(&self.0, namespace, fingerprint).await
    }
    async fn erase_account(
        &self,
        subject: &SubjectId,
        browser: Option<&VisitorId>,
    ) -> Result<AccountErasure, StoreError> {
        Stores::erase_account(&self.0, subject, browser).await
    }
    async fn erase_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError> {
        Stores::erase_visitor(&self.0, visitor).await
    }
}

/// Any family of [`Stores`], its type erased: what a handle without type parameters holds.
///
/// Cheap to clone; clones share the family. Each store it gives out is the wrapped family's own (the same
/// state), behind an `Arc<dyn …>`.
#[derive(Clone)]
pub struct ErasedStores {
    family: Arc<dyn ErasedFamily>,
}

impl ErasedStores {
    /// Erases the type of `stores`.
    pub fn new<S: Stores>(stores: S) -> Self {
        ErasedStores {
            family: Arc::new(Erase(stores)),
        }
    }
}

impl std::fmt::Debug for ErasedStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ErasedStores")
            .field("kind", &self.family.kind())
            .finish()
    }
}

impl Stores for ErasedStores {
    type Visitors = Arc<dyn ErasedVisitorStore>;
    type Quotas = Arc<dyn ErasedQuotaStore>;
    type Budget = Arc<dyn ErasedBudgetStore>;
    type Evidence = Arc<dyn ErasedEvidenceStore>;
    type Directory = Arc<dyn ErasedDirectoryStore>;
    type Learning = Arc<dyn ErasedLearningStore>;

    fn visitors(&self, retention: Retention) -> Self::Visitors {
        self.family.visitors(retention)
    }
    fn quotas(&self) -> Self::Quotas {
        self.family.quotas()
    }
    fn budget(&self) -> Self::Budget {
        self.family.budget()
    }
    fn evidence(&self) -> Self::Evidence {
        self.family.evidence()
    }
    fn directory(&self) -> Self::Directory {
        self.family.directory()
    }
    fn learning(&self) -> Self::Learning {
        self.family.learning()
    }
    fn kind(&self) -> StoresKind {
        self.family.kind()
    }
    async fn check_key(&self, namespace: &str, fingerprint: &str) -> Result<KeyCheck, StoreError> {
        self.family.check_key(namespace, fingerprint).await
    }
    async fn erase_account(
        &self,
        subject: &SubjectId,
        browser: Option<&VisitorId>,
    ) -> Result<AccountErasure, StoreError> {
        self.family.erase_account(subject, browser).await
    }
    async fn erase_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError> {
        self.family.erase_visitor(visitor).await
    }
}

/// Erases the type of `evaluator`.
pub fn erase_evaluator(evaluator: impl Evaluator + 'static) -> Arc<dyn ErasedEvaluator> {
    Arc::new(Erase(evaluator))
}
