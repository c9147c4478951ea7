//! The cases of [`VisitorStore::returning_visit`], part of the visitor store suite
//! ([`visitor_store_tests!`](crate::visitor_store_tests)): a cookie visit's history read that refreshes an
//! identical newest observation instead of saving a copy.

use std::sync::Arc;

use super::observation;
use crate::identification::candidates::probes_for;
use crate::identification::config::Retention;
use crate::identification::observation::Observation;
use crate::identification::payload::Behavior;
use crate::identification::store::{
    ReturningHistory, ReturningVisit, VisitorStore, REFRESH_INTERVAL_MS,
};
use crate::testing::{join_all, visitor, Fresh, T0};
use crate::visitor::VisitorId;

async fn visit<S: VisitorStore>(
    store: &S,
    v: &VisitorId,
    o: &Observation,
    refresh: bool,
    now_ms: i64,
) -> ReturningHistory {
    store
        .returning_visit(ReturningVisit {
            visitor: v,
            observation: o,
            refresh,
            limit: 5,
            now_ms,
        })
        .await
        .expect("returning visit")
}

/// The `seen_at` of each of the visitor's rows the candidate lookup finds, newest first.
async fn seen_at<S: VisitorStore>(store: &S, o: &Observation, now_ms: i64) -> Vec<i64> {
    let probes = probes_for(o);
    let mut rows = store
        .find_candidate_rows(&probes[..1], now_ms)
        .await
        .expect("lookup");
    rows.sort_by_key(|r| std::cmp::Reverse(r.seen_at));
    rows.iter().map(|r| r.seen_at).collect()
}

/// The visitor's retained observations at `now_ms`, newest first.
async fn history_at<S: VisitorStore>(
    store: &S,
    v: &VisitorId,
    now_ms: i64,
) -> Vec<Arc<Observation>> {
    store
        .recent_observations(v, 5, now_ms)
        .await
        .expect("history")
}

/// A visitor with observations `a` then `b` (the newest), saved at `T0` and `T0 + 1`.
async fn two_observations<S: VisitorStore>(store: &S) -> (VisitorId, Observation, Observation) {
    let v = visitor(1);
    let (a, b) = (observation("a"), observation("b"));
    store.create_visitor(&v, T0).await.expect("create");
    store.save_observation(&v, &a, T0).await.expect("save a");
    store
        .save_observation(&v, &b, T0 + 1)
        .await
        .expect("save b");
    (v, a, b)
}

/// Case: A returning visit identical to the newest observation refreshes it: no copy, `seen_at` moves on
/// once it is older than the refresh interval, and the history returned is the one before the call.
pub async fn returning_visit_refreshes_an_identical_newest(
    fresh: impl Fresh<Retention, Store: VisitorStore>,
) {
    let store = &fresh.store(Retention::default()).await;
    let (v, a, b) = two_observations(store).await;
    let before = vec![Arc::new(b.clone()), Arc::new(a.clone())];

    // At the interval exactly, the row is not older than it: recorded, nothing written.
    let at_bound = T0 + 1 + REFRESH_INTERVAL_MS;
    let found = visit(store, &v, &b, true, at_bound).await;
    assert_eq!(
        (found.history.clone(), found.recorded),
        (before.clone(), true)
    );
    assert_eq!(
        seen_at(store, &b, at_bound).await,
        [T0 + 1, T0],
        "within the interval"
    );

    // One millisecond later it is: refreshed in place.
    let past = at_bound + 1;
    let found = visit(store, &v, &b, true, past).await;
    assert_eq!((found.history, found.recorded), (before.clone(), true));
    assert_eq!(
        seen_at(store, &b, past).await,
        [past, T0],
        "refreshed, no copy"
    );
    let history = history_at(store, &v, past).await;
    assert_eq!(
        history, before,
        "the same two observations, in the same order"
    );
}

/// Case: A returning visit writes nothing when the store may not record it, or when the newest observation
/// differs (even when an older one is identical), and returns an empty history for an unknown visitor.
pub async fn returning_visit_records_only_an_identical_newest(
    fresh: impl Fresh<Retention, Store: VisitorStore>,
) {
    let store = &fresh.store(Retention::default()).await;
    let (v, a, b) = two_observations(store).await;
    let later = T0 + 10 * REFRESH_INTERVAL_MS;
    let not_allowed = visit(store, &v, &b, false, later).await;
    assert!(!not_allowed.recorded, "refresh not allowed");
    let older_identical = visit(store, &v, &a, true, later).await;
    assert!(!older_identical.recorded, "only the newest counts");
    let different = visit(store, &v, &observation("c"), true, later).await;
    assert!(!different.recorded, "a different observation");
    assert_eq!(different.history.len(), 2);
    assert_eq!(
        seen_at(store, &b, later).await,
        [T0 + 1, T0],
        "nothing written"
    );

    let unknown = visit(store, &visitor(9), &b, true, later).await;
    assert_eq!(unknown, ReturningHistory::default(), "unknown visitor");
    let expired = Retention::default().cutoff(0).abs() + T0 + 2;
    let gone = visit(store, &v, &b, true, expired).await;
    assert_eq!(gone, ReturningHistory::default(), "expired history");
}

