//! The behaviour every [`VisitorStore`] must show: [`visitor_store_tests!`](crate::visitor_store_tests) runs
//! each case as its own test.
//!
//! The factory must return an empty store applying the given retention (for a database: a fresh schema).
//! A store may retire expired rows on its own whenever it writes (the memory store does); no case depends on it
//! either way.

use std::sync::Arc;

use super::{join_all, visitor, Fresh, T0};
use crate::config::DAY_MS;
use crate::error::StoreError;
use crate::identification::candidates::{probes_for, Probe, ProbeFamily, ROWS_PER_PROBE};
use crate::identification::config::Retention;
use crate::identification::observation::{Graphics, Hardware, Observation, Screen};
use crate::identification::store::{VisitWrite, VisitorStore};
use crate::visitor::VisitorId;

mod erased_meanwhile;
mod extended;
mod lookup;
mod network;
mod returning_visit;

pub use erased_meanwhile::an_erasure_between_read_and_write_is_answered_as_after_it;
pub use extended::extended_signals_are_kept_with_observations;
pub use lookup::lookup_rows_rank_as_observations;
pub use network::networks_are_kept_with_observations;
pub use returning_visit::{
    concurrent_returning_visits_add_no_rows, returning_visit_records_only_an_identical_newest,
    returning_visit_refreshes_an_identical_newest,
    returning_visit_refreshes_the_newest_with_new_behaviour,
    returning_visit_touches_a_stale_visitor,
};

/// A complete observation (every probe family applies); `tag` varies the timezone so observations differ.
pub fn observation(tag: &str) -> Observation {
    Observation {
        user_agent: Some("Mozilla/5.0 Chrome/130.0 Safari/537.36".into()),
        platform: Some("macos".into()),
        browser: Some("chrome".into()),
        languages: Some(vec!["en-us".into()]),
        timezone: Some(format!("Test/{tag}")),
        screen: Some(Screen {
            width: Some(900.0),
            height: Some(1440.0),
            color_depth: Some(24.0),
            pixel_ratio: Some(2.0),
        }),
        hardware: Some(Hardware {
            hardware_concurrency: Some(8.0),
            device_memory: Some(8.0),
            max_touch_points: Some(0.0),
        }),
        graphics: Some(Graphics {
            webgl_vendor: Some("vendor".into()),
            webgl_renderer: Some("renderer".into()),
        }),
        ..Observation::default()
    }
}

/// Case: History is newest first.
pub async fn history_is_newest_first(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::default()).await;
    let v = visitor(1);
    store.create_visitor(&v, T0).await.expect("create");
    for (i, at) in [T0, T0 + 10, T0 + 5, T0 + 10].into_iter().enumerate() {
        store
            .save_observation(&v, &observation(&i.to_string()), at)
            .await
            .expect("save");
    }
    let tz = |h: &[Arc<Observation>]| {
        h.iter()
            .map(|o| o.timezone.clone().unwrap())
            .collect::<Vec<_>>()
    };
    let history = store
        .recent_observations(&v, 10, T0 + 20)
        .await
        .expect("history");
    // Equal seen_at: the later insertion first.
    assert_eq!(
        tz(&history),
        ["Test/3", "Test/1", "Test/2", "Test/0"],
        "history_is_newest_first"
    );
    let two = store
        .recent_observations(&v, 2, T0 + 20)
        .await
        .expect("history");
    assert_eq!(
        tz(&two),
        ["Test/3", "Test/1"],
        "history_is_newest_first: limit"
    );
    assert!(store
        .recent_observations(&visitor(2), 5, T0)
        .await
        .expect("history")
        .is_empty());
}

