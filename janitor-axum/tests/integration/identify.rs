//! The identify endpoint through the real router: every row of the check order with its bounds, quotas, the
//! cookie, the answer's shape — each scenario on the in-memory store and on PostgreSQL.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use http_body::Frame;
use http_body_util::BodyExt;
use janitor_axum::config::{CookieConfig, EndpointConfig, Environment, JanitorConfigBuilder};
use janitor_axum::handle::Stores;
use janitor_axum::{Janitor, MemoryStores, VisitorContext};
use janitor_core::protection::quota::QuotaConfig;
use serde_json::{json, Value};
use tower::ServiceExt;

use crate::common;
use common::stores::on_both_stores;

fn config() -> JanitorConfigBuilder {
    common::config("endpoint-tests")
}

fn endpoint() -> janitor_axum::config::EndpointConfigBuilder {
    EndpointConfig::builder()
}

fn payload() -> Value {
    json!({"signals": {
        "userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/130.0.0.0 Safari/537.36",
        "platform": "MacIntel",
        "languages": ["en-US"],
        "timezone": "Pacific/Chatham",
        "screen": {"width": 1512, "height": 982, "colorDepth": 30, "pixelRatio": 2},
        "hardware": {"hardwareConcurrency": 10, "deviceMemory": 8, "maxTouchPoints": 0},
        "graphics": {"webglVendor": "Apple", "webglRenderer": "Apple M2"}
    }})
}

fn post() -> http::request::Builder {
    Request::builder()
        .method("POST")
        .uri("/api/visitor")
        .header("host", "example.com")
        .header("content-type", "application/json")
}

fn json_request(value: &Value) -> Request {
    let bytes = serde_json::to_vec(value).unwrap();
    post()
        .header("content-length", bytes.len())
        .body(Body::from(bytes))
        .unwrap()
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

async fn answer(response: Response) -> Answer {
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    // Every answer carries the security headers.
    assert_eq!(headers["cache-control"], "private, no-store", "{status}");
    assert_eq!(headers["vary"], "Cookie, Origin, Authorization");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    Answer {
        status,
        headers,
        body,
    }
}

async fn send(janitor: &Janitor, request: Request) -> Answer {
    answer(janitor.router().oneshot(request).await.unwrap()).await
}

fn assert_error(a: &Answer, status: StatusCode, message: &str) {
    assert_eq!(a.status, status, "{:?}", a.body);
    assert_eq!(a.body, json!({ "error": message }));
    assert!(
        !a.headers.contains_key("set-cookie"),
        "no cookie on a refusal"
    );
}

/// A body that sends `chunks` and then, if `stall`, never ends.
struct Trickle {
    chunks: VecDeque<Bytes>,
    stall: bool,
}

impl http_body::Body for Trickle {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.chunks.pop_front() {
            Some(chunk) => Poll::Ready(Some(Ok(Frame::data(chunk)))),
            None if self.stall => Poll::Pending,
            None => Poll::Ready(None),
        }
    }
}

// ---- scenarios, each run on both stores ----

