//! Every way the PostgreSQL store can read candidate rows ranks exactly as the whole observations do: the
//! store suite's case, run for the ways that are not the default (the suites run the default); the covering
//! way on a schema with its indexes built.

use std::sync::Arc;

use janitor_core::identification::candidates::probes_for;
use janitor_core::testing::visitor;
use janitor_core::testing::visitor_store::{lookup_rows_rank_as_observations, observation};
use janitor_core::{Retention, VisitorStore};
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

/// One lookup decodes each distinct stored observation once, whichever way it reads rows: a row that every
/// probe returns, and another visitor's row with the same observation, share one decoded observation, while a
/// different observation gets its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equal_rows_share_one_decoded_observation() {
    with_schemas(|schemas: Schemas| async move {
        for read in [
            LookupRead::StoredFeatures,
            LookupRead::ComputedFeatures,
            LookupRead::SignalsJson,
            LookupRead::CoveringIndexes,
        ] {
            let database = schemas.fresh().await;
            if read == LookupRead::CoveringIndexes {
                database.create_covering_lookup_indexes().await.unwrap();
            }
            let store = PgVisitorStore::new(database, Retention::default()).with_lookup_read(read);
            let now = 1_700_000_000_000;
            let (same, other) = (observation("same"), observation("other"));
            for (n, o) in [(1, &same), (2, &same), (3, &other)] {
                store.create_visitor(&visitor(n), now).await.unwrap();
                store.save_observation(&visitor(n), o, now).await.unwrap();
            }
            let probes = probes_for(&same);
            let rows = store.find_candidate_rows(&probes, now + 1).await.unwrap();
            let of = |n: u64| rows.iter().filter(move |r| r.visitor_id == visitor(n));
            assert_eq!(of(1).count(), probes.len(), "{read:?}: every probe returns it");
            assert_eq!(of(2).count(), probes.len(), "{read:?}");
            let first = &of(1).next().unwrap().observation;
            assert_eq!(**first, *of(1).last().unwrap().observation, "{read:?}");
            for row in of(1).chain(of(2)) {
                assert!(Arc::ptr_eq(first, &row.observation), "{read:?}: {row:?}");
            }
            for row in of(3) {
                assert!(!Arc::ptr_eq(first, &row.observation), "{read:?}: {row:?}");
                assert_ne!(**first, *row.observation, "{read:?}");
            }
            assert!(of(3).count() > 0, "{read:?}: the other observation shares probes");
        }
    })
    .await;
}
