//! Identity on any route: a login, a checkout or a comment form carries the browser's payload beside its own
//! data (the browser client's `collect()`), and server code identifies it there.
//!
//! Three ways, from the most explicit:
//!
//! - [`Janitor::identify_parts`](crate::Janitor::identify_parts) with the request's parts and the payload the
//!   handler read (a form field of type [`VisitorPayload`](janitor_core::VisitorPayload) validates as strictly
//!   as the endpoint): the [`Identified`] it returns carries the private identity and, as response parts, the
//!   cookie to set.
//! - [`Janitor::identity_layer`](crate::Janitor::identity_layer) on the application's routes: it reads the
//!   `visitor` field of a JSON body, identifies it before the handler runs, hands the handler a
//!   [`VisitorIdentity`], and sets the cookie on the handler's response. Handlers stay free of the handle's
//!   type parameters.
//! - [`Janitor::assess`](crate::Janitor::assess) for a request that is the endpoint's own.
//!
//! Quotas apply as on the endpoint, with the [`VisitorContext`](crate::VisitorContext) the request carries.

mod layer;

use axum::extract::FromRequestParts;
use axum::response::{IntoResponseParts, ResponseParts};
use http::header::{HeaderValue, SET_COOKIE};
use http::request::Parts;
use janitor_core::Identity;

use crate::refusal::Refusal;

pub use layer::{IdentityLayer, IdentityService, PAYLOAD_FIELD};

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
    /// The payload was refused: invalid, over a quota, or the store was unavailable. The handler decides
    /// whether that stops the request.
    Refused(Refusal),
    /// The request carried no payload, or no identity layer ran.
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

/// Reads what the identity layer left; never fails ([`VisitorIdentity::Absent`] without the layer).
impl<S: Send + Sync> FromRequestParts<S> for VisitorIdentity {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<VisitorIdentity>()
            .cloned()
            .unwrap_or(VisitorIdentity::Absent))
    }
}
