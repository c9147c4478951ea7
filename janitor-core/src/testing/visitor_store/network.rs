//! The network digest an observation carries (opt-in network evidence), part of the visitor store suite
//! ([`visitor_store_tests!`](crate::visitor_store_tests)).

use super::observation;
use crate::identification::config::Retention;
use crate::identification::network::NetworkDigest;
use crate::identification::store::{ReturningVisit, VisitWrite, VisitorStore};
use crate::testing::{visitor, Fresh, T0};

fn networks(history: &[std::sync::Arc<crate::Observation>]) -> Vec<Option<&str>> {
    history
        .iter()
        .map(|o| o.network.as_ref().map(NetworkDigest::as_str))
        .collect()
}

/// Case: Each observation keeps its network digest, or none, through every read; a cookie visit from another
/// network is no refresh of the newest observation (the history learns the network), one from the same
/// network is.
pub async fn networks_are_kept_with_observations(
    fresh: impl Fresh<Retention, Store: VisitorStore>,
) {
    let store = &fresh.store(Retention::default()).await;
    let v = visitor(1);
    let home = NetworkDigest::from_stored("sub_home".into());
    let mut first = observation("n");
    first.network = Some(home.clone());
    store
        .record_visit(VisitWrite {
            visitor: &v,
            create: true,
            observation: Some(&first),
            now_ms: T0,
        })
        .await
        .expect("create with a network");
    let mut second = observation("n");
    second.viewport = first.viewport.clone().or(Some(Default::default()));
    second.network = None;
    store
        .save_observation(&v, &second, T0 + 1)
        .await
        .expect("save without a network");
    let history = store
        .recent_observations(&v, 5, T0 + 1)
        .await
        .expect("history");
    assert_eq!(networks(&history), [None, Some("sub_home")]);
    assert_eq!(*history[1], first);
    let batch = store
        .recent_observations_batch(std::slice::from_ref(&v), 5, T0 + 1)
        .await
        .expect("batch");
    assert_eq!(networks(&batch[&v]), [None, Some("sub_home")]);

    // The same signals as the newest row, from a network it was not seen on: recorded as a new row.
    let mut elsewhere = second.clone();
    elsewhere.network = Some(NetworkDigest::from_stored("sub_office".into()));
    let found = store
        .returning_visit(ReturningVisit {
            visitor: &v,
            observation: &elsewhere,
            refresh: true,
            limit: 5,
            now_ms: T0 + 2,
        })
        .await
        .expect("returning visit");
    assert!(!found.recorded, "another network is not the same state");
    assert_eq!(networks(&found.history), [None, Some("sub_home")]);

    // The same signals and the same (absent) network as the newest row: a refresh.
    let found = store
        .returning_visit(ReturningVisit {
            visitor: &v,
            observation: &second,
            refresh: true,
            limit: 5,
            now_ms: T0 + 3,
        })
        .await
        .expect("returning visit");
    assert!(found.recorded, "the same state from the same network");
}
