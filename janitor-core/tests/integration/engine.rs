//! The engine end to end on the in-memory store.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use janitor_core::config::DAY_MS;
use janitor_core::identification::engine::IdentifyPath;
use janitor_core::testing::{mac_document, mac_payload, visitor, T0};
use janitor_core::{
    visitor_from_cookies, Engine, EngineConfig, Evaluation, EvaluationInput, Evaluator,
    EvaluatorError, MemoryVisitorStore, Observation, Retention, RiskStatus, VisitorId,
    VisitorPayload, VisitorStore,
};
use serde_json::{json, Value};

fn payload(doc: Value) -> VisitorPayload {
    VisitorPayload::from_value(&doc).expect("valid payload")
}

fn iphone() -> Value {
    json!({"signals": {
        "userAgent": "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) Version/18.0 Mobile/15E148 Safari/604.1",
        "platform": "iPhone",
        "timezone": "Asia/Jerusalem",
        "screen": {"width": 390, "height": 844},
        "hardware": {"maxTouchPoints": 5},
        "graphics": {"webglVendor": "Apple Inc.", "webglRenderer": "Apple GPU"}
    }})
}

fn engine(retention: Retention) -> Engine<MemoryVisitorStore> {
    Engine::new(MemoryVisitorStore::new(retention), EngineConfig::default())
}

/// The mac's first visit at `T0`: a new id.
async fn first_visit<S: VisitorStore, E: Evaluator>(
    engine: &Engine<S, E>,
) -> janitor_core::Identity {
    let first = engine.identify_at(&mac_payload(), None, T0).await.unwrap();
    assert!(!first.identity.is_returning);
    first.identity
}

/// The Mac fixture with its window resized to `width`: the same device, a different observation.
fn resized_mac(width: u32) -> VisitorPayload {
    let mut doc = mac_document();
    doc["signals"]["viewport"]["width"] = json!(width);
    payload(doc)
}

async fn history_len<S: VisitorStore>(store: &S, id: &VisitorId, now: i64) -> usize {
    store.recent_observations(id, 100, now).await.unwrap().len()
}

#[tokio::test]
async fn cookie_path_is_certain_and_refuses_to_learn_a_contradiction() {
    let engine = engine(Retention::default());
    let first = first_visit(&engine).await;
    assert!(!first.is_returning);
    assert_eq!(first.confidence, 0.0);
    assert_eq!(first.risk_status, RiskStatus::Disabled);

    // A copied cookie on a different device: recognised, but its observation is not learned.
    let copied = engine
        .identify_at(&payload(iphone()), Some(&first.visitor_id), T0 + 1)
        .await
        .unwrap();
    assert_eq!(copied.identity.visitor_id, first.visitor_id);
    assert!(copied.identity.is_returning);
    assert_eq!(copied.identity.confidence, 1.0);
    assert_eq!(copied.metrics.path, IdentifyPath::Cookie);
    assert!(!copied.metrics.observation_saved);
    assert_eq!(
        history_len(engine.store(), &first.visitor_id, T0 + 1).await,
        1
    );

    // The same device again is learned: identical to the newest observation, it refreshes that one.
    let again = engine
        .identify_at(&mac_payload(), Some(&first.visitor_id), T0 + 2)
        .await
        .unwrap();
    assert!(again.metrics.observation_saved);
    assert_eq!(
        again.identity.browser_match.as_ref().map(|m| m.score),
        Some(1.0)
    );
    assert_eq!(
        history_len(engine.store(), &first.visitor_id, T0 + 2).await,
        1,
        "an identical observation is refreshed, not copied"
    );

    // Resized, it is a new observation of the same device: saved beside the first.
    let resized = engine
        .identify_at(&resized_mac(1000), Some(&first.visitor_id), T0 + 3)
        .await
        .unwrap();
    assert!(resized.metrics.observation_saved);
    assert_eq!(
        history_len(engine.store(), &first.visitor_id, T0 + 3).await,
        2
    );
}

