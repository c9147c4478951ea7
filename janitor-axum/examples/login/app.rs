//! The routes of the sign-in example: `POST /login` claims the quota of the account being signed into (with
//! or without a browser payload), identifies the browser beside the form, counts the account's recent
//! failures, and records what happened as evidence; `POST /account/erase` erases an account and the browser
//! it signs in from, after the same quota and lock (every route that checks a password goes through them). Both sit behind the origin layer, so another site's page cannot post to them. The tests
//! (`tests/integration/login.rs`) serve these same routes.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use janitor_axum::evidence::{
    Action, ActivityKey, EventInput, EventType, SubjectId, VelocityQuery,
};
use janitor_axum::visitor::VisitorField;
use janitor_axum::{directory, IdentifiedVisitor, Janitor, VisitorContext};
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
                .map(|(name, password)| (directory::canonical_account(name), digest(password)))
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
    janitor: Janitor,
    accounts: Accounts,
}

/// The example's routes, behind the handle's origin policy.
pub fn routes(janitor: Janitor, accounts: Accounts) -> Router {
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

/// What a route that checks a password knows before checking it.
struct Attempt {
    /// The browser, when the form carried a payload.
    identified: Option<IdentifiedVisitor>,
    /// The account's evidence subject (an HMAC label of its name).
    subject: SubjectId,
    /// The account's failed password checks within [`FAILURE_WINDOW_MS`].
    failures: u32,
}

impl Attempt {
    fn locked(&self) -> bool {
        self.failures >= MAX_FAILURES
    }

    fn visitor(&self) -> Option<&janitor_axum::Identity> {
        self.identified.as_ref().map(IdentifiedVisitor::identity)
    }
}

/// The step before every password check, sign-in or not: claims the account's quota (429 when spent, with or
/// without a payload), identifies the browser when the form carries a payload, and reads the account's recent
/// failures. A route that checked a password without it would let a script guess past the quota and the lock.
async fn attempt(
    app: &App,
    parts: &Parts,
    account: &str,
    payload: Option<&janitor_axum::VisitorPayload>,
) -> Result<Attempt, Response> {
    // The name is never stored; its quota counter is an HMAC label.
    let Ok(context) = VisitorContext::for_account(account) else {
        return Err(answer(
            StatusCode::BAD_REQUEST,
            json!({"error": "Invalid form"}),
        ));
    };
    let identified = match app.janitor.identify_parts(parts, &context, payload).await {
        Ok(identified) => identified,
        Err(refusal) => return Err(refusal.for_route().into_response()),
    };
    let subject = app.janitor.evidence().subject_id(account);
    let recent = VelocityQuery::new(ActivityKey::Subject(subject.clone()))
        .action(Action::SignIn)
        .window_ms(FAILURE_WINDOW_MS);
    let failures = match app.janitor.evidence().velocity(&recent).await {
        Ok(summary) => summary.counts.get(&EventType::LoginFailure).copied(),
        Err(error) => return Err(internal("velocity read failed", error)),
    };
    Ok(Attempt {
        identified,
        subject,
        failures: failures.unwrap_or(0),
    })
}

/// Records the outcome of a password check against the account: a failure counts towards its lock whichever
/// route checked the password.
async fn record(app: &App, attempt: &Attempt, event_type: EventType) -> Result<(), Response> {
    let mut event = EventInput::builder(&event_id(), event_type)
        .action(Action::SignIn)
        .subject(attempt.subject.clone());
    if let Some(visitor) = attempt.visitor() {
        event = event.visitor(visitor.visitor_id.clone());
    }
    let recorded = match event.build() {
        Ok(event) => app.janitor.evidence().record(&event).await,
        Err(error) => return Err(internal("event refused", error)),
    };
    recorded
        .map(|_| ())
        .map_err(|error| internal("event not recorded", error))
}

/// Checks the password while the account is not locked and records the outcome: 429 while it is locked, 401
/// when the password is wrong, `Ok` when it is right.
async fn check(
    app: &App,
    attempt: &Attempt,
    account: &str,
    password: &str,
) -> Result<(), Response> {
    let (event_type, refusal) = if attempt.locked() {
        let message = "Too many failed sign-ins; try again later";
        let refusal = (StatusCode::TOO_MANY_REQUESTS, message);
        (EventType::ActionDenied, Some(refusal))
    } else if app.accounts.verify(account, password) {
        (EventType::LoginSuccess, None)
    } else {
        let refusal = (StatusCode::UNAUTHORIZED, "Wrong username or password");
        (EventType::LoginFailure, Some(refusal))
    };
    record(app, attempt, event_type).await?;
    match refusal {
        Some((status, message)) => Err(answer(status, json!({"error": message}))),
        None => Ok(()),
    }
}

async fn login(State(app): State<App>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let form: LoginForm = match read_form(body).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    // One account, however the user typed its name.
    let account = directory::canonical_account(&form.username);
    let attempt = match attempt(&app, &parts, &account, form.visitor.payload()).await {
        Ok(attempt) => attempt,
        Err(response) => return response,
    };
    if let Err(refused) = check(&app, &attempt, &account, &form.password).await {
        return with_cookie(attempt, refused);
    }
    let visitor = attempt.visitor();
    let body = json!({
        "signedIn": true,
        "visitorId": visitor.map(|v| v.visitor_id.to_string()),
        "isReturning": visitor.map(|v| v.is_returning),
        "riskStatus": visitor.map(|v| v.risk_status.as_str()),
        "recentFailures": attempt.failures,
    });
    with_cookie(attempt, answer(StatusCode::OK, body))
}

/// `response`, with the `__visitor` cookie when the browser was identified.
fn with_cookie(attempt: Attempt, response: Response) -> Response {
    match attempt.identified {
        Some(identified) => (identified, response).into_response(),
        None => response,
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
    // Erasure checks the password too: through the same quota and lock as sign-in, or it would be a way to
    // guess one without either.
    let account = directory::canonical_account(&form.username);
    let attempt = match attempt(&app, &parts, &account, None).await {
        Ok(attempt) => attempt,
        Err(response) => return response,
    };
    if let Err(refused) = check(&app, &attempt, &account, &form.password).await {
        return refused;
    }
    // The account, and the browser it signs in from: evidence about other accounts that names this browser
    // (another account's failed sign-ins from it) is kept, detached from it.
    let browser = app.janitor.visitor_cookie(&parts.headers);
    let erased = match app.janitor.erase_account(&account, browser.as_ref()).await {
        Ok(erased) => erased,
        Err(error) => return internal("erasure failed", error),
    };
    // The browser forgets the id too; the next identification mints a new one.
    (
        app.janitor.clear_visitor_cookie(),
        Json(json!({
            "erasedEvents": erased.events_deleted,
            "erasedVisitor": erased.visitor_erased,
            // A browser id presented with an account that never signed in from it is not erased.
            "visitorNotLinked": erased.visitor_not_linked,
        })),
    )
        .into_response()
}
