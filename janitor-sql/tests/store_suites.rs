//! The four store suites of janitor-core, run unchanged on PostgreSQL: one test per case, each in a fresh
//! schema that is dropped afterwards.

use janitor_core::{Retention, VisitorStore};
use janitor_sql::testing::{with_schemas, Schemas};
use janitor_sql::{PgBudgetStore, PgEvidenceStore, PgQuotaStore, PgVisitorStore};

mod visitor_store {
    use super::*;

    janitor_core::visitor_store_tests!(
        around: with_schemas,
        fresh: |schemas: Schemas, retention| async move {
            PgVisitorStore::new(schemas.fresh().await, retention)
        },
    );
}

mod quota_store {
    use super::*;

    janitor_core::quota_store_tests!(
        around: with_schemas,
        fresh: |schemas: Schemas, ()| async move { PgQuotaStore::new(schemas.fresh().await) },
    );
}

mod budget_store {
    use super::*;

    janitor_core::budget_store_tests!(
        around: with_schemas,
        fresh: |schemas: Schemas, ()| async move { PgBudgetStore::new(schemas.fresh().await) },
    );
}

mod evidence_store {
    use super::*;

    janitor_core::evidence_store_tests!(
        around: with_schemas,
        fresh: |schemas: Schemas, visitors: Vec<janitor_core::VisitorId>| async move {
            // Events and links reference visitor rows.
            let database = schemas.fresh().await;
            let store = PgVisitorStore::new(database.clone(), Retention::default());
            for visitor in &visitors {
                store
                    .create_visitor(visitor, janitor_core::testing::T0)
                    .await
                    .expect("visitor");
            }
            PgEvidenceStore::new(database)
        },
    );
}
