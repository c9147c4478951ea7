//! The sign-in example's routes (`examples/login/app.rs`, compiled here as they are) on both stores, over a
//! real socket: identity on a route of the application, the account and network quotas (with or without a
//! payload), the lock for unknown browsers that leaves the owner's own browser signing in, a store that cannot
//! answer, the origin policy on the application's routes, and an erasure that keeps other accounts' evidence.

use crate::common;
use crate::login_example as app;

use std::net::SocketAddr;

use common::stores::on_both_stores;
use common::wire::{serve, Connection};
use janitor_axum::config::QuotaConfig;
use janitor_axum::evidence::{Action, ActivityKey, EventType, VelocityQuery};
use janitor_axum::handle::Stores;
use janitor_axum::Janitor;
use serde_json::{json, Value};

const PASSWORD: &str = "correct horse battery staple";
const DAVE: &str = "dave's own passphrase";
/// Failures from unknown browsers that lock an account for them (the library's default).
const MAX_FAILURES: u32 = janitor_axum::protection::signin::LOCK_FAILURES.default;

/// A handle on `stores`, with quotas when given, and the example's routes served on a socket.
async fn site<S: Stores>(stores: S, quotas: Option<QuotaConfig>) -> (Janitor, SocketAddr) {
    let mut config = common::config("login-example-tests");
    if let Some(quotas) = quotas {
        config = config.quotas(quotas);
    }
    serve_site(stores, config.build().unwrap()).await
}

/// A handle on `stores` with `config`, and the example's routes served on a socket.
async fn serve_site<S: Stores>(
    stores: S,
    config: janitor_axum::JanitorConfig,
) -> (Janitor, SocketAddr) {
    let janitor = Janitor::new(config, stores);
    let accounts = app::Accounts::with(&[("ada", PASSWORD), ("dave", DAVE)]);
    let routes = app::routes(janitor.clone(), accounts);
    let address = serve(janitor.router().merge(routes)).await;
    (janitor, address)
}

struct Answer {
    status: u16,
    cookie: Option<String>,
    retry_after: Option<String>,
    body: Value,
}

/// A POST with `headers` (each a whole `Name: value` line).
async fn post_with(address: SocketAddr, path: &str, body: &str, headers: &[String]) -> Answer {
    let headers: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n{headers}\
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
        retry_after: reply.header("retry-after").map(str::to_owned),
        body: serde_json::from_str(&reply.text()).unwrap_or(Value::Null),
    }
}

async fn post(address: SocketAddr, path: &str, body: &str, cookie: Option<&str>) -> Answer {
    let headers: Vec<String> = cookie.map(|c| format!("Cookie: {c}")).into_iter().collect();
    post_with(address, path, body, &headers).await
}

fn sign_in_as(username: &str, password: &str) -> String {
    json!({"username": username, "password": password, "visitor": janitor_core::testing::mac_document()})
        .to_string()
}

fn sign_in(password: &str) -> String {
    sign_in_as("ada", password)
}

async fn sign_in_events(janitor: &Janitor, account: &str) -> Vec<(EventType, u32)> {
    let subject = janitor.evidence().subject_id(account);
    let query = VelocityQuery::new(ActivityKey::Subject(subject)).action(Action::SignIn);
    let summary = janitor.evidence().velocity(&query).await.unwrap();
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
        sign_in_events(&janitor, "ada").await,
        [(EventType::LoginSuccess, 2)]
    );
}

async fn a_form_without_a_valid_payload_signs_in_and_a_bad_form_records_nothing<S: Stores>(
    stores: S,
) {
    let (janitor, address) = site(stores, None).await;
    // No payload (scripts off), and a payload this server cannot read (a newer client's): the form still
    // parses, the sign-in goes on without an identity.
    for body in [
        json!({"username": "ada", "password": PASSWORD}),
        json!({"username": "ada", "password": PASSWORD, "visitor": {"signals": {}, "fromTheFuture": 1}}),
    ] {
        let answer = post(address, "/login", &body.to_string(), None).await;
        assert_eq!((answer.status, answer.cookie), (200, None), "{body}");
        assert_eq!(answer.body["visitorId"], Value::Null);
    }
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
        sign_in_events(&janitor, "ada").await,
        [(EventType::LoginSuccess, 2)]
    );
}

