//! The engine end to end on PostgreSQL: cookie path, restore, no restore, retention, pruning, round trips, and
//! rows written by an instance in another language.

use janitor_core::config::DAY_MS;
use janitor_core::identification::engine::IdentifyPath;
use janitor_core::{
    Engine, EngineConfig, Identification, Retention, VisitorId, VisitorPayload, VisitorStore,
};
use janitor_sql::testing::{population, with_schemas};
use janitor_sql::{Database, PgVisitorStore};
use serde_json::{json, Value};

use janitor_core::testing::T0;

/// A device no population browser shares: its timezone is not in the population's list.
fn laptop() -> Value {
    json!({"signals": {
        "userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/130.0.0.0 Safari/537.36",
        "platform": "MacIntel",
        "languages": ["en-NZ", "mi"],
        "timezone": "Pacific/Chatham",
        "screen": {"width": 1512, "height": 982, "colorDepth": 30, "pixelRatio": 2},
        "viewport": {"width": 1280, "height": 720},
        "hardware": {"hardwareConcurrency": 10, "deviceMemory": 8, "maxTouchPoints": 0},
        "graphics": {"webglVendor": "Google Inc. (Apple)", "webglRenderer": "ANGLE (Apple, ANGLE Metal Renderer: Apple M2, Unspecified Version)"},
        "automation": {"webdriver": false}
    }})
}

/// `doc` with the behaviour summary janitor.js sends on visit `visit`: the page's age and event counts.
fn with_behavior(doc: &Value, visit: u64) -> Value {
    let mut doc = doc.clone();
    doc["behavior"] = json!({
        "pageAgeMs": visit * 1_000, "mouseMoveCount": visit * 3, "pointerDownCount": visit % 2,
        "keyDownCount": 0, "scrollCount": visit, "visibilityChangeCount": 0
    });
    doc
}

/// The laptop with its window resized to `width`: the same device, a different observation.
fn resized(width: u32) -> Value {
    let mut doc = laptop();
    doc["signals"]["viewport"]["width"] = json!(width);
    doc
}

fn payload(doc: &Value) -> VisitorPayload {
    VisitorPayload::from_value(doc).expect("valid payload")
}

type PgEngine = Engine<PgVisitorStore>;

fn engine(database: &Database, retention: Retention) -> PgEngine {
    Engine::new(
        PgVisitorStore::new(database.clone(), retention),
        EngineConfig::default(),
    )
}

/// Identifies and returns the result with the statements it cost.
async fn identify(
    engine: &PgEngine,
    doc: &Value,
    cookie: Option<&VisitorId>,
    now: i64,
) -> (Identification, u64) {
    let before = engine.store().database().statements_executed();
    let result = engine
        .identify_at(&payload(doc), cookie, now)
        .await
        .expect("identify");
    (
        result,
        engine.store().database().statements_executed() - before,
    )
}

