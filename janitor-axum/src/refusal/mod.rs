//! Every answer of the endpoint that is not an identification: one variant per reason, each carrying its status,
//! its fixed message and its own headers (`Allow`, `Retry-After`), written once for the endpoint and the
//! admission layer alike.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::{
    HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_TYPE, RETRY_AFTER, VARY, X_CONTENT_TYPE_OPTIONS,
};
use http::{HeaderMap, StatusCode};

mod rate_limit;
mod route;

pub use rate_limit::RateLimitPolicy;
pub use route::RouteRefusal;

/// Why a request got no identification. Bodies are `{"error": message}` with fixed texts that never echo the
/// request; every answer carries the [security headers](security_headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The path is not the endpoint's: 404.
    NotFound,
    /// Not a `POST`: 405 with `Allow: POST`.
    MethodNotAllowed,
    /// More than one `Host` header (RFC 9112 §3.2 asks for 400): 400.
    AmbiguousHost,
    /// An `Origin` other than the host, or `Sec-Fetch-Site: cross-site`: 403.
    CrossOrigin,
    /// The body is not declared as `application/json`: 415.
    UnsupportedMediaType,
    /// Insecure cookies are configured and the host is not loopback: 400.
    InsecureCookie,
    /// A request quota is full: 429 with `Retry-After` and, when the configuration asks for them, the IETF
    /// `RateLimit-Policy` and `RateLimit` fields.
    RateLimited {
        /// Whole seconds until the quota has room, at least 1.
        retry_after_secs: u64,
        /// The spent counter, when its fields are to be sent.
        policy: Option<RateLimitPolicy>,
    },
    /// The body is, or declares to be, larger than allowed: 413.
    TooLarge,
    /// The body is empty: 400.
    BodyRequired,
    /// The body did not arrive in time: 408.
    TimedOut,
    /// The body is not a valid payload (or the stream broke): 400.
    InvalidPayload,
    /// A store could not answer (or the application's context is malformed): 503 with `Retry-After: 1`.
    Unavailable,
    /// Every admission slot is taken: 503 with `Retry-After: 1`.
    Busy,
}

impl Refusal {
    /// One refusal of each kind (`RateLimited` with one second), for metrics that list every reason.
    pub const ALL: [Refusal; 13] = [
        Refusal::NotFound,
        Refusal::MethodNotAllowed,
        Refusal::AmbiguousHost,
        Refusal::CrossOrigin,
        Refusal::UnsupportedMediaType,
        Refusal::InsecureCookie,
        Refusal::RateLimited {
            retry_after_secs: 1,
            policy: None,
        },
        Refusal::TooLarge,
        Refusal::BodyRequired,
        Refusal::TimedOut,
        Refusal::InvalidPayload,
        Refusal::Unavailable,
        Refusal::Busy,
    ];

    /// The status code.
    pub const fn status(&self) -> StatusCode {
        match self {
            Refusal::NotFound => StatusCode::NOT_FOUND,
            Refusal::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            Refusal::CrossOrigin => StatusCode::FORBIDDEN,
            Refusal::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Refusal::AmbiguousHost
            | Refusal::InsecureCookie
            | Refusal::BodyRequired
            | Refusal::InvalidPayload => StatusCode::BAD_REQUEST,
            Refusal::RateLimited { .. } => StatusCode::TOO_MANY_REQUESTS,
            Refusal::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Refusal::TimedOut => StatusCode::REQUEST_TIMEOUT,
            Refusal::Unavailable | Refusal::Busy => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The message of the `{"error": ...}` body, as the Janitor contract words it.
    pub const fn message(&self) -> &'static str {
        match self {
            Refusal::NotFound => "Not found",
            Refusal::MethodNotAllowed => "Method not allowed",
            Refusal::AmbiguousHost => "Exactly one Host header is required",
            Refusal::CrossOrigin => "Cross-origin requests are not allowed",
            Refusal::UnsupportedMediaType => "Content-Type must be application/json",
            Refusal::InsecureCookie => "Insecure cookies require localhost",
            Refusal::RateLimited { .. } => "Visitor measurement rate limited",
            Refusal::TooLarge => "Request body too large",
            Refusal::BodyRequired => "JSON body required",
            Refusal::TimedOut => "Request body timed out",
            Refusal::InvalidPayload => "Invalid visitor payload",
            Refusal::Unavailable => "Visitor storage is unavailable",
            Refusal::Busy => "Visitor measurement is busy",
        }
    }

    /// A short name for metrics and logs: `not_found`, `method_not_allowed`, `ambiguous_host`, `cross_origin`,
    /// `unsupported_media_type`, `insecure_cookie`, `rate_limited`, `too_large`, `body_required`, `timed_out`,
    /// `invalid_payload`, `unavailable` or `busy`.
    pub const fn reason(&self) -> &'static str {
        match self {
            Refusal::NotFound => "not_found",
            Refusal::MethodNotAllowed => "method_not_allowed",
            Refusal::AmbiguousHost => "ambiguous_host",
            Refusal::CrossOrigin => "cross_origin",
            Refusal::UnsupportedMediaType => "unsupported_media_type",
            Refusal::InsecureCookie => "insecure_cookie",
            Refusal::RateLimited { .. } => "rate_limited",
            Refusal::TooLarge => "too_large",
            Refusal::BodyRequired => "body_required",
            Refusal::TimedOut => "timed_out",
            Refusal::InvalidPayload => "invalid_payload",
            Refusal::Unavailable => "unavailable",
            Refusal::Busy => "busy",
        }
    }

