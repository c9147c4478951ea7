//! The page the browsers visit: a sign-in form served by the library with the automation verdict on, and a
//! record of every verdict the server gave, by run.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Query, Request, State};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use janitor_axum::automation::Automation;
use janitor_axum::config::{CookieConfig, Environment};
use janitor_axum::{Janitor, JanitorConfig, MemoryStores, VisitorPayload};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;

const PAGE: &str = include_str!("page.html");
/// Where the page identifies: a route that records the verdict, then runs the handle's endpoint.
const BENCH_ENDPOINT: &str = "/bench/visitor";
/// The handle's own endpoint (the configuration's default).
pub(super) const ENDPOINT: &str = "/api/visitor";
const PASSWORD: &str = "the right password";

/// Where a verdict was given: on the identify endpoint (page load) or on the sign-in form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// The identify endpoint, as the page loads.
    Identify,
    /// The sign-in form's submission.
    Signin,
}

/// One verdict the server gave.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verdict {
    /// The run's id, `TOOL:N`.
    pub run: String,
    /// Where.
    pub route: Route,
    /// `human`, `suspected` or `automated`.
    pub verdict: String,
    /// The reasons' names.
    pub reasons: Vec<String>,
    /// On the sign-in route: the attempt's outcome (`challenged` when the verdict stopped it).
    pub outcome: Option<String>,
}

/// An identify request as it arrived, to replay for the cost measurement.
#[derive(Debug, Clone)]
pub struct Captured {
    /// Its headers.
    pub headers: axum::http::HeaderMap,
    /// Its body.
    pub body: Bytes,
}

/// What the server saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// Every verdict, in arrival order.
    pub verdicts: Vec<Verdict>,
    /// Every identify request, for replay.
    pub identify_requests: Vec<Captured>,
}

#[derive(Clone)]
struct Bench {
    janitor: Janitor,
    seen: Arc<Mutex<Seen>>,
}

/// The handle the page is served with: memory stores, development (loopback cookies), the verdict on or off.
pub fn janitor(verdict: bool) -> Janitor {
    let config = JanitorConfig::builder()
        .secret("the automation benchmark's secret, thirty-two bytes or more")
        .environment(Environment::Development)
        .cookie(
            CookieConfig::builder()
                .secure(false)
                .build()
                .expect("a cookie"),
        )
        .automation_verdict(verdict)
        .build()
        .expect("a valid configuration");
    Janitor::new(config, MemoryStores::new())
}

/// Serves the page on a free loopback port until the task is dropped; returns its address and the record.
pub async fn start() -> std::io::Result<(SocketAddr, Arc<Mutex<Seen>>, tokio::task::JoinHandle<()>)>
{
    let seen = Arc::new(Mutex::new(Seen::default()));
    let janitor = janitor(true);
    let bench = Bench {
        janitor: janitor.clone(),
        seen: seen.clone(),
    };
    // The handle's router serves the client and its parts; the page identifies through a route of its own,
    // which records the verdict `assess` hands to server code.
    let app = Router::new()
        .route("/", get(|| async { Html(PAGE) }))
        .route(BENCH_ENDPOINT, post(identify))
        .route("/login", post(sign_in))
        .with_state(bench)
        .merge(janitor.router());
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let address = listener.local_addr()?;
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((address, seen, task))
}

#[derive(Deserialize)]
struct RunQuery {
    run: Option<String>,
}

/// The identify endpoint through [`Janitor::assess`], which hands the verdict to server code.
async fn identify(
    State(bench): State<Bench>,
    Query(query): Query<RunQuery>,
    request: Request,
) -> Response {
    let (mut parts, body) = request.into_parts();
    parts.uri = axum::http::Uri::from_static(ENDPOINT);
    let body = axum::body::to_bytes(body, 64 * 1024)
        .await
        .unwrap_or_default();
    let captured = Captured {
        headers: parts.headers.clone(),
        body: body.clone(),
    };
    let assessment = bench
        .janitor
        .assess(Request::from_parts(parts, Body::from(body)))
        .await;
    let mut seen = bench.seen.lock().expect("not poisoned");
    seen.identify_requests.push(captured);
    if let Some(automation) = &assessment.automation {
        let run = query.run.unwrap_or_default();
        seen.verdicts
            .push(verdict(run, Route::Identify, automation, None));
    }
    assessment.response
}

#[derive(Deserialize)]
struct Form {
    run: String,
    account: String,
    password: String,
    visitor: Option<serde_json::Value>,
}

/// The sign-in form through [`Janitor::sign_in`], whose decision reads the verdict.
async fn sign_in(State(bench): State<Bench>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 64 * 1024).await else {
        return axum::http::StatusCode::BAD_REQUEST.into_response();
    };
    let Ok(form) = serde_json::from_slice::<Form>(&body) else {
        return axum::http::StatusCode::BAD_REQUEST.into_response();
    };
    let payload = form
        .visitor
        .and_then(|v| VisitorPayload::from_slice(v.to_string().as_bytes()).ok());
    let account = if form.account.is_empty() {
        "nobody"
    } else {
        &form.account
    };
    let password = form.password;
    let attempt = bench
        .janitor
        .sign_in(&parts, account, payload.as_ref(), async || {
            password == PASSWORD
        })
        .await;
    let signed = match attempt {
        Ok(signed) => signed,
        Err(refusal) => return refusal.for_route().into_response(),
    };
    if let Some(automation) = signed.automation() {
        let outcome = Some(signed.outcome().as_str().to_owned());
        let record = verdict(form.run, Route::Signin, automation, outcome);
        bench
            .seen
            .lock()
            .expect("not poisoned")
            .verdicts
            .push(record);
    }
    signed
        .refusal()
        .unwrap_or_else(|| Json(serde_json::json!({"signedIn": true})).into_response())
}

fn verdict(run: String, route: Route, automation: &Automation, outcome: Option<String>) -> Verdict {
    Verdict {
        run,
        route,
        verdict: automation.verdict().as_str().to_owned(),
        reasons: automation
            .reasons()
            .iter()
            .map(|r| r.as_str().to_owned())
            .collect(),
        outcome,
    }
}
