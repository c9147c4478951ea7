//! The application's sign-in with its defence, in one call: [`Janitor::sign_in`].
//!
//! The call does the bookkeeping in the one order that holds against credential stuffing, password spraying
//! and lockout abuse: identify the browser (when the form carries a payload), claim the request quotas and
//! the sign-in's counters in one store step, check the password only when that step allows it, give the
//! counters back and mark the browser known when the password is right, and record what happened as evidence.
//! docs/signin-defence.md says what each counter stops and what it costs.

use axum::response::{IntoResponse, Response};
use axum::Json;
use http::request::Parts;
use http::StatusCode;
use janitor_core::automation::Automation;
use janitor_core::evidence::{Action, EventInput, EventType};
use janitor_core::protection::quota::QuotaContext;
use janitor_core::protection::signin::SignInAttempt;
use janitor_core::{Identity, VisitorPayload};
use serde_json::json;

use crate::endpoint::{identify_visitor, Route};
use crate::handle::Janitor;
use crate::refusal::Refusal;
use crate::visitor::IdentifiedVisitor;

mod network;

pub use janitor_core::protection::signin::{
    SignInConfig, SignInConfigBuilder, SignInDecision, SignInReason, SpentLimit, Verdict,
};
pub(crate) use network::{client_network, quota_policy};

/// How a sign-in attempt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInOutcome {
    /// The password was right: the application signs the user in.
    SignedIn,
    /// The password was wrong (counted against the browser's or the account's lock).
    WrongPassword,
    /// The defence asks for a second factor; the password was not checked.
    Challenged,
    /// The defence refused for now; the password was not checked.
    Denied,
}

impl SignInOutcome {
    /// `signed_in`, `wrong_password`, `challenged` or `denied`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SignInOutcome::SignedIn => "signed_in",
            SignInOutcome::WrongPassword => "wrong_password",
            SignInOutcome::Challenged => "challenged",
            SignInOutcome::Denied => "denied",
        }
    }
}

/// What [`Janitor::sign_in`] did: the outcome, the defence's decision, and the identified browser (whose
/// cookie the response should set).
#[derive(Debug)]
pub struct SignIn {
    outcome: SignInOutcome,
    decision: SignInDecision,
    identified: Option<IdentifiedVisitor>,
    automation: Option<Automation>,
    policy: Option<crate::refusal::RateLimitPolicy>,
}

impl SignIn {
    /// How the attempt ended.
    pub fn outcome(&self) -> SignInOutcome {
        self.outcome
    }

    /// Whether the user is signed in (the password was right and the defence allowed the check).
    pub fn signed_in(&self) -> bool {
        self.outcome == SignInOutcome::SignedIn
    }

    /// The defence's decision, with its reasons.
    pub fn decision(&self) -> &SignInDecision {
        &self.decision
    }

    /// The browser's identity, when the form carried a payload.
    pub fn identity(&self) -> Option<&Identity> {
        self.identified.as_ref().map(IdentifiedVisitor::identity)
    }

    /// The browser's automation verdict, when the configuration turns it on (with or without a payload: the
    /// request's headers are checked either way).
    pub fn automation(&self) -> Option<&Automation> {
        self.automation.as_ref()
    }

    /// Takes the identified browser out, to set its cookie on the response (`(identified, response)`).
    pub fn take_identified(&mut self) -> Option<IdentifiedVisitor> {
        self.identified.take()
    }

    /// The answer to an attempt that did not sign in, `None` when it did: 401 for a wrong password, 403 with
    /// `{"challenge": true, "reasons": [..]}` for a challenge (an application with a second factor asks for it
    /// instead), and 429 with `Retry-After` (and the `RateLimit` fields when configured) for a denial. The
    /// bodies never say which of the account or the password was wrong.
    pub fn refusal(&self) -> Option<Response> {
        let reasons: Vec<&str> = self
            .decision
            .reasons()
            .iter()
            .map(SignInReason::as_str)
            .collect();
        match self.outcome {
            SignInOutcome::SignedIn => None,
            SignInOutcome::WrongPassword => Some(
                (
                    StatusCode::UNAUTHORIZED,
                    Json(json!({"error": "Wrong username or password"})),
                )
                    .into_response(),
            ),
            SignInOutcome::Challenged => {
                let body = json!({
                    "error": "Confirm it is you to sign in from this browser",
                    "challenge": true,
                    "reasons": reasons,
                });
                let mut response = (StatusCode::FORBIDDEN, Json(body)).into_response();
                if let Some(secs) = self.decision.retry_after_secs() {
                    response
                        .headers_mut()
                        .insert(http::header::RETRY_AFTER, secs.into());
                }
                Some(response)
            }
            SignInOutcome::Denied => {
                let refusal = Refusal::RateLimited {
                    retry_after_secs: self.decision.retry_after_secs().unwrap_or(1),
                    policy: self.policy,
                };
                Some(refusal.for_route().into_response())
            }
        }
    }
}

