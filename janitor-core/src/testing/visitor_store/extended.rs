//! The extended client signals an observation carries (opt-in), part of the visitor store suite
//! ([`visitor_store_tests!`](crate::visitor_store_tests)).

use super::observation;
use crate::identification::config::Retention;
use crate::identification::payload::{BrandVersion, ExtendedSignals};
use crate::identification::store::{ReturningVisit, VisitWrite, VisitorStore};
use crate::testing::{visitor, Fresh, T0};

fn set_up(hour_cycle: &str) -> ExtendedSignals {
    ExtendedSignals {
        avail_width: Some(1920.0),
        avail_height: Some(1032.0),
        platform_version: Some("15.0.0".into()),
        full_version_list: Some(vec![BrandVersion {
            brand: "Chromium".into(),
            version: "147.0.7727.137".into(),
        }]),
        calendar: Some("gregory".into()),
        numbering_system: Some("latn".into()),
        hour_cycle: Some(hour_cycle.into()),
        color_scheme: Some("dark".into()),
        reduced_motion: Some(false),
        contrast: Some("no-preference".into()),
    }
}

/// Case: Each observation keeps its extended signals, every field of them, or none, through every read; a
/// cookie visit with other extended signals is no refresh of the newest observation, one with the same is.
pub async fn extended_signals_are_kept_with_observations(
    fresh: impl Fresh<Retention, Store: VisitorStore>,
) {
    let store = &fresh.store(Retention::default()).await;
    let v = visitor(1);
    let mut first = observation("x");
    first.extended = Some(set_up("h12"));
    let write = VisitWrite {
        visitor: &v,
        create: true,
        observation: Some(&first),
        now_ms: T0,
    };
    store
        .record_visit(write)
        .await
        .expect("create with signals");
    let mut second = observation("x");
    second.viewport = Some(Default::default());
    store
        .save_observation(&v, &second, T0 + 1)
        .await
        .expect("save without signals");
    let history = store
        .recent_observations(&v, 5, T0 + 1)
        .await
        .expect("history");
    assert_eq!(history.len(), 2);
    assert_eq!((history[0].extended.as_ref(), &*history[1]), (None, &first));
    let batch = store
        .recent_observations_batch(std::slice::from_ref(&v), 5, T0 + 1)
        .await
        .expect("batch");
    assert_eq!(batch[&v], history);

    let visit = |observation, now_ms| ReturningVisit {
        visitor: &v,
        observation,
        refresh: true,
        limit: 5,
        now_ms,
    };
    let mut other = second.clone();
    other.extended = Some(set_up("h23"));
    let found = store
        .returning_visit(visit(&other, T0 + 2))
        .await
        .expect("visit");
    assert!(!found.recorded, "other signals are not the same state");
    assert_eq!(found.history, history);
    let found = store
        .returning_visit(visit(&second, T0 + 3))
        .await
        .expect("visit");
    assert!(found.recorded, "the same state, without signals as before");
}
