//! The routes of the sign-in example: `POST /login` identifies the browser beside the form, counts the
//! account's recent failures, and records what happened as evidence; `POST /account/erase` removes an
//! account's evidence and the browser's visitor. The tests (`tests/login.rs`) serve these same routes.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::{to_bytes, Body};
use axum::extract::{Request, State};
use axum::http::header::{COOKIE, SET_COOKIE};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use janitor_axum::{Janitor, Refusal, VisitorContext};
use janitor_core::evidence::{Action, ActivityKey, EventInput, EventType, VelocityQuery};
use janitor_core::{Evaluator, Stores, VisitorId, VisitorPayload};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Failed sign-ins of one account, within [`FAILURE_WINDOW_MS`], after which it is locked.
pub const MAX_FAILURES: u32 = 5;
/// The window failed sign-ins are counted over: 15 minutes.
pub const FAILURE_WINDOW_MS: i64 = 15 * 60_000;
/// The largest form this example reads (the payload is at most 16 KiB).
const MAX_FORM_BYTES: usize = 64 * 1024;

/// The example's accounts: names and SHA-256 digests of their passwords. A real application has its own
/// store and a password hash made for the purpose (argon2, scrypt).
#[derive(Clone, Default)]
pub struct Accounts(Arc<HashMap<String, [u8; 32]>>);

impl Accounts {
    /// One account.
    pub fn with(name: &str, password: &str) -> Accounts {
        Accounts(Arc::new(HashMap::from([(
            name.to_owned(),
            digest(password),
        )])))
    }

    fn verify(&self, name: &str, password: &str) -> bool {
        self.0.get(name).is_some_and(|d| *d == digest(password))
    }
}

fn digest(password: &str) -> [u8; 32] {
    Sha256::digest(password.as_bytes()).into()
}

struct App<S: Stores, E: Evaluator> {
    janitor: Janitor<S, E>,
    accounts: Accounts,
}

/// The example's routes, on `janitor`'s stores.
pub fn routes<S: Stores, E: Evaluator + 'static>(
    janitor: Janitor<S, E>,
    accounts: Accounts,
) -> Router {
    Router::new()
        .route("/login", post(login::<S, E>))
        .route("/account/erase", post(erase::<S, E>))
        .with_state(Arc::new(App { janitor, accounts }))
}

/// The sign-in form: the application's fields, and the browser's payload from `collect()`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginForm {
    username: String,
    password: String,
    visitor: Option<VisitorPayload>,
}

fn answer(status: StatusCode, body: Value) -> Response {
    (status, Json(body)).into_response()
}

fn internal(what: &str, error: impl std::fmt::Display) -> Response {
    tracing::error!(%error, "{what}");
    answer(
        StatusCode::SERVICE_UNAVAILABLE,
        json!({"error": "Sign-in is unavailable; try again"}),
    )
}

/// Reads a JSON form of at most [`MAX_FORM_BYTES`].
async fn read_form<T: serde::de::DeserializeOwned>(body: Body) -> Result<T, Response> {
    let bytes = to_bytes(body, MAX_FORM_BYTES).await.map_err(|_| {
        answer(
            StatusCode::PAYLOAD_TOO_LARGE,
            json!({"error": "Form too large"}),
        )
    })?;
    serde_json::from_slice(&bytes)
        .map_err(|_| answer(StatusCode::BAD_REQUEST, json!({"error": "Invalid form"})))
}

