//! The routes of the sign-in example: `POST /login` claims the quota of the account being signed into (with
//! or without a browser payload), identifies the browser beside the form, counts the account's recent
//! failures, and records what happened as evidence; `POST /account/erase` erases an account and the browser
//! it signs in from. Both sit behind the origin layer, so another site's page cannot post to them. The tests
//! (`tests/login.rs`) serve these same routes.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use janitor_axum::{
    Action, ActivityKey, DynJanitor, EventInput, EventType, VelocityQuery, VisitorContext,
    VisitorField,
};
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
    /// Accounts with these names and passwords.
    pub fn with(accounts: &[(&str, &str)]) -> Accounts {
        Accounts(Arc::new(
            accounts
                .iter()
                .map(|(name, password)| ((*name).to_owned(), digest(password)))
                .collect(),
        ))
    }

    fn verify(&self, name: &str, password: &str) -> bool {
        self.0.get(name).is_some_and(|d| *d == digest(password))
    }
}

fn digest(password: &str) -> [u8; 32] {
    Sha256::digest(password.as_bytes()).into()
}

/// What every handler shares: the Janitor handle, with no type parameter, and the accounts.
#[derive(Clone)]
struct App {
    janitor: DynJanitor,
    accounts: Accounts,
}

/// The example's routes, behind the handle's origin policy.
pub fn routes(janitor: DynJanitor, accounts: Accounts) -> Router {
    let origin = janitor.origin_layer();
    Router::new()
        .route("/login", post(login))
        .route("/account/erase", post(erase))
        .layer(origin)
        .with_state(App { janitor, accounts })
}

/// The sign-in form: the application's fields, and the browser's payload from `collect()`, read tolerantly
/// (a missing or invalid payload never fails the form).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LoginForm {
    username: String,
    password: String,
    #[serde(default)]
    visitor: VisitorField,
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
async fn read_form<T: serde::de::DeserializeOwned>(body: axum::body::Body) -> Result<T, Response> {
    let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES)
        .await
        .map_err(|_| {
            answer(
                StatusCode::PAYLOAD_TOO_LARGE,
                json!({"error": "Form too large"}),
            )
        })?;
    serde_json::from_slice(&bytes)
        .map_err(|_| answer(StatusCode::BAD_REQUEST, json!({"error": "Invalid form"})))
}

async fn login(State(app): State<App>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let form: LoginForm = match read_form(body).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    // The account being signed into keys the account quota: guessing one account's password is slowed
    // wherever the guesses come from, and whether or not they carry a payload. The name is never stored; its
    // quota counter is an HMAC label.
    let Ok(context) = VisitorContext::for_account(&form.username) else {
        return answer(StatusCode::BAD_REQUEST, json!({"error": "Invalid form"}));
    };
    let identified = match app
        .janitor
        .identify_parts(&parts, &context, form.visitor.payload())
        .await
    {
        Ok(identified) => identified,
        Err(refusal) => return refusal.for_route().into_response(),
    };
    let visitor = identified.as_ref().map(|i| i.identity().clone());

    let subject = app.janitor.subject_id(&form.username);
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

/// Erasure asks for the password again: erasing an account must be the account holder's act.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EraseForm {
    username: String,
    password: String,
}

async fn erase(State(app): State<App>, request: Request) -> Response {
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
    // The account, and the browser it signs in from: evidence about other accounts that names this browser
    // (another account's failed sign-ins from it) is kept, detached from it.
    let browser = app.janitor.visitor_cookie(&parts.headers);
    let erased = match app
        .janitor
        .erase_account(&form.username, browser.as_ref())
        .await
    {
        Ok(erased) => erased,
        Err(error) => return internal("erasure failed", error),
    };
    // The browser forgets the id too; the next identification mints a new one.
    (
        app.janitor.clear_visitor_cookie(),
        Json(json!({
            "erasedEvents": erased.events_deleted,
            "erasedVisitor": erased.visitor_erased,
        })),
    )
        .into_response()
}
