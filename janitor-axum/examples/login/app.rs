//! The routes of the sign-in example: `POST /login` signs in through [`Janitor::sign_in`], which identifies
//! the browser beside the form, claims the request quotas (the account's, the network's) and the sign-in
//! defence's counters, checks the password only when they allow it, and records what happened as evidence;
//! `POST /account/erase` erases an account and the browser it signs in from, after the same call (every route
//! that checks a password goes through it). Both sit behind the origin layer, so another site's page cannot
//! post to them. The tests (`tests/integration/login.rs`) serve these same routes.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use janitor_axum::visitor::VisitorField;
use janitor_axum::{directory, IdentifiedVisitor, Janitor};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

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

async fn login(State(app): State<App>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let form: LoginForm = match read_form(body).await {
        Ok(form) => form,
        Err(response) => return response,
    };
    // One account, however the user typed its name.
    let account = directory::canonical_account(&form.username);
    // One call does the bookkeeping in its order: identify, claim the counters, check the password only when
    // they allow it, settle, record. The closure is the application's own check.
    let check = async || app.accounts.verify(&account, &form.password);
    let mut signin = match app
        .janitor
        .sign_in(&parts, &account, form.visitor.payload(), check)
        .await
    {
        Ok(signin) => signin,
        Err(refusal) => return refusal.for_route().into_response(),
    };
    let response = match signin.refusal() {
        // This example has no second factor: a challenge is refused (403) with its reasons; an application
        // with one would ask for it here.
        Some(refused) => refused,
        None => {
            let visitor = signin.identity();
            let body = json!({
                "signedIn": true,
                "visitorId": visitor.map(|v| v.visitor_id.to_string()),
                "isReturning": visitor.map(|v| v.is_returning),
                "riskStatus": visitor.map(|v| v.risk_status.as_str()),
                "knownBrowser": signin.decision().known_browser(),
            });
            answer(StatusCode::OK, body)
        }
    };
    with_cookie(signin.take_identified(), response)
}

/// `response`, with the `__visitor` cookie when the browser was identified.
fn with_cookie(identified: Option<IdentifiedVisitor>, response: Response) -> Response {
    match identified {
        Some(identified) => (identified, response).into_response(),
        None => response,
    }
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
    // Erasure checks the password too: through the same sign-in defence, or it would be a way to guess one
    // past it.
    let account = directory::canonical_account(&form.username);
    let check = async || app.accounts.verify(&account, &form.password);
    match app.janitor.sign_in(&parts, &account, None, check).await {
        Ok(signin) => {
            if let Some(refused) = signin.refusal() {
                return refused;
            }
        }
        Err(refusal) => return refusal.for_route().into_response(),
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
