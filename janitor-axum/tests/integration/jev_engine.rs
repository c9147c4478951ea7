//! End to end: the engine with the Jev client behind the shared inference budget, against a provider on a
//! real local socket.

use crate::common;

use common::provider::{good, Provider, Reply};
use janitor_axum::jev::JevEvaluator;
use janitor_core::protection::budget::{
    BudgetConfig, BudgetedEvaluator, BudgetedEvaluatorConfig, InferenceBudget, MemoryBudgetStore,
};
use janitor_core::{
    Engine, EngineConfig, LabelKey, MemoryVisitorStore, Retention, Risk, RiskStatus, VisitorPayload,
};
use serde_json::json;

const TIMEOUT_MS: u32 = 1000;

type JevEngine = Engine<MemoryVisitorStore, BudgetedEvaluator<JevEvaluator, MemoryBudgetStore>>;

fn engine(provider: &Provider) -> JevEngine {
    let key = LabelKey::new(&"s".repeat(32), "jev-engine-tests").unwrap();
    let budget = InferenceBudget::new(MemoryBudgetStore::new(), BudgetConfig::default(), &key);
    let options = BudgetedEvaluatorConfig::builder()
        .timeout_ms(TIMEOUT_MS)
        .build()
        .unwrap();
    let evaluator = BudgetedEvaluator::new(provider.evaluator(TIMEOUT_MS), budget, options);
    Engine::new(
        MemoryVisitorStore::new(Retention::default()),
        EngineConfig::default(),
    )
    .with_evaluator(evaluator)
}

fn payload() -> VisitorPayload {
    janitor_core::testing::mac_payload()
}

const ANSWERED: Risk = Risk {
    automation: 0.25,
    suspicious: 0.125,
};

#[tokio::test]
async fn risk_comes_from_a_good_provider() {
    let provider = Provider::start(good()).await;
    let engine = engine(&provider);

    // First visit: no history, one single evaluation for risk.
    let first = engine.identify(&payload(), None).await.unwrap().identity;
    assert!(!first.is_returning);
    assert_eq!(first.risk_status, RiskStatus::Evaluated);
    assert_eq!(first.risk, ANSWERED);
    let state = provider.last().json()["state"].clone();
    assert_eq!(state["history"], json!([]));
    assert_eq!(state["deterministicSimilarity"], json!(0));

    // With the cookie: one evaluation of the visitor's history, which never names the visitor.
    let again = engine
        .identify(&payload(), Some(&first.visitor_id))
        .await
        .unwrap()
        .identity;
    assert_eq!(again.visitor_id, first.visitor_id);
    assert_eq!(
        (again.risk_status, again.risk),
        (RiskStatus::Evaluated, ANSWERED)
    );
    let sent = provider.last();
    assert_eq!(sent.json()["state"]["history"].as_array().unwrap().len(), 1);
    assert!(!sent.text().contains(first.visitor_id.as_str()));
    assert!(!sent.text().contains("Mozilla"));

    // Cookie lost: the candidate goes to the provider as a batch, and its sameVisitor (0.875) blends into
    // the restore confidence: min(cap 1, 0.35 · 1 + 0.65 · 0.875) = 0.91875 ≥ 0.9.
    let restored = engine.identify(&payload(), None).await.unwrap().identity;
    assert_eq!(restored.visitor_id, first.visitor_id);
    assert!(restored.is_returning);
    assert!(
        (restored.confidence - 0.91875).abs() < 1e-12,
        "{}",
        restored.confidence
    );
    assert_eq!(
        (restored.risk_status, restored.risk),
        (RiskStatus::Evaluated, ANSWERED)
    );
    let batch = provider.last().json();
    assert_eq!(batch["state"]["candidates"].as_array().unwrap().len(), 1);
    assert!(batch["questions"].get("candidate0").is_some());
    assert_eq!(
        provider.received().len(),
        3,
        "one provider call per identification"
    );
}

