//! The endpoint's origin policy on the application's own routes: [`OriginLayer`] for every state-changing
//! route behind it, and [`Janitor::check_origin`](crate::Janitor::check_origin) for one request.
//!
//! A browser marks a request another site's page sent: `Sec-Fetch-Site: cross-site`, or an `Origin` that is
//! not the request's own (the host it asked for, or what a trusted proxy forwarded) and not listed in the
//! allowed origins. Both are refused with 403, as on the endpoint; so is a request with more than one `Host`
//! (400), whose own origin would be a guess. A request with neither header (curl, a server) passes: the policy
//! stops browsers being used against their users (cross-site request forgery), not clients that send what
//! they like — those are what quotas and the application's own authentication are for.

mod client;
mod layer;
mod policy;

use http::header::HOST;
use http::request::Parts;
use http::{HeaderMap, Method, Uri};

use crate::config::OriginConfig;
use crate::refusal::Refusal;
use policy::is_cross_origin;

pub(crate) use client::{client_address, ClientAddress};

pub use layer::{OriginLayer, OriginService};

/// The host a request asked for: its `Host` header, or the target's authority when it has none (HTTP/2, an
/// HTTP/1.0 absolute-form target); `None` when it names neither. Refused when it names two: more than one
/// `Host`, or an absolute-form target whose authority is not the `Host` (RFC 9112 §3.2.2 lets a server believe
/// either; a proxy in front may believe the other, so the origin and loopback checks would be a guess).
pub(crate) fn request_host<'a>(
    uri: &'a Uri,
    headers: &'a HeaderMap,
) -> Result<Option<&'a str>, Refusal> {
    let mut hosts = headers.get_all(HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err(Refusal::AmbiguousHost);
    }
    let authority = uri.authority().map(|a| a.as_str());
    match (host, authority) {
        (Some(host), Some(authority))
            if !host.as_bytes().eq_ignore_ascii_case(authority.as_bytes()) =>
        {
            Err(Refusal::AmbiguousHost)
        }
        (Some(host), _) => Ok(host.to_str().ok()),
        (None, authority) => Ok(authority),
    }
}

/// The policy on one request, whatever its method: the endpoint's own check and the layer's. Answers the host
/// the request asked for, read once here for every check that needs it.
pub(crate) fn check<'a>(
    parts: &'a Parts,
    config: &OriginConfig,
) -> Result<Option<&'a str>, Refusal> {
    // Two hosts make the origin check a guess about which one a proxy or the application believes.
    let host = request_host(&parts.uri, &parts.headers)?;
    if is_cross_origin(parts, config, host) {
        Err(Refusal::CrossOrigin)
    } else {
        Ok(host)
    }
}

/// Methods the layer passes unchecked: the safe ones (RFC 9110 §9.2.1), which change nothing, and which a
/// page of another site may rightly ask for (a link, an image, a CORS preflight).
fn is_safe(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
    )
}

/// A request's parts with `headers`, from `peer` when one is given, as the server hands them over.
#[cfg(test)]
pub(crate) fn test_parts(headers: &[(&str, &str)], peer: Option<&str>) -> Parts {
    let mut request = http::Request::builder().uri("/api/visitor");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let (mut parts, ()) = request.body(()).unwrap().into_parts();
    if let Some(peer) = peer {
        let peer: std::net::SocketAddr = peer.parse().unwrap();
        parts.extensions.insert(axum::extract::ConnectInfo(peer));
    }
    parts
}
