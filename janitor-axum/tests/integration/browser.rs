//! The browser client in a real headless Chromium, against a real server on 127.0.0.1, on the in-memory store
//! and on PostgreSQL: the quick start page identifies, the cookie stays out of reach of scripts, a fresh
//! profile is recognised by similarity, a burst against one measurement slot succeeds through Retry-After
//! backoff, a disabled client sends nothing, destroy() in flight leaves no error behind, the sign-in
//! example's form carries the payload of collect() to a route of the application, and the extended signals
//! reach a server that reads them.
//!
//! Needs `/usr/bin/chromium` and `/usr/bin/chromedriver` (Debian: `apt-get install chromium chromium-driver`);
//! the tests fail without them. `JANITOR_WRITE_SCREENSHOT=1` writes the quick start page to
//! `docs/quickstart.png`.

use crate::common;
use crate::login_example as login;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{Html, Response};
use axum::routing::get;
use axum::Router;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::browser::Driver;
use common::stores::{on_both_stores, Hook, Hooked};
use janitor_axum::config::{
    AdmissionConfig, CookieConfig, EndpointConfig, Environment, JanitorConfigBuilder,
    MatchingPolicy,
};
use janitor_axum::handle::Stores;
use janitor_axum::Janitor;
use janitor_core::identification::payload::ExtendedSignals;
use janitor_core::{VisitorId, VisitorStore};
use serde_json::json;

const QUICKSTART: &str = include_str!("../../examples/quickstart.html");
const LOGIN_PAGE: &str = include_str!("../../examples/login/login.html");
const BLANK: &str = "<!doctype html><html lang=\"en\"><meta charset=\"utf-8\"><title>blank</title>";

/// One browser at a time: the burst measures timing, and parallel browsers would disturb it.
static BROWSERS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The quick start's development settings: an insecure loopback cookie, and the scores shown.
fn config() -> JanitorConfigBuilder {
    common::config("browser-tests")
        .environment(Environment::Development)
        .cookie(CookieConfig::builder().secure(false).build().unwrap())
        .endpoint(
            EndpointConfig::builder()
                .expose_client_scores(true)
                .build()
                .unwrap(),
        )
}

/// One request the server answered.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    status: u16,
    client: Option<String>,
}

type Log = Arc<Mutex<Vec<Seen>>>;

async fn record(State(log): State<Log>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let client = request
        .headers()
        .get("x-client")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let response = next.run(request).await;
    let status = response.status().as_u16();
    log.lock().unwrap().push(Seen {
        path,
        status,
        client,
    });
    response
}

/// The application under test on a loopback port: the handle's router and, by default, the quick start page
/// at `/` and an empty page at `/blank`, with every answer logged.
struct Server {
    addr: SocketAddr,
    log: Log,
    task: tokio::task::JoinHandle<()>,
}

impl Server {
    async fn start(janitor: &Janitor) -> Server {
        let pages = Router::new()
            .route("/", get(|| async { Html(QUICKSTART) }))
            .route("/blank", get(|| async { Html(BLANK) }));
        Server::start_with(janitor, pages).await
    }