async fn check_order<S: Stores>(stores: S) {
    let janitor = Janitor::new(config().build().unwrap(), stores);

    let other = post().uri("/api/other").body(Body::empty()).unwrap();
    assert_error(
        &answer(janitor.assess(other).await.response).await,
        StatusCode::NOT_FOUND,
        "Not found",
    );

    let get = post().method("GET").body(Body::empty()).unwrap();
    let a = send(&janitor, get).await;
    assert_error(&a, StatusCode::METHOD_NOT_ALLOWED, "Method not allowed");
    assert_eq!(a.headers["allow"], "POST");

    for (name, value) in [
        ("origin", "https://evil.example"),
        ("origin", "null"),
        ("origin", "https://example.com.evil.example"),
        ("sec-fetch-site", "cross-site"),
    ] {
        let request = post()
            .header(name, value)
            .body(Body::from(payload().to_string()))
            .unwrap();
        assert_error(
            &send(&janitor, request).await,
            StatusCode::FORBIDDEN,
            "Cross-origin requests are not allowed",
        );
    }
    let same = post()
        .header("origin", "https://example.com")
        .header("sec-fetch-site", "same-origin");
    let a = send(
        &janitor,
        same.body(Body::from(payload().to_string())).unwrap(),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "same origin is allowed");

    for media in [
        None,
        Some("text/plain"),
        Some("application/jsonp"),
        Some("multipart/form-data"),
    ] {
        let mut builder = Request::builder()
            .method("POST")
            .uri("/api/visitor")
            .header("host", "example.com");
        if let Some(media) = media {
            builder = builder.header("content-type", media);
        }
        let a = send(
            &janitor,
            builder.body(Body::from(payload().to_string())).unwrap(),
        )
        .await;
        assert_error(
            &a,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        );
    }
    let upper = post().header("content-type", "Application/JSON; charset=utf-8");
    assert_eq!(
        send(
            &janitor,
            upper.body(Body::from(payload().to_string())).unwrap()
        )
        .await
        .status,
        StatusCode::OK
    );

    // Body limits: 16,384 bytes by default.
    let padded = |n: usize| {
        let mut text = payload().to_string();
        text.push_str(&" ".repeat(n - text.len()));
        text
    };
    for (length, status) in [
        (16_384, StatusCode::OK),
        (16_385, StatusCode::PAYLOAD_TOO_LARGE),
    ] {
        let body = padded(length);
        let request = post()
            .header("content-length", body.len())
            .body(Body::from(body))
            .unwrap();
        assert_eq!(
            send(&janitor, request).await.status,
            status,
            "declared {length}"
        );
    }
    for declared in ["12a", "-1", "1e3", " 12", "99999999999999999999999"] {
        let request = post()
            .header("content-length", declared)
            .body(Body::empty())
            .unwrap();
        assert_error(
            &send(&janitor, request).await,
            StatusCode::PAYLOAD_TOO_LARGE,
            "Request body too large",
        );
    }
    // Growing past the limit while streaming, with no declared length.
    let chunks: VecDeque<Bytes> = (0..20).map(|_| Bytes::from(vec![b' '; 1000])).collect();
    let request = post()
        .body(Body::new(Trickle {
            chunks,
            stall: false,
        }))
        .unwrap();
    let a = send(&janitor, request).await;
    assert_error(&a, StatusCode::PAYLOAD_TOO_LARGE, "Request body too large");
    assert_eq!(a.headers["connection"], "close");

    let empty = post()
        .header("content-length", "0")
        .body(Body::empty())
        .unwrap();
    assert_error(
        &send(&janitor, empty).await,
        StatusCode::BAD_REQUEST,
        "JSON body required",
    );

    for bad in [
        b"{\"signals\": {\"timezone\": \"\xff\"}}".to_vec(),
        b"{not json".to_vec(),
        b"{\"signals\": {}, \"extra\": 1}".to_vec(),
        b"{\"signals\": {\"screen\": {\"width\": 32769}}}".to_vec(),
        b"[]".to_vec(),
    ] {
        let request = post().body(Body::from(bad)).unwrap();
        assert_error(
            &send(&janitor, request).await,
            StatusCode::BAD_REQUEST,
            "Invalid visitor payload",
        );
    }
}