#[tokio::test]
async fn a_sparse_observation_is_not_learned_through_a_cookie() {
    let engine = engine(Retention::default());
    let first = first_visit(&engine).await;
    // Platform, browser, timezone and languages all agree: score 0.42 / 0.55 ≈ 0.76 clears the 0.65 floor, but
    // that is also the evidence cap, below the 0.90 a cookie needs to teach the history.
    let sparse = payload(json!({"signals": {
        "userAgent": "Mozilla/5.0 (Macintosh) Chrome/130.0.0.0 Safari/537.36",
        "platform": "MacIntel",
        "timezone": "Asia/Jerusalem",
        "languages": ["en-US", "he"]
    }}));
    let result = engine
        .identify_at(&sparse, Some(&first.visitor_id), T0 + 1)
        .await
        .unwrap();
    assert!(result.identity.is_returning);
    assert!(result.metrics.deterministic_score > 0.65 && result.metrics.deterministic_score < 0.9);
    assert!(!result.metrics.observation_saved);
}

#[tokio::test]
async fn a_strong_cookieless_match_restores_the_id() {
    let engine = engine(Retention::default());
    let first = first_visit(&engine).await;
    // A new browser version and a resized window: still the same device.
    let mut doc = mac_document();
    doc["signals"]["userAgent"] =
        json!("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) Chrome/131.2.0.0 Safari/537.36");
    doc["signals"]["viewport"] = json!({"width": 1000, "height": 700});
    let restored = engine
        .identify_at(&payload(doc), None, T0 + 1000)
        .await
        .unwrap();
    assert_eq!(restored.identity.visitor_id, first.visitor_id);
    assert!(restored.identity.is_returning);
    assert!(restored.identity.confidence >= 0.9);
    assert_eq!(restored.metrics.path, IdentifyPath::Cookieless);
    assert_eq!(restored.metrics.candidate_count, 1);
    assert_eq!(
        history_len(engine.store(), &first.visitor_id, T0 + 1000).await,
        2
    );
}

#[tokio::test]
async fn near_equal_candidates_are_ambiguous() {
    let engine = engine(Retention::default());
    let current = Observation::normalize(&mac_payload().signals, None);
    for n in [1, 2] {
        engine
            .store()
            .create_visitor(&visitor(n), T0)
            .await
            .unwrap();
        engine
            .store()
            .save_observation(&visitor(n), &current, T0 + n as i64)
            .await
            .unwrap();
    }
    let result = engine
        .identify_at(&mac_payload(), None, T0 + 10)
        .await
        .unwrap();
    assert!(
        !result.identity.is_returning,
        "a margin below 0.03 must not restore"
    );
    assert_ne!(result.identity.visitor_id, visitor(1));
    assert_ne!(result.identity.visitor_id, visitor(2));
    assert_eq!(result.metrics.candidate_count, 2);
    // The closest browser is still reported privately: the most recent of the two.
    assert_eq!(
        result.identity.browser_match.unwrap().visitor_id,
        visitor(2)
    );
}

/// A target whose only probe is platform+browser, behind `decoys` older rows in the same bucket.
async fn crowded_bucket(decoys: u64) -> (Engine<MemoryVisitorStore>, VisitorPayload) {
    let engine = engine(Retention::default());
    // No screen, timezone, renderer or CPU count: the platform+browser probe is the only one that runs.
    let target = json!({"signals": {
        "userAgent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0",
        "platform": "Linux x86_64",
        "languages": ["de-de"],
        "viewport": {"width": 1200, "height": 800},
        "hardware": {"deviceMemory": 16, "maxTouchPoints": 0},
        "graphics": {"webglVendor": "Mozilla"}
    }});
    let decoy = json!({"signals": {
        "userAgent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0",
        "platform": "Linux x86_64",
        "languages": ["fr-fr"],
        "hardware": {"deviceMemory": 2, "maxTouchPoints": 1},
        "graphics": {"webglVendor": "Other"}
    }});
    let decoy = Observation::normalize(&payload(decoy).signals, None);
    for n in 0..decoys {
        let id = visitor(1000 + n);
        engine.store().create_visitor(&id, T0).await.unwrap();
        engine
            .store()
            .save_observation(&id, &decoy, T0 + n as i64)
            .await
            .unwrap();
    }
    let target = payload(target);
    let current = Observation::normalize(&target.signals, None);
    engine
        .store()
        .create_visitor(&visitor(1), T0)
        .await
        .unwrap();
    engine
        .store()
        .save_observation(&visitor(1), &current, T0 + 5000)
        .await
        .unwrap();
    (engine, target)
}