    /// The handle's router with `site`'s routes.
    async fn start_with(janitor: &Janitor, site: Router) -> Server {
        let log = Log::default();
        let app = janitor
            .router()
            .merge(site)
            .layer(from_fn_with_state(log.clone(), record));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Server { addr, log, task }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn endpoint_statuses(&self) -> Vec<u16> {
        self.seen("/api/visitor").iter().map(|s| s.status).collect()
    }

    fn seen(&self, path: &str) -> Vec<Seen> {
        let log = self.log.lock().unwrap();
        log.iter().filter(|s| s.path == path).cloned().collect()
    }

    fn requests_of(&self, client: &str) -> Vec<u16> {
        self.seen("/api/visitor")
            .iter()
            .filter(|s| s.client.as_deref() == Some(client))
            .map(|s| s.status)
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The visitor id the quick start page shows once it is known (or its error text).
const SHOWN: &str = r#"(t => t.startsWith("vis_") || t.startsWith("not measured") ? t : "")(document.getElementById("visitor").textContent)"#;

fn is_visitor_id(text: &str) -> bool {
    text.len() == 52
        && text.starts_with("vis_")
        && text[4..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Runs `body` (an async function body that may use `createVisitorClient`) on the current page; its value,
/// or `{error, status}` when it threw.
fn with_client(body: &str) -> String {
    format!(
        r#"const done = arguments[arguments.length - 1];
import("/janitor.js")
  .then(async ({{ createVisitorClient }}) => {{ {body} }})
  .then(done, (e) => done({{ error: String(e && e.message || e), status: e && e.status }}));"#
    )
}

// ---- scenarios, each run on both stores ----

async fn quick_start_journey<S: Stores>(stores: S) {
    let _one_browser = BROWSERS.lock().await;
    let janitor = Janitor::new(config().build().unwrap(), stores);
    let server = Server::start(&janitor).await;
    let driver = Driver::start().await;

    // First visit: a new id, shown as text; the cookie is HttpOnly.
    let first = driver.session().await;
    first.navigate(&server.url("/")).await;
    let id = first.wait_for(SHOWN).await;
    let id = id.as_str().unwrap().to_owned();
    assert!(is_visitor_id(&id), "{id}");
    let returning = first
        .execute(
            "return document.getElementById('returning').textContent",
            json!([]),
        )
        .await;
    assert_eq!(returning, "false");
    let cookie = first.execute("return document.cookie", json!([])).await;
    assert!(!cookie.as_str().unwrap().contains("__visitor"), "{cookie}");

    // Reload: the cookie brings the same id back.
    first.navigate(&server.url("/")).await;
    assert_eq!(first.wait_for(SHOWN).await, id.as_str());
    let shown = first
        .execute(
            "return ['returning', 'confidence', 'risk'].map((id) => document.getElementById(id).textContent)",
            json!([]),
        )
        .await;
    assert_eq!(shown, json!(["true", "1", "disabled"]));
    if std::env::var("JANITOR_WRITE_SCREENSHOT").as_deref() == Ok("1") {
        let png = first.screenshot().await;
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/quickstart.png");
        std::fs::write(path, png).unwrap();
    }
    // The module was served by the router, with its caching headers honoured by the browser.
    assert!(server
        .seen("/janitor.js")
        .iter()
        .all(|s| s.status == 200 || s.status == 304));

    // A disabled client sends nothing until it is enabled.
    first.navigate(&server.url("/blank")).await;
    let disabled = first
        .execute_async(
            &with_client(
                r#"const client = createVisitorClient({ enabled: false, headers: { "x-client": "disabled" } });
const before = await client.identify();
await new Promise((r) => setTimeout(r, 300));
return { before };"#,
            ),
            json!([]),
        )
        .await;
    assert_eq!(disabled, json!({ "before": null }));
    assert!(server.requests_of("disabled").is_empty());
    let enabled = first
        .execute_async(
            &with_client(
                r#"const sent = [];
const fetch_ = window.fetch;
window.fetch = (url, init) => (sent.push(JSON.parse(init.body)), fetch_(url, init));
const client = createVisitorClient({ enabled: false, headers: { "x-client": "enabled" } });
client.setEnabled(true);
for (const type of ["mousemove", "mousemove", "pointerdown", "keydown", "scroll"])
  window.dispatchEvent(new Event(type));
document.dispatchEvent(new Event("visibilitychange"));
const answer = await client.identify();
window.fetch = fetch_;
return { id: answer.visitorId, sent };"#,
            ),
            json!([]),
        )
        .await;
    assert_eq!(enabled["id"], id.as_str(), "{enabled}");
    // What a browser offers, in the payload's names, and the behaviour counters the payload requires.
    let payload = &enabled["sent"][0];
    let signals = &payload["signals"];
    for field in ["userAgent", "platform", "languages", "timezone"] {
        assert!(!signals[field].is_null(), "{field}: {payload}");
    }
    for (group, fields) in [
        (
            "screen",
            &["width", "height", "colorDepth", "pixelRatio"][..],
        ),
        ("viewport", &["width", "height"]),
        ("hardware", &["hardwareConcurrency", "maxTouchPoints"]),
    ] {
        for field in fields {
            assert!(
                signals[group][field].is_number(),
                "{group}.{field}: {payload}"
            );
        }
    }
    assert_eq!(signals["automation"]["webdriver"], true, "{payload}");
    let behavior = payload["behavior"].as_object().expect("behavior");
    for field in [
        "pageAgeMs",
        "mouseMoveCount",
        "pointerDownCount",
        "keyDownCount",
        "scrollCount",
        "visibilityChangeCount",
    ] {
        assert!(behavior[field].is_u64(), "{field}: {payload}");
    }
    assert_eq!(behavior.len(), 6, "{payload}");
    for (field, count) in [
        ("mouseMoveCount", 2),
        ("pointerDownCount", 1),
        ("keyDownCount", 1),
        ("scrollCount", 1),
        ("visibilityChangeCount", 1),
    ] {
        assert_eq!(behavior[field], count, "{field}: {payload}");
    }
    assert!(signals["graphics"]["webglVendor"].is_string(), "{payload}");
    assert!(
        signals["graphics"]["webglRenderer"].is_string(),
        "{payload}"
    );

    // A browser reporting values past the payload's bounds is clipped into them, never refused.
    let clipped = first
        .execute_async(
            &with_client(
                r#"const fake = (object, values) => {
  for (const [key, value] of Object.entries(values)) Object.defineProperty(object, key, { get: () => value });
};
fake(navigator, {
  userAgent: "a".repeat(511) + "\u{1F600}" + "b".repeat(100),
  platform: "p".repeat(500),
  languages: Array.from({ length: 30 }, (_, i) => "l" + i + "x".repeat(100)),
  hardwareConcurrency: 5000,
  deviceMemory: 2048.5,
  maxTouchPoints: -3,
});
fake(screen, { width: 99999.7, height: NaN, colorDepth: 65 });
fake(window, { devicePixelRatio: 20 });
const sent = [];
const fetch_ = window.fetch;
window.fetch = (url, init) => (sent.push(JSON.parse(init.body)), fetch_(url, init));
const answer = await createVisitorClient({ headers: { "x-client": "clipped" } }).identify();
return { id: answer.visitorId, signals: sent[0].signals };"#,
            ),
            json!([]),
        )
        .await;
    assert_eq!(clipped["id"], id.as_str(), "{clipped}");
    assert_eq!(server.requests_of("clipped"), [200]);
    let signals = &clipped["signals"];
    assert_eq!(
        signals["userAgent"],
        "a".repeat(511),
        "no half surrogate pair"
    );
    assert_eq!(signals["platform"], "p".repeat(128));
    let languages = signals["languages"].as_array().unwrap();
    assert_eq!(languages.len(), 20);
    assert!(languages.iter().all(|l| l.as_str().unwrap().len() == 64));
    assert_eq!(
        signals["hardware"],
        json!({"hardwareConcurrency": 1024, "deviceMemory": 1024, "maxTouchPoints": 0})
    );
    assert_eq!(
        signals["screen"],
        json!({"width": 32768, "colorDepth": 64, "pixelRatio": 16}),
        "NaN is left out"
    );
    assert_eq!(server.requests_of("enabled"), [200]);
    eprintln!("payload sent by the browser: {payload}");

    // destroy() with a request in flight: the promise settles with null, nothing is left unhandled.
    let destroyed = first
        .execute_async(
            &with_client(
                r#"const unhandled = [];
window.onunhandledrejection = (event) => unhandled.push(String(event.reason));
const dropped = createVisitorClient({ headers: { "x-client": "destroyed" } });
dropped.identify(); // deliberately without a handler
dropped.destroy();
const awaited = createVisitorClient({ headers: { "x-client": "destroyed" } });
const pending = awaited.identify();
awaited.destroy();
const value = await pending;
const after = await awaited.identify();
await new Promise((r) => setTimeout(r, 1000));
return { value, after, unhandled };"#,
            ),
            json!([]),
        )
        .await;
    assert_eq!(
        destroyed,
        json!({ "value": null, "after": null, "unhandled": [] })
    );
    first.close().await;

    // A fresh profile (no cookie, no storage) gets the same id back by similarity.
    let second = driver.session().await;
    second.navigate(&server.url("/blank")).await;
    let answer = second
        .execute_async(
            &with_client("return await createVisitorClient().identify();"),
            json!([]),
        )
        .await;
    assert_eq!(answer["visitorId"], id.as_str(), "{answer}");
    assert_eq!(answer["isReturning"], true, "{answer}");
    assert_eq!(answer["browserMatch"]["visitorId"], id.as_str(), "{answer}");
    let score = answer["browserMatch"]["score"].as_f64().unwrap();
    assert!(score >= 0.90, "{answer}");
    assert!(answer["confidence"].as_f64().unwrap() >= 0.90, "{answer}");
    second.close().await;

    // Real browsers never send a payload the server refuses.
    let statuses = server.endpoint_statuses();
    assert!(!statuses.is_empty());
    assert!(statuses.iter().all(|&s| s == 200), "{statuses:?}");
}

/// How many clients the burst page starts at once.
const BURST: usize = 3;

async fn burst_backs_off<S: Stores>(stores: S) {
    let _one_browser = BROWSERS.lock().await;
    let one_slot = AdmissionConfig::builder()
        .max_in_flight_requests(1)
        .build()
        .unwrap();
    let config = config().admission(one_slot).build().unwrap();
    let slow: Hook = Arc::new(|| Box::pin(tokio::time::sleep(LOOKUP_DELAY)));
    let janitor = Janitor::new(
        config,
        Hooked {
            stores,
            before_lookup: slow,
        },
    );
    let server = Server::start(&janitor).await;
    let driver = Driver::start().await;
    let session = driver.session().await;
    session.navigate(&server.url("/blank")).await;
    let results = session
        .execute_async(
            &with_client(&format!(
                r#"const clients = Array.from({{ length: {BURST} }}, (_, i) =>
  createVisitorClient({{ headers: {{ "x-client": "burst-" + i }} }}));
const settled = await Promise.allSettled(clients.map((c) => c.identify()));
return settled.map((s) => s.status === "fulfilled" ? s.value.visitorId : "failed " + s.reason.status);"#
            )),
            json!([]),
        )
        .await;
    session.close().await;

    let results = results.as_array().expect("one result per client");
    assert_eq!(results.len(), BURST);
    for result in results {
        assert!(is_visitor_id(result.as_str().unwrap()), "{results:?}");
    }
    let mut refused = 0;
    for i in 0..BURST {
        let attempts = server.requests_of(&format!("burst-{i}"));
        assert!((1..=3).contains(&attempts.len()), "{i}: {attempts:?}");
        assert_eq!(attempts.last(), Some(&200), "{i}: {attempts:?}");
        assert!(attempts[..attempts.len() - 1].iter().all(|&s| s == 503));
        refused += attempts.len() - 1;
    }
    // One slot for requests that arrive together: the others were refused at first and came back later.
    assert!(refused >= BURST - 1, "{refused}");
    let statuses = server.endpoint_statuses();
    assert!(
        statuses.iter().all(|&s| s == 200 || s == 503),
        "{statuses:?}"
    );
}

const PASSWORD: &str = "correct horse battery staple";

async fn sign_in_page<S: Stores>(stores: S) {
    let _one_browser = BROWSERS.lock().await;
    let janitor = Janitor::new(config().build().unwrap(), stores);
    let site = login::routes(janitor.clone(), login::Accounts::with(&[("ada", PASSWORD)]))
        .route("/", get(|| async { Html(LOGIN_PAGE) }));
    let server = Server::start_with(&janitor, site).await;
    let driver = Driver::start().await;
    let session = driver.session().await;
    session.navigate(&server.url("/")).await;
    session
        .execute(
            "document.querySelector('[name=password]').value = arguments[0];
             document.querySelector('#login button').click();",
            json!([PASSWORD]),
        )
        .await;
    let shown = session
        .wait_for("document.getElementById('answer').textContent")
        .await;
    let (status, body) = shown.as_str().unwrap().split_once('\n').unwrap();
    let answer: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(status, "200", "{answer}");
    assert_eq!(answer["signedIn"], true);
    let id = answer["visitorId"].as_str().unwrap().to_owned();
    assert!(is_visitor_id(&id), "{answer}");
    // The payload collect() put in the form identified this browser: the endpoint, through the cookie the
    // sign-in set, finds the same visitor.
    let again = session
        .execute_async(
            &with_client("return (await createVisitorClient().identify()).visitorId;"),
            json!([]),
        )
        .await;
    assert_eq!(again, id.as_str());
    session.close().await;
    let login: Vec<u16> = server.seen("/login").iter().map(|s| s.status).collect();
    assert_eq!(login, [200]);
    assert_eq!(server.endpoint_statuses(), [200]);
}

/// The client with extended signals on sends them in their header, a server that reads them stores them with
/// the observation, and a client with them off (the default) sends no such header.
async fn extended_signals_from_the_browser<S: Stores>(stores: S) {
    let _one_browser = BROWSERS.lock().await;
    let janitor = Janitor::new(
        config()
            .matching_policy(MatchingPolicy::Precise)
            .extended_signals(true)
            .build()
            .unwrap(),
        stores,
    );
    let server = Server::start(&janitor).await;
    let driver = Driver::start().await;
    let session = driver.session().await;
    session.navigate(&server.url("/blank")).await;
    let page = session
        .execute_async(
            &with_client(
                r#"const client = createVisitorClient({ extendedSignals: true });
                   const header = (await client.headers())["janitor-extended-signals"];
                   const answer = await client.identify();
                   const plain = await createVisitorClient().headers();
                   return { header, visitorId: answer.visitorId, plain: Object.keys(plain).length,
                            availWidth: screen.availWidth, availHeight: screen.availHeight };"#,
            ),
            json!([]),
        )
        .await;
    session.close().await;
    assert_eq!(page["plain"], 0, "off by default: {page}");
    let header = page["header"].as_str().expect("a header");
    let json = URL_SAFE_NO_PAD.decode(header).unwrap();
    let sent = ExtendedSignals::from_slice(&json).unwrap();
    assert_eq!(sent.avail_width, page["availWidth"].as_f64(), "{page}");
    assert_eq!(sent.avail_height, page["availHeight"].as_f64());
    assert_eq!(
        (sent.calendar.as_deref(), sent.numbering_system.as_deref()),
        (Some("gregory"), Some("latn"))
    );
    assert!(
        sent.hour_cycle.is_some() && sent.color_scheme.is_some(),
        "{sent:?}"
    );
    assert_eq!(sent.reduced_motion, Some(false));
    let brands = sent.full_version_list.clone().unwrap_or_default();
    assert!(
        brands
            .iter()
            .any(|b| b.brand == "Chromium" && b.version.split('.').count() == 4),
        "userAgentData's full versions: {sent:?}"
    );
    assert!(sent.platform_version.is_some(), "{sent:?}");
    let visitor = VisitorId::parse(page["visitorId"].as_str().unwrap()).unwrap();
    let stored = janitor
        .engine()
        .store()
        .recent_observations(&visitor, 5, janitor_core::now_ms())
        .await
        .unwrap();
    assert_eq!(stored[0].extended.as_ref(), Some(&sent));
    assert_eq!(server.endpoint_statuses(), [200]);
}

/// The quick start's page with the automation verdict on, in Chromium under ChromeDriver: the page shows
/// `automated` with the reasons a WebDriver session leaves (a plain page, with the verdict off, shows `off`).
async fn automation_verdict_in_chromium<S: Stores>(stores: S) {
    let _one_browser = BROWSERS.lock().await;
    let janitor = Janitor::new(config().automation_verdict(true).build().unwrap(), stores);
    let server = Server::start(&janitor).await;
    let driver = Driver::start().await;
    let session = driver.session().await;
    session.navigate(&server.url("/")).await;
    session.wait_for(SHOWN).await;
    let shown = session
        .execute(
            "return document.getElementById('automation').textContent",
            json!([]),
        )
        .await;
    session.close().await;
    let shown = shown.as_str().unwrap_or_default().to_owned();
    let mut parts = shown.split(", ");
    assert_eq!(parts.next(), Some("automated"), "{shown}");
    let reasons: Vec<&str> = parts.collect();
    // ChromeDriver's session: navigator.webdriver, its cdc_ globals, and the HeadlessChrome user agent.
    for reason in ["webdriver", "driver_globals", "headless"] {
        assert!(reasons.contains(&reason), "{shown}");
    }
    // The client's part was served beside it, and the endpoint read its header.
    let served = server.seen("/janitor-automation.js");
    assert!(!served.is_empty() && served.iter().all(|s| s.status == 200 || s.status == 304));
    assert_eq!(server.endpoint_statuses(), [200]);
}

// ---- a deliberately slow visitor store ----

/// How long a candidate lookup takes in the burst.
const LOOKUP_DELAY: Duration = Duration::from_millis(50);

on_both_stores!(
    quick_start_journey,
    burst_backs_off,
    sign_in_page,
    extended_signals_from_the_browser,
    automation_verdict_in_chromium
);
