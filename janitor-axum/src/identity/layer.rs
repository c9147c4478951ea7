//! The identity layer: identifies the payload an application route's JSON body carries, before the handler.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::{CONTENT_TYPE, SET_COOKIE};
use janitor_core::{Evaluator, Stores, VisitorPayload};
use tower::{Layer, Service};

use super::VisitorIdentity;
use crate::admission::AdmissionSlot;
use crate::config::MAX_BODY_BYTES;
use crate::refusal::Refusal;
use crate::Janitor;

/// The field of a JSON body that holds the browser's payload (what the browser client's `collect()` returns).
pub const PAYLOAD_FIELD: &str = "visitor";

/// Wraps an application's routes in an [`IdentityService`]. Made by
/// [`Janitor::identity_layer`](crate::Janitor::identity_layer).
pub struct IdentityLayer<S: Stores, E: Evaluator> {
    janitor: Janitor<S, E>,
}

impl<S: Stores, E: Evaluator> IdentityLayer<S, E> {
    pub(crate) fn new(janitor: Janitor<S, E>) -> Self {
        IdentityLayer { janitor }
    }
}

impl<S: Stores, E: Evaluator> Clone for IdentityLayer<S, E> {
    fn clone(&self) -> Self {
        IdentityLayer {
            janitor: self.janitor.clone(),
        }
    }
}

impl<S: Stores, E: Evaluator> std::fmt::Debug for IdentityLayer<S, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityLayer").finish_non_exhaustive()
    }
}

impl<I, S: Stores, E: Evaluator> Layer<I> for IdentityLayer<S, E> {
    type Service = IdentityService<I, S, E>;

    fn layer(&self, inner: I) -> Self::Service {
        IdentityService {
            inner,
            janitor: self.janitor.clone(),
        }
    }
}

/// A service that, for a JSON request whose body holds a [`PAYLOAD_FIELD`], identifies the payload, hands the
/// handler a [`VisitorIdentity`] (as a request extension and an extractor) and appends the `__visitor` cookie
/// to the handler's response. Other requests pass with [`VisitorIdentity::Absent`].
///
/// The body is read whole (at most 65,536 bytes, within the endpoint's request timeout) and passed on
/// unchanged; a larger or slower body is refused with 413 or 408 before the handler.
pub struct IdentityService<I, S: Stores, E: Evaluator> {
    inner: I,
    janitor: Janitor<S, E>,
}

impl<I: Clone, S: Stores, E: Evaluator> Clone for IdentityService<I, S, E> {
    fn clone(&self) -> Self {
        IdentityService {
            inner: self.inner.clone(),
            janitor: self.janitor.clone(),
        }
    }
}

impl<I, S, E> Service<Request> for IdentityService<I, S, E>
where
    I: Service<Request, Response = Response> + Clone + Send + 'static,
    I::Future: Send,
    S: Stores,
    E: Evaluator + 'static,
{
    type Response = Response;
    type Error = I::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response, I::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The clone that was polled ready serves this request; the fresh one waits for the next.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let janitor = self.janitor.clone();
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let (body, payload) = match take_payload(&parts, body, &janitor).await {
                Ok(read) => read,
                Err(refusal) => return Ok(refusal.into_response()),
            };
            let mut set_cookie = None;
            let identity = match payload {
                None => VisitorIdentity::Absent,
                Some(Err(refusal)) => VisitorIdentity::Refused(refusal),
                Some(Ok(payload)) => match janitor.identify_parts(&parts, &payload).await {
                    Ok(identified) => {
                        set_cookie = Some(identified.set_cookie().clone());
                        VisitorIdentity::Identified(identified.into_identity())
                    }
                    Err(refusal) => VisitorIdentity::Refused(refusal),
                },
            };
            parts.extensions.insert(identity);
            let mut response = inner.call(Request::from_parts(parts, body)).await?;
            if let Some(cookie) = set_cookie {
                response.headers_mut().append(SET_COOKIE, cookie);
            }
            Ok(response)
        })
    }
}

/// The body to pass on, and the payload it carries: `None` when the request is not JSON or has no payload
/// field, `Some(Err)` when the field does not validate.
async fn take_payload<S: Stores, E: Evaluator + 'static>(
    parts: &http::request::Parts,
    body: Body,
    janitor: &Janitor<S, E>,
) -> Result<(Body, Option<Result<VisitorPayload, Refusal>>), Refusal> {
    let json = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"));
    if !json {
        return Ok((body, None));
    }
    let timeout = janitor.config().endpoint().request_timeout();
    let read = tokio::time::timeout(timeout, to_bytes(body, MAX_BODY_BYTES.max));
    // Behind the admission layer a slow body is awaited with the slot lent back, as on the endpoint.
    let read = match parts.extensions.get::<AdmissionSlot>() {
        Some(slot) => slot.lend_while(read).await.map_err(|_| Refusal::Busy)?,
        None => read.await,
    };
    let bytes: Bytes = match read {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => return Err(Refusal::TooLarge),
        Err(_) => return Err(Refusal::TimedOut),
    };
    let payload = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|mut document| document.get_mut(PAYLOAD_FIELD).map(serde_json::Value::take))
        .map(|field| VisitorPayload::from_value(&field).map_err(|_| Refusal::InvalidPayload));
    Ok((Body::from(bytes), payload))
}
