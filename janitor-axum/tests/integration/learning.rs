//! Login-labelled learning through the real router, on both stores: the `__visitor_learning` cookie and its
//! attributes, consent false deleting the flow, a verified self-person login labelling it, an agent's login
//! never labelling, the flow living only in its cookie, and erasure.

use axum::body::Body;
use axum::extract::Request;
use http::header::{COOKIE, SET_COOKIE};
use http::StatusCode;
use janitor_axum::handle::Stores;
use janitor_axum::visitor::LearningContext;
use janitor_axum::{Janitor, VisitorContext};
use janitor_core::directory::{AssessmentContext, SubjectKind};
use janitor_core::learning::{CollectionPolicy, LearningConfig};
use serde_json::json;
use tower::ServiceExt;

use crate::common;
use common::stores::on_both_stores;

fn learning(policy: CollectionPolicy) -> LearningConfig {
    LearningConfig::builder()
        .enabled(true)
        .collection(policy)
        .build()
        .unwrap()
}

fn janitor<S: Stores>(stores: S, config: LearningConfig) -> Janitor {
    let config = common::config("learning-tests")
        .learning(config)
        .build()
        .unwrap();
    Janitor::new(config, stores)
}

/// A request of the endpoint with these cookies and extensions.
fn request(cookies: &[&str], context: Option<LearningContext>, account: Option<&str>) -> Request {
    let body = serde_json::to_vec(&json!({"signals": {
        "userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/130.0.0.0 Safari/537.36",
        "platform": "MacIntel",
        "languages": ["en-US"],
        "timezone": "Europe/Paris"
    }}))
    .unwrap();
    let mut builder = Request::builder()
        .method("POST")
        .uri("/api/visitor")
        .header("host", "example.com")
        .header("content-type", "application/json");
    if !cookies.is_empty() {
        builder = builder.header(COOKIE, cookies.join("; "));
    }
    let mut request = builder.body(Body::from(body)).unwrap();
    if let Some(context) = context {
        request.extensions_mut().insert(context);
    }
    if let Some(account) = account {
        request
            .extensions_mut()
            .insert(VisitorContext::for_account(account).unwrap());
    }
    request
}

/// The learning `Set-Cookie` line of a 200, if any.
async fn learning_line(janitor: &Janitor, request: Request) -> Option<String> {
    let response = janitor.router().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let lines: Vec<String> = response
        .headers()
        .get_all(SET_COOKIE)
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .filter(|l| l.starts_with("__visitor_learning="))
        .collect();
    assert!(lines.len() <= 1, "{lines:?}");
    lines.into_iter().next()
}

/// `__visitor_learning=<value>` of a line.
fn pair(line: &str) -> String {
    line.split(';').next().unwrap().to_owned()
}

fn consent(consent: bool) -> Option<LearningContext> {
    Some(LearningContext {
        consent: Some(consent),
        verified: None,
    })
}

async fn the_cookie_follows_consent<S: Stores>(stores: S) {
    let janitor = janitor(stores, learning(CollectionPolicy::PerRequest));
    // No consent under the per-request policy: no flow and no cookie.
    assert_eq!(
        learning_line(&janitor, request(&[], None, None)).await,
        None
    );
    let line = learning_line(&janitor, request(&[], consent(true), None))
        .await
        .unwrap();
    let value = pair(&line);
    let id = value.strip_prefix("__visitor_learning=").unwrap();
    assert!(id.starts_with("ses_") && id.len() == 52, "{line}");
    assert_eq!(
        line,
        format!("{value}; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=1800")
    );
    assert!(!line.contains("Domain"), "host-only: {line}");
    // The same cookie comes back: the same flow, its lifetime counting down from its start.
    let again = learning_line(&janitor, request(&[value.as_str()], consent(true), None))
        .await
        .unwrap();
    assert_eq!(pair(&again), value);
    // Consent withdrawn: the flow's row goes and the cookie is cleared.
    let cleared = learning_line(&janitor, request(&[value.as_str()], consent(false), None))
        .await
        .unwrap();
    assert_eq!(
        cleared,
        "__visitor_learning=; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=0"
    );
    assert!(
        !janitor.learning().delete_session(id).await.unwrap(),
        "the row was deleted"
    );
}

