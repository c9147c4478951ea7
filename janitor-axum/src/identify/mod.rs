//! The identify endpoint: the checks of the Janitor contract, in their order, then the engine and the cookie.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::header::{HeaderValue, CONNECTION, CONTENT_TYPE, HOST, ORIGIN, RETRY_AFTER, SET_COOKIE};
use http::{HeaderMap, Method, StatusCode};
use janitor_core::protection::quota::{Admission, AdmissionContext};
use janitor_core::{Evaluator, Identity, VisitorPayload};
use serde::Serialize;

use crate::admission::{settle_unread, AdmissionConfig};
use crate::janitor::Inner;
use crate::Backend;

mod body;
pub(crate) mod cookie;
pub mod response;

use body::BodyError;
use response::{error, json, message};

/// Account and session ids that server code attaches to a request (as an extension, e.g. from its session
/// middleware) so that their quotas apply. Never taken from the request body or headers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VisitorContext {
    /// The signed-in account, if any (1–512 characters).
    pub account: Option<String>,
    /// The application's session, if any (1–512 characters).
    pub session: Option<String>,
}

/// The default answer: what the browser needs, nothing it could use to probe the matcher.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Minimal<'a> {
    visitor_id: &'a str,
    is_returning: bool,
}

/// Runs the endpoint on one request; the identity is returned too, for [`assess`](crate::Janitor::assess).
pub(crate) async fn handle<B: Backend, E: Evaluator>(
    janitor: &Inner<B, E>,
    request: Request,
) -> (Response, Option<Identity>) {
    let (parts, body) = request.into_parts();
    let config = &janitor.config;
    let early = if parts.uri.path() != config.endpoint_path {
        Some(error(StatusCode::NOT_FOUND, message::NOT_FOUND))
    } else if parts.method != Method::POST {
        let mut response = error(StatusCode::METHOD_NOT_ALLOWED, message::METHOD);
        response
            .headers_mut()
            .insert(http::header::ALLOW, HeaderValue::from_static("POST"));
        Some(response)
    } else if is_cross_origin(&parts.headers, parts.uri.authority().map(|a| a.as_str())) {
        Some(error(StatusCode::FORBIDDEN, message::CROSS_ORIGIN))
    } else if !is_json(&parts.headers) {
        Some(error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            message::MEDIA_TYPE,
        ))
    } else if !config.cookie_secure && !host(&parts).is_some_and(cookie::is_loopback) {
        Some(error(StatusCode::BAD_REQUEST, message::INSECURE_COOKIE))
    } else {
        None
    };
    if let Some(response) = early {
        return (
            finish_unread(&parts, body, &config.admission, response).await,
            None,
        );
    }

    if let Some(quotas) = &janitor.quotas {
        let context = parts.extensions.get::<VisitorContext>();
        let admission = match context {
            Some(c) => AdmissionContext::new(c.account.as_deref(), c.session.as_deref()),
            None => Ok(AdmissionContext::anonymous()),
        };
        // A malformed context is the application's mistake: refuse rather than count it as anonymous.
        let Ok(admission) = admission else {
            tracing::error!(
                "the request's VisitorContext has an account or session outside 1-512 characters"
            );
            let response = error(StatusCode::SERVICE_UNAVAILABLE, message::UNAVAILABLE);
            return (
                finish_unread(&parts, body, &config.admission, response).await,
                None,
            );
        };
        match quotas
            .admit(&admission, janitor_core::engine::now_ms())
            .await
        {
            Ok(Admission::Allowed) => {}
            Ok(Admission::Limited {
                retry_after_secs, ..
            }) => {
                let mut response = error(StatusCode::TOO_MANY_REQUESTS, message::RATE_LIMITED);
                response
                    .headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from(retry_after_secs));
                return (
                    finish_unread(&parts, body, &config.admission, response).await,
                    None,
                );
            }
            Err(e) => {
                tracing::warn!(error = %e, "quota storage failed");
                let response = error(StatusCode::SERVICE_UNAVAILABLE, message::UNAVAILABLE);
                return (
                    finish_unread(&parts, body, &config.admission, response).await,
                    None,
                );
            }
        }
    }

    if body::check_declared_length(&parts.headers, config.max_body_bytes).is_err() {
        let response = error(StatusCode::PAYLOAD_TOO_LARGE, message::TOO_LARGE);
        return (
            finish_unread(&parts, body, &config.admission, response).await,
            None,
        );
    }
    let timeout = Duration::from_millis(config.request_timeout_ms);
    let bytes = match body::read(body, config.max_body_bytes, timeout).await {
        Ok(bytes) => bytes,
        Err(e) => {
            let (status, text) = match e {
                BodyError::TooLarge => (StatusCode::PAYLOAD_TOO_LARGE, message::TOO_LARGE),
                BodyError::Missing => (StatusCode::BAD_REQUEST, message::BODY_REQUIRED),
                BodyError::TimedOut => (StatusCode::REQUEST_TIMEOUT, message::TIMED_OUT),
                BodyError::Broken => (StatusCode::BAD_REQUEST, message::INVALID),
            };
            let mut response = error(status, text);
            if e != BodyError::Missing {
                // Part of the body may still be on the wire.
                response
                    .headers_mut()
                    .insert(CONNECTION, HeaderValue::from_static("close"));
            }
            return (response, None);
        }
    };
    let Ok(payload) = VisitorPayload::from_slice(&bytes) else {
        return (error(StatusCode::BAD_REQUEST, message::INVALID), None);
    };

    let cookie = cookie::visitor(&parts.headers);
    let identification = match janitor.engine.identify(&payload, cookie.as_ref()).await {
        Ok(identification) => identification,
        Err(e) => {
            tracing::warn!(error = %e, "identification failed");
            return (
                error(StatusCode::SERVICE_UNAVAILABLE, message::UNAVAILABLE),
                None,
            );
        }
    };
    let identity = identification.identity;
    let mut response = if config.expose_client_scores {
        json(StatusCode::OK, &identity)
    } else {
        json(
            StatusCode::OK,
            &Minimal {
                visitor_id: identity.visitor_id.as_str(),
                is_returning: identity.is_returning,
            },
        )
    };
    let line = cookie::set_cookie(
        &identity.visitor_id,
        config.cookie_secure,
        config.cookie_max_age_secs(),
    );
    if let Ok(value) = HeaderValue::from_str(&line) {
        response.headers_mut().insert(SET_COOKIE, value);
    }
    (response, Some(identity))
}