async fn slow_body<S: Stores>(stores: S) {
    for (timeout, ok) in [(99, false), (100, true), (30_000, true), (30_001, false)] {
        assert_eq!(
            endpoint().request_timeout_ms(timeout).build().is_ok(),
            ok,
            "{timeout}"
        );
    }
    let shortest = endpoint().request_timeout_ms(100).build().unwrap();
    let janitor = Janitor::new(config().endpoint(shortest).build().unwrap(), stores);
    let chunks = VecDeque::from([Bytes::from_static(b"{\"signals\":")]);
    let request = post()
        .body(Body::new(Trickle {
            chunks,
            stall: true,
        }))
        .unwrap();
    let started = std::time::Instant::now();
    let a = send(&janitor, request).await;
    assert_error(&a, StatusCode::REQUEST_TIMEOUT, "Request body timed out");
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

async fn cookie_round_trip<S: Stores>(stores: S) {
    let janitor = Janitor::new(config().build().unwrap(), stores);
    let first = send(&janitor, json_request(&payload())).await;
    assert_eq!(first.status, StatusCode::OK);
    let id = first.body["visitorId"].as_str().unwrap().to_owned();
    assert_eq!(
        first.body,
        json!({"visitorId": id, "isReturning": false}),
        "only id and isReturning"
    );
    assert!(id.starts_with("vis_") && id.len() == 52);
    assert_eq!(
        first.headers["set-cookie"],
        format!("__visitor={id}; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=7776000").as_str()
    );

    let with_cookie = |cookie: &str| {
        let bytes = payload().to_string();
        post()
            .header("cookie", cookie)
            .body(Body::from(bytes))
            .unwrap()
    };
    let again = send(
        &janitor,
        with_cookie(&format!("theme=dark; __visitor={id}")),
    )
    .await;
    assert_eq!(again.body, json!({"visitorId": id, "isReturning": true}));

    // A forged (unknown) id is not trusted; the device is recognised by similarity instead, or gets a new id.
    let forged = format!("__visitor=vis_{}", "0".repeat(48));
    let a = send(&janitor, with_cookie(&forged)).await;
    assert_ne!(
        a.body["visitorId"],
        json!(format!("vis_{}", "0".repeat(48)))
    );
    // Two cookies: neither counts.
    let other = format!("vis_{}", "1".repeat(48));
    let a = send(
        &janitor,
        with_cookie(&format!("__visitor={id}; __visitor={other}")),
    )
    .await;
    assert_ne!(a.body["visitorId"], json!(other));
}

async fn scores_are_private_unless_exposed<S: Stores>(stores: S) {
    let janitor = Janitor::new(config().build().unwrap(), stores);
    let first = janitor.assess(json_request(&payload())).await;
    let identity = first.identity.expect("an identity for server code");
    let a = answer(first.response).await;
    assert_eq!(
        a.body.as_object().unwrap().len(),
        2,
        "the browser sees id and isReturning only"
    );
    assert_eq!(
        identity.visitor_id.as_str(),
        a.body["visitorId"].as_str().unwrap()
    );
    assert_eq!(identity.confidence, 0.0);
    // A refused request: a response, no identity.
    let refused = janitor
        .assess(post().method("GET").body(Body::empty()).unwrap())
        .await;
    assert!(refused.identity.is_none());
    assert_eq!(refused.response.status(), StatusCode::METHOD_NOT_ALLOWED);

    let exposing = endpoint().expose_client_scores(true).build().unwrap();
    let exposed = Janitor::new(
        config().endpoint(exposing).build().unwrap(),
        MemoryStores::new(),
    );
    let a = send(&exposed, json_request(&payload())).await;
    for key in [
        "visitorId",
        "confidence",
        "isReturning",
        "risk",
        "riskStatus",
    ] {
        assert!(a.body.get(key).is_some(), "{key} in {}", a.body);
    }
    assert_eq!(a.body["riskStatus"], "disabled");
}

async fn quotas_answer_429<S: Stores>(stores: S) {
    let quotas = QuotaConfig::builder()
        .global(1_000)
        .account(60)
        .build()
        .unwrap();
    let janitor = Janitor::new(config().quotas(quotas).build().unwrap(), stores);
    let for_account = |account: &str| {
        let mut request = json_request(&payload());
        request.extensions_mut().insert(VisitorContext {
            account: Some(account.to_owned()),
            session: None,
        });
        request
    };
    for i in 0..60 {
        assert_eq!(
            send(&janitor, for_account("acct-1")).await.status,
            StatusCode::OK,
            "request {i}"
        );
    }
    let a = send(&janitor, for_account("acct-1")).await;
    assert_error(
        &a,
        StatusCode::TOO_MANY_REQUESTS,
        "Visitor measurement rate limited",
    );
    // The account window opened with the first request, well under a second ago: about 60 s are left.
    let retry: u64 = a.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((59..=60).contains(&retry), "{retry}");
    // Another account is not limited.
    assert_eq!(
        send(&janitor, for_account("acct-2")).await.status,
        StatusCode::OK
    );
    // A context out of bounds is the application's mistake, answered without identifying.
    let a = send(&janitor, for_account(&"x".repeat(513))).await;
    assert_error(
        &a,
        StatusCode::SERVICE_UNAVAILABLE,
        "Visitor storage is unavailable",
    );
}

async fn insecure_cookies_only_for_loopback<S: Stores>(stores: S) {
    let janitor = Janitor::new(
        config()
            .environment(Environment::Development)
            .cookie(CookieConfig::builder().secure(false).build().unwrap())
            .build()
            .unwrap(),
        stores,
    );
    let a = send(&janitor, json_request(&payload())).await;
    assert_error(
        &a,
        StatusCode::BAD_REQUEST,
        "Insecure cookies require localhost",
    );
    for host in ["localhost:3000", "127.0.0.1", "[::1]:8080"] {
        let bytes = payload().to_string();
        let mut request = post().body(Body::from(bytes)).unwrap();
        request.headers_mut().insert("host", host.parse().unwrap());
        let a = send(&janitor, request).await;
        assert_eq!(a.status, StatusCode::OK, "{host}");
        assert!(!a.headers["set-cookie"].to_str().unwrap().contains("Secure"));
    }
}

async fn evidence_and_maintenance_entry_points<S: Stores>(stores: S) {
    use janitor_core::evidence::{Action, ActivityKey, EventInput, EventType, VelocityQuery};

    let janitor = Janitor::new(config().build().unwrap(), stores.clone());
    let first = send(&janitor, json_request(&payload())).await;
    let visitor =
        janitor_core::VisitorId::parse(first.body["visitorId"].as_str().unwrap()).unwrap();
    let subject = janitor.evidence().subject_id("account-42");
    for i in 0..3 {
        let event = EventInput::builder(&format!("login-{i}"), EventType::LoginFailure)
            .action(Action::SignIn)
            .subject(subject.clone())
            .visitor(visitor.clone())
            .build()
            .unwrap();
        assert!(janitor.evidence().record(&event).await.unwrap().recorded);
        assert!(
            !janitor.evidence().record(&event).await.unwrap().recorded,
            "idempotent"
        );
    }
    let activity = janitor
        .evidence()
        .velocity(&VelocityQuery::new(ActivityKey::Subject(subject.clone())))
        .await
        .unwrap();
    assert_eq!((activity.total, activity.saturated), (3, false));
    // The handle's stores are the ones it records through: another evidence handle counts the same events.
    let other = janitor_core::evidence::Evidence::new(
        stores.evidence(),
        janitor.config().label_key().clone(),
        janitor_core::evidence::EvidenceConfig::default(),
    );
    let seen = other
        .velocity(&VelocityQuery::new(ActivityKey::Subject(subject.clone())))
        .await
        .unwrap();
    assert_eq!(seen.total, 3);
    // Erasing the browser keeps the events about the account (its lockout must hold), without the browser.
    assert!(janitor.erase_visitor(&visitor).await.unwrap());
    assert!(!janitor.erase_visitor(&visitor).await.unwrap());
    let activity = janitor
        .evidence()
        .velocity(&VelocityQuery::new(ActivityKey::Subject(subject)))
        .await
        .unwrap();
    assert_eq!(activity.total, 3);
    let maintenance = janitor.cleanup(None, 100).await.unwrap();
    assert_eq!(maintenance.visitors.next_visitor, None);
    assert!(matches!(
        janitor.cleanup(None, 0).await,
        Err(janitor_axum::maintenance::CleanupError::Batch(_))
    ));
    assert!(matches!(
        janitor.cleanup(None, 1001).await,
        Err(janitor_axum::maintenance::CleanupError::Batch(_))
    ));
}

on_both_stores!(
    check_order,
    slow_body,
    cookie_round_trip,
    scores_are_private_unless_exposed,
    quotas_answer_429,
    insecure_cookies_only_for_loopback,
    evidence_and_maintenance_entry_points,
);

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_failure_is_503_without_internals() {
    use janitor_axum::postgres::PgStores;

    let database = janitor_sql::Database::new(
        janitor_sql::DatabaseConfig::builder("postgres://postgres@127.0.0.1:1/postgres")
            .connect_timeout_ms(300)
            .build()
            .unwrap(),
    )
    .unwrap();
    // Identification's storage, and (with quotas) the quota claim before it: both fail closed, never admit.
    let plain = Janitor::new(config().build().unwrap(), PgStores::new(database.clone()));
    let with_quotas = Janitor::new(
        config().quotas(QuotaConfig::default()).build().unwrap(),
        PgStores::new(database),
    );
    for janitor in [plain, with_quotas] {
        let a = send(&janitor, json_request(&payload())).await;
        assert_error(
            &a,
            StatusCode::SERVICE_UNAVAILABLE,
            "Visitor storage is unavailable",
        );
        assert_eq!(janitor.admission().in_flight(), 0, "the slot is released");
    }
}

/// The statement counts of a returning browser's steady state through the whole endpoint: the history read
/// that refreshes its unchanged observation, plus the global quota's claim when quotas are on.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_returning_browser_costs_one_statement_and_two_with_quotas() {
    use janitor_axum::postgres::PgStores;

    janitor_sql::testing::with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let plain = Janitor::new(config().build().unwrap(), PgStores::new(database.clone()));
        let with_quotas = Janitor::new(
            config().quotas(QuotaConfig::default()).build().unwrap(),
            PgStores::new(database.clone()),
        );
        for (janitor, expected) in [(plain, 1), (with_quotas, 2)] {
            let first = send(&janitor, json_request(&payload())).await;
            let id = first.body["visitorId"].as_str().unwrap().to_owned();
            for visit in 0..3 {
                let request = post()
                    .header("cookie", format!("__visitor={id}"))
                    .body(Body::from(payload().to_string()))
                    .unwrap();
                let before = database.statements_executed();
                let again = send(&janitor, request).await;
                assert_eq!(again.body, json!({"visitorId": id, "isReturning": true}));
                assert_eq!(
                    database.statements_executed() - before,
                    expected,
                    "visit {visit}, quotas: {}",
                    expected == 2
                );
            }
        }
    })
    .await;
}