/// Case: Unknown and duplicate visitors.
pub async fn unknown_and_duplicate_visitors(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::default()).await;
    let v = visitor(1);
    store.create_visitor(&v, T0).await.expect("create");
    assert!(
        matches!(store.create_visitor(&v, T0).await, Err(StoreError::Data(_))),
        "duplicate create is a data error"
    );
    let saved = store
        .save_observation(&visitor(9), &observation("x"), T0)
        .await;
    assert!(
        matches!(saved, Err(StoreError::Data(_))),
        "saving for an unknown visitor is a data error"
    );
    store
        .touch_visitor(&visitor(9), T0)
        .await
        .expect("touching an unknown visitor is ignored");
    assert!(store
        .recent_observations(&visitor(9), 5, T0)
        .await
        .expect("history")
        .is_empty());
}

/// Case: Round trip keeps the observation.
pub async fn round_trip_keeps_the_observation(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::default()).await;
    let v = visitor(1);
    let mut o = observation("rt");
    o.languages = Some(vec!["en-us".into(), "עברית".into(), "a\"b\\c".into()]);
    o.screen.as_mut().unwrap().pixel_ratio = Some(1.25);
    o.viewport = Some(crate::identification::observation::Size {
        width: Some(1280.0),
        height: None,
    });
    store.create_visitor(&v, T0).await.expect("create");
    store.save_observation(&v, &o, T0).await.expect("save");
    let history = store.recent_observations(&v, 5, T0).await.expect("history");
    assert_eq!(history.len(), 1);
    assert_eq!(*history[0], o, "round_trip_keeps_the_observation");
}

/// Case: Retention hides expired.
pub async fn retention_hides_expired(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::new(1, 10).expect("valid")).await;
    // Retention of one day: at `now`, seen_at >= now - 1 day is visible, one millisecond older is not.
    let now = T0 + 10 * DAY_MS;
    let (old, edge) = (visitor(1), visitor(2));
    for v in [&old, &edge] {
        store.create_visitor(v, T0).await.expect("create");
    }
    store
        .save_observation(&old, &observation("a"), now - DAY_MS - 1)
        .await
        .expect("save");
    store
        .save_observation(&edge, &observation("a"), now - DAY_MS)
        .await
        .expect("save");
    assert!(
        store
            .recent_observations(&old, 5, now)
            .await
            .expect("history")
            .is_empty(),
        "expired row hidden"
    );
    assert_eq!(
        store
            .recent_observations(&edge, 5, now)
            .await
            .expect("history")
            .len(),
        1,
        "row at cutoff visible"
    );
    let batch = store
        .recent_observations_batch(&[old.clone(), edge.clone()], 5, now)
        .await
        .expect("batch");
    assert!(
        !batch.contains_key(&old) && batch.contains_key(&edge),
        "batch applies retention"
    );
    let rows = store
        .find_candidate_rows(&probes_for(&observation("a")), now)
        .await
        .expect("lookup");
    assert!(
        rows.iter().all(|r| r.visitor_id == edge),
        "lookup applies retention"
    );
    assert_eq!(rows.len(), probes_for(&observation("a")).len());
}

/// Case: Save prunes to the limit.
pub async fn save_prunes_to_the_limit(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::new(90, 3).expect("valid")).await;
    // Retention keeps 3 per visitor.
    let v = visitor(1);
    store.create_visitor(&v, T0).await.expect("create");
    for i in 0..5 {
        store
            .save_observation(&v, &observation(&i.to_string()), T0 + i)
            .await
            .expect("save");
    }
    let history = store
        .recent_observations(&v, 100, T0 + 10)
        .await
        .expect("history");
    let tz: Vec<_> = history
        .iter()
        .map(|o| o.timezone.clone().unwrap())
        .collect();
    assert_eq!(
        tz,
        ["Test/4", "Test/3", "Test/2"],
        "save_prunes_to_the_limit"
    );
    // Pruned rows are gone from the lookup buckets too.
    let probe = Probe {
        family: ProbeFamily::PlatformBrowser,
        keys: vec!["macos".into(), "chrome".into()],
    };
    assert_eq!(
        store
            .find_candidate_rows(&[probe], T0 + 10)
            .await
            .expect("lookup")
            .len(),
        3
    );
}

