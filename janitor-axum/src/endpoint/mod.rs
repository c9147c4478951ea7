//! The identify endpoint: the checks of the Janitor contract in their order, then the engine and the cookie.
//!
//! A request goes through four phases: checks of its head (route, method, origin, media type, insecure-cookie
//! host), the quota claim, the body, and identification. The first refusal ends it; a refusal before the body
//! was read settles the unread body under the admission layer's rules.

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::header::{HeaderValue, CONNECTION, CONTENT_TYPE, SET_COOKIE};
use http::request::Parts;
use http::{HeaderMap, Method, StatusCode};
use janitor_core::identification::network::NetworkDigest;
use janitor_core::protection::quota::{QuotaContext, QuotaDecision};
use janitor_core::{
    IdentifyError, IdentifyRequest, Identity, Observation, StoreError, VisitorPayload,
};
use serde::Serialize;

use crate::admission::{settle_unread, AdmissionConfig, AdmissionSlot};
use crate::config::JanitorConfig;
use crate::handle::Inner;
use crate::origin::ClientAddress;
use crate::refusal::Refusal;
use crate::telemetry;
use crate::visitor::IdentifiedVisitor;
use tracing::Instrument;

pub(crate) mod automation;
mod body;
pub(crate) mod cookie;
mod extended;
pub(crate) mod learning;
mod response;

use body::BodyError;

/// Account and session ids that server code attaches to a request (as an extension, e.g. from its session
/// middleware) so that their quotas apply. Never taken from the request body or headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VisitorContext {
    /// The signed-in account, if any (1–512 characters).
    pub account: Option<String>,
    /// The application's session, if any (1–512 characters).
    pub session: Option<String>,
}

impl VisitorContext {
    /// The account and session of a request, each checked to be 1–512 characters (the error names the length,
    /// never the id).
    pub fn new(
        account: Option<&str>,
        session: Option<&str>,
    ) -> Result<VisitorContext, janitor_core::ConfigError> {
        QuotaContext::new(account, session)?;
        Ok(VisitorContext {
            account: account.map(str::to_owned),
            session: session.map(str::to_owned),
        })
    }

    /// No account and no session: the global quota alone.
    pub fn anonymous() -> VisitorContext {
        VisitorContext::default()
    }

    /// A signed-in account, with no session.
    pub fn for_account(account: &str) -> Result<VisitorContext, janitor_core::ConfigError> {
        VisitorContext::new(Some(account), None)
    }
}

/// Runs the endpoint on one request; the identified visitor is returned too, for
/// [`assess`](crate::Janitor::assess).
pub(crate) async fn handle(
    janitor: &Inner,
    request: Request,
) -> (Response, Option<IdentifiedVisitor>) {
    let (parts, body) = request.into_parts();
    let config = &janitor.config;
    let anonymous = VisitorContext::default();
    let context = parts.extensions.get().unwrap_or(&anonymous);
    let before_body = async {
        check_head(&parts, config)?;
        claim_quota(janitor, &parts, context).await?;
        body::check_declared_length(&parts.headers, config.endpoint.max_body_bytes())
            .map_err(|_| Refusal::TooLarge)
    };
    if let Err(refusal) = before_body.await {
        telemetry::refused(refusal);
        return (
            refuse_unread(&parts, body, &config.admission, refusal).await,
            None,
        );
    }
    let slot = parts.extensions.get::<AdmissionSlot>();
    let payload = match read_payload(body, config, slot).await {
        Ok(payload) => payload,
        Err((refusal, close)) => {
            // A busy refusal was counted by the admission it came from.
            if refusal != Refusal::Busy {
                telemetry::refused(refusal);
            }
            return (refuse(refusal, close), None);
        }
    };
    match identify(janitor, &parts, &payload).await {
        Ok((response, identified)) => (response, Some(identified)),
        Err(refusal) => {
            telemetry::refused(refusal);
            (refusal.into_response(), None)
        }
    }
}

/// The checks on the request's head, in the contract's order.
fn check_head(parts: &Parts, config: &JanitorConfig) -> Result<(), Refusal> {
    if parts.uri.path() != config.endpoint.path() {
        Err(Refusal::NotFound)
    } else if parts.method != Method::POST {
        Err(Refusal::MethodNotAllowed)
    } else {
        let host = crate::origin::check(parts, &config.origin)?;
        if !is_json(&parts.headers) {
            Err(Refusal::UnsupportedMediaType)
        } else if !config.cookie.secure() && !host.is_some_and(cookie::is_loopback) {
            Err(Refusal::InsecureCookie)
        } else {
            Ok(())
        }
    }
}

