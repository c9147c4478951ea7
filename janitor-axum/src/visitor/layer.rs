//! The visitor layer: claims an application route's quotas and identifies the payload its JSON body
//! carries, before the handler.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{to_bytes, Body};
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::header::SET_COOKIE;
use http::request::Parts;
use serde_json::Value;
use tower::{Layer, Service};

use super::{Visitor, VisitorField};
use crate::admission::AdmissionSlot;
use crate::config::MAX_BODY_BYTES;
use crate::refusal::Refusal;
use crate::{Janitor, VisitorContext};

/// The field of a JSON body that holds the browser's payload (what the browser client's `collect()` returns).
pub const PAYLOAD_FIELD: &str = "visitor";

/// How the layer finds a request's [`VisitorContext`]: from its parts and its JSON body (`Value::Null` when
/// the body is not JSON).
pub type ContextFn = dyn Fn(&Parts, &Value) -> VisitorContext + Send + Sync;

/// Wraps an application's routes in an [`VisitorService`]. Made by
/// [`Janitor::visitor_layer`](crate::Janitor::visitor_layer).
///
/// Each request's quotas are claimed with the [`VisitorContext`] the layer's [`context`](Self::context)
/// function gives: by default the one the application's own middleware attached as a request extension, or
/// none (the global counter only).
#[derive(Clone)]
pub struct VisitorLayer {
    janitor: Janitor,
    context: Arc<ContextFn>,
}

impl VisitorLayer {
    pub(crate) fn new(janitor: Janitor) -> Self {
        VisitorLayer {
            janitor,
            context: Arc::new(extension_context),
        }
    }

    /// Finds each request's context with `context`, from its parts and its JSON body: the account being
    /// signed into keys the account quota, so guesses at one account's password are counted wherever they
    /// come from, with or without a payload.
    ///
    /// ```
    /// use janitor_axum::{Janitor, JanitorConfig, MemoryStores, VisitorContext};
    ///
    /// # let config = JanitorConfig::builder().secret("a-secret-of-at-least-32-bytes-0123456789").build().unwrap();
    /// let janitor = Janitor::new(config, MemoryStores::new());
    /// let layer = janitor.visitor_layer().context(|_parts, body| {
    ///     body["username"]
    ///         .as_str()
    ///         .and_then(|name| VisitorContext::for_account(name).ok())
    ///         .unwrap_or_default()
    /// });
    /// ```
    pub fn context<F>(mut self, context: F) -> Self
    where
        F: Fn(&Parts, &Value) -> VisitorContext + Send + Sync + 'static,
    {
        self.context = Arc::new(context);
        self
    }
}

/// The context the application attached to the request, or none.
fn extension_context(parts: &Parts, _body: &Value) -> VisitorContext {
    parts
        .extensions
        .get::<VisitorContext>()
        .cloned()
        .unwrap_or_default()
}

impl std::fmt::Debug for VisitorLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VisitorLayer").finish_non_exhaustive()
    }
}

impl<I> Layer<I> for VisitorLayer {
    type Service = VisitorService<I>;

    fn layer(&self, inner: I) -> Self::Service {
        VisitorService {
            inner,
            layer: self.clone(),
        }
    }
}

/// A service that, for every request, claims the quotas of its context and answers a spent quota (429 with
/// `Retry-After`) or an unavailable quota store (503) itself; then, for a JSON body with a
/// [`PAYLOAD_FIELD`], identifies the payload, hands the handler a [`Visitor`] (as a request extension
/// and an extractor) and appends the `__visitor` cookie to the handler's response. Requests without a payload
/// reach the handler with [`Visitor::Absent`].
///
/// A JSON body is read whole (at most 65,536 bytes, within the endpoint's request timeout) and passed on
/// unchanged; a larger or slower body is refused with 413 or 408 before the handler. Refusals are worded for
/// a route ([`Refusal::for_route`]). The origin is not checked: add [`OriginLayer`](crate::OriginLayer).
pub struct VisitorService<I> {
    inner: I,
    layer: VisitorLayer,
}

impl<I: Clone> Clone for VisitorService<I> {
    fn clone(&self) -> Self {
        VisitorService {
            inner: self.inner.clone(),
            layer: self.layer.clone(),
        }
    }
}

impl<I> Service<Request> for VisitorService<I>
where
    I: Service<Request, Response = Response> + Clone + Send + 'static,
    I::Future: Send,
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
        let layer = self.layer.clone();
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let (body, document) = match read_json(&parts, body, &layer.janitor).await {
                Ok(read) => read,
                Err(refusal) => return Ok(refusal.for_route().into_response()),
            };
            let document = document.unwrap_or(Value::Null);
            let context = (layer.context)(&parts, &document);
            if let Err(refusal) = layer.janitor.claim_quota(&parts, &context).await {
                return Ok(refusal.for_route().into_response());
            }
            let field = document
                .get(PAYLOAD_FIELD)
                .map_or(VisitorField::Missing, VisitorField::from_value);
            let mut set_cookie = None;
            let identity = match field {
                VisitorField::Missing => Visitor::Absent,
                VisitorField::Invalid => Visitor::Refused(Refusal::InvalidPayload),
                VisitorField::Valid(payload) => {
                    match layer.janitor.identify_visitor(&parts, &payload).await {
                        Ok(identified) => {
                            set_cookie = Some(identified.set_cookie().clone());
                            Visitor::Identified(identified.into_identity())
                        }
                        Err(refusal) => Visitor::Refused(refusal),
                    }
                }
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

/// The body to pass on, and its JSON document: `None` when the request is not declared JSON or its body does
/// not parse (the handler's own extractor answers that).
async fn read_json(
    parts: &Parts,
    body: Body,
    janitor: &Janitor,
) -> Result<(Body, Option<Value>), Refusal> {
    if !crate::endpoint::is_json(&parts.headers) {
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
    let document = serde_json::from_slice::<Value>(&bytes).ok();
    Ok((Body::from(bytes), document))
}