async fn a_verified_self_login_labels_and_an_agent_never_does<S: Stores>(stores: S) {
    let janitor = janitor(stores, learning(CollectionPolicy::Application));
    let person = janitor.directory().subject_id("person-1").unwrap();
    let agent = janitor.directory().subject_id("agent-1").unwrap();
    janitor
        .directory()
        .put_subject(&person, SubjectKind::Person)
        .await
        .unwrap();
    janitor
        .directory()
        .put_subject(&agent, SubjectKind::Agent)
        .await
        .unwrap();
    let verified = |subject: &janitor_core::evidence::SubjectId| {
        Some(LearningContext {
            consent: None,
            verified: Some(AssessmentContext {
                actor_id: Some(subject.clone()),
                ..AssessmentContext::new(subject.clone())
            }),
        })
    };
    // The agent's flow ends unlabelled.
    let flow = pair(
        &learning_line(&janitor, request(&[], None, None))
            .await
            .unwrap(),
    );
    let cleared = learning_line(&janitor, request(&[flow.as_str()], verified(&agent), None)).await;
    assert!(cleared.unwrap().ends_with("Max-Age=0"));
    assert!(janitor.learning().reports(100).await.unwrap().is_empty());
    // A signed-in account the directory did not verify never labels either.
    let flow = pair(
        &learning_line(&janitor, request(&[], None, None))
            .await
            .unwrap(),
    );
    learning_line(&janitor, request(&[flow.as_str()], None, Some("person-1"))).await;
    assert!(janitor.learning().reports(100).await.unwrap().is_empty());
    // A login without the learning cookie labels nothing, though the visitor cookie is known.
    learning_line(&janitor, request(&[], verified(&person), None)).await;
    assert!(janitor.learning().reports(100).await.unwrap().is_empty());
    // The person signing in as themselves labels the flow and clears the cookie.
    let flow = pair(
        &learning_line(&janitor, request(&[], None, None))
            .await
            .unwrap(),
    );
    let cleared = learning_line(&janitor, request(&[flow.as_str()], verified(&person), None)).await;
    assert!(cleared.unwrap().ends_with("Max-Age=0"));
    let reports = janitor.learning().reports(100).await.unwrap();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].example.subject_id, person);
    // Forgetting the user erases the learning history with the rest.
    assert!(
        janitor
            .erase_account("person-1", None)
            .await
            .unwrap()
            .subject_existed
    );
    assert!(janitor.learning().reports(100).await.unwrap().is_empty());
}

async fn learning_off_collects_nothing_and_clears_old_cookies<S: Stores>(stores: S) {
    let janitor = janitor(stores, LearningConfig::default());
    assert_eq!(
        learning_line(&janitor, request(&[], consent(true), None)).await,
        None
    );
    let old = format!("__visitor_learning=ses_{}", "a".repeat(48));
    let cleared = learning_line(&janitor, request(&[old.as_str()], consent(true), None))
        .await
        .unwrap();
    assert!(cleared.ends_with("Max-Age=0"));
    assert!(janitor.learning().reports(100).await.unwrap().is_empty());
    let maintenance = janitor.cleanup(None, 100).await.unwrap();
    assert_eq!(maintenance.learning_sessions, 0);
}

on_both_stores!(
    the_cookie_follows_consent,
    a_verified_self_login_labels_and_an_agent_never_does,
    learning_off_collects_nothing_and_clears_old_cookies,
);

#[test]
fn the_handle_refuses_shadow_mode_without_a_predictor() {
    let shadow = LearningConfig::builder()
        .enabled(true)
        .mode(janitor_core::learning::LearningMode::Shadow)
        .build()
        .unwrap();
    let error = common::config("learning-tests")
        .learning(shadow)
        .build()
        .unwrap_err();
    assert!(error.to_string().contains("learning.mode"), "{error}");
}