async fn five_failures_lock_the_account_even_for_the_right_password<S: Stores>(stores: S) {
    let (janitor, address) = site(stores, None).await;
    for attempt in 0..MAX_FAILURES {
        let answer = post(address, "/login", &sign_in("wrong"), None).await;
        assert_eq!(answer.status, 401, "attempt {attempt}: {}", answer.body);
    }
    let locked = post(address, "/login", &sign_in(PASSWORD), None).await;
    assert_locked(&locked);
    // The refused attempt checked no password and wrote nothing.
    assert_eq!(
        sign_in_events(&janitor, "ada").await,
        [(EventType::LoginFailure, MAX_FAILURES)]
    );
}

/// The answer of an account locked for the browser that asked: a challenge this example has no second factor
/// for, so a refusal, whatever the password.
#[track_caller]
fn assert_locked(answer: &Answer) {
    assert_eq!(answer.status, 403, "{}", answer.body);
    assert_eq!(answer.body["challenge"], true, "{}", answer.body);
    assert_eq!(
        answer.body["reasons"],
        json!(["locked_for_unknown_browsers"])
    );
    let retry: u64 = answer
        .retry_after
        .as_deref()
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=900).contains(&retry), "{retry}");
}

async fn the_account_quota_counts_sign_ins_with_or_without_a_payload<S: Stores>(stores: S) {
    let quotas = QuotaConfig::builder().account(2).build().unwrap();
    let (janitor, address) = site(stores, Some(quotas)).await;
    let bare = json!({"username": "ada", "password": PASSWORD}).to_string();
    assert_eq!(
        post(address, "/login", &sign_in(PASSWORD), None)
            .await
            .status,
        200
    );
    assert_eq!(post(address, "/login", &bare, None).await.status, 200);
    // At the limit, a client that leaves the payload out (a script guessing passwords) is refused as well.
    for body in [&bare, &sign_in(PASSWORD)] {
        let limited = post(address, "/login", body, None).await;
        assert_eq!((limited.status, limited.cookie), (429, None), "{body}");
        let retry: u64 = limited.retry_after.expect("Retry-After").parse().unwrap();
        assert!((1..=60).contains(&retry), "{retry}");
        assert_eq!(
            limited.body,
            json!({"error": "Too many requests; try again later"})
        );
    }
    // Another account has its own counter.
    assert_eq!(
        post(address, "/login", &sign_in_as("dave", DAVE), None)
            .await
            .status,
        200
    );
    assert_eq!(
        sign_in_events(&janitor, "ada").await,
        [(EventType::LoginSuccess, 2)],
        "a refused sign-in records nothing"
    );
}

async fn a_cross_site_post_is_refused_before_the_form_is_read<S: Stores>(stores: S) {
    let (janitor, address) = site(stores, None).await;
    let own = format!("Origin: http://{address}");
    for headers in [
        vec!["Origin: https://attacker.example".to_owned()],
        vec!["Sec-Fetch-Site: cross-site".to_owned()],
        vec![own.clone(), "Sec-Fetch-Site: cross-site".to_owned()],
    ] {
        for path in ["/login", "/account/erase"] {
            let answer = post_with(address, path, &sign_in(PASSWORD), &headers).await;
            assert_eq!(answer.status, 403, "{path} {headers:?}: {}", answer.body);
            assert_eq!(
                answer.body,
                json!({"error": "Cross-site requests are not allowed"})
            );
        }
    }
    assert!(sign_in_events(&janitor, "ada").await.is_empty());
    // The page's own origin, and a client that sends no origin at all, sign in.
    let same = post_with(address, "/login", &sign_in(PASSWORD), &[own]).await;
    assert_eq!(same.status, 200, "{}", same.body);
    assert_eq!(
        post(address, "/login", &sign_in(PASSWORD), None)
            .await
            .status,
        200
    );
}

async fn erasure_removes_the_account_and_its_browser<S: Stores>(stores: S) {
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
    // The sign-in, and the erasure's own two password checks (the wrong one and the right one).
    assert_eq!(
        erased.body,
        json!({"erasedEvents": 3, "erasedVisitor": true, "visitorNotLinked": false})
    );
    assert_eq!(erased.cookie.as_deref(), Some("__visitor="));
    assert!(sign_in_events(&janitor, "ada").await.is_empty());
    // The old cookie names nobody now: the next sign-in is a new visitor.
    let after = post(address, "/login", &sign_in(PASSWORD), Some(&cookie)).await;
    assert_ne!(after.body["visitorId"], first.body["visitorId"]);
}

