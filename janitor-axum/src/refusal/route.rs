//! A refusal on a route of the application: the endpoint's status and headers, in words that fit any route.

use axum::response::{IntoResponse, Response};

use super::Refusal;

/// A [`Refusal`] answered on one of the application's own routes (a sign-in, a checkout): the status and
/// headers of the endpoint's answer, with a message that does not speak of visitor measurement. Made by
/// [`Refusal::for_route`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteRefusal(pub Refusal);

impl RouteRefusal {
    /// The message of the `{"error": ...}` body.
    pub const fn message(&self) -> &'static str {
        match self.0 {
            Refusal::NotFound => "Not found",
            Refusal::MethodNotAllowed => "Method not allowed",
            Refusal::AmbiguousHost => "Exactly one Host header is required",
            Refusal::CrossOrigin => "Cross-site requests are not allowed",
            Refusal::UnsupportedMediaType => "Content-Type must be application/json",
            Refusal::InsecureCookie => "Insecure cookies require localhost",
            Refusal::RateLimited { .. } => "Too many requests; try again later",
            Refusal::TooLarge => "Request body too large",
            Refusal::BodyRequired => "Request body required",
            Refusal::TimedOut => "Request body timed out",
            Refusal::InvalidPayload => "Invalid request",
            Refusal::Unavailable => "Service unavailable; try again later",
            Refusal::Busy => "Server busy; try again",
        }
    }
}

impl IntoResponse for RouteRefusal {
    fn into_response(self) -> Response {
        super::answer(self.0, self.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_route_refusal_keeps_status_and_headers_and_never_speaks_of_measurement() {
        for refusal in Refusal::ALL {
            let endpoint = refusal.into_response();
            let route = refusal.for_route().into_response();
            assert_eq!(route.status(), endpoint.status());
            assert_eq!(route.headers(), endpoint.headers());
            assert!(
                !refusal.for_route().message().contains("isitor"),
                "{refusal:?}"
            );
        }
    }
}
