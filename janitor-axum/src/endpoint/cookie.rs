//! The `__visitor` cookie: reading it from the request, and the `Set-Cookie` line of every 200.

use http::header::COOKIE;
use http::HeaderMap;
use janitor_core::visitor::{cookie_value, COOKIE_NAME};
use janitor_core::VisitorId;

/// The visitor named by exactly one well-formed `__visitor` cookie, if any; forged, malformed or duplicated
/// cookies count as none.
pub(crate) fn visitor(headers: &HeaderMap) -> Option<VisitorId> {
    VisitorId::parse(named(headers, COOKIE_NAME)?)
}

/// The value of exactly one cookie called `name` in the request's `Cookie` headers, read the one way every
/// cookie of the library is read ([`cookie_value`]).
pub(crate) fn named<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let values = headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok());
    cookie_value(values, name)
}

/// `__visitor=<id>; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=<secs>` (`Secure` only when asked for).
pub(crate) fn set_cookie(visitor: &VisitorId, secure: bool, max_age_secs: u64) -> String {
    line(visitor.as_str(), secure, max_age_secs)
}

/// The line that makes a browser drop the cookie: the same attributes (a browser matches on them), no value,
/// `Max-Age=0` (what `ClearVisitorCookie` sends, written there as static lines).
#[cfg(test)]
pub(crate) fn clear_cookie(secure: bool) -> String {
    line("", secure, 0)
}

fn line(value: &str, secure: bool, max_age_secs: u64) -> String {
    format!(
        "{}={value}; HttpOnly{}; SameSite=Lax; Path=/; Max-Age={max_age_secs}",
        janitor_core::visitor::COOKIE_NAME,
        if secure { "; Secure" } else { "" },
    )
}

/// Whether `host` (a `Host` header or URI authority) names this machine: `localhost`, `127.0.0.1` or `[::1]`,
/// with or without a port.
pub(crate) fn is_loopback(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((inner, _)) => return inner == "::1",
            None => return false,
        }
    } else {
        host.rsplit_once(':').map_or(host, |(name, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                name
            } else {
                host
            }
        })
    };
    name.eq_ignore_ascii_case("localhost") || name == "127.0.0.1"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for host in [
            "localhost",
            "LOCALHOST:3000",
            "127.0.0.1",
            "127.0.0.1:8080",
            "[::1]",
            "[::1]:3000",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "example.com",
            "127.0.0.2",
            "localhost.example.com",
            "[::2]",
            "10.0.0.1:80",
            "",
            "[::1",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
    }

    #[test]
    fn cookie_line() {
        let id = VisitorId::parse(&format!("vis_{}", "a".repeat(48))).unwrap();
        assert_eq!(
            set_cookie(&id, true, 7_776_000),
            format!(
                "__visitor=vis_{}; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=7776000",
                "a".repeat(48)
            )
        );
        assert!(!set_cookie(&id, false, 1).contains("Secure"));
    }
}