impl Janitor {
    /// Signs a user in to `account` (its canonical name, 1–512 characters) from the request `parts`, with the
    /// browser payload the form carried, if any: identifies the browser, decides (quotas, locks, failure
    /// budgets), calls `check_password` only when the decision allows it (or in dry run), then settles the
    /// counters, marks the browser known on success and records a checked attempt as evidence
    /// (`login-success` or `login-failure`; an attempt the defence stopped writes nothing). Concurrent attempts
    /// never check more passwords than the counters allow.
    ///
    /// Errors: [`Refusal::InvalidPayload`] for an account name outside 1–512 characters (`for_route()` words
    /// it "Invalid request"), [`Refusal::Unavailable`] when a store fails (nothing is counted as a success),
    /// and the identification's own refusals. An attempt stopped by the defence is not an error: it is
    /// [`SignInOutcome::Challenged`] or [`SignInOutcome::Denied`], with reasons.
    pub async fn sign_in<F>(
        &self,
        parts: &Parts,
        account: &str,
        payload: Option<&VisitorPayload>,
        check_password: F,
    ) -> Result<SignIn, Refusal>
    where
        F: AsyncFnOnce() -> bool,
    {
        let inner = &self.inner;
        if QuotaContext::new(Some(account), None).is_err() {
            return Err(Refusal::InvalidPayload);
        }
        let network = client_network(parts, &inner.config);
        let cookie = self.visitor_cookie(&parts.headers).map(|id| id.to_string());
        let mut attempt = SignInAttempt {
            account,
            session: None,
            network: Some(&network.network),
            network_quota_id: Some(&network.quota_id),
            cookie: cookie.as_deref(),
            browser: cookie.as_deref(),
        };
        let now = inner.clock.now_ms();
        // The request quotas first: a flood they stop costs one statement per attempt, no identification.
        let mut earlier = match &inner.quotas {
            Some(quotas) => inner
                .signin
                .check_quotas(quotas, &attempt, now)
                .await
                .map_err(|error| unavailable("sign-in quotas failed", error))?,
            None => None,
        };
        if let Some(denied) = earlier.as_ref().filter(|d| !d.dry_run()) {
            crate::telemetry::signin_decided(denied);
            return Ok(self.stopped(denied.clone(), None, None));
        }
        let identified = match payload {
            Some(payload) => Some(
                identify_visitor(inner, parts, payload, Route::Application)
                    .await
                    .inspect_err(|refusal| crate::telemetry::refused(*refusal))?,
            ),
            None => None,
        };
        let browser = identified
            .as_ref()
            .map(|v| v.identity().visitor_id.to_string());
        if browser.is_some() {
            attempt.browser = browser.as_deref();
        }
        let automation = match &identified {
            _ if !inner.config.automation_verdict() => None,
            Some(identified) => identified.automation().cloned(),
            None => Some(crate::endpoint::automation::verdict(parts, None, true)),
        };
        let stop = automation
            .as_ref()
            .and_then(|a| inner.signin.check_automation(a.verdict()));
        if let Some(stop) = stop {
            if !stop.dry_run() {
                crate::telemetry::signin_decided(&stop);
                return Ok(self.stopped(stop, identified, automation));
            }
            // In dry run the attempt goes on, and its decision carries this reason first.
            earlier = earlier.or(Some(stop));
        }
        let store = &inner.quota_store;
        let decision = inner
            .signin
            .begin(store, &attempt, earlier, now)
            .await
            .map_err(|error| unavailable("sign-in counters failed", error))?;
        crate::telemetry::signin_decided(&decision);
        let outcome = match decision.verdict() {
            Verdict::Allow => {
                let right = check_password().await;
                inner
                    .signin
                    .finish(store, &decision, right, now)
                    .await
                    .map_err(|error| unavailable("sign-in settlement failed", error))?;
                if right {
                    SignInOutcome::SignedIn
                } else {
                    SignInOutcome::WrongPassword
                }
            }
            Verdict::Challenge | Verdict::Deny => {
                return Ok(self.stopped(decision, identified, automation))
            }
        };
        // Only a checked password is evidence: an attempt the defence stopped writes nothing.
        self.record_sign_in(account, identified.as_ref(), outcome)
            .await?;
        Ok(SignIn {
            outcome,
            decision,
            identified,
            automation,
            policy: None,
        })
    }

    /// The answer to an attempt the defence stopped before its password was checked.
    fn stopped(
        &self,
        decision: SignInDecision,
        identified: Option<IdentifiedVisitor>,
        automation: Option<Automation>,
    ) -> SignIn {
        let policy = decision
            .spent()
            .and_then(|spent| network::signin_policy(&self.inner.config, spent));
        let outcome = match decision.verdict() {
            Verdict::Challenge => SignInOutcome::Challenged,
            _ => SignInOutcome::Denied,
        };
        SignIn {
            outcome,
            decision,
            identified,
            automation,
            policy,
        }
    }

    /// Records one attempt's outcome against the account (and the browser, when identified).
    async fn record_sign_in(
        &self,
        account: &str,
        identified: Option<&IdentifiedVisitor>,
        outcome: SignInOutcome,
    ) -> Result<(), Refusal> {
        let evidence = &self.inner.evidence;
        let event_type = match outcome {
            SignInOutcome::SignedIn => EventType::LoginSuccess,
            _ => EventType::LoginFailure,
        };
        let mut event = EventInput::builder(&event_id(), event_type)
            .action(Action::SignIn)
            .subject(evidence.subject_id(account));
        if let Some(identified) = identified {
            event = event.visitor(identified.identity().visitor_id.clone());
        }
        let event = event
            .build()
            .map_err(|error| unavailable("sign-in event refused", error))?;
        evidence
            .record(&event)
            .await
            .map(|_| ())
            .map_err(|error| unavailable("sign-in event not recorded", error))
    }
}

fn unavailable(what: &str, error: impl std::fmt::Display) -> Refusal {
    tracing::warn!(%error, "{what}");
    Refusal::Unavailable
}

/// A fresh idempotency key for one sign-in event.
fn event_id() -> String {
    let bytes: [u8; 16] = rand::random();
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("signin-{hex}")
}