/// Claims the quotas of a request made in `context` from the client of `parts`, when quotas are on: the global
/// counter, the network's when it is on, then the account's and the session's when the context names them.
pub(crate) async fn claim_quota(
    janitor: &Inner,
    parts: &Parts,
    context: &VisitorContext,
) -> Result<(), Refusal> {
    let Some(quotas) = &janitor.quotas else {
        return Ok(());
    };
    // A malformed context is the application's mistake: refuse rather than count it as anonymous. The public
    // constructors check the lengths; the fields are public, so check again.
    let Ok(context) = QuotaContext::new(context.account.as_deref(), context.session.as_deref())
    else {
        tracing::error!(
            "the request's VisitorContext has an account or session outside 1-512 characters"
        );
        return Err(Refusal::Unavailable);
    };
    let network = quotas
        .config()
        .network()
        .map(|_| crate::signin::client_network(parts, &janitor.config));
    let context = context.with_network(network.as_ref().map(|n| n.quota_id.as_str()));
    match quotas.check(&context, janitor.clock.now_ms()).await {
        Ok(QuotaDecision::Allowed) => Ok(()),
        Ok(QuotaDecision::Limited {
            counter,
            retry_after_secs,
        }) => Err(Refusal::RateLimited {
            retry_after_secs,
            policy: crate::signin::quota_policy(&janitor.config, counter),
        }),
        Err(e) => {
            tracing::warn!(error = %e, "quota storage failed");
            Err(Refusal::Unavailable)
        }
    }
}

/// Reads and validates the body; a refusal says whether part of the body may still be on the wire (close).
/// Behind the admission layer, a body slower than the body grace is read with the request's slot lent back.
async fn read_payload(
    body: Body,
    config: &JanitorConfig,
    slot: Option<&AdmissionSlot>,
) -> Result<VisitorPayload, (Refusal, bool)> {
    let endpoint = &config.endpoint;
    let read = body::read(body, endpoint.max_body_bytes(), endpoint.request_timeout());
    let read = match slot {
        Some(slot) => slot
            .lend_while(read)
            .await
            .map_err(|_| (Refusal::Busy, false))?,
        None => read.await,
    };
    let bytes = read.map_err(|e| match e {
        BodyError::TooLarge => (Refusal::TooLarge, true),
        BodyError::Missing => (Refusal::BodyRequired, false),
        BodyError::TimedOut => (Refusal::TimedOut, true),
        BodyError::Broken => (Refusal::InvalidPayload, true),
    })?;
    VisitorPayload::from_slice(&bytes).map_err(|_| (Refusal::InvalidPayload, false))
}

/// Identifies the payload and writes the endpoint's answer with its cookie.
async fn identify(
    janitor: &Inner,
    parts: &Parts,
    payload: &VisitorPayload,
) -> Result<(Response, IdentifiedVisitor), Refusal> {
    let (identified, observation) =
        identify_observed(janitor, parts, payload, Route::Endpoint).await?;
    let identity = identified.identity();
    let mut response = if janitor.config.endpoint.expose_client_scores() {
        // Development only: the verdict beside the identity, as the page shows the risk status.
        response::json(
            StatusCode::OK,
            &Exposed {
                identity,
                automation: identified.automation(),
            },
        )
    } else {
        response::json(
            StatusCode::OK,
            &Minimal {
                visitor_id: identity.visitor_id.as_str(),
                is_returning: identity.is_returning,
            },
        )
    };
    response
        .headers_mut()
        .insert(SET_COOKIE, identified.set_cookie().clone());
    if let Some(line) = learning::observe(janitor, parts, observation).await {
        response.headers_mut().append(SET_COOKIE, line);
    }
    Ok((response, identified))
}

/// For a request on any route: claims the quotas of `context`, whether or not the request carries a payload,
/// then identifies `payload` (when there is one) with the request's `__visitor` cookie.
pub(crate) async fn identify_parts(
    janitor: &Inner,
    parts: &Parts,
    context: &VisitorContext,
    payload: Option<&VisitorPayload>,
) -> Result<Option<IdentifiedVisitor>, Refusal> {
    let identified = async {
        claim_quota(janitor, parts, context).await?;
        match payload {
            Some(payload) => identify_visitor(janitor, parts, payload, Route::Application)
                .await
                .map(Some),
            None => Ok(None),
        }
    };
    identified
        .await
        .inspect_err(|refusal| telemetry::refused(*refusal))
}

/// The digest of the request's network: `None` when nobody is named, a fresh one that matches no other when
/// the forwarding headers cannot be read or conflict (see [`NetworkDigest::unplaced`]).
fn network_digest(parts: &Parts, config: &JanitorConfig) -> Option<NetworkDigest> {
    match crate::origin::client_address(parts, &config.origin) {
        ClientAddress::Known(address) => Some(NetworkDigest::of(&config.key, address)),
        ClientAddress::Unnamed => None,
        ClientAddress::Unreadable => Some(NetworkDigest::unplaced(&config.key)),
    }
}

/// Where an identification runs, which decides what a bad extended-signals header does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// The identify endpoint: a bad header is refused as an invalid payload, as a bad payload is.
    Endpoint,
    /// A route of the application (a sign-in form): a bad header means no extended signals, never a failed
    /// form, as the tolerant payload field means no payload.
    Application,
}

