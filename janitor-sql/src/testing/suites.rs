//! The seven store suites of janitor-core on PostgreSQL, for any way of reaching a database.

/// Runs janitor-core's visitor, quota, budget, evidence, identity and learning store suites and the family's
/// suite on PostgreSQL, one test per case, in modules `visitor_store`, `quota_store`, `budget_store`,
/// `evidence_store`, `directory_store`, `learning_store` and `stores`. `around` runs each case with
/// a context (as in janitor-core's suites); `database` makes a fresh, migrated [`Database`](crate::Database)
/// of it. The calling crate depends on `janitor-core` (feature `testing`) and `tokio`.
///
/// ```ignore
/// janitor_sql::pg_store_suites!(
///     around: janitor_sql::testing::with_schemas,
///     database: |schemas: janitor_sql::testing::Schemas| schemas.fresh().await,
/// );
/// ```
#[macro_export]
macro_rules! pg_store_suites {
    (around: $around:expr, database: |$context:ident: $type:ty| $database:expr $(,)?) => {
        mod visitor_store {
            use super::*;

            janitor_core::visitor_store_tests!(
                around: $around,
                fresh: |$context: $type, retention| async move {
                    $crate::PgVisitorStore::new($database, retention)
                },
            );
        }

        mod quota_store {
            use super::*;

            janitor_core::quota_store_tests!(
                around: $around,
                fresh: |$context: $type, ()| async move { $crate::PgQuotaStore::new($database) },
            );
        }

        mod budget_store {
            use super::*;

            janitor_core::budget_store_tests!(
                around: $around,
                fresh: |$context: $type, ()| async move { $crate::PgBudgetStore::new($database) },
            );
        }

        mod evidence_store {
            use super::*;

            janitor_core::evidence_store_tests!(
                around: $around,
                fresh: |$context: $type, visitors: Vec<janitor_core::VisitorId>| async move {
                    let database = $database;
                    $crate::testing::create_visitors(&database, &visitors).await;
                    $crate::PgEvidenceStore::new(database)
                },
            );
        }

        mod grouped_evidence_store {
            use super::*;

            // The same cases with event inserts grouped.
            janitor_core::evidence_store_tests!(
                around: $around,
                fresh: |$context: $type, visitors: Vec<janitor_core::VisitorId>| async move {
                    let database = $database;
                    $crate::testing::create_visitors(&database, &visitors).await;
                    $crate::PgEvidenceStore::new(database)
                        .with_grouped_inserts($crate::GroupedInserts::default())
                },
            );
        }

        mod directory_store {
            use super::*;

            janitor_core::directory_store_tests!(
                around: $around,
                fresh: |$context: $type, ()| async move { $crate::PgDirectoryStore::new($database) },
            );
        }

        mod learning_store {
            use super::*;

            janitor_core::learning_store_tests!(
                around: $around,
                fresh: |$context: $type, ()| async move { $crate::PgLearningStore::new($database) },
            );
        }

        mod stores {
            use super::*;

            janitor_core::stores_tests!(
                around: $around,
                fresh: |$context: $type, ()| async move { $crate::PgStores::new($database) },
            );
        }
    };
}