/// Case: A recorded visit touches the visitor once its `last_seen_at` is older than the refresh interval, even
/// when its observation is too recent to refresh. Observed through cleanup, which removes a visitor left with
/// no observation only when its `last_seen_at` is older than retention.
pub async fn returning_visit_touches_a_stale_visitor(
    fresh: impl Fresh<Retention, Store: VisitorStore>,
) {
    let retention = Retention::default();
    let store = &fresh.store(retention).await;
    let v = visitor(1);
    let b = observation("b");
    let saved = T0 + 2 * REFRESH_INTERVAL_MS;
    store.create_visitor(&v, T0).await.expect("create");
    // Saving does not touch: the visitor was last seen at T0.
    store.save_observation(&v, &b, saved).await.expect("save");
    let now = saved + 1;
    assert!(visit(store, &v, &b, true, now).await.recorded);
    assert_eq!(
        seen_at(store, &b, now).await,
        [saved],
        "too recent to refresh"
    );
    // The observation has expired; the visitor, touched at `now`, has not.
    let report = store
        .cleanup(None, 100, now - retention.cutoff(0))
        .await
        .expect("cleanup");
    assert_eq!(report.visitors_removed, 0, "touched at {now}");
    let report = store
        .cleanup(None, 100, now + 1 - retention.cutoff(0))
        .await
        .expect("cleanup");
    assert_eq!(report.visitors_removed, 1, "stale one millisecond later");

    // At the interval exactly neither the row nor the visitor is older than it: nothing is written, so the
    // visitor is as stale as its first sighting once its row expires.
    let w = visitor(2);
    store.create_visitor(&w, T0).await.expect("create");
    store.save_observation(&w, &b, T0).await.expect("save");
    let at_bound = T0 + REFRESH_INTERVAL_MS;
    assert!(visit(store, &w, &b, true, at_bound).await.recorded);
    let report = store
        .cleanup(None, 100, at_bound - retention.cutoff(0))
        .await
        .expect("cleanup");
    assert_eq!(
        report.visitors_removed, 1,
        "not touched at the interval exactly"
    );
}

/// `o` with a behaviour summary of page age `page_age_ms`, as a browser sends one on every visit.
fn with_behavior(o: &Observation, page_age_ms: u64) -> Observation {
    Observation {
        behavior: Some(Behavior {
            page_age_ms: Some(page_age_ms),
            mouse_move_count: Some(page_age_ms % 7),
            ..Behavior::default()
        }),
        ..o.clone()
    }
}

/// Case: A returning visit with the newest observation's signals and another behaviour summary (a new page
/// age, new counts) is recorded like an identical one: no copy, and once the row is older than the refresh
/// interval it takes the visit's behaviour with its new `seen_at`. Other signals still are not recorded.
pub async fn returning_visit_refreshes_the_newest_with_new_behaviour(
    fresh: impl Fresh<Retention, Store: VisitorStore>,
) {
    let store = &fresh.store(Retention::default()).await;
    let (v, a, b) = two_observations(store).await;
    let before = vec![Arc::new(b.clone()), Arc::new(a.clone())];

    // Within the interval: recorded, nothing written, the stored behaviour unchanged.
    let at_bound = T0 + 1 + REFRESH_INTERVAL_MS;
    let first = with_behavior(&b, 1_200);
    let found = visit(store, &v, &first, true, at_bound).await;
    assert_eq!((found.history, found.recorded), (before.clone(), true));
    assert_eq!(seen_at(store, &b, at_bound).await, [T0 + 1, T0]);
    let history = history_at(store, &v, at_bound).await;
    assert_eq!(history, before, "nothing written within the interval");

    // Past it: the same row moves on and carries this visit's behaviour; still two rows.
    let past = at_bound + 1;
    let second = with_behavior(&b, 8_300);
    let found = visit(store, &v, &second, true, past).await;
    assert_eq!((found.history, found.recorded), (before.clone(), true));
    assert_eq!(
        seen_at(store, &b, past).await,
        [past, T0],
        "refreshed, no copy"
    );
    let history = history_at(store, &v, past).await;
    assert_eq!(history, vec![Arc::new(second.clone()), Arc::new(a.clone())]);

    // Another device state with the same behaviour is another observation: not recorded, nothing written.
    let moved = with_behavior(&observation("c"), 8_300);
    let later = past + 10 * REFRESH_INTERVAL_MS;
    assert!(!visit(store, &v, &moved, true, later).await.recorded);
    assert!(
        !visit(store, &v, &second, false, later).await.recorded,
        "refresh not allowed"
    );
    assert_eq!(
        seen_at(store, &b, later).await,
        [past, T0],
        "nothing written"
    );

    // And the other way: a visit without a behaviour summary refreshes a newest row that has one.
    let found = visit(store, &v, &b, true, later).await;
    assert!(found.recorded, "no behaviour against a stored one");
    assert_eq!(seen_at(store, &b, later).await, [later, T0]);
    let history = history_at(store, &v, later).await;
    assert_eq!(history, vec![Arc::new(b.clone()), Arc::new(a.clone())]);
}

/// Case: Concurrent identical visits refresh the one row and add none.
pub async fn concurrent_returning_visits_add_no_rows(
    fresh: impl Fresh<Retention, Store: VisitorStore>,
) {
    let store = &fresh.store(Retention::default()).await;
    let (v, _, b) = two_observations(store).await;
    let later = T0 + 10 * REFRESH_INTERVAL_MS;
    let visits = (0..8)
        .map(|i| visit(store, &v, &b, true, later + i))
        .collect();
    let found = join_all(visits).await;
    assert!(found.iter().all(|f| f.recorded && f.history.len() == 2));
    let seen = seen_at(store, &b, later + 8).await;
    assert_eq!(seen.len(), 2, "no copy: {seen:?}");
    assert!(
        seen[0] >= later && seen[0] < later + 8,
        "refreshed once: {seen:?}"
    );
}
