//! Identity on any route: a login, a checkout or a comment form carries the browser's payload beside its own
//! data (the browser client's `collect()`), and server code identifies it there.
//!
//! Three ways, from the most explicit:
//!
//! - [`Janitor::identify_parts`](crate::Janitor::identify_parts) with the request's parts, the
//!   [`VisitorContext`](crate::VisitorContext) the route knows (the account being signed into) and the payload
//!   the handler read, if any (a form field of type [`VisitorField`] tolerates a missing or invalid payload):
//!   it claims the quotas whether or not there is a payload, and the [`Identified`] it returns carries the
//!   private identity and, as response parts, the cookie to set.
//!   [`Janitor::claim_quota`](crate::Janitor::claim_quota) claims the quotas alone.
//! - [`Janitor::identity_layer`](crate::Janitor::identity_layer) on the application's routes: it claims the
//!   quotas of every request (with a context it reads from the request, see [`IdentityLayer::context`]),
//!   refuses a spent quota itself, identifies the `visitor` field of a JSON body before the handler runs, hands
//!   the handler a [`VisitorIdentity`], and sets the cookie on the handler's response.
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
use janitor_core::Identity;

use crate::refusal::Refusal;

pub use crate::identify::learning::{LearningContext, LEARNING_COOKIE_NAME};
pub use crate::identify::VisitorContext;
pub use cookie::ClearVisitorCookie;
pub use field::VisitorField;
pub use layer::{ContextFn, IdentityLayer, IdentityService, PAYLOAD_FIELD};

/// A browser identified on a route of the application: its private identity, and the `__visitor` cookie to
/// set, which it adds to a response as response parts.
#[derive(Debug, Clone)]
pub struct Identified {
    identity: Identity,
    set_cookie: HeaderValue,
}

impl Identified {
    pub(crate) fn new(identity: Identity, set_cookie: HeaderValue) -> Identified {
        Identified {
            identity,
            set_cookie,
        }
    }

    /// Confidence, risk, risk status and browser match, for the application's own decisions.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The identity, taken out.
    pub fn into_identity(self) -> Identity {
        self.identity
    }

    /// The `Set-Cookie` value the response must carry so the browser keeps its id.
    pub fn set_cookie(&self) -> &HeaderValue {
        &self.set_cookie
    }
}

/// Appends the `__visitor` cookie.
impl IntoResponseParts for Identified {
    type Error = std::convert::Infallible;

    fn into_response_parts(self, mut parts: ResponseParts) -> Result<ResponseParts, Self::Error> {
        parts.headers_mut().append(SET_COOKIE, self.set_cookie);
        Ok(parts)
    }
}

/// What the [identity layer](IdentityLayer) found for a request; an extractor for handlers behind it.
#[derive(Debug, Clone)]
pub enum VisitorIdentity {
    /// The payload was identified (the layer sets the cookie on the response).
    Identified(Identity),
    /// The payload was refused: invalid, or the store was unavailable. The handler decides whether that stops
    /// the request (a spent quota never reaches the handler: the layer answers it).
    Refused(Refusal),
    /// The request carried no payload.
    Absent,
}

impl VisitorIdentity {
    /// The identity, when there is one.
    pub fn identity(&self) -> Option<&Identity> {
        match self {
            VisitorIdentity::Identified(identity) => Some(identity),
            _ => None,
        }
    }
}

/// Reads what the identity layer left. Without the layer on the route it is a mistake in the application, not
/// an absent payload: the extractor refuses with [`MissingIdentityLayer`] (500) and logs why.
impl<S: Send + Sync> FromRequestParts<S> for VisitorIdentity {
    type Rejection = MissingIdentityLayer;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<VisitorIdentity>()
            .cloned()
            .ok_or(MissingIdentityLayer)
    }
}

/// The rejection of the [`VisitorIdentity`] extractor on a route that [`IdentityLayer`] does not wrap: 500,
/// logged as an error naming the fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MissingIdentityLayer;

impl std::fmt::Display for MissingIdentityLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "VisitorIdentity was extracted on a route without the identity layer: add \
             `.route_layer(janitor.identity_layer())` to the routes whose handlers read it",
        )
    }
}

impl std::error::Error for MissingIdentityLayer {}

impl IntoResponse for MissingIdentityLayer {
    fn into_response(self) -> Response {
        tracing::error!("{self}");
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Missing request extension: the identity layer is not on this route",
        )
            .into_response()
    }
}