#[tokio::test]
async fn a_saturated_best_candidate_is_not_restored() {
    // 100 decoys + the target = 101 rows: the probe is crowded.
    let (engine, target) = crowded_bucket(100).await;
    let result = engine.identify_at(&target, None, T0 + 6000).await.unwrap();
    assert!(result.metrics.lookup_saturated);
    assert_eq!(result.metrics.deterministic_score, 1.0);
    assert!(!result.identity.is_returning);
    assert_ne!(result.identity.visitor_id, visitor(1));

    // 99 decoys + the target = 100 rows: complete, so the same match restores.
    let (engine, target) = crowded_bucket(99).await;
    let result = engine.identify_at(&target, None, T0 + 6000).await.unwrap();
    assert!(!result.metrics.lookup_saturated);
    assert_eq!(result.identity.visitor_id, visitor(1));
}

#[tokio::test]
async fn malformed_duplicated_or_unknown_cookies_are_ignored() {
    let engine = engine(Retention::default());
    let first = first_visit(&engine).await;
    let twice = format!("__visitor={0}; __visitor={0}", first.visitor_id);
    assert_eq!(
        visitor_from_cookies([twice.as_str()]),
        None,
        "a duplicated cookie counts as none"
    );
    assert_eq!(
        visitor_from_cookies(["__visitor=vis_123"]),
        None,
        "a malformed cookie counts as none"
    );

    // A well-formed id the store does not know takes the cookieless path and is never adopted.
    let unknown = visitor(77);
    let result = engine
        .identify_at(&payload(iphone()), Some(&unknown), T0 + 1)
        .await
        .unwrap();
    assert_eq!(result.metrics.path, IdentifyPath::Cookieless);
    assert_ne!(result.identity.visitor_id, unknown);
    assert!(!result.identity.is_returning);
}

#[tokio::test]
async fn retention_cutoff_and_pruning() {
    let engine = engine(Retention::new(1, 3).unwrap());
    let first = first_visit(&engine).await;
    // Five different observations of the same device (identical ones would refresh one row).
    for i in 1..=5 {
        let r = engine
            .identify_at(
                &resized_mac(1000 + i as u32),
                Some(&first.visitor_id),
                T0 + i,
            )
            .await
            .unwrap();
        assert!(r.identity.is_returning);
        assert!(r.metrics.observation_saved);
    }
    assert_eq!(
        history_len(engine.store(), &first.visitor_id, T0 + 5).await,
        3,
        "pruned to 3 per visitor"
    );

    // Exactly at the cutoff the newest observation (T0 + 5) is still visible.
    let at_edge = engine
        .identify_at(&mac_payload(), Some(&first.visitor_id), T0 + 5 + DAY_MS)
        .await
        .unwrap();
    assert_eq!(at_edge.metrics.path, IdentifyPath::Cookie);
    // One millisecond past the newest one's retention: the cookie no longer counts, and nothing is matched.
    let engine = self::engine(Retention::new(1, 3).unwrap());
    let first = first_visit(&engine).await;
    let expired = engine
        .identify_at(&mac_payload(), Some(&first.visitor_id), T0 + DAY_MS + 1)
        .await
        .unwrap();
    assert_eq!(expired.metrics.path, IdentifyPath::Cookieless);
    assert_eq!(expired.metrics.candidate_count, 0);
    assert_ne!(expired.identity.visitor_id, first.visitor_id);
}

