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
        // Static lines, so that making one cannot fail; a test holds them to the cookie's own attributes.
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
    fn the_lines_are_the_cookies_own_with_no_value_and_no_age() {
        for secure in [true, false] {
            assert_eq!(
                ClearVisitorCookie::new(secure).set_cookie(),
                &crate::endpoint::cookie::clear_cookie(secure)
            );
        }
    }
}
