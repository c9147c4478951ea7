//! Every way the PostgreSQL store can read candidate rows ranks exactly as the whole observations do: the
//! store suite's case, run for the ways that are not the default (the suites run the default); the covering
//! way on a schema with its indexes built.

use janitor_core::testing::visitor_store::lookup_rows_rank_as_observations;
use janitor_sql::testing::{with_schemas, Schemas};
use janitor_sql::{LookupRead, PgVisitorStore};

async fn ranks_as_observations(read: LookupRead) {
    with_schemas(move |schemas: Schemas| async move {
        lookup_rows_rank_as_observations(|retention| async move {
            let database = schemas.fresh().await;
            if read == LookupRead::CoveringIndexes {
                database.create_covering_lookup_indexes().await.unwrap();
            }
            PgVisitorStore::new(database, retention).with_lookup_read(read)
        })
        .await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computed_features_rank_as_observations() {
    ranks_as_observations(LookupRead::ComputedFeatures).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_json_ranks_as_observations() {
    ranks_as_observations(LookupRead::SignalsJson).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn covering_indexes_rank_as_observations() {
    ranks_as_observations(LookupRead::CoveringIndexes).await;
}
