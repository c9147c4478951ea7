//! Clearing the `__visitor` cookie from a route of the application.

use axum::response::{IntoResponseParts, ResponseParts};
use http::header::{HeaderValue, SET_COOKIE};

/// Response parts that make the browser forget its `__visitor` cookie: the cookie's own attributes with
/// `Max-Age=0`. Made by [`Janitor::clear_visitor_cookie`](crate::Janitor::clear_visitor_cookie); add it to the
/// answer of an erasure so the browser does not bring the erased id back.
#[derive(Debug, Clone)]
pub struct ClearVisitorCookie {
    line: HeaderValue,
}

impl ClearVisitorCookie {
    pub(crate) fn new(secure: bool) -> Self {
        // The attributes of `identify::cookie::set_cookie`, which a browser needs to match the cookie it drops.
        let line = if secure {
            "__visitor=; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=0"
        } else {
            "__visitor=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0"
        };
        ClearVisitorCookie {
            line: HeaderValue::from_static(line),
        }
    }

    /// The `Set-Cookie` value.
    pub fn set_cookie(&self) -> &HeaderValue {
        &self.line
    }
}

impl IntoResponseParts for ClearVisitorCookie {
    type Error = std::convert::Infallible;

    fn into_response_parts(self, mut parts: ResponseParts) -> Result<ResponseParts, Self::Error> {
        parts.headers_mut().append(SET_COOKIE, self.line);
        Ok(parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_the_cookie_and_keeps_its_attributes() {
        let secure = ClearVisitorCookie::new(true);
        assert_eq!(
            secure.set_cookie(),
            &format!(
                "{}=; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=0",
                janitor_core::visitor::COOKIE_NAME
            )
        );
        assert!(!ClearVisitorCookie::new(false)
            .set_cookie()
            .to_str()
            .unwrap()
            .contains("Secure"));
    }
}