/// Dave is locked out by failures from one browser; Ada signs in from the same browser and erases her account
/// and the browser. Dave's failures are evidence about Dave: they stay, and he stays locked.
async fn erasing_one_account_keeps_another_accounts_lockout<S: Stores>(stores: S) {
    let (janitor, address) = site(stores, None).await;
    let first = post(address, "/login", &sign_in_as("dave", "wrong"), None).await;
    let cookie = first.cookie.clone().expect("the browser's cookie");
    for _ in 1..MAX_FAILURES {
        let failed = post(
            address,
            "/login",
            &sign_in_as("dave", "wrong"),
            Some(&cookie),
        )
        .await;
        assert_eq!(failed.status, 401);
    }
    let ada = post(address, "/login", &sign_in(PASSWORD), Some(&cookie)).await;
    assert_eq!(ada.status, 200, "{}", ada.body);
    let credentials = json!({"username": "ada", "password": PASSWORD}).to_string();
    let erased = post(address, "/account/erase", &credentials, Some(&cookie)).await;
    assert_eq!(
        (erased.status, erased.body["erasedVisitor"].as_bool()),
        (200, Some(true)),
        "{}",
        erased.body
    );
    assert_eq!(
        sign_in_events(&janitor, "dave").await,
        [(EventType::LoginFailure, MAX_FAILURES)]
    );
    let locked = post(address, "/login", &sign_in_as("dave", DAVE), None).await;
    assert_locked(&locked);
    assert!(sign_in_events(&janitor, "ada").await.is_empty());
}

/// Erasure checks a password, so it is held by the same quota and lock as sign-in: 30 guesses at a locked
/// account are all refused (a challenge, 403) and the right one erases nothing; wrong guesses through erasure lock the
/// account for sign-in too; and the name's spelling does not matter.
async fn erasure_is_no_way_around_the_lock<S: Stores>(stores: S) {
    let quotas = QuotaConfig::builder()
        .without_global()
        .without_session()
        .account(100)
        .build()
        .unwrap();
    let (janitor, address) = site(stores, Some(quotas)).await;
    let erase_as =
        |name: &str, password: &str| json!({"username": name, "password": password}).to_string();
    for _ in 0..MAX_FAILURES {
        let failed = post(address, "/login", &sign_in_as("dave", "wrong"), None).await;
        assert_eq!(failed.status, 401);
    }
    for guess in 0..30 {
        let guessed = post(
            address,
            "/account/erase",
            &erase_as("dave", &format!("guess {guess}")),
            None,
        )
        .await;
        assert_eq!(guessed.status, 403, "guess {guess}: {}", guessed.body);
    }
    let right = post(address, "/account/erase", &erase_as(" Dave", DAVE), None).await;
    assert_locked(&right);
    let kept = sign_in_events(&janitor, "dave").await;
    assert!(
        kept.contains(&(EventType::LoginFailure, MAX_FAILURES)),
        "{kept:?}"
    );
    // Wrong passwords through erasure count towards the lock of sign-in.
    for _ in 0..MAX_FAILURES {
        let failed = post(address, "/account/erase", &erase_as("ADA", "wrong"), None).await;
        assert_eq!(failed.status, 401, "{}", failed.body);
    }
    let locked = post(address, "/login", &sign_in(PASSWORD), None).await;
    assert_locked(&locked);
}

/// Visitor ids reach page scripts: dave presents ada's browser id with his own erasure, and ada's browser keeps
/// its history (her next sign-in from it is still returning), while dave's account goes.
async fn erasure_leaves_a_browser_that_is_not_the_accounts_own<S: Stores>(stores: S) {
    let (janitor, address) = site(stores, None).await;
    let adas = post(address, "/login", &sign_in(PASSWORD), None).await;
    let adas_cookie = adas.cookie.clone().unwrap();
    let dave = json!({"username": "dave", "password": DAVE}).to_string();
    let erased = post(address, "/account/erase", &dave, Some(&adas_cookie)).await;
    assert_eq!(erased.status, 200, "{}", erased.body);
    assert_eq!(erased.body["erasedVisitor"], false, "{}", erased.body);
    assert_eq!(erased.body["visitorNotLinked"], true, "{}", erased.body);
    assert!(sign_in_events(&janitor, "dave").await.is_empty());
    let again = post(address, "/login", &sign_in(PASSWORD), Some(&adas_cookie)).await;
    assert_eq!(
        (
            again.body["visitorId"].clone(),
            again.body["isReturning"].clone()
        ),
        (adas.body["visitorId"].clone(), json!(true))
    );
}

