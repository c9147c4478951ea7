//! The behaviour every visitor store must show, run unchanged on PostgreSQL (a fresh schema per case).

use janitor_sql::testing::with_schemas;
use janitor_sql::PgVisitorStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_store_suite_passes_on_postgres() {
    with_schemas(|schemas| async move {
        janitor_core::store::suite::run(|retention| {
            let schemas = schemas.clone();
            async move { PgVisitorStore::new(schemas.fresh().await, retention) }
        })
        .await;
    })
    .await;
}