/// The engine on `payload` with the cookie of `parts` (and, with network evidence, the digest of the client's
/// network; with extended signals, those of its header), and the cookie to set.
pub(crate) async fn identify_visitor(
    janitor: &Inner,
    parts: &Parts,
    payload: &VisitorPayload,
    route: Route,
) -> Result<IdentifiedVisitor, Refusal> {
    identify_observed(janitor, parts, payload, route)
        .await
        .map(|(identified, _)| identified)
}

/// [`identify_visitor`], with the payload as the engine normalised it, for what else reads the request.
async fn identify_observed(
    janitor: &Inner,
    parts: &Parts,
    payload: &VisitorPayload,
    route: Route,
) -> Result<(IdentifiedVisitor, Observation), Refusal> {
    let config = &janitor.config;
    let cookie = cookie::visitor(&parts.headers);
    let network = match config.network_evidence() {
        true => network_digest(parts, config),
        false => None,
    };
    // Off, the header is ignored rather than refused: an enabled client may reach a server that is not.
    let extended = match (config.extended_signals(), route) {
        (false, _) => None,
        (true, Route::Endpoint) => extended::extended_signals(&parts.headers)?,
        // Logged at debug where it was read.
        (true, Route::Application) => extended::extended_signals(&parts.headers).unwrap_or(None),
    };
    let request = IdentifyRequest::new(payload, janitor.clock.now_ms())
        .with_cookie(cookie.as_ref())
        .with_network(network)
        .with_extended(extended);
    let span = tracing::info_span!(
        "janitor.identify",
        outcome = tracing::field::Empty,
        risk_status = tracing::field::Empty
    );
    let started = std::time::Instant::now();
    // Boxed: the engine's future is kilobytes, and each layer above would otherwise carry and move it whole.
    let identification = Box::pin(janitor.engine.identify_request(request))
        .instrument(span.clone())
        .await
        .map_err(|e| match e {
            IdentifyError::Storage(StoreError::Invalid(_)) => {
                // The payload passed validation yet the store refused a value of it: a validation gap.
                tracing::warn!(parent: &span, error = %e, "the store refused a value of a valid payload");
                Refusal::InvalidPayload
            }
            e => {
                tracing::debug!(parent: &span, error = %e, "identification failed");
                Refusal::Unavailable
            }
        })?;
    span.in_scope(|| {
        telemetry::identified(
            &identification.metrics,
            &identification.identity,
            started.elapsed(),
        )
    });
    let (identity, observation) = (identification.identity, identification.observation);
    let automation = config
        .automation_verdict()
        .then(|| automation::verdict(parts, Some(payload), route == Route::Application));
    let line = cookie::set_cookie(
        &identity.visitor_id,
        config.cookie.secure(),
        config.cookie_max_age_secs(),
    );
    // The line is ours: a visitor id, fixed attributes and a number, all visible ASCII.
    let set_cookie = HeaderValue::from_str(&line).map_err(|_| Refusal::Unavailable)?;
    Ok((
        IdentifiedVisitor::new(identity, set_cookie, automation),
        observation,
    ))
}

/// The answer with client scores exposed (development): the identity's fields, and the automation verdict when
/// it is on.
#[derive(Serialize)]
struct Exposed<'a> {
    #[serde(flatten)]
    identity: &'a Identity,
    #[serde(skip_serializing_if = "Option::is_none")]
    automation: Option<&'a janitor_core::automation::Automation>,
}

/// The default answer: what the browser needs, nothing it could use to probe the matcher.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Minimal<'a> {
    visitor_id: &'a str,
    is_returning: bool,
}

/// The refusal's answer, asking the client to close the connection when `close`.
fn refuse(refusal: Refusal, close: bool) -> Response {
    let mut response = refusal.into_response();
    if close {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Answers a request whose body was not read: a small declared body is drained so the connection can serve the
/// next request; a large or unbounded one asks to close it (the admission layer's rule and limits).
async fn refuse_unread(
    parts: &Parts,
    body: Body,
    config: &AdmissionConfig,
    refusal: Refusal,
) -> Response {
    let mut request = Request::new(body);
    *request.version_mut() = parts.version;
    *request.headers_mut() = parts.headers.clone();
    let close = settle_unread(request, config).await;
    refuse(refusal, close)
}

/// The media type, lower-cased and without parameters, is `application/json`.
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every layer above the endpoint (the handler, the router, the admission layer) moves its future at
    /// least once per request: what only some requests need (a cookieless lookup, learning) is boxed where
    /// it starts, so a cookie visit does not copy kilobytes it never uses.
    #[test]
    fn the_endpoint_future_stays_small() {
        let janitor = crate::Janitor::new(
            crate::JanitorConfig::builder()
                .secret("q7Ww2-zP9kLm4Rt8Yx3Bn6Vc1Hj5Gf0Ds!Ae")
                .build()
                .expect("a valid configuration"),
            janitor_core::MemoryStores::new(),
        );
        let future = handle(&janitor.inner, Request::new(Body::empty()));
        let size = std::mem::size_of_val(&future);
        // 9,128 bytes before the boxes.
        assert!(size <= 3_072, "the endpoint's future is {size} bytes");
    }
}