#[tokio::test]
async fn a_failing_provider_leaves_identification_working() {
    let provider = Provider::start(Reply::Raw {
        status: 503,
        body: b"{\"error\":\"overloaded\"}".to_vec(),
    })
    .await;
    let engine = engine(&provider);
    let first = engine.identify(&payload(), None).await.unwrap().identity;
    assert!(!first.is_returning);
    assert_eq!(first.risk_status, RiskStatus::Unavailable);
    assert_eq!(first.risk, Risk::default());

    let again = engine
        .identify(&payload(), Some(&first.visitor_id))
        .await
        .unwrap()
        .identity;
    assert_eq!(again.visitor_id, first.visitor_id);
    assert!(again.is_returning);
    assert_eq!(
        (again.risk_status, again.risk),
        (RiskStatus::Unavailable, Risk::default())
    );

    // Without the evaluator's opinion a perfect deterministic match still restores the id.
    let restored = engine.identify(&payload(), None).await.unwrap().identity;
    assert_eq!(restored.visitor_id, first.visitor_id);
    assert_eq!(restored.risk_status, RiskStatus::Unavailable);
    assert_eq!(provider.received().len(), 3);

    // Three failures opened the shared circuit: the next identification makes no call at all.
    let later = engine
        .identify(&payload(), Some(&first.visitor_id))
        .await
        .unwrap()
        .identity;
    assert_eq!(later.risk_status, RiskStatus::Unavailable);
    assert_eq!(provider.received().len(), 3, "the budget refused the call");
}

#[tokio::test]
async fn a_slow_provider_is_unavailable_risk_not_a_slow_identification() {
    let provider = Provider::start(Reply::Slow(std::time::Duration::from_secs(5))).await;
    let engine = engine(&provider);
    let started = std::time::Instant::now();
    let first = engine.identify(&payload(), None).await.unwrap().identity;
    assert!(started.elapsed() < std::time::Duration::from_millis(u64::from(TIMEOUT_MS) + 1000));
    assert_eq!(
        (first.risk_status, first.risk),
        (RiskStatus::Unavailable, Risk::default())
    );
}

/// The whole handle, configured with `Janitor::builder(..).jev(..)`: through the endpoint, risk comes from the provider
/// and stays private unless exposed; a failing provider leaves identification working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_handle_wires_jev_behind_the_budget() {
    use axum::body::Body;
    use http_body_util::BodyExt;
    use janitor_axum::config::EndpointConfig;
    use janitor_axum::{Janitor, MemoryStores};
    use tower::ServiceExt;

    let provider = Provider::start(good()).await;
    let config = common::config("jev-handle")
        .endpoint(
            EndpointConfig::builder()
                .expose_client_scores(true)
                .build()
                .unwrap(),
        )
        .build()
        .unwrap();
    let janitor = Janitor::builder(config, MemoryStores::new())
        .jev(provider.config(TIMEOUT_MS), BudgetConfig::default())
        .unwrap()
        .build();
    let body = serde_json::to_vec(&json!({"signals": {"userAgent": "Mozilla/5.0 Chrome/131.0 Safari/537.36", "timezone": "Asia/Tokyo"}})).unwrap();
    let request = |body: Vec<u8>| {
        http::Request::builder()
            .method("POST")
            .uri("/api/visitor")
            .header("host", "example.com")
            .header("content-type", "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    let response = janitor
        .router()
        .oneshot(request(body.clone()))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let answer: serde_json::Value =
        serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(answer["riskStatus"], "evaluated", "{answer}");
    assert_eq!(provider.received().len(), 1);

    provider.set_reply(Reply::Raw {
        status: 503,
        body: b"{}".to_vec(),
    });
    let response = janitor.router().oneshot(request(body)).await.unwrap();
    assert_eq!(
        response.status(),
        200,
        "a failing provider never fails identification"
    );
    let answer: serde_json::Value =
        serde_json::from_slice(&response.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(answer["riskStatus"], "unavailable");
    assert_eq!(answer["risk"], json!({"automation": 0, "suspicious": 0}));
}