    /// The same refusal worded for a route of the application rather than for the endpoint ("Too many
    /// requests" rather than "Visitor measurement rate limited"), with the same status and headers.
    pub const fn for_route(self) -> RouteRefusal {
        RouteRefusal(self)
    }

    /// The JSON body.
    pub fn body(&self) -> Bytes {
        error_body(self.message())
    }

    /// Writes the answer's headers: content type, the security headers, and the variant's own.
    pub fn write_headers(&self, headers: &mut HeaderMap) {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        security_headers(headers);
        match self {
            Refusal::MethodNotAllowed => {
                headers.insert(ALLOW, HeaderValue::from_static("POST"));
            }
            Refusal::RateLimited {
                retry_after_secs,
                policy,
            } => {
                headers.insert(RETRY_AFTER, HeaderValue::from(*retry_after_secs));
                if let Some(policy) = policy {
                    policy.write_headers(*retry_after_secs, headers);
                }
            }
            // Storage that cannot answer is usually back within seconds (a lost connection, a failover): the
            // client is told when to try again, as for a full admission layer.
            Refusal::Busy | Refusal::Unavailable => {
                headers.insert(RETRY_AFTER, HeaderValue::from_static("1"));
            }
            _ => {}
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        answer(self, self.message())
    }
}

/// The answer to `refusal` with `message` as its `{"error": ...}` body: the endpoint's words or a route's.
fn answer(refusal: Refusal, message: &str) -> Response {
    let mut response = Response::new(Body::from(error_body(message)));
    *response.status_mut() = refusal.status();
    refusal.write_headers(response.headers_mut());
    response
}

/// `{"error": message}`; a message is a fixed text without quotes or backslashes, so it needs no escaping.
fn error_body(message: &str) -> Bytes {
    Bytes::from(format!(r#"{{"error":"{message}"}}"#))
}

/// Adds `Cache-Control: private, no-store`, `Vary: Cookie, Origin, Authorization` and
/// `X-Content-Type-Options: nosniff`: what every JSON answer of the adapter carries.
pub fn security_headers(headers: &mut HeaderMap) {
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    headers.insert(
        VARY,
        HeaderValue::from_static("Cookie, Origin, Authorization"),
    );
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ALL` names every variant: the match has no wildcard, so a new variant fails to compile here until it is
    /// listed, and each variant appears once.
    #[test]
    fn all_lists_every_variant_once() {
        let index = |refusal: &Refusal| match refusal {
            Refusal::NotFound => 0,
            Refusal::MethodNotAllowed => 1,
            Refusal::AmbiguousHost => 2,
            Refusal::CrossOrigin => 3,
            Refusal::UnsupportedMediaType => 4,
            Refusal::InsecureCookie => 5,
            Refusal::RateLimited { .. } => 6,
            Refusal::TooLarge => 7,
            Refusal::BodyRequired => 8,
            Refusal::TimedOut => 9,
            Refusal::InvalidPayload => 10,
            Refusal::Unavailable => 11,
            Refusal::Busy => 12,
        };
        let indexes: Vec<usize> = Refusal::ALL.iter().map(index).collect();
        assert_eq!(indexes, (0..13).collect::<Vec<_>>());
    }

    #[test]
    fn bodies_are_json_with_the_message() {
        for refusal in Refusal::ALL {
            let body: serde_json::Value = serde_json::from_slice(&refusal.body()).unwrap();
            assert_eq!(body, serde_json::json!({ "error": refusal.message() }));
        }
    }

    #[test]
    fn each_answer_carries_its_status_and_headers() {
        for refusal in Refusal::ALL {
            let response = refusal.into_response();
            assert_eq!(response.status(), refusal.status());
            let headers = response.headers();
            assert_eq!(headers[CACHE_CONTROL], "private, no-store");
            assert_eq!(headers[VARY], "Cookie, Origin, Authorization");
            assert_eq!(headers[X_CONTENT_TYPE_OPTIONS], "nosniff");
            assert_eq!(headers[CONTENT_TYPE], "application/json");
            let retry = headers.get(RETRY_AFTER).map(|v| v.to_str().unwrap());
            match refusal {
                Refusal::RateLimited { .. } => assert_eq!(retry, Some("1")),
                Refusal::Busy | Refusal::Unavailable => assert_eq!(retry, Some("1")),
                _ => assert_eq!(retry, None),
            }
            assert_eq!(
                headers.get(ALLOW).is_some(),
                refusal == Refusal::MethodNotAllowed
            );
        }
    }
}