/// `JANITOR_QUOTA_NETWORK=3`: the fourth sign-in attempt from one network within a minute, on any mix of
/// accounts and passwords, is a 429 with `Retry-After` (and the draft's `RateLimit` fields when they are on),
/// and so is the endpoint's next identification from that network.
async fn the_network_quota_refuses_the_fourth_attempt_from_one_network<S: Stores>(stores: S) {
    let env = janitor_axum::config::EnvSource::from_pairs([
        ("JANITOR_SECRET", common::SECRET),
        ("JANITOR_QUOTA_NETWORK", "3"),
        ("JANITOR_RATE_LIMIT_HEADERS", "true"),
    ]);
    let settings = janitor_axum::JanitorSettings::from_env(&env).unwrap();
    let config = settings.build().unwrap();
    assert_eq!(config.quotas().and_then(|q| q.network()), Some(3));
    assert!(config.rate_limit_headers());
    let (janitor, address) = serve_site(stores, config).await;
    let attempts = [
        sign_in(PASSWORD),
        sign_in_as("dave", "wrong"),
        json!({"username": "grace", "password": "guess"}).to_string(),
    ];
    for body in &attempts {
        let answer = post(address, "/login", body, None).await;
        assert_ne!(answer.status, 429, "{body}: {}", answer.body);
    }
    let fourth = post_with(address, "/login", &sign_in_as("dave", DAVE), &[]).await;
    assert_eq!(fourth.status, 429, "{}", fourth.body);
    let retry: u64 = fourth.retry_after.expect("Retry-After").parse().unwrap();
    // GCRA: room for one more comes back a third of a minute after the burst.
    assert!((1..=20).contains(&retry), "{retry}");
    assert_eq!(
        fourth.body,
        json!({"error": "Too many requests; try again later"})
    );
    assert_eq!(
        sign_in_events(&janitor, "dave").await,
        [(EventType::LoginFailure, 1)]
    );
    // The endpoint counts the same network.
    let mut connection = Connection::open(address).await.unwrap();
    let body = json!({"signals": {}}).to_string();
    let request = format!(
        "POST /api/visitor HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let reply = connection.exchange(request.as_bytes()).await.unwrap();
    assert_eq!(reply.status(), 429, "{}", reply.text());
    assert_eq!(
        reply.header("ratelimit-policy"),
        Some("\"network\";q=3;w=60")
    );
    let limit = reply.header("ratelimit").expect("RateLimit").to_owned();
    assert!(limit.starts_with("\"network\";r=0;t="), "{limit}");
}

/// Lockout abuse: a client with no cookie and no payload locks ada with wrong passwords, and then cannot sign
/// in even with the right one; ada's own browser (the cookie and payload of an earlier successful sign-in)
/// still signs in, again and again, while the attacker keeps trying.
async fn an_attacker_cannot_lock_ada_out_of_her_own_browser<S: Stores>(stores: S) {
    let (janitor, address) = site(stores, None).await;
    let first = post(address, "/login", &sign_in(PASSWORD), None).await;
    assert_eq!(first.status, 200, "{}", first.body);
    assert_eq!(first.body["knownBrowser"], false);
    let cookie = first.cookie.clone().expect("ada's cookie");
    let bare = |password: &str| json!({"username": "ada", "password": password}).to_string();
    for attempt in 0..MAX_FAILURES {
        let failed = post(address, "/login", &bare("hunter2"), None).await;
        assert_eq!(failed.status, 401, "attempt {attempt}: {}", failed.body);
    }
    assert_locked(&post(address, "/login", &bare(PASSWORD), None).await);
    for round in 0..3 {
        let own = post(address, "/login", &sign_in(PASSWORD), Some(&cookie)).await;
        assert_eq!(own.status, 200, "round {round}: {}", own.body);
        assert_eq!(own.body["knownBrowser"], true);
        assert_eq!(own.body["visitorId"], first.body["visitorId"]);
        assert_locked(&post(address, "/login", &bare("hunter3"), None).await);
    }
    // The attacker's refused attempts checked no password.
    let events = sign_in_events(&janitor, "ada").await;
    assert!(
        events.contains(&(EventType::LoginFailure, MAX_FAILURES)),
        "{events:?}"
    );
    assert!(events.contains(&(EventType::LoginSuccess, 4)), "{events:?}");
}

/// A database that cannot be reached: the sign-in is a 503 with `Retry-After`, never a 500, and the
/// application's password check is never called, so nothing is counted as a success or a failure.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_cannot_answer_refuses_the_sign_in_before_the_password() {
    use axum::response::IntoResponse;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let port = janitor_test_support::cluster::free_port().unwrap();
    let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
    let unreachable = |quotas: Option<QuotaConfig>| {
        let database = janitor_axum::postgres::DatabaseConfig::builder(&url)
            .connect_timeout_ms(500)
            .wait_timeout_ms(500)
            .build()
            .and_then(janitor_axum::postgres::Database::new)
            .unwrap();
        let mut config = common::config("login-unreachable");
        if let Some(quotas) = quotas {
            config = config.quotas(quotas);
        }
        Janitor::new(
            config.build().unwrap(),
            janitor_axum::postgres::PgStores::new(database),
        )
    };
    let checked = Arc::new(AtomicBool::new(false));
    // With quotas the first store step is theirs; without, the sign-in's own counters.
    for quotas in [
        Some(QuotaConfig::builder().account(5).build().unwrap()),
        None,
    ] {
        let (parts, ()) = http::Request::new(()).into_parts();
        let flag = checked.clone();
        let check = async move || {
            flag.store(true, Ordering::SeqCst);
            true
        };
        let refused = unreachable(quotas)
            .sign_in(&parts, "ada", None, check)
            .await;
        assert_eq!(
            refused.err(),
            Some(janitor_axum::Refusal::Unavailable),
            "{quotas:?}"
        );
    }
    let answer = janitor_axum::Refusal::Unavailable
        .for_route()
        .into_response();
    assert_eq!(
        (
            answer.status().as_u16(),
            answer.headers()["retry-after"].to_str().ok()
        ),
        (503, Some("1"))
    );
    assert!(!checked.load(Ordering::SeqCst), "no password was checked");
}

