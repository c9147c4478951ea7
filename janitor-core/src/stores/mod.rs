//! A family of stores: where one deployment keeps its visitors, quota counters, inference budget, evidence and
//! identity directory.
//!
//! [`Stores`] hands out one handle per concern. Handles are cheap clones over shared state, so every call returns
//! a handle on the *same* data: the visitors the engine writes are the visitors cleanup and erasure see, and an
//! event recorded through `stores.evidence()` is counted by the handle's own evidence service.
//!
//! Two families exist: [`MemoryStores`] here, for quick starts, single instances and tests, and `PgStores` in
//! `janitor-sql`, shared by every instance on one PostgreSQL database.

use std::future::Future;

pub mod erased;

pub use erased::ErasedStores;

use crate::directory::{DirectoryStore, MemoryDirectoryStore};
use crate::erasure::AccountErasure;
use crate::error::StoreError;
use crate::evidence::{EvidenceStore, MemoryEvidenceStore, SubjectId};
use crate::identification::config::Retention;
use crate::identification::store::{MemoryVisitorStore, VisitorStore};
use crate::learning::{erase_subject_sessions, LearningStore, MemoryLearningStore};
use crate::protection::budget::{BudgetStore, MemoryBudgetStore};
use crate::protection::quota::{MemoryQuotaStore, QuotaStore};
use crate::visitor::VisitorId;

/// One store per storage concern, all over the same backing state.
pub trait Stores: Clone + Send + Sync + 'static {
    /// Visitors and observations.
    type Visitors: VisitorStore + Clone + 'static;
    /// Request quota counters.
    type Quotas: QuotaStore + Clone + 'static;
    /// The shared inference budget rows.
    type Budget: BudgetStore + Clone + 'static;
    /// Application events, device links and the subjects they name.
    type Evidence: EvidenceStore + Clone + 'static;
    /// The identity directory: subjects, verified keys and delegations (its subjects are evidence's).
    type Directory: DirectoryStore + Clone + 'static;
    /// Login-labelled learning sessions (optional module; empty unless learning is enabled).
    type Learning: LearningStore + Clone + 'static;

    /// The visitor store, applying `retention` (a policy of the handle; the visitors are shared).
    fn visitors(&self, retention: Retention) -> Self::Visitors;

    /// The quota store.
    fn quotas(&self) -> Self::Quotas;

    /// The budget store.
    fn budget(&self) -> Self::Budget;

    /// The evidence store.
    fn evidence(&self) -> Self::Evidence;

    /// The identity directory store.
    fn directory(&self) -> Self::Directory;

    /// The learning store.
    fn learning(&self) -> Self::Learning;

    /// Where these stores keep their state, which a handle built on them says at start: an instance running
    /// on the memory stores by mistake (a misspelled `DATABASE_URL`, say) must not go unnoticed until its
    /// visitors are lost. The default knows nothing of a family made elsewhere and gives its type's name.
    fn kind(&self) -> StoresKind {
        StoresKind::Other(std::any::type_name::<Self>())
    }

    /// Records `fingerprint` (a keyed fingerprint of the secret, see
    /// [`LabelKey::fingerprint`](crate::LabelKey::fingerprint)) for `namespace` if none is recorded yet, and says
    /// whether the recorded one is the same. Stores that no other process shares have nothing to compare:
    /// the default answers [`KeyCheck::Unshared`].
    fn check_key(
        &self,
        namespace: &str,
        fingerprint: &str,
    ) -> impl Future<Output = Result<KeyCheck, StoreError>> + Send {
        let _ = (namespace, fingerprint);
        async { Ok(KeyCheck::Unshared) }
    }

    /// Erases an account's subject and, when given, a browser, in one atomic step: nothing is left
    /// half-erased when it fails. What goes and what stays is the rule of [`crate::erasure`]: the subject
    /// row, its keys, delegations, learning sessions, device links and own events go; events about other
    /// subjects that name it as actor or name the browser are kept and detached from both; the browser's
    /// visitor row, observations, links and events naming no other subject go.
    ///
    /// Server code calls [`erasure::erase_account`](crate::erasure::erase_account) (or the `Janitor`
    /// handle's), which labels the raw account id first.
    fn erase_account(
        &self,
        subject: &SubjectId,
        browser: Option<&VisitorId>,
    ) -> impl Future<Output = Result<AccountErasure, StoreError>> + Send;

    /// Erases a browser alone, atomically, by the rule of [`crate::erasure`]: its visitor row, observations,
    /// device links and the events naming it that name no subject go; events about subjects are kept without
    /// it, so erasing a browser never resets an account's lockout. Returns whether the visitor existed.
    fn erase_visitor(
        &self,
        visitor: &VisitorId,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// Where a family of stores keeps its state ([`Stores::kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoresKind {
    /// This process's memory ([`MemoryStores`]): each instance keeps its own visitors, quota counters and
    /// evidence, and nothing survives a restart.
    Memory,
    /// A database every instance shares, which outlives them, by name (`"PostgreSQL"`).
    Shared(&'static str),
    /// A family this crate does not know, by name.
    Other(&'static str),
}

impl std::fmt::Display for StoresKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoresKind::Memory => f.write_str("in memory (this process only, lost at a restart)"),
            StoresKind::Shared(name) => write!(f, "{name} (shared by every instance)"),
            StoresKind::Other(name) => f.write_str(name),
        }
    }
}

