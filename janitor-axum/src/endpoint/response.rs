//! The endpoint's JSON answer, with the headers every answer of the endpoint carries.

use axum::body::Body;
use axum::response::Response;
use http::header::{HeaderValue, CONTENT_TYPE};
use http::StatusCode;
use serde::Serialize;

use crate::refusal::security_headers;

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
