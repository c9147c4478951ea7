//! JSON answers with the headers every answer of the endpoint carries.

use axum::body::Body;
use axum::response::Response;
use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE, VARY, X_CONTENT_TYPE_OPTIONS};
use http::StatusCode;
use serde::Serialize;

/// The endpoint's answers for each refusal. Error bodies are fixed texts: they never echo the request.
pub(crate) mod message {
    pub const NOT_FOUND: &str = "Not found";
    pub const METHOD: &str = "Method not allowed";
    pub const CROSS_ORIGIN: &str = "Cross-origin requests are not allowed";
    pub const MEDIA_TYPE: &str = "Content-Type must be application/json";
    pub const INSECURE_COOKIE: &str = "Insecure cookies require localhost";
    pub const RATE_LIMITED: &str = "Visitor measurement rate limited";
    pub const TOO_LARGE: &str = "Request body too large";
    pub const BODY_REQUIRED: &str = "JSON body required";
    pub const TIMED_OUT: &str = "Request body timed out";
    pub const INVALID: &str = "Invalid visitor payload";
    pub const UNAVAILABLE: &str = "Visitor storage is unavailable";
}

/// Adds `Cache-Control: private, no-store`, `Vary: Cookie, Origin, Authorization` and
/// `X-Content-Type-Options: nosniff`.
pub fn security_headers(headers: &mut http::HeaderMap) {
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("private, no-store"));
    headers.insert(
        VARY,
        HeaderValue::from_static("Cookie, Origin, Authorization"),
    );
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
}

/// A JSON answer with the security headers.
pub(crate) fn json(status: StatusCode, body: &impl Serialize) -> Response {
    // Serializing our own answer types cannot fail; an empty object is the safe fallback anyway.
    let bytes = serde_json::to_vec(body).unwrap_or_else(|_| b"{}".to_vec());
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    security_headers(response.headers_mut());
    response
}

/// `{"error": message}` with `status`.
pub(crate) fn error(status: StatusCode, message: &'static str) -> Response {
    json(status, &serde_json::json!({ "error": message }))
}