/// Case: Batch reads at most ten.
pub async fn batch_reads_at_most_ten(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::default()).await;
    let ids: Vec<VisitorId> = (1..=12).map(visitor).collect();
    for (i, v) in ids.iter().enumerate() {
        store.create_visitor(v, T0).await.expect("create");
        if i != 2 {
            for k in 0..7 {
                store
                    .save_observation(v, &observation(&k.to_string()), T0 + k)
                    .await
                    .expect("save");
            }
        }
    }
    let mut asked = vec![ids[0].clone(), ids[0].clone()];
    asked.extend(ids[1..].iter().cloned());
    let batch = store
        .recent_observations_batch(&asked, 5, T0 + 10)
        .await
        .expect("batch");
    // Ten distinct ids considered (1..=10); visitor 3 has no observation and is absent.
    let mut got: Vec<_> = batch.keys().cloned().collect();
    got.sort();
    let expected: Vec<_> = ids[..10]
        .iter()
        .filter(|v| **v != ids[2])
        .cloned()
        .collect();
    assert_eq!(got, expected, "batch_reads_at_most_ten");
    for (v, history) in &batch {
        assert_eq!(history.len(), 5);
        let single = store
            .recent_observations(v, 5, T0 + 10)
            .await
            .expect("history");
        assert_eq!(history, &single, "batch equals single reads");
    }
    assert!(store
        .recent_observations_batch(&[], 5, T0)
        .await
        .expect("batch")
        .is_empty());
}

/// Case: Probes return tagged bounded rows.
pub async fn probes_return_tagged_bounded_rows(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::default()).await;
    assert!(store
        .find_candidate_rows(&[], T0)
        .await
        .expect("no probes, no query")
        .is_empty());
    // 110 visitors share platform+browser; one also shares the exact screen/hardware key.
    let crowd = ROWS_PER_PROBE as u64 + 10;
    for n in 1..=crowd {
        let v = visitor(n);
        store.create_visitor(&v, T0).await.expect("create");
        let mut o = observation("crowd");
        if n != 7 {
            o.screen.as_mut().unwrap().width = Some(500.0 + n as f64);
        }
        store
            .save_observation(&v, &o, T0 + n as i64)
            .await
            .expect("save");
    }
    let current = observation("crowd");
    let probes = probes_for(&current);
    let rows = store
        .find_candidate_rows(&probes, T0 + 1000)
        .await
        .expect("lookup");
    let count = |family: ProbeFamily| {
        let position = probes.iter().position(|p| p.family == family).unwrap();
        rows.iter()
            .filter(|r| r.probe == position)
            .collect::<Vec<_>>()
    };
    let exact = count(ProbeFamily::ScreenHardware);
    assert_eq!(exact.len(), 1, "exact probe finds the one visitor");
    assert_eq!(exact[0].visitor_id, visitor(7));
    let crowded = count(ProbeFamily::PlatformBrowser);
    assert_eq!(
        crowded.len(),
        ROWS_PER_PROBE + 1,
        "a crowded probe returns limit + 1 rows"
    );
    assert!(
        crowded.windows(2).all(|w| w[0].seen_at >= w[1].seen_at),
        "newest first"
    );
    assert_eq!(crowded[0].seen_at, T0 + crowd as i64);
    let mut other = observation("elsewhere");
    other.platform = Some("windows".into());
    other.graphics = None;
    other.browser = Some("firefox".into());
    assert!(store
        .find_candidate_rows(&probes_for(&other), T0 + 1000)
        .await
        .expect("lookup")
        .is_empty());
}

/// Case: Touch never goes back.
pub async fn touch_never_goes_back(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::default()).await;
    // Observed through cleanup: a visitor with no observation is removed only when its last_seen_at is old.
    let v = visitor(1);
    store.create_visitor(&v, T0).await.expect("create");
    store
        .touch_visitor(&v, T0 + 50 * DAY_MS)
        .await
        .expect("touch");
    store.touch_visitor(&v, T0).await.expect("touch");
    let report = store
        .cleanup(None, 100, T0 + 100 * DAY_MS)
        .await
        .expect("cleanup");
    assert_eq!(
        report.visitors_removed, 0,
        "touch must not move last_seen_at backwards"
    );
    let report = store
        .cleanup(None, 100, T0 + 141 * DAY_MS)
        .await
        .expect("cleanup");
    assert_eq!(report.visitors_removed, 1);
}