#[tokio::test]
async fn an_empty_payload_mints_without_a_query() {
    let engine = engine(Retention::default());
    let empty = payload(json!({"signals": {}}));
    let a = engine.identify_at(&empty, None, T0).await.unwrap();
    let b = engine.identify_at(&empty, None, T0 + 1).await.unwrap();
    assert_ne!(
        a.identity.visitor_id, b.identity.visitor_id,
        "no evidence, no restore"
    );
    assert_eq!(b.metrics.candidate_count, 0);
}

/// A test evaluator: answers with `answer`, or fails; counts its calls.
struct Scripted {
    answer: Result<Evaluation, EvaluatorError>,
    /// Answers this many evaluations per batch instead of one per candidate, when set.
    batch_len: Option<usize>,
    calls: AtomicUsize,
}

impl Scripted {
    fn new(answer: Result<Evaluation, EvaluatorError>) -> Arc<Self> {
        Arc::new(Scripted {
            answer,
            batch_len: None,
            calls: AtomicUsize::new(0),
        })
    }
}

impl Evaluator for Scripted {
    async fn evaluate(&self, _input: EvaluationInput<'_>) -> Result<Evaluation, EvaluatorError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.answer.clone()
    }

    async fn evaluate_batch(
        &self,
        candidates: &[EvaluationInput<'_>],
    ) -> Result<Vec<Evaluation>, EvaluatorError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let answer = self.answer.clone()?;
        Ok(vec![answer; self.batch_len.unwrap_or(candidates.len())])
    }
}

fn answer(
    same_visitor: f64,
    automation: f64,
    suspicious: f64,
) -> Result<Evaluation, EvaluatorError> {
    Ok(Evaluation {
        same_visitor,
        automation,
        suspicious,
    })
}

async fn with_evaluator(
    evaluator: Arc<Scripted>,
) -> (Engine<MemoryVisitorStore, Arc<Scripted>>, VisitorId) {
    let engine = engine(Retention::default()).with_evaluator(evaluator);
    let first = first_visit(&engine).await;
    (engine, first.visitor_id)
}

#[tokio::test]
async fn evaluator_answers_are_blended_and_risk_reported() {
    let evaluator = Scripted::new(answer(0.8, 0.25, 0.5));
    let (engine, first) = with_evaluator(Arc::clone(&evaluator)).await;
    assert_eq!(
        evaluator.calls.load(Ordering::SeqCst),
        1,
        "a first visit gets one risk call"
    );
    let result = engine
        .identify_at(&mac_payload(), None, T0 + 1)
        .await
        .unwrap();
    assert_eq!(
        evaluator.calls.load(Ordering::SeqCst),
        2,
        "one batch call for every candidate"
    );
    // min(cap 1, 0.35·1 + 0.65·0.8) = 0.87 < 0.90: the evaluator's doubt prevents the restore.
    assert!(!result.identity.is_returning);
    assert_eq!(result.identity.risk_status, RiskStatus::Evaluated);
    assert_eq!(
        (
            result.identity.risk.automation,
            result.identity.risk.suspicious
        ),
        (0.25, 0.5)
    );
    let cookie = engine
        .identify_at(&mac_payload(), Some(&first), T0 + 2)
        .await
        .unwrap();
    assert_eq!(cookie.identity.risk_status, RiskStatus::Evaluated);
    assert_eq!(
        cookie.identity.confidence, 1.0,
        "risk never changes identity"
    );
}

#[tokio::test]
async fn evaluator_agreement_restores_with_blended_confidence() {
    let (engine, first) = with_evaluator(Scripted::new(answer(1.0, 0.0, 0.0))).await;
    let result = engine
        .identify_at(&mac_payload(), None, T0 + 1)
        .await
        .unwrap();
    assert_eq!(result.identity.visitor_id, first);
    assert!((result.identity.confidence - 1.0).abs() < 1e-12);
    assert!(result.metrics.evaluator_used);
}

