//! The visitor on the application's own routes: a login, a checkout or a comment form carries the browser's
//! payload beside its own data (the browser client's `collect()`), and server code identifies it there.
//!
//! Three ways, from the most explicit:
//!
//! - [`Janitor::identify_parts`](crate::Janitor::identify_parts) with the request's parts, the
//!   [`VisitorContext`] the route knows (the account being signed into) and the payload
//!   the handler read, if any (a form field of type [`VisitorField`] tolerates a missing or invalid payload):
//!   it claims the quotas whether or not there is a payload, and the [`IdentifiedVisitor`] it returns carries the
//!   private identity and, as response parts, the cookie to set.
//!   [`Janitor::claim_quota`](crate::Janitor::claim_quota) claims the quotas alone.
//! - [`Janitor::visitor_layer`](crate::Janitor::visitor_layer) on the application's routes: it claims the
//!   quotas of every request (with a context it reads from the request, see [`VisitorLayer::context`]),
//!   refuses a spent quota itself, identifies the `visitor` field of a JSON body before the handler runs, hands
//!   the handler a [`Visitor`], and sets the cookie on the handler's response.
//! - [`Janitor::assess`](crate::Janitor::assess) for a request that is the endpoint's own.
//!
//! None of them checks the request's origin: put the application's state-changing routes behind
//! [`Janitor::origin_layer`](crate::Janitor::origin_layer) as well.

mod cookie;
mod field;
mod layer;

use axum::extract::FromRequestParts;
use axum::response::{IntoResponse, IntoResponseParts, Response, ResponseParts};
use http::header::{HeaderValue, SET_COOKIE};
use http::request::Parts;
use http::StatusCode;
use janitor_core::automation::Automation;
use janitor_core::Identity;

use crate::refusal::Refusal;

pub use crate::endpoint::learning::{LearningContext, LEARNING_COOKIE_NAME};
pub use crate::endpoint::VisitorContext;
pub use cookie::ClearVisitorCookie;
pub use field::VisitorField;
pub use layer::{ContextFn, VisitorLayer, VisitorService, PAYLOAD_FIELD};

/// A browser identified on a route of the application: its private identity, and the `__visitor` cookie to
/// set, which it adds to a response as response parts.
#[derive(Debug, Clone)]
pub struct IdentifiedVisitor {
    identity: Identity,
    set_cookie: HeaderValue,
    automation: Option<Automation>,
}

impl IdentifiedVisitor {
    pub(crate) fn new(
        identity: Identity,
        set_cookie: HeaderValue,
        automation: Option<Automation>,
    ) -> IdentifiedVisitor {
        IdentifiedVisitor {
            identity,
            set_cookie,
            automation,
        }
    }

    /// The automation verdict with its reasons, when the configuration turns it on
    /// ([`automation_verdict`](crate::config::JanitorConfigBuilder::automation_verdict)).
    pub fn automation(&self) -> Option<&Automation> {
        self.automation.as_ref()
    }

    /// Confidence, risk, risk status and browser match, for the application's own decisions.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The identity, taken out.
    pub fn into_identity(self) -> Identity {
        self.identity
    }

    /// The identity and the automation verdict, taken out.
    pub(crate) fn into_assessed(self) -> (Identity, Option<Automation>) {
        (self.identity, self.automation)
    }

    /// The `Set-Cookie` value the response must carry so the browser keeps its id.
    pub fn set_cookie(&self) -> &HeaderValue {
        &self.set_cookie
    }
}

/// Appends the `__visitor` cookie.
impl IntoResponseParts for IdentifiedVisitor {
    type Error = std::convert::Infallible;

    fn into_response_parts(self, mut parts: ResponseParts) -> Result<ResponseParts, Self::Error> {
        parts.headers_mut().append(SET_COOKIE, self.set_cookie);
        Ok(parts)
    }
}

/// What the [visitor layer](VisitorLayer) found for a request; an extractor for handlers behind it.
#[derive(Debug, Clone)]
pub enum Visitor {
    /// The payload was identified (the layer sets the cookie on the response).
    Identified(Identity),
    /// The payload was refused: invalid, or the store was unavailable. The handler decides whether that stops
    /// the request (a spent quota never reaches the handler: the layer answers it).
    Refused(Refusal),
    /// The request carried no payload.
    Absent,
}

impl Visitor {
    /// The identity, when there is one.
    pub fn identity(&self) -> Option<&Identity> {
        match self {
            Visitor::Identified(identity) => Some(identity),
            _ => None,
        }
    }
}

/// Reads what the visitor layer left. Without the layer on the route it is a mistake in the application, not
/// an absent payload: the extractor refuses with [`MissingVisitorLayer`] (500) and logs why.
impl<S: Send + Sync> FromRequestParts<S> for Visitor {
    type Rejection = MissingVisitorLayer;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Visitor>()
            .cloned()
            .ok_or(MissingVisitorLayer)
    }
}

/// The rejection of the [`Visitor`] extractor on a route that [`VisitorLayer`] does not wrap: 500,
/// logged as an error naming the fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissingVisitorLayer;

impl std::fmt::Display for MissingVisitorLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "Visitor was extracted on a route without the visitor layer: add \
             `.route_layer(janitor.visitor_layer())` to the routes whose handlers read it",
        )
    }
}

impl std::error::Error for MissingVisitorLayer {}

impl IntoResponse for MissingVisitorLayer {
    fn into_response(self) -> Response {
        tracing::error!("{self}");
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Missing request extension: the visitor layer is not on this route",
        )
            .into_response()
    }
}