/// Case: Record visit does all writes.
pub async fn record_visit_does_all_writes(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::default()).await;
    let v = visitor(1);
    let o = observation("visit");
    store
        .record_visit(VisitWrite {
            visitor: &v,
            create: true,
            observation: Some(&o),
            now_ms: T0,
        })
        .await
        .expect("visit");
    store
        .record_visit(VisitWrite {
            visitor: &v,
            create: false,
            observation: None,
            now_ms: T0 + 1,
        })
        .await
        .expect("visit");
    assert_eq!(
        store
            .recent_observations(&v, 5, T0 + 1)
            .await
            .expect("history")
            .len(),
        1
    );
    let again = store
        .record_visit(VisitWrite {
            visitor: &v,
            create: true,
            observation: Some(&o),
            now_ms: T0 + 2,
        })
        .await;
    assert!(
        matches!(again, Err(StoreError::Data(_))),
        "creating twice fails"
    );
    assert_eq!(
        store
            .recent_observations(&v, 5, T0 + 2)
            .await
            .expect("history")
            .len(),
        1,
        "nothing half-written"
    );
}

/// Case: Cleanup is bounded and resumable.
pub async fn cleanup_is_bounded_and_resumable(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::new(1, 10).expect("valid")).await;
    // Retention of one day. Five visitors: 1–3 seen long ago with three observations each; 4 recent; 5 empty.
    let now = T0 + 30 * DAY_MS;
    for n in 1..=5 {
        store
            .create_visitor(&visitor(n), if n == 4 || n == 5 { now } else { T0 })
            .await
            .expect("create");
    }
    // Visitor 4's row first: a store may retire expired rows whenever it writes, and none exist yet.
    store
        .save_observation(&visitor(4), &observation("new"), now)
        .await
        .expect("save");
    for n in 1..=3 {
        for k in 0..3 {
            store
                .save_observation(&visitor(n), &observation("old"), T0 + k)
                .await
                .expect("save");
        }
    }
    // Batch 2: at most two expired rows go per call.
    let first = store.cleanup(None, 2, now).await.expect("cleanup");
    assert_eq!(
        first.expired_deleted, 2,
        "cleanup_is_bounded_and_resumable: expired bound"
    );
    assert!(first.has_more_expired);
    assert_eq!(
        first.next_visitor.as_deref(),
        Some(visitor(2).as_str()),
        "cursor after the page"
    );
    let mut after = first.next_visitor.clone();
    let mut removed = first.visitors_removed;
    let mut rounds = 0;
    loop {
        let report = store
            .cleanup(after.as_deref(), 2, now)
            .await
            .expect("cleanup");
        removed += report.visitors_removed;
        rounds += 1;
        assert!(rounds < 20, "cleanup must make progress");
        if report.next_visitor.is_none() && !report.has_more_expired && report.expired_deleted == 0
        {
            if removed == 3 {
                break;
            }
            after = None;
        } else {
            after = report.next_visitor;
        }
    }
    // Visitors 1–3 lost every observation and were not seen within retention; 4 and 5 stay.
    let rows = store
        .find_candidate_rows(&probes_for(&observation("new")), now)
        .await
        .expect("lookup");
    assert!(rows.iter().all(|r| r.visitor_id == visitor(4)));
    assert_eq!(
        store
            .recent_observations(&visitor(4), 5, now)
            .await
            .expect("history")
            .len(),
        1
    );
    assert!(
        !store.delete_visitor(&visitor(1)).await.expect("delete"),
        "stale visitor removed"
    );
    assert!(
        store.delete_visitor(&visitor(5)).await.expect("delete"),
        "recent empty visitor kept"
    );
}

