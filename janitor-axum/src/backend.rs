//! Where the handle keeps its state: in process memory, or in PostgreSQL shared by every instance.

use janitor_core::evidence::{EvidenceStore, MemoryEvidenceStore};
use janitor_core::protection::budget::{BudgetStore, MemoryBudgetStore};
use janitor_core::protection::quota::{MemoryQuotaStore, QuotaStore};
use janitor_core::store::{MemoryVisitorStore, VisitorStore};
use janitor_core::Retention;
use janitor_sql::{Database, PgBudgetStore, PgEvidenceStore, PgQuotaStore, PgVisitorStore};

/// A family of stores: one for visitors, quotas, the inference budget and evidence.
pub trait Backend: Send + Sync + 'static {
    /// Visitors and observations.
    type Visitors: VisitorStore + 'static;
    /// Request quota counters.
    type Quotas: QuotaStore + 'static;
    /// The shared inference budget row.
    type Budget: BudgetStore + 'static;
    /// Application events and device links.
    type Evidence: EvidenceStore + 'static;

    /// Whether deleting a visitor also deletes its events and links (a database's foreign keys cascade; separate
    /// in-memory stores do not, so the handle erases them itself).
    const VISITOR_DELETE_CASCADES: bool;

    /// The visitor store, applying `retention`.
    fn visitors(&self, retention: Retention) -> Self::Visitors;
    /// The quota store.
    fn quotas(&self) -> Self::Quotas;
    /// The budget store.
    fn budget(&self) -> Self::Budget;
    /// The evidence store.
    fn evidence(&self) -> Self::Evidence;
}

/// Everything in this process's memory: the embedded default for quick starts and single instances.
#[derive(Debug, Clone, Copy, Default)]
pub struct InMemory;

impl Backend for InMemory {
    type Visitors = MemoryVisitorStore;
    type Quotas = MemoryQuotaStore;
    type Budget = MemoryBudgetStore;
    type Evidence = MemoryEvidenceStore;

    const VISITOR_DELETE_CASCADES: bool = false;

    fn visitors(&self, retention: Retention) -> Self::Visitors {
        MemoryVisitorStore::new(retention)
    }

    fn quotas(&self) -> Self::Quotas {
        MemoryQuotaStore::new()
    }

    fn budget(&self) -> Self::Budget {
        MemoryBudgetStore::new()
    }

    fn evidence(&self) -> Self::Evidence {
        MemoryEvidenceStore::new()
    }
}

/// PostgreSQL, shared by every instance on the database. Run [`Database::migrate`] first.
#[derive(Debug, Clone)]
pub struct Postgres(pub Database);

impl Backend for Postgres {
    type Visitors = PgVisitorStore;
    type Quotas = PgQuotaStore;
    type Budget = PgBudgetStore;
    type Evidence = PgEvidenceStore;

    const VISITOR_DELETE_CASCADES: bool = true;

    fn visitors(&self, retention: Retention) -> Self::Visitors {
        PgVisitorStore::new(self.0.clone(), retention)
    }

    fn quotas(&self) -> Self::Quotas {
        PgQuotaStore::new(self.0.clone())
    }

    fn budget(&self) -> Self::Budget {
        PgBudgetStore::new(self.0.clone())
    }

    fn evidence(&self) -> Self::Evidence {
        PgEvidenceStore::new(self.0.clone())
    }
}
