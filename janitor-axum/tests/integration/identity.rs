//! Identity on any route, through the real router and on both stores: the visitor layer on an application's
//! login route (with the context from middleware or from its own context function), the direct
//! `identify_parts` and `claim_quota`, quotas by the request's account with or without a payload, and
//! refusals.

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::middleware::{from_fn, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use http_body_util::BodyExt;
use janitor_axum::handle::Stores;
use janitor_axum::{Janitor, Visitor, VisitorContext};
use janitor_core::protection::quota::QuotaConfig;
use serde::Deserialize;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::common;
use common::stores::on_both_stores;

/// The login form of the application: its own fields, and the browser's payload beside them.
#[derive(Deserialize)]
struct Login {
    email: String,
}

/// A login handler behind the visitor layer: it answers what the layer found.
async fn login(identity: Visitor, Json(form): Json<Login>) -> Json<Value> {
    Json(match identity {
        Visitor::Identified(identity) => json!({
            "email": form.email,
            "visitorId": identity.visitor_id.as_str(),
            "returning": identity.is_returning,
        }),
        Visitor::Refused(refusal) => json!({"refused": refusal.status().as_u16()}),
        Visitor::Absent => json!({"absent": true}),
    })
}

/// The account of the form, as the application's own session middleware would attach it.
async fn account_context(request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    if let Ok(form) = serde_json::from_slice::<Value>(&bytes) {
        if let Some(email) = form["email"].as_str() {
            parts
                .extensions
                .insert(VisitorContext::for_account(email).unwrap());
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn app(janitor: &Janitor) -> Router {
    Router::new()
        .route("/login", post(login))
        .route_layer(janitor.visitor_layer())
        .route_layer(from_fn(account_context))
}

fn form(visitor: Value) -> Value {
    json!({"email": "ada@example.com", "password": "correct horse", "visitor": visitor})
}

async fn send(
    app: &Router,
    body: &Value,
    cookie: Option<&str>,
) -> (StatusCode, Option<String>, Value) {
    let mut request = Request::builder()
        .method("POST")
        .uri("/login")
        .header("content-type", "application/json");
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let cookie = response
        .headers()
        .get("set-cookie")
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        cookie,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn the_login_route_identifies_and_sets_the_cookie<S: Stores>(stores: S) {
    let janitor = Janitor::new(common::config("identity-tests").build().unwrap(), stores);
    let app = app(&janitor);
    let payload = janitor_core::testing::mac_document();
    let (status, cookie, answer) = send(&app, &form(payload.clone()), None).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(
        answer["email"], "ada@example.com",
        "the handler still reads its form"
    );
    assert_eq!(answer["returning"], false);
    let cookie = cookie.expect("the layer sets the cookie");
    assert_eq!(
        cookie,
        format!("__visitor={}", answer["visitorId"].as_str().unwrap())
    );
    let (_, _, again) = send(&app, &form(payload), Some(&cookie)).await;
    assert_eq!(
        (again["returning"].clone(), again["visitorId"].clone()),
        (json!(true), answer["visitorId"].clone())
    );

    // No payload, a payload that does not validate, and a body that is not JSON.
    let (_, cookie, absent) = send(&app, &json!({"email": "ada@example.com"}), None).await;
    assert_eq!((absent, cookie), (json!({"absent": true}), None));
    let (_, cookie, invalid) = send(
        &app,
        &form(json!({"signals": {"screen": {"width": -1}}})),
        None,
    )
    .await;
    assert_eq!((invalid, cookie), (json!({"refused": 400}), None));
    let plain = Request::builder()
        .method("POST")
        .uri("/login")
        .header("content-type", "text/plain")
        .body(Body::from("email=ada"))
        .unwrap();
    let response = app.clone().oneshot(plain).await.unwrap();
    assert_eq!(
        response.status(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "the handler's own Json refusal"
    );
}

async fn account_quotas_apply_on_the_login_route<S: Stores>(stores: S) {
    let quotas = QuotaConfig::builder().account(2).build().unwrap();
    let config = common::config("identity-quota-tests")
        .quotas(quotas)
        .build()
        .unwrap();
    let janitor = Janitor::new(config, stores);
    let app = app(&janitor);
    let payload = janitor_core::testing::mac_document();
    for attempt in 0..2 {
        let (_, _, answer) = send(&app, &form(payload.clone()), None).await;
        assert!(
            answer["visitorId"].is_string(),
            "attempt {attempt}: {answer}"
        );
    }
    // The layer answers a spent quota itself, worded for the route: the handler never runs.
    let (status, cookie, limited) = send(&app, &form(payload), None).await;
    assert_eq!(
        (status, limited, cookie),
        (
            StatusCode::TOO_MANY_REQUESTS,
            json!({"error": "Too many requests; try again later"}),
            None
        )
    );
    // And a request without a payload is counted and refused the same.
    let (status, _, _) = send(&app, &json!({"email": "ada@example.com"}), None).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
}

/// The account comes from the body itself, through the layer's context function: no middleware needed, and a
/// client that leaves the payload out is counted against the account it names.
async fn the_layer_keys_the_quota_by_the_bodys_account<S: Stores>(stores: S) {
    let quotas = QuotaConfig::builder().account(2).build().unwrap();
    let config = common::config("identity-context-tests")
        .quotas(quotas)
        .build()
        .unwrap();
    let janitor = Janitor::new(config, stores);
    let layer = janitor.visitor_layer().context(|_, body| {
        body["email"]
            .as_str()
            .and_then(|email| VisitorContext::for_account(email).ok())
            .unwrap_or_default()
    });
    let app = Router::new()
        .route("/login", post(login))
        .route_layer(layer);
    let bare = json!({"email": "ada@example.com"});
    for attempt in 0..2 {
        let (status, _, answer) = send(&app, &bare, None).await;
        assert_eq!(
            (status, answer),
            (StatusCode::OK, json!({"absent": true})),
            "attempt {attempt}"
        );
    }
    let response = app
        .clone()
        .oneshot(
            Request::builder()
                .method("POST")
                .uri("/login")
                .header("content-type", "application/json")
                .body(Body::from(bare.to_string()))
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    // Another account is counted apart.
    let (status, _, _) = send(&app, &json!({"email": "bob@example.com"}), None).await;
    assert_eq!(status, StatusCode::OK);
}

/// With the network counter on, requests whose client nobody names (no peer address, as here, or a trusted
/// proxy that forwarded none) share one network: they are counted together, not let through uncounted, and a
/// named client's network is counted apart.
async fn requests_without_a_client_address_share_one_network<S: Stores>(stores: S) {
    use std::net::SocketAddr;

    use axum::extract::ConnectInfo;

    let quotas = QuotaConfig::builder()
        .without_global()
        .without_account()
        .without_session()
        .network(2)
        .build()
        .unwrap();
    let config = common::config("identity-network-tests")
        .quotas(quotas)
        .build()
        .unwrap();
    let janitor = Janitor::new(config, stores);
    let anyone = VisitorContext::anonymous();
    let (unnamed, ()) = http::Request::new(()).into_parts();
    let named = |peer: &str| {
        let mut request = http::Request::new(());
        let peer: SocketAddr = peer.parse().unwrap();
        request.extensions_mut().insert(ConnectInfo(peer));
        request.into_parts().0
    };
    assert_eq!(janitor.claim_quota(&unnamed, &anyone).await, Ok(()));
    assert_eq!(janitor.claim_quota(&unnamed, &anyone).await, Ok(()));
    assert!(matches!(
        janitor.claim_quota(&unnamed, &anyone).await,
        Err(janitor_axum::Refusal::RateLimited { .. })
    ));
    // A client with an address has its own counter, shared by its /24.
    assert_eq!(
        janitor.claim_quota(&named("203.0.113.5:1"), &anyone).await,
        Ok(())
    );
    assert_eq!(
        janitor.claim_quota(&named("203.0.113.99:2"), &anyone).await,
        Ok(())
    );
    assert!(janitor
        .claim_quota(&named("203.0.113.7:3"), &anyone)
        .await
        .is_err());
    assert_eq!(
        janitor.claim_quota(&named("203.0.114.7:3"), &anyone).await,
        Ok(())
    );
}

/// `claim_quota` and `identify_parts` without a payload count the request all the same.
async fn a_request_without_a_payload_is_counted<S: Stores>(stores: S) {
    let quotas = QuotaConfig::builder().account(1).build().unwrap();
    let config = common::config("identity-claim-tests")
        .quotas(quotas)
        .build()
        .unwrap();
    let janitor = Janitor::new(config, stores);
    let ada = VisitorContext::for_account("ada").unwrap();
    let (parts, ()) = http::Request::new(()).into_parts();
    assert!(matches!(
        janitor.identify_parts(&parts, &ada, None).await,
        Ok(None)
    ));
    for limited in [
        janitor.claim_quota(&parts, &ada).await,
        janitor.clone().claim_quota(&parts, &ada).await,
    ] {
        assert!(
            matches!(limited, Err(janitor_axum::Refusal::RateLimited { retry_after_secs, policy: None }) if retry_after_secs >= 1),
            "{limited:?}"
        );
    }
    let payload = janitor_core::testing::mac_payload();
    assert!(matches!(
        janitor.identify_parts(&parts, &ada, Some(&payload)).await,
        Err(janitor_axum::Refusal::RateLimited { .. })
    ));
    let bob = VisitorContext::for_account("bob").unwrap();
    let identified = janitor
        .clone()
        .identify_parts(&parts, &bob, Some(&payload))
        .await
        .unwrap();
    assert!(identified.is_some());
}

async fn identify_parts_in_a_handler<S: Stores>(stores: S) {
    let janitor = Janitor::new(
        common::config("identity-parts-tests").build().unwrap(),
        stores,
    );
    let handler = {
        let janitor = janitor.clone();
        move |request: Request| async move {
            let (parts, body) = request.into_parts();
            let bytes = body.collect().await.unwrap().to_bytes();
            #[derive(Deserialize)]
            struct Form {
                visitor: janitor_core::VisitorPayload,
            }
            let Ok(Json(form)) = Json::<Form>::from_bytes(&bytes) else {
                return StatusCode::BAD_REQUEST.into_response();
            };
            let anonymous = VisitorContext::anonymous();
            match janitor
                .identify_parts(&parts, &anonymous, Some(&form.visitor))
                .await
            {
                Ok(None) => unreachable!("a payload was given"),
                Ok(Some(identified)) => {
                    let id = identified.identity().visitor_id.to_string();
                    (identified, id).into_response()
                }
                Err(refusal) => refusal.into_response(),
            }
        }
    };
    let app = Router::new().route("/checkout", post(handler));
    let body = json!({"visitor": janitor_core::testing::mac_document()}).to_string();
    let request = Request::builder()
        .method("POST")
        .uri("/checkout")
        .header("content-type", "application/json")
        .body(Body::from(body))
        .unwrap();
    let response = app.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let cookie = response.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .to_owned();
    let id = String::from_utf8(
        response
            .into_body()
            .collect()
            .await
            .unwrap()
            .to_bytes()
            .to_vec(),
    )
    .unwrap();
    assert!(
        cookie.starts_with(&format!("__visitor={id}; HttpOnly; Secure")),
        "{cookie}"
    );
}

on_both_stores!(
    requests_without_a_client_address_share_one_network,
    the_login_route_identifies_and_sets_the_cookie,
    account_quotas_apply_on_the_login_route,
    the_layer_keys_the_quota_by_the_bodys_account,
    a_request_without_a_payload_is_counted,
    identify_parts_in_a_handler,
    the_handles_clock_is_the_time_of_its_quotas_and_identifications,
);

#[tokio::test]
async fn visitor_identity_without_its_layer_is_refused_loudly() {
    let app = Router::new().route("/login", post(login));
    let (status, _, _) = send(&app, &form(janitor_core::testing::mac_document()), None).await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused_before_the_handler() {
    let janitor = Janitor::new(
        common::config("identity-limit-tests").build().unwrap(),
        janitor_axum::MemoryStores::new(),
    );
    let app = app(&janitor);
    let big = json!({"email": "ada@example.com", "notes": "x".repeat(70_000), "visitor": janitor_core::testing::mac_document()});
    let (status, cookie, _) = send(&app, &big, None).await;
    assert_eq!((status, cookie), (StatusCode::PAYLOAD_TOO_LARGE, None));
}

#[test]
fn visitor_contexts_are_checked_when_made() {
    assert!(VisitorContext::new(Some("acct"), Some("sess")).is_ok());
    let err = VisitorContext::for_account(&"a".repeat(513)).unwrap_err();
    assert!(
        !err.to_string().contains("aaaa"),
        "never echoes the id: {err}"
    );
    assert!(VisitorContext::new(None, Some("")).is_err());
}

/// The application's state and the handle's routes, merged before the application gives its state and after:
/// both routers serve the application's route and the endpoint.
#[tokio::test]
async fn the_endpoint_merges_before_or_after_the_applications_state() {
    use axum::extract::State;
    use axum::routing::get;

    #[derive(Clone)]
    struct Shop {
        name: &'static str,
    }
    async fn shop(State(shop): State<Shop>) -> &'static str {
        shop.name
    }
    let janitor = Janitor::new(
        common::config("identity-merge-tests").build().unwrap(),
        janitor_axum::MemoryStores::new(),
    );
    let state = Shop { name: "shop" };
    let before: Router = Router::new()
        .route("/shop", get(shop))
        .merge(janitor.router())
        .with_state(state.clone());
    let after: Router = Router::new()
        .route("/shop", get(shop))
        .with_state(state)
        .merge(janitor.router());
    for app in [before, after] {
        let page = app
            .clone()
            .oneshot(Request::get("/shop").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(page.status(), StatusCode::OK);
        assert_eq!(
            &page.into_body().collect().await.unwrap().to_bytes()[..],
            b"shop"
        );
        let endpoint = app
            .oneshot(
                Request::post("/api/visitor")
                    .header("host", "localhost")
                    .header("content-type", "application/json")
                    .body(Body::from(
                        janitor_core::testing::mac_document().to_string(),
                    ))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(endpoint.status(), StatusCode::OK);
        assert!(endpoint.headers().contains_key("set-cookie"));
    }
}

/// The handle's clock is the time of its quotas and of what it identifies: a spent account quota is spent
/// until the handle's manual clock reaches the next window, whatever the system's time.
async fn the_handles_clock_is_the_time_of_its_quotas_and_identifications<S: Stores>(stores: S) {
    use janitor_axum::handle::Clock;
    use janitor_axum::Refusal;

    let config = common::config("identity-clock-tests")
        .quotas(QuotaConfig::builder().account(1).build().unwrap())
        .build()
        .unwrap();
    // A minute's window starting at an instant the system's clock passed long ago.
    let clock = Clock::manual(1_000 * 60_000);
    let janitor = Janitor::builder(config, stores)
        .clock(clock.clone())
        .build();
    let context = VisitorContext::for_account("ada@example.com").unwrap();
    let (parts, ()) = http::Request::new(()).into_parts();
    assert_eq!(janitor.claim_quota(&parts, &context).await, Ok(()));
    assert!(matches!(
        janitor.claim_quota(&parts, &context).await,
        Err(Refusal::RateLimited { .. })
    ));
    clock.advance(60_000);
    assert_eq!(janitor.claim_quota(&parts, &context).await, Ok(()));

    // The engine it hands out keeps time by the same clock: its history expires by that clock, not by the
    // system's, for which both visits are decades old.
    let payload =
        janitor_core::VisitorPayload::from_value(&janitor_core::testing::mac_document()).unwrap();
    let engine = janitor.engine();
    let first = engine.identify(&payload, None).await.unwrap();
    let cookie = Some(&first.identity.visitor_id);
    clock.advance(86_400_000);
    assert!(
        engine
            .identify(&payload, cookie)
            .await
            .unwrap()
            .identity
            .is_returning
    );
    clock.advance(91 * 86_400_000);
    assert!(
        !engine
            .identify(&payload, cookie)
            .await
            .unwrap()
            .identity
            .is_returning
    );
}