/// Case: Delete cascades.
pub async fn delete_cascades(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::default()).await;
    let (v, other) = (visitor(1), visitor(2));
    for x in [&v, &other] {
        store.create_visitor(x, T0).await.expect("create");
        store
            .save_observation(x, &observation("d"), T0)
            .await
            .expect("save");
    }
    assert!(store.delete_visitor(&v).await.expect("delete"));
    assert!(
        !store.delete_visitor(&v).await.expect("delete twice"),
        "second delete finds nothing"
    );
    assert!(store
        .recent_observations(&v, 5, T0)
        .await
        .expect("history")
        .is_empty());
    let rows = store
        .find_candidate_rows(&probes_for(&observation("d")), T0)
        .await
        .expect("lookup");
    assert!(
        rows.iter().all(|r| r.visitor_id == other),
        "deleted visitor's rows are gone"
    );
    assert!(!rows.is_empty(), "the other visitor is untouched");
    store
        .create_visitor(&v, T0)
        .await
        .expect("a deleted id can be created again");
}

/// Case: Concurrent saves for one visitor keep its bound: each save prunes against the rows of the saves
/// that finished before it, not against a snapshot that misses them.
pub async fn concurrent_saves_keep_the_bound(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let keep = 3;
    let store = &fresh
        .store(Retention::new(90, keep).expect("valid retention"))
        .await;
    let (v, w) = (visitor(1), visitor(2));
    for x in [&v, &w] {
        store.create_visitor(x, T0).await.expect("create");
    }
    for round in 0..4_i64 {
        // Half plain saves, half the cookie path's save + touch, all at once and at one instant.
        let now = T0 + round;
        let observations: Vec<Observation> = (0..48)
            .map(|i| observation(&format!("{round}-{i}")))
            .collect();
        let v = &v;
        let saves = observations.iter().enumerate().map(|(i, o)| async move {
            if i % 2 == 0 {
                store.save_observation(v, o, now).await
            } else {
                let write = VisitWrite {
                    visitor: v,
                    create: false,
                    observation: Some(o),
                    now_ms: now,
                };
                store.record_visit(write).await
            }
        });
        for outcome in join_all(saves.collect()).await {
            outcome.expect("save");
        }
        let history = store
            .recent_observations(v, 100, now)
            .await
            .expect("history");
        assert_eq!(
            history.len(),
            keep,
            "concurrent_saves_keep_the_bound: round {round}"
        );
    }
    // Another visitor's history is its own.
    store
        .save_observation(&w, &observation("w"), T0)
        .await
        .expect("save");
    assert_eq!(
        store
            .recent_observations(&w, 100, T0)
            .await
            .expect("history")
            .len(),
        1
    );
}

/// One `#[tokio::test]` per case of the [`VisitorStore`] suite ([`crate::testing`] shows the forms).
///
/// `fresh` makes an empty store applying the `Retention` it is given.
///
/// ```ignore
/// janitor_core::visitor_store_tests!(fresh: |retention| async move { MemoryVisitorStore::new(retention) });
/// ```
#[macro_export]
macro_rules! visitor_store_tests {
    ($($setup:tt)+) => {
        $crate::__store_suite!(
            visitor_store [
            history_is_newest_first,
            unknown_and_duplicate_visitors,
            round_trip_keeps_the_observation,
            lookup_rows_rank_as_observations,
            retention_hides_expired,
            save_prunes_to_the_limit,
            batch_reads_at_most_ten,
            probes_return_tagged_bounded_rows,
            touch_never_goes_back,
            record_visit_does_all_writes,
            cleanup_is_bounded_and_resumable,
            delete_cascades,
            concurrent_saves_keep_the_bound,
            returning_visit_refreshes_an_identical_newest,
            returning_visit_records_only_an_identical_newest,
            returning_visit_touches_a_stale_visitor,
            returning_visit_refreshes_the_newest_with_new_behaviour,
            concurrent_returning_visits_add_no_rows,
            networks_are_kept_with_observations,
            extended_signals_are_kept_with_observations,
            an_erasure_between_read_and_write_is_answered_as_after_it,
            ]
            $($setup)+
        );
    };
}
