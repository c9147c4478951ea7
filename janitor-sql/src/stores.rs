//! The PostgreSQL family of stores: every store over one [`Database`], shared by every instance on it.

use janitor_core::erasure::AccountErasure;
use janitor_core::evidence::SubjectId;
use janitor_core::{KeyCheck, Retention, StoreError, Stores, StoresKind, VisitorId};

use std::sync::Arc;

use crate::evidence_store::{EventGroups, GroupedInserts};
use crate::{
    Database, LookupReplica, PgBudgetStore, PgDirectoryStore, PgEvidenceStore, PgLearningStore,
    PgQuotaStore, PgVisitorStore, SetupError,
};

/// Every store in PostgreSQL: the visitors, quota counters, inference budget, evidence and identity directory of every
/// instance that
/// uses the same database (and schema). Cheap to clone; clones share the pool. Run
/// [`Database::migrate`] once before use.
#[derive(Debug, Clone)]
pub struct PgStores {
    database: Database,
    event_groups: Option<Arc<EventGroups>>,
    replica: Option<LookupReplica>,
}

impl PgStores {
    /// The stores over `database`.
    pub fn new(database: Database) -> Self {
        PgStores {
            database,
            event_groups: None,
            replica: None,
        }
    }

    /// The same stores with event inserts grouped: callers recording at the same moment share one statement
    /// and one commit (see [`GroupedInserts`]). Every evidence store these stores make shares one set of
    /// writers. Off by default.
    pub fn group_event_inserts(self, settings: GroupedInserts) -> Self {
        let event_groups = Some(EventGroups::new(self.database.clone(), settings));
        PgStores {
            event_groups,
            ..self
        }
    }

    /// The same stores with the cookieless lookup read on `replica` while its lag is within bound (see
    /// [`PgVisitorStore::with_lookup_replica`]); everything else stays on the primary. Off by default.
    pub fn lookup_replica(self, replica: LookupReplica) -> Result<Self, SetupError> {
        replica.check_schema(&self.database)?;
        Ok(PgStores {
            replica: Some(replica),
            ..self
        })
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
    type Directory = PgDirectoryStore;
    type Learning = PgLearningStore;

    fn visitors(&self, retention: Retention) -> Self::Visitors {
        PgVisitorStore::new(self.database.clone(), retention).reading_on(self.replica.clone())
    }

    fn quotas(&self) -> Self::Quotas {
        PgQuotaStore::new(self.database.clone())
    }

    fn budget(&self) -> Self::Budget {
        PgBudgetStore::new(self.database.clone())
    }

    fn evidence(&self) -> Self::Evidence {
        PgEvidenceStore::new(self.database.clone()).sharing_groups(self.event_groups.clone())
    }

    fn directory(&self) -> Self::Directory {
        PgDirectoryStore::new(self.database.clone())
    }

    fn learning(&self) -> Self::Learning {
        PgLearningStore::new(self.database.clone())
    }

    fn kind(&self) -> StoresKind {
        StoresKind::Shared("PostgreSQL")
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