/// With `JANITOR_AUTOMATION_VERDICT`, a sign-in from a headless browser is challenged before its password is
/// checked (nothing recorded, no counter claimed), while a browser whose only oddity is a missing header
/// (`suspected`) signs in, and a malformed evidence header changes nothing.
async fn an_automated_browser_is_challenged_before_its_password_is_checked<S: Stores>(stores: S) {
    let env = janitor_axum::config::EnvSource::from_pairs([
        ("JANITOR_SECRET", common::SECRET),
        ("JANITOR_AUTOMATION_VERDICT", "true"),
    ]);
    let config = janitor_axum::JanitorSettings::from_env(&env)
        .unwrap()
        .build()
        .unwrap();
    let (janitor, address) = serve_site(stores, config).await;
    let headless =
        "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                    HeadlessChrome/156.0.0.0 Safari/537.36"
            .to_owned();
    for _ in 0..MAX_FAILURES + 1 {
        let challenged = post_with(
            address,
            "/login",
            &sign_in(PASSWORD),
            std::slice::from_ref(&headless),
        )
        .await;
        assert_eq!(challenged.status, 403, "{}", challenged.body);
        assert_eq!(challenged.body["challenge"], true);
        assert_eq!(challenged.body["reasons"], json!(["automated_browser"]));
    }
    assert_eq!(sign_in_events(&janitor, "ada").await, []);
    // No Accept-Language from a browser's user agent is telling, not decisive: suspected, and allowed by
    // default. The automated attempts above claimed no failure slot, so nothing is locked.
    let odd_evidence = "janitor-automation-evidence: not base64!".to_owned();
    let person = post_with(address, "/login", &sign_in(PASSWORD), &[odd_evidence]).await;
    assert_eq!(person.status, 200, "{}", person.body);
    assert_eq!(
        sign_in_events(&janitor, "ada").await,
        [(EventType::LoginSuccess, 1)]
    );
}

on_both_stores!(
    an_automated_browser_is_challenged_before_its_password_is_checked,
    the_network_quota_refuses_the_fourth_attempt_from_one_network,
    an_attacker_cannot_lock_ada_out_of_her_own_browser,
    erasure_leaves_a_browser_that_is_not_the_accounts_own,
    erasure_is_no_way_around_the_lock,
    a_sign_in_identifies_the_browser_and_records_the_success,
    a_form_without_a_valid_payload_signs_in_and_a_bad_form_records_nothing,
    five_failures_lock_the_account_even_for_the_right_password,
    the_account_quota_counts_sign_ins_with_or_without_a_payload,
    a_cross_site_post_is_refused_before_the_form_is_read,
    erasure_removes_the_account_and_its_browser,
    erasing_one_account_keeps_another_accounts_lockout,
);