async fn login<S: Stores, E: Evaluator + 'static>(
    State(app): State<Arc<App<S, E>>>,
    request: Request,
) -> Response {
    let (mut parts, body) = request.into_parts();
    let form: LoginForm = match read_form(body).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    // The account being signed into keys the account quota: guessing one account's password is slowed
    // wherever the guesses come from. The name is never stored; its quota counter is an HMAC label.
    let Ok(context) = VisitorContext::for_account(&form.username) else {
        return answer(StatusCode::BAD_REQUEST, json!({"error": "Invalid form"}));
    };
    parts.extensions.insert(context);
    // A browser without a payload (scripts off) may still sign in; a spent quota or an overload may not.
    let identified = match &form.visitor {
        Some(payload) => match app.janitor.identify_parts(&parts, payload).await {
            Ok(identified) => Some(identified),
            Err(Refusal::InvalidPayload) => None,
            Err(refusal) => return refusal.into_response(),
        },
        None => None,
    };
    let visitor = identified.as_ref().map(|i| i.identity().clone());

    let subject = app.janitor.evidence().subject_id(&form.username);
    let recent = VelocityQuery::new(ActivityKey::Subject(subject.clone()))
        .action(Action::SignIn)
        .window_ms(FAILURE_WINDOW_MS);
    let failures = match app.janitor.velocity(&recent).await {
        Ok(summary) => summary
            .counts
            .get(&EventType::LoginFailure)
            .copied()
            .unwrap_or(0),
        Err(error) => return internal("velocity read failed", error),
    };
    let (event_type, status, body) = if failures >= MAX_FAILURES {
        (
            EventType::ActionDenied,
            StatusCode::TOO_MANY_REQUESTS,
            json!({"error": "Too many failed sign-ins; try again later"}),
        )
    } else if app.accounts.verify(&form.username, &form.password) {
        (
            EventType::LoginSuccess,
            StatusCode::OK,
            json!({
                "signedIn": true,
                "visitorId": visitor.as_ref().map(|v| v.visitor_id.to_string()),
                "isReturning": visitor.as_ref().map(|v| v.is_returning),
                "riskStatus": visitor.as_ref().map(|v| v.risk_status.as_str()),
                "recentFailures": failures,
            }),
        )
    } else {
        (
            EventType::LoginFailure,
            StatusCode::UNAUTHORIZED,
            json!({"error": "Wrong username or password"}),
        )
    };
    let mut event = EventInput::builder(&event_id(), event_type)
        .action(Action::SignIn)
        .subject(subject);
    if let Some(visitor) = &visitor {
        event = event.visitor(visitor.visitor_id.clone());
    }
    let recorded = match event.build() {
        Ok(event) => app.janitor.record_event(&event).await,
        Err(error) => return internal("event refused", error),
    };
    if let Err(error) = recorded {
        return internal("event not recorded", error);
    }
    match identified {
        Some(identified) => (status, identified, Json(body)).into_response(),
        None => answer(status, body),
    }
}

/// A fresh idempotency key for one event (the application's own request id in a real one).
fn event_id() -> String {
    let bytes: [u8; 16] = rand::random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("login-{hex}")
}

/// Erasure asks for the password again: deleting an account's evidence must be the account holder's act.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EraseForm {
    username: String,
    password: String,
}

async fn erase<S: Stores, E: Evaluator + 'static>(
    State(app): State<Arc<App<S, E>>>,
    request: Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let form: EraseForm = match read_form(body).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    if !app.accounts.verify(&form.username, &form.password) {
        return answer(
            StatusCode::UNAUTHORIZED,
            json!({"error": "Wrong username or password"}),
        );
    }
    let subject = app.janitor.evidence().subject_id(&form.username);
    let events = match app.janitor.delete_subject_events(&subject).await {
        Ok(events) => events,
        Err(error) => return internal("erasure failed", error),
    };
    let visitor = match cookie_visitor(&parts.headers) {
        Some(visitor) => match app.janitor.delete_visitor(&visitor).await {
            Ok(deleted) => deleted,
            Err(error) => return internal("erasure failed", error),
        },
        None => false,
    };
    // The browser forgets the id too; the next identification mints a new one.
    let secure = if app.janitor.config().cookie().secure() {
        "; Secure"
    } else {
        ""
    };
    let clear = format!("__visitor=; Max-Age=0; Path=/; HttpOnly{secure}; SameSite=Lax");
    (
        [(SET_COOKIE, clear)],
        Json(json!({"erasedEvents": events, "erasedVisitor": visitor})),
    )
        .into_response()
}

/// The visitor id of the request's `__visitor` cookie, when it holds one.
fn cookie_visitor(headers: &axum::http::HeaderMap) -> Option<VisitorId> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().strip_prefix("__visitor="))
        .find_map(VisitorId::parse)
}
