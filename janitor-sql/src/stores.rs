//! The PostgreSQL family of stores: every store over one [`Database`], shared by every instance on it.

use janitor_core::erasure::AccountErasure;
use janitor_core::evidence::SubjectId;
use janitor_core::{KeyCheck, Retention, StoreError, Stores, VisitorId};

use crate::{
    Database, PgBudgetStore, PgEvidenceStore, PgIdentityStore, PgLearningStore, PgQuotaStore,
    PgVisitorStore,
};

/// Every store in PostgreSQL: the visitors, quota counters, inference budget, evidence and identity directory of every
/// instance that
/// uses the same database (and schema). Cheap to clone; clones share the pool. Run
/// [`Database::migrate`] once before use.
#[derive(Debug, Clone)]
pub struct PgStores {
    database: Database,
}

impl PgStores {
    /// The stores over `database`.
    pub fn new(database: Database) -> Self {
        PgStores { database }
    }

    /// The database handle (for its counters, migrations or the application's own statements).
    pub fn database(&self) -> &Database {
        &self.database
    }
}

impl Stores for PgStores {
    type Visitors = PgVisitorStore;
    type Quotas = PgQuotaStore;
    type Budget = PgBudgetStore;
    type Evidence = PgEvidenceStore;
    type Directory = PgIdentityStore;
    type Learning = PgLearningStore;

    fn visitors(&self, retention: Retention) -> Self::Visitors {
        PgVisitorStore::new(self.database.clone(), retention)
    }

    fn quotas(&self) -> Self::Quotas {
        PgQuotaStore::new(self.database.clone())
    }

    fn budget(&self) -> Self::Budget {
        PgBudgetStore::new(self.database.clone())
    }

    fn evidence(&self) -> Self::Evidence {
        PgEvidenceStore::new(self.database.clone())
    }

    fn directory(&self) -> Self::Directory {
        PgIdentityStore::new(self.database.clone())
    }

    fn learning(&self) -> Self::Learning {
        PgLearningStore::new(self.database.clone())
    }

    /// One statement, in `janitor_key_checks`.
    async fn check_key(&self, namespace: &str, fingerprint: &str) -> Result<KeyCheck, StoreError> {
        crate::key_check::check(&self.database, namespace, fingerprint).await
    }

    /// One transaction of at most six round trips: events about other subjects are detached before the rows
    /// whose cascade would delete them go.
    async fn erase_account(
        &self,
        subject: &SubjectId,
        browser: Option<&VisitorId>,
    ) -> Result<AccountErasure, StoreError> {
        crate::erasure::erase(&self.database, Some(subject), browser).await
    }

    /// One transaction of five round trips: events about subjects that name the browser are detached before
    /// its row goes.
    async fn erase_visitor(&self, visitor: &VisitorId) -> Result<bool, StoreError> {
        let erased = crate::erasure::erase(&self.database, None, Some(visitor)).await?;
        Ok(erased.visitor_erased)
    }
}