async fn stored_rows(database: &Database, visitor: &VisitorId) -> i64 {
    let client = database.pool().get().await.unwrap();
    client
        .query_one(
            "SELECT count(*) FROM observations WHERE visitor_id = $1",
            &[&visitor.as_str()],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookie_path_in_one_round_trip() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let engine = engine(&database, Retention::default());
        let (first, trips) = identify(&engine, &laptop(), None, T0).await;
        assert!(!first.identity.is_returning);
        assert_eq!(first.identity.confidence, 0.0);
        assert_eq!(trips, 2, "empty lookup + create-and-save");

        let (again, trips) =
            identify(&engine, &laptop(), Some(&first.identity.visitor_id), T0 + 1).await;
        assert_eq!(again.metrics.path, IdentifyPath::Cookie);
        assert_eq!(again.identity.visitor_id, first.identity.visitor_id);
        assert!(again.identity.is_returning);
        assert_eq!(again.identity.confidence, 1.0);
        assert!(again.metrics.observation_saved);
        assert_eq!(trips, 1, "history + refresh + touch, in one statement");
        assert_eq!(stored_rows(&database, &first.identity.visitor_id).await, 1);

        // A different observation of the same device is saved: two round trips, then one again.
        let (resized_visit, trips) = identify(
            &engine,
            &resized(1100),
            Some(&first.identity.visitor_id),
            T0 + 2,
        )
        .await;
        assert!(resized_visit.metrics.observation_saved);
        assert_eq!(trips, 2, "history + save/prune/touch");
        assert_eq!(stored_rows(&database, &first.identity.visitor_id).await, 2);
        let (repeated, trips) = identify(
            &engine,
            &resized(1100),
            Some(&first.identity.visitor_id),
            T0 + 3,
        )
        .await;
        assert!(repeated.metrics.observation_saved);
        assert_eq!(trips, 1, "identical to the newest again");
        assert_eq!(stored_rows(&database, &first.identity.visitor_id).await, 2);

        // As janitor.js sends it: the same device with a new page age and new counts on every visit. One
        // statement each, no row added; past the refresh interval the newest row carries the latest behaviour.
        let interval = janitor_core::identification::store::REFRESH_INTERVAL_MS;
        for (visit, at) in [(1_u64, T0 + 4), (2, T0 + 5), (3, T0 + 6 + interval)] {
            let (real, trips) = identify(
                &engine,
                &with_behavior(&resized(1100), visit),
                Some(&first.identity.visitor_id),
                at,
            )
            .await;
            assert!(real.metrics.observation_saved, "visit {visit}");
            assert_eq!(trips, 1, "visit {visit}: a new behaviour summary alone");
            assert_eq!(stored_rows(&database, &first.identity.visitor_id).await, 2);
        }
        let newest = engine
            .store()
            .recent_observations(&first.identity.visitor_id, 1, T0 + 7 + interval)
            .await
            .expect("history");
        let page_age = newest[0].behavior.as_ref().and_then(|b| b.page_age_ms);
        assert_eq!(page_age, Some(3_000), "the latest behaviour, refreshed");

        // A copied cookie on another device is recognised but teaches nothing.
        let (copied, trips) = identify(
            &engine,
            &population::payload_json(1),
            Some(&first.identity.visitor_id),
            T0 + 8 + interval,
        )
        .await;
        assert_eq!(copied.metrics.path, IdentifyPath::Cookie);
        assert!(!copied.metrics.observation_saved);
        assert_eq!(trips, 2, "history + touch");
        assert_eq!(stored_rows(&database, &first.identity.visitor_id).await, 2);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_among_a_population_and_refusals() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        population::seed(&database, 3_000, 2, T0).await;
        let engine = engine(&database, Retention::default());
        let (first, _) = identify(&engine, &laptop(), None, T0).await;

        // A browser update and a resized window: the same device, found without a cookie.
        let mut updated = laptop();
        updated["signals"]["userAgent"] =
            json!("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/131.0.0.0 Safari/537.36");
        updated["signals"]["viewport"] = json!({"width": 1100, "height": 700});
        let (restored, trips) = identify(&engine, &updated, None, T0 + 60_000).await;
        assert_eq!(restored.metrics.path, IdentifyPath::Cookieless);
        assert_eq!(restored.identity.visitor_id, first.identity.visitor_id, "restored");
        assert!(restored.identity.is_returning);
        assert!(restored.identity.confidence >= 0.9);
        assert!(restored.metrics.candidate_count >= 1);
        assert_eq!(trips, 3, "lookup + histories + save/prune/touch");
        assert_eq!(stored_rows(&database, &first.identity.visitor_id).await, 2);

        // A second device identical to the first: two equal candidates, so neither is restored.
        let twin = engine.store();
        let twin_id = VisitorId::generate();
        twin.create_visitor(&twin_id, T0).await.unwrap();
        let laptop_observation = {
            let p = payload(&laptop());
            janitor_core::Observation::normalize(&p.signals, p.behavior.as_ref())
        };
        twin.save_observation(&twin_id, &laptop_observation, T0 + 60_000).await.unwrap();
        let (ambiguous, _) = identify(&engine, &laptop(), None, T0 + 120_000).await;
        assert!(!ambiguous.identity.is_returning, "ambiguous candidates are not restored");
        assert_ne!(ambiguous.identity.visitor_id, first.identity.visitor_id);
        assert_ne!(ambiguous.identity.visitor_id, twin_id);
        assert_eq!(ambiguous.identity.confidence, 0.0);

        // A population browser that has not been seen on this device: no restore of anyone else.
        let mut stranger = population::payload_json(17);
        stranger["signals"]["timezone"] = json!("Antarctica/Troll");
        stranger["signals"]["graphics"]["webglRenderer"] = json!("unseen renderer");
        let (fresh, _) = identify(&engine, &stranger, None, T0 + 180_000).await;
        assert!(!fresh.identity.is_returning);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_and_pruning() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let engine = engine(&database, Retention::new(1, 3).unwrap());
        let (first, _) = identify(&engine, &laptop(), None, T0).await;
        let id = first.identity.visitor_id;
        // Five different observations (identical ones would refresh one row).
        for i in 1..=5 {
            let (visit, _) = identify(&engine, &resized(1000 + i as u32), Some(&id), T0 + i).await;
            assert!(visit.metrics.observation_saved);
        }
        assert_eq!(
            stored_rows(&database, &id).await,
            3,
            "pruned to 3 rows in the table"
        );

        // The newest row (T0 + 5) is visible exactly one day later...
        let (edge, _) = identify(&engine, &laptop(), Some(&id), T0 + 5 + DAY_MS).await;
        assert_eq!(edge.metrics.path, IdentifyPath::Cookie);
        // ...and its write dropped the now-expired rows, keeping the one at the cutoff and the new one.
        assert_eq!(stored_rows(&database, &id).await, 2);

        // One millisecond after everything expired, the cookie no longer counts and nothing matches.
        let other = self::engine(&database, Retention::new(1, 3).unwrap());
        let (lonely, _) = identify(&other, &population::payload_json(5), None, T0).await;
        let (expired, _) = identify(
            &other,
            &population::payload_json(5),
            Some(&lonely.identity.visitor_id),
            T0 + DAY_MS + 1,
        )
        .await;
        assert_eq!(expired.metrics.path, IdentifyPath::Cookieless);
        assert_eq!(expired.metrics.candidate_count, 0);
        assert_ne!(expired.identity.visitor_id, lonely.identity.visitor_id);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_written_by_another_implementation_are_matched() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        // The row as an instance in another language writes it: JSON text with its own key order and numbers.
        let id = VisitorId::generate();
        let signals = r#"{"userAgent":"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/130.0.0.0 Safari/537.36","platform":"macos","browser":"chrome","languages":["en-nz","mi"],"timezone":"Pacific/Chatham","screen":{"width":982,"height":1512,"colorDepth":30,"pixelRatio":2},"viewport":{"width":1280,"height":720},"hardware":{"hardwareConcurrency":10,"deviceMemory":8,"maxTouchPoints":0},"automation":{"webdriver":false},"graphics":{"webglVendor":"google inc. (apple)","webglRenderer":"angle (apple, angle metal renderer: apple m2, unspecified version)"}}"#;
        {
            let client = database.pool().get().await.unwrap();
            client
                .execute(
                    "INSERT INTO visitors (id, created_at, last_seen_at) VALUES ($1, $2, $2)",
                    &[&id.as_str(), &T0],
                )
                .await
                .unwrap();
            client
                .execute(
                    "INSERT INTO observations (visitor_id, seen_at, platform, browser, timezone, webgl_renderer, signals_json) \
                     VALUES ($1, $2, 'macos', 'chrome', 'Pacific/Chatham', \
                             'angle (apple, angle metal renderer: apple m2, unspecified version)', $3::text::jsonb)",
                    &[&id.as_str(), &T0, &signals],
                )
                .await
                .unwrap();
        }
        let engine = engine(&database, Retention::default());
        let (restored, _) = identify(&engine, &laptop(), None, T0 + 1_000).await;
        assert_eq!(restored.identity.visitor_id, id);
        // Every probe family found it, the expression-indexed screen keys included.
        assert_eq!(restored.metrics.candidate_count, 1);
        assert!(restored.metrics.deterministic_score > 0.99, "{}", restored.metrics.deterministic_score);
        let rows = engine
            .store()
            .find_candidate_rows(
                &janitor_core::identification::candidates::probes_for(&{
                    let p = payload(&laptop());
                    janitor_core::Observation::normalize(&p.signals, None)
                }),
                T0 + 2_000,
            )
            .await
            .unwrap();
        let probes_hit: std::collections::BTreeSet<usize> =
            rows.iter().filter(|r| r.visitor_id == id).map(|r| r.probe).collect();
        assert_eq!(probes_hit.len(), 6, "all six families match the foreign row");
    })
    .await;
}
