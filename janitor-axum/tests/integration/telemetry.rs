//! What an operator sees, through a real Prometheus recorder: identifications by outcome, refusals by reason,
//! provider calls by outcome, pool waits and maintenance rows, and never a visitor id.
//!
//! The recorder is the test thread's own and the test runs on that thread alone: the other tests of this binary
//! share its process, and a global recorder would count their events too. Every count below is this test's own.

use crate::common;

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::Router;
use common::provider::{good, Provider, Reply};
use http_body_util::BodyExt;
use janitor_axum::handle::Stores;
use janitor_axum::postgres::PgStores;
use janitor_axum::{Janitor, MemoryStores};
use janitor_core::protection::budget::BudgetConfig;
use janitor_core::testing::visitor;
use janitor_core::testing::visitor_store::observation;
use janitor_core::{now_ms, Retention, VisitorStore};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use serde_json::Value;
use tower::ServiceExt;

/// Posts the test payload to the endpoint of `router`, with `cookie` and `origin` when given; the status and the answer.
async fn identify(router: Router, cookie: Option<&str>, origin: Option<&str>) -> (u16, Value) {
    let body = janitor_core::testing::mac_document().to_string();
    let mut request = Request::builder()
        .method("POST")
        .uri("/api/visitor")
        .header("host", "example.com")
        .header("content-type", "application/json");
    if let Some(cookie) = cookie {
        request = request.header("cookie", format!("__visitor={cookie}"));
    }
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    let response = router
        .oneshot(request.body(Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// The value of the sample `name{labels}` in the rendered text (labels in the exporter's order), or 0.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .filter_map(|line| line.strip_prefix(series))
        .filter_map(|rest| rest.strip_prefix(' '))
        .find_map(|value| value.trim().parse().ok())
        .unwrap_or(0.0)
}

// A current-thread runtime: every task of the test (the stores' connections, the provider, the schemas' body)
// runs on the thread whose recorder is set.
#[tokio::test(flavor = "current_thread")]
async fn an_operator_sees_outcomes_reasons_and_waits_but_no_ids() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let metrics: PrometheusHandle = recorder.handle();
    let _local = metrics::set_default_local_recorder(&recorder);

    // In memory: a new visitor, the cookie bringing it back, and a request from another site.
    let memory = Janitor::new(
        common::config("telemetry-tests").build().unwrap(),
        MemoryStores::new(),
    );
    let (status, first) = identify(memory.router(), None, None).await;
    assert_eq!(status, 200, "{first}");
    let id = first["visitorId"].as_str().unwrap().to_owned();
    assert_eq!(identify(memory.router(), Some(&id), None).await.0, 200);
    assert_eq!(
        identify(memory.router(), None, Some("https://elsewhere.example"))
            .await
            .0,
        403
    );

    // With a provider: one answered call, then one that outlasts the provider's timeout (the same browser
    // without its cookie: restored by similarity, its risk unavailable).
    let provider = Provider::start(good()).await;
    let with_jev = Janitor::builder(
        common::config("telemetry-jev-tests").build().unwrap(),
        MemoryStores::new(),
    )
    .jev(provider.config(300), BudgetConfig::default())
    .unwrap()
    .build();
    let (_, answered) = identify(with_jev.router(), None, None).await;
    assert_eq!(answered["visitorId"].as_str().map(str::len), Some(52));
    provider.set_reply(Reply::Slow(Duration::from_secs(2)));
    assert_eq!(identify(with_jev.router(), None, None).await.0, 200);

    // On PostgreSQL: pool waits, and a maintenance step removing an expired visitor's observation.
    janitor_sql::testing::with_schemas(|schemas| async move {
        let stores = PgStores::new(schemas.fresh().await);
        let config = common::config("telemetry-pg-tests").retention(1, 10);
        let janitor = Janitor::new(config.build().unwrap(), stores.clone());
        assert_eq!(identify(janitor.router(), None, None).await.0, 200);
        let store = stores.visitors(Retention::new(1, 10).unwrap());
        let (expired, two_days_ago) = (visitor(1), now_ms() - 2 * 86_400_000);
        store.create_visitor(&expired, two_days_ago).await.unwrap();
        let old = observation("old");
        store
            .save_observation(&expired, &old, two_days_ago)
            .await
            .unwrap();
        janitor.cleanup(None, 100).await.unwrap();
    })
    .await;

    let text = metrics.render();
    let count = |series: &str| sample(&text, series);
    assert_eq!(
        count(r#"janitor_identifications_total{outcome="minted",risk_status="disabled"}"#),
        2.0,
        "{text}"
    );
    assert_eq!(
        count(r#"janitor_identifications_total{outcome="cookie",risk_status="disabled"}"#),
        1.0
    );
    assert_eq!(
        count(r#"janitor_identifications_total{outcome="minted",risk_status="evaluated"}"#),
        1.0
    );
    assert_eq!(
        count(r#"janitor_identifications_total{outcome="restored",risk_status="unavailable"}"#),
        1.0
    );
    assert_eq!(
        count(r#"janitor_refusals_total{reason="cross_origin"}"#),
        1.0
    );
    assert_eq!(count(r#"janitor_jev_calls_total{outcome="answered"}"#), 1.0);
    assert_eq!(count(r#"janitor_jev_calls_total{outcome="timeout"}"#), 1.0);
    assert!(count("janitor_db_pool_wait_seconds_count") >= 2.0, "{text}");
    assert_eq!(
        count(r#"janitor_identification_seconds_count{outcome="minted"}"#),
        3.0
    );
    assert!(
        count(r#"janitor_maintenance_deleted_total{what="observations"}"#) >= 1.0,
        "{text}"
    );
    assert!(!text.contains(&id), "a visitor id reached the metrics");
    assert!(!text.contains("vis_"), "a visitor id reached the metrics");
}

/// A scrape right after the handle is built, before any request: every metric has its help text and type,
/// and every counter its series at zero. A recorder of this thread only, so the test above keeps its own.
#[test]
fn a_fresh_scrape_lists_every_metric_before_the_first_event() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let metrics = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        Janitor::new(
            common::config("fresh-scrape-tests").build().unwrap(),
            MemoryStores::new(),
        );
    });
    let text = metrics.render();
    for (name, kind) in [
        ("janitor_identifications_total", "counter"),
        ("janitor_refusals_total", "counter"),
        ("janitor_jev_calls_total", "counter"),
        ("janitor_budget_denials_total", "counter"),
        ("janitor_maintenance_deleted_total", "counter"),
        ("janitor_db_pool_timeouts_total", "counter"),
        ("janitor_db_statement_timeouts_total", "counter"),
        ("janitor_db_unavailable_total", "counter"),
        ("janitor_db_lookups_total", "counter"),
        ("janitor_automation_verdicts_total", "counter"),
        ("janitor_automation_reasons_total", "counter"),
    ] {
        assert!(text.contains(&format!("# HELP {name} ")), "{name}: {text}");
        assert!(
            text.contains(&format!("# TYPE {name} {kind}")),
            "{name}: {text}"
        );
    }
    for series in [
        r#"janitor_identifications_total{outcome="minted",risk_status="disabled"} 0"#,
        r#"janitor_identifications_total{outcome="restored",risk_status="evaluated"} 0"#,
        r#"janitor_refusals_total{reason="rate_limited"} 0"#,
        r#"janitor_refusals_total{reason="busy"} 0"#,
        r#"janitor_jev_calls_total{outcome="timeout"} 0"#,
        r#"janitor_budget_denials_total{reason="circuit-open"} 0"#,
        r#"janitor_maintenance_deleted_total{what="observations"} 0"#,
        "janitor_db_pool_timeouts_total 0",
        r#"janitor_db_lookups_total{on="replica"} 0"#,
        r#"janitor_automation_verdicts_total{verdict="suspected"} 0"#,
        r#"janitor_automation_reasons_total{reason="webdriver"} 0"#,
    ] {
        assert!(text.lines().any(|line| line == series), "{series}: {text}");
    }
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("janitor_identifications_total{"))
            .count(),
        9,
        "three outcomes by three risk statuses: {text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("janitor_refusals_total{"))
            .count(),
        13,
        "{text}"
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("janitor_automation_reasons_total{"))
            .count(),
        janitor_axum::automation::AutomationReason::ALL.len(),
        "{text}"
    );
}

/// With the verdict on, each verdict and each reason that fired is counted; the labels are the stable names.
#[tokio::test(flavor = "current_thread")]
async fn the_automation_verdict_is_counted_by_verdict_and_reason() {
    let recorder = PrometheusBuilder::new().build_recorder();
    let metrics = recorder.handle();
    let _local = metrics::set_default_local_recorder(&recorder);
    let config = common::config("automation-metrics-tests").automation_verdict(true);
    let janitor = Janitor::new(config.build().unwrap(), MemoryStores::new());
    let headless = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 \
                    HeadlessChrome/130.0.0.0 Safari/537.36";
    let request = Request::builder()
        .method("POST")
        .uri("/api/visitor")
        .header("host", "example.com")
        .header("content-type", "application/json")
        .header("user-agent", headless)
        .header("accept-language", "en-US")
        .header("accept-encoding", "gzip")
        .body(Body::from(
            janitor_core::testing::mac_document().to_string(),
        ))
        .unwrap();
    let assessment = janitor.assess(request).await;
    let automation = assessment.automation.expect("the verdict is on");
    assert_eq!(automation.verdict().as_str(), "automated");
    let text = metrics.render();
    let count = |series: &str| sample(&text, series);
    assert_eq!(
        count(r#"janitor_automation_verdicts_total{verdict="automated"}"#),
        1.0,
        "{text}"
    );
    assert_eq!(
        count(r#"janitor_automation_reasons_total{reason="headless"}"#),
        1.0
    );
    // The page's user agent is not the header's.
    assert_eq!(
        count(r#"janitor_automation_reasons_total{reason="user_agent_mismatch"}"#),
        1.0
    );
    assert_eq!(
        count(r#"janitor_automation_reasons_total{reason="webdriver"}"#),
        0.0
    );
}
