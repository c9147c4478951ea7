//! The sign-in example's routes (`examples/login/app.rs`, compiled here as they are) on both stores, over a
//! real socket: identity on a route of the application, the account quota keyed by the account being signed
//! into, the lock after repeated failures counted from recorded evidence, and erasure.

mod common;

#[path = "../examples/login/app.rs"]
#[allow(dead_code)]
mod app;

use std::net::SocketAddr;

use common::stores::on_both_stores;
use common::wire::{serve, Connection};
use janitor_axum::Janitor;
use janitor_core::evidence::{Action, ActivityKey, EventType, VelocityQuery};
use janitor_core::protection::quota::QuotaConfig;
use janitor_core::Stores;
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery staple";

/// A handle on `stores`, with quotas when given, and the example's routes served on a socket.
async fn site<S: Stores>(stores: S, quotas: Option<QuotaConfig>) -> (Janitor<S>, SocketAddr) {
    let mut config = common::config("login-example-tests");
    if let Some(quotas) = quotas {
        config = config.quotas(quotas);
    }
    let janitor = Janitor::new(config.build().unwrap(), stores);
    let routes = app::routes(janitor.clone(), app::Accounts::with("ada", PASSWORD));
    let address = serve(janitor.router().merge(routes)).await;
    (janitor, address)
}

struct Answer {
    status: u16,
    cookie: Option<String>,
    body: Value,
}

async fn post(address: SocketAddr, path: &str, body: &str, cookie: Option<&str>) -> Answer {
    let cookie = cookie.map_or(String::new(), |c| format!("Cookie: {c}\r\n"));
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n{cookie}\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut connection = Connection::open(address).await.unwrap();
    let reply = connection.exchange(request.as_bytes()).await.unwrap();
    Answer {
        status: reply.status(),
        cookie: reply
            .header("set-cookie")
            .map(|c| c.split(';').next().unwrap().to_owned()),
        body: serde_json::from_str(&reply.text()).unwrap_or(Value::Null),
    }
}

fn sign_in(password: &str) -> String {
    json!({"username": "ada", "password": password, "visitor": janitor_core::testing::mac_document()})
        .to_string()
}

async fn sign_in_events<S: Stores>(janitor: &Janitor<S>) -> Vec<(EventType, u32)> {
    let subject = janitor.evidence().subject_id("ada");
    let query = VelocityQuery::new(ActivityKey::Subject(subject)).action(Action::SignIn);
    let summary = janitor.velocity(&query).await.unwrap();
    summary.counts.into_iter().collect()
}

async fn a_sign_in_identifies_the_browser_and_records_the_success<S: Stores>(stores: S) {
    let (janitor, address) = site(stores, None).await;
    let answer = post(address, "/login", &sign_in(PASSWORD), None).await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let id = answer.body["visitorId"].as_str().unwrap().to_owned();
    assert_eq!(answer.cookie, Some(format!("__visitor={id}")));
    assert_eq!(answer.body["isReturning"], false);
    // The cookie brings the same visitor back on the next sign-in.
    let again = post(
        address,
        "/login",
        &sign_in(PASSWORD),
        answer.cookie.as_deref(),
    )
    .await;
    assert_eq!(
        (
            again.body["visitorId"].as_str(),
            again.body["isReturning"].as_bool()
        ),
        (Some(id.as_str()), Some(true))
    );
    assert_eq!(
        sign_in_events(&janitor).await,
        [(EventType::LoginSuccess, 2)]
    );
}

async fn a_form_without_a_payload_signs_in_and_a_bad_form_records_nothing<S: Stores>(stores: S) {
    let (janitor, address) = site(stores, None).await;
    let bare = json!({"username": "ada", "password": PASSWORD}).to_string();
    let answer = post(address, "/login", &bare, None).await;
    assert_eq!((answer.status, answer.cookie), (200, None));
    assert_eq!(answer.body["visitorId"], Value::Null);
    for bad in [
        "{",
        r#"{"username":"ada"}"#,
        r#"{"username":"ada","password":"x","extra":1}"#,
        r#"{"username":"","password":"x"}"#,
    ] {
        let answer = post(address, "/login", bad, None).await;
        assert_eq!(answer.status, 400, "{bad}: {}", answer.body);
    }
    assert_eq!(
        sign_in_events(&janitor).await,
        [(EventType::LoginSuccess, 1)]
    );
}

async fn five_failures_lock_the_account_even_for_the_right_password<S: Stores>(stores: S) {
    let (janitor, address) = site(stores, None).await;
    for attempt in 0..app::MAX_FAILURES {
        let answer = post(address, "/login", &sign_in("wrong"), None).await;
        assert_eq!(answer.status, 401, "attempt {attempt}: {}", answer.body);
    }
    let locked = post(address, "/login", &sign_in(PASSWORD), None).await;
    assert_eq!(locked.status, 429, "{}", locked.body);
    assert_eq!(
        sign_in_events(&janitor).await,
        [
            (EventType::LoginFailure, app::MAX_FAILURES),
            (EventType::ActionDenied, 1)
        ]
    );
}

async fn the_account_quota_counts_sign_ins_to_one_account<S: Stores>(stores: S) {
    let quotas = QuotaConfig::builder().account(2).build().unwrap();
    let (janitor, address) = site(stores, Some(quotas)).await;
    for _ in 0..2 {
        assert_eq!(
            post(address, "/login", &sign_in(PASSWORD), None)
                .await
                .status,
            200
        );
    }
    let limited = post(address, "/login", &sign_in(PASSWORD), None).await;
    assert_eq!((limited.status, limited.cookie), (429, None));
    assert_eq!(
        sign_in_events(&janitor).await,
        [(EventType::LoginSuccess, 2)],
        "a refused sign-in records nothing"
    );
}

async fn erasure_removes_the_accounts_events_and_the_browsers_visitor<S: Stores>(stores: S) {
    let (janitor, address) = site(stores, None).await;
    let first = post(address, "/login", &sign_in(PASSWORD), None).await;
    let cookie = first.cookie.clone().unwrap();
    let credentials = json!({"username": "ada", "password": PASSWORD}).to_string();
    let wrong = json!({"username": "ada", "password": "wrong"}).to_string();
    assert_eq!(
        post(address, "/account/erase", &wrong, Some(&cookie))
            .await
            .status,
        401
    );
    let erased = post(address, "/account/erase", &credentials, Some(&cookie)).await;
    assert_eq!(erased.status, 200);
    assert_eq!(
        erased.body,
        json!({"erasedEvents": 1, "erasedVisitor": true})
    );
    assert_eq!(erased.cookie.as_deref(), Some("__visitor="));
    assert!(sign_in_events(&janitor).await.is_empty());
    // The old cookie names nobody now: the next sign-in is a new visitor.
    let after = post(address, "/login", &sign_in(PASSWORD), Some(&cookie)).await;
    assert_ne!(after.body["visitorId"], first.body["visitorId"]);
}

on_both_stores!(
    a_sign_in_identifies_the_browser_and_records_the_success,
    a_form_without_a_payload_signs_in_and_a_bad_form_records_nothing,
    five_failures_lock_the_account_even_for_the_right_password,
    the_account_quota_counts_sign_ins_to_one_account,
    erasure_removes_the_accounts_events_and_the_browsers_visitor,
);