#[tokio::test]
async fn evaluator_failures_fall_back_to_deterministic_matching() {
    for failure in [
        Err(EvaluatorError::Timeout),
        Err(EvaluatorError::Failed("HTTP 500".into())),
        Err(EvaluatorError::Refused("budget".into())),
        answer(f64::NAN, 0.0, 0.0),
        answer(1.5, 0.0, 0.0),
        answer(1.0, -0.1, 0.0),
        answer(1.0, 0.0, f64::INFINITY),
    ] {
        let (engine, first) = with_evaluator(Scripted::new(failure.clone())).await;
        let result = engine
            .identify_at(&mac_payload(), None, T0 + 1)
            .await
            .unwrap();
        assert_eq!(
            result.identity.visitor_id, first,
            "{failure:?}: deterministic restore still happens"
        );
        assert_eq!(
            result.identity.risk_status,
            RiskStatus::Unavailable,
            "{failure:?}"
        );
        assert_eq!(
            (
                result.identity.risk.automation,
                result.identity.risk.suspicious
            ),
            (0.0, 0.0)
        );
        assert!(!result.metrics.evaluator_used);
    }
}

#[tokio::test]
async fn a_batch_with_the_wrong_count_is_ignored() {
    let evaluator = Arc::new(Scripted {
        answer: answer(0.0, 1.0, 1.0),
        batch_len: Some(2),
        calls: AtomicUsize::new(0),
    });
    let (engine, first) = with_evaluator(evaluator).await;
    let result = engine
        .identify_at(&mac_payload(), None, T0 + 1)
        .await
        .unwrap();
    // sameVisitor 0 would have blocked the restore; the malformed batch is ignored instead.
    assert_eq!(result.identity.visitor_id, first);
    assert_eq!(result.identity.risk_status, RiskStatus::Unavailable);
}

#[tokio::test]
async fn the_default_answer_shape() {
    let engine = engine(Retention::default());
    let result = engine.identify_at(&mac_payload(), None, T0).await.unwrap();
    let body = serde_json::to_value(&result.identity).unwrap();
    let keys: Vec<_> = body.as_object().unwrap().keys().cloned().collect();
    assert_eq!(
        keys,
        [
            "confidence",
            "isReturning",
            "risk",
            "riskStatus",
            "visitorId"
        ]
    );
    assert!(serde_json::to_string(&result.identity)
        .unwrap()
        .starts_with(r#"{"visitorId":"vis_"#));
    assert_eq!(body["riskStatus"], "disabled");
    assert!(VisitorId::parse(body["visitorId"].as_str().unwrap()).is_some());
}

#[tokio::test]
async fn the_restore_threshold_is_configurable() {
    // A new renderer and timezone: score 0.82 (0.18 of 1.0 weight lost), alone in the lookup.
    let mut changed = mac_document();
    changed["signals"]["timezone"] = json!("Europe/London");
    changed["signals"]["graphics"]["webglRenderer"] = json!("ANGLE Metal");
    for (threshold, restored) in [(0.9, false), (0.82, true), (0.83, false), (0.8, true)] {
        let config = EngineConfig::builder()
            .restore_threshold(threshold)
            .build()
            .unwrap();
        let engine = Engine::new(MemoryVisitorStore::new(Retention::default()), config);
        let first = first_visit(&engine).await;
        let result = engine
            .identify_at(&payload(changed.clone()), None, T0 + 1)
            .await
            .unwrap();
        let score = result.metrics.deterministic_score;
        assert!((score - 0.82).abs() < 1e-9, "{score}");
        assert_eq!(
            result.identity.visitor_id == first.visitor_id,
            restored,
            "threshold {threshold}"
        );
    }
}