/// What [`Stores::check_key`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyCheck {
    /// The namespace had no fingerprint: this one is now recorded.
    Recorded,
    /// The recorded fingerprint is this one: the instances share the secret.
    Matches,
    /// Another secret was recorded for the namespace: this instance's labels would match no other's.
    Differs,
    /// The stores are this process's own: there is nothing to compare with.
    Unshared,
}

/// Every store in this process's memory: the embedded default for quick starts, single instances and tests.
///
/// Cheap to clone; clones share every store.
///
/// ```
/// use janitor_core::{MemoryStores, Retention, Stores, VisitorStore};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let stores = MemoryStores::new();
/// let visitor = janitor_core::VisitorId::generate();
/// stores.visitors(Retention::default()).create_visitor(&visitor, 0).await.unwrap();
/// // Every handle works on the same visitors.
/// assert!(stores.erase_visitor(&visitor).await.unwrap());
/// assert!(!stores.erase_visitor(&visitor).await.unwrap());
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct MemoryStores {
    visitors: MemoryVisitorStore,
    quotas: MemoryQuotaStore,
    budget: MemoryBudgetStore,
    evidence: MemoryEvidenceStore,
    directory: MemoryDirectoryStore,
    learning: MemoryLearningStore,
}

impl Default for MemoryStores {
    fn default() -> Self {
        let evidence = MemoryEvidenceStore::new();
        MemoryStores {
            visitors: MemoryVisitorStore::default(),
            quotas: MemoryQuotaStore::default(),
            budget: MemoryBudgetStore::default(),
            // One set of subject rows, as in the database: erasing a subject in the directory erases its
            // evidence too.
            directory: MemoryDirectoryStore::with_evidence(evidence.clone()),
            evidence,
            learning: MemoryLearningStore::new(),
        }
    }
}

impl MemoryStores {
    /// Empty stores.
    pub fn new() -> Self {
        MemoryStores::default()
    }

    /// The same stores, holding at most `max` visitors (1–10,000,000; [`DEFAULT_MAX_VISITORS`](crate::DEFAULT_MAX_VISITORS)
    /// unless set): past it a new visitor evicts the one holding the oldest observation
    /// ([`MemoryVisitorStore::with_max_visitors`]).
    pub fn with_max_visitors(self, max: usize) -> Result<Self, crate::ConfigError> {
        Ok(MemoryStores {
            visitors: self.visitors.with_max_visitors(max)?,
            ..self
        })
    }

    /// The same stores, whose observations weigh at most `max` bytes (1 MiB to 1 TiB;
    /// [`DEFAULT_MAX_BYTES`](crate::DEFAULT_MAX_BYTES), 256 MiB, unless set): past it the visitors holding the
    /// oldest observations are evicted ([`MemoryVisitorStore::with_max_bytes`]).
    pub fn with_max_bytes(self, max: usize) -> Result<Self, crate::ConfigError> {
        Ok(MemoryStores {
            visitors: self.visitors.with_max_bytes(max)?,
            ..self
        })
    }

    /// Erases under every store's lock at once, so no call sees it half done. The locks are taken in the
    /// order the directory already takes its own and evidence's; learning and visitors are never held while
    /// another lock is taken, so the order cannot deadlock.
    fn erase(&self, subject: Option<&SubjectId>, browser: Option<&VisitorId>) -> AccountErasure {
        let mut directory = self.directory.lock();
        let mut evidence = self.evidence.lock();
        let mut learning = self.learning.rows();
        let mut visitors = self.visitors.lock();
        let mut report = AccountErasure::default();
        // With an account, its browser goes only when it is the account's own.
        let browser = match (subject, browser) {
            (Some(subject), Some(browser)) if !evidence.is_linked(subject, browser) => {
                report.visitor_not_linked = visitors.has_visitor(browser);
                None
            }
            _ => browser,
        };
        evidence.erase(subject, browser, &mut report);
        if let Some(subject) = subject {
            report.subject_existed = evidence.remove_subject(subject);
            (report.keys_deleted, report.delegations_deleted) = directory.erase_subject(subject);
            report.learning_sessions_deleted = erase_subject_sessions(&mut learning, subject);
        }
        if let Some(browser) = browser {
            report.visitor_erased = visitors.remove_visitor(browser);
        }
        report
    }
}

impl Stores for MemoryStores {
    type Visitors = MemoryVisitorStore;
    type Quotas = MemoryQuotaStore;
    type Budget = MemoryBudgetStore;
    type Evidence = MemoryEvidenceStore;
    type Directory = MemoryDirectoryStore;
    type Learning = MemoryLearningStore;

    fn visitors(&self, retention: Retention) -> Self::Visitors {
        self.visitors.with_retention(retention)
    }

    fn quotas(&self) -> Self::Quotas {
        self.quotas.clone()
    }

    fn budget(&self) -> Self::Budget {
        self.budget.clone()
    }

    fn evidence(&self) -> Self::Evidence {
        self.evidence.clone()
    }

    fn directory(&self) -> Self::Directory {
        self.directory.clone()
    }

    fn learning(&self) -> Self::Learning {
        self.learning.clone()
    }

    fn kind(&self) -> StoresKind {
        StoresKind::Memory
    }

    async fn erase_account(
        &self,
        subject: &SubjectId,
        browser: Option<&VisitorId>,
    ) -> Result<AccountErasure, StoreError> {
        Ok(self.erase(Some(subject), browser))
    }

    async fn erase_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError> {
        Ok(self.erase(None, Some(visitor)).visitor_erased)
    }
}