/// The request's host: the URI authority (HTTP/2, absolute-form) or the `Host` header.
fn host(parts: &http::request::Parts) -> Option<&str> {
    parts
        .uri
        .authority()
        .map(|a| a.as_str())
        .or_else(|| parts.headers.get(HOST).and_then(|h| h.to_str().ok()))
}

/// An `Origin` other than this host (`null` included), or `Sec-Fetch-Site: cross-site`.
///
/// The comparison is on the authority (host and port): the scheme a proxy terminated is not visible here.
fn is_cross_origin(headers: &HeaderMap, authority: Option<&str>) -> bool {
    if headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"cross-site"))
    {
        return true;
    }
    let Some(origin) = headers.get(ORIGIN) else {
        return false;
    };
    let own = authority.or_else(|| headers.get(HOST).and_then(|h| h.to_str().ok()));
    let origin_authority = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .map(|(_, rest)| rest);
    match (origin_authority, own) {
        (Some(theirs), Some(ours)) => !theirs.eq_ignore_ascii_case(ours),
        _ => true,
    }
}

/// The media type, lower-cased and without parameters, is `application/json`.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Answers a request whose body was not read: a small declared body is drained so the connection can serve the
/// next request; a large or unbounded one asks to close it (the admission layer's rule and limits).
async fn finish_unread(
    parts: &http::request::Parts,
    body: Body,
    config: &AdmissionConfig,
    mut response: Response,
) -> Response {
    let mut request = Request::new(body);
    *request.version_mut() = parts.version;
    *request.headers_mut() = parts.headers.clone();
    if settle_unread(request, config).await {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
