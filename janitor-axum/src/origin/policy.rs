//! Whether the page that sent a request may call the endpoint or a guarded route: the request's own origin,
//! the allowed list, and what trusted proxies forward.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::ConnectInfo;
use http::header::{FORWARDED, ORIGIN};
use http::request::Parts;
use http::HeaderMap;

use crate::config::{OriginConfig, PublicOrigin};

/// A request from another site: `Sec-Fetch-Site: cross-site`, or an `Origin` that is neither listed nor (with
/// no list) the request's own. `null`, an unreadable origin, and more than one `Origin` header count as
/// another site.
pub(crate) fn is_cross_origin(parts: &Parts, config: &OriginConfig, host: Option<&str>) -> bool {
    let headers = &parts.headers;
    // A proxy may merge repeated lines into one (RFC 9110 §5.3): every comma-separated value counts.
    if headers
        .get_all("sec-fetch-site")
        .iter()
        .flat_map(|v| v.as_bytes().split(|b| *b == b','))
        .any(|v| v.trim_ascii().eq_ignore_ascii_case(b"cross-site"))
    {
        return true;
    }
    let mut origins = headers.get_all(ORIGIN).iter();
    let Some(origin) = origins.next() else {
        return false;
    };
    if origins.next().is_some() {
        return true;
    }
    let Some(origin) = origin.to_str().ok().and_then(PublicOrigin::from_header) else {
        return true;
    };
    let scheme = origin
        .as_str()
        .split_once("://")
        .map_or("https", |(s, _)| s);
    !config.allows(&origin, own_origin(parts, config, scheme, host).as_ref())
}

/// The request's own origin as the browser reached it: from a trusted proxy's forwarded headers when it sent
/// them, else from the host it asked for, over `scheme` (what the origin said: behind TLS termination the
/// scheme of this connection says nothing).
fn own_origin(
    parts: &Parts,
    config: &OriginConfig,
    scheme: &str,
    host: Option<&str>,
) -> Option<PublicOrigin> {
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip());
    if peer.is_none() && !config.trusted_proxies().is_empty() {
        warn_no_peer_once(&NO_PEER_WARNED);
    }
    if config.trusts(peer) {
        let (proto, host) = forwarded(&parts.headers);
        if let Some(host) = host {
            return Some(PublicOrigin::of(
                &proto.unwrap_or_else(|| scheme.to_owned()),
                &host,
            ));
        }
    }
    Some(PublicOrigin::of(scheme, host?))
}

/// Whether the process has said that trusted proxies are configured but requests carry no peer address.
static NO_PEER_WARNED: AtomicBool = AtomicBool::new(false);

/// Trusted proxies without `ConnectInfo` (an app served by plain `axum::serve`) are silently never trusted: say
/// so, once per process (`warned`), where every request would otherwise pay for a log line.
fn warn_no_peer_once(warned: &AtomicBool) {
    if !warned.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            "trusted_proxies (JANITOR_TRUSTED_PROXIES) is set but requests carry no peer address, so no \
             proxy's forwarded headers are believed: serve the router with \
             `into_make_service_with_connect_info::<SocketAddr>()` or with `janitor_axum::serve`"
        );
    }
}

/// The scheme and host the nearest proxy says the client used: `Forwarded` (RFC 7239) if present, else
/// `X-Forwarded-Proto` and `X-Forwarded-Host`. Of several entries, the last one is the nearest proxy's.
fn forwarded(headers: &HeaderMap) -> (Option<String>, Option<String>) {
    let last = |name: &str| -> Option<String> {
        let values: Vec<&str> = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .collect();
        values
            .last()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
    };
    if let Some(element) = last(FORWARDED.as_str()) {
        let mut found = (None, None);
        for pair in element.split(';') {
            let Some((key, value)) = pair.split_once('=') else {
                continue;
            };
            let value = value.trim().trim_matches('"').to_owned();
            match key.trim().to_ascii_lowercase().as_str() {
                "proto" => found.0 = Some(value.to_ascii_lowercase()),
                "host" => found.1 = Some(value),
                _ => {}
            }
        }
        return found;
    }
    (
        last("x-forwarded-proto").map(|p| p.to_ascii_lowercase()),
        last("x-forwarded-host"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::origin::test_parts as parts;

    /// The policy with the host read as `check` reads it.
    fn is_cross_origin(parts: &Parts, config: &OriginConfig) -> bool {
        let host = crate::origin::request_host(&parts.uri, &parts.headers)
            .ok()
            .flatten();
        super::is_cross_origin(parts, config, host)
    }

    fn open() -> OriginConfig {
        OriginConfig::default()
    }

    #[test]
    fn the_own_host_with_or_without_the_default_port() {
        for (origin, host) in [
            ("https://example.com", "example.com"),
            ("https://example.com:443", "example.com"),
            ("https://example.com", "example.com:443"),
            ("http://localhost:3000", "localhost:3000"),
            ("https://EXAMPLE.com", "example.COM"),
        ] {
            let p = parts(&[("origin", origin), ("host", host)], None);
            assert!(!is_cross_origin(&p, &open()), "{origin} on {host}");
        }
        for (origin, host) in [
            ("https://www.example.com", "example.com"),
            ("https://example.com:8443", "example.com"),
            ("null", "example.com"),
            ("https://evil.example", "example.com"),
            // Read as a browser sends it: what only a setting may be written as is not the host's origin.
            ("https://example.com/", "example.com"),
            ("https://example.com:0443", "example.com"),
        ] {
            let p = parts(&[("origin", origin), ("host", host)], None);
            assert!(is_cross_origin(&p, &open()), "{origin} on {host}");
        }
        assert!(!is_cross_origin(
            &parts(&[("host", "example.com")], None),
            &open()
        ));
    }

    #[test]
    fn a_second_origin_or_any_cross_site_fetch_refuses() {
        let two = parts(
            &[
                ("host", "example.com"),
                ("origin", "https://example.com"),
                ("origin", "https://evil.example"),
            ],
            None,
        );
        assert!(is_cross_origin(&two, &open()));
        let fetches = parts(
            &[
                ("host", "example.com"),
                ("sec-fetch-site", "same-origin"),
                ("sec-fetch-site", "cross-site"),
            ],
            None,
        );
        assert!(is_cross_origin(&fetches, &open()));
        // The same two values merged into one line by a proxy (issue 28, defect 6), in either order.
        for merged in [
            "same-origin, cross-site",
            "cross-site,same-origin",
            " Cross-Site ",
        ] {
            let one = parts(&[("host", "example.com"), ("sec-fetch-site", merged)], None);
            assert!(is_cross_origin(&one, &open()), "{merged}");
        }
        let same = parts(
            &[
                ("host", "example.com"),
                ("sec-fetch-site", "same-origin, none"),
            ],
            None,
        );
        assert!(!is_cross_origin(&same, &open()));
    }

    #[test]
    fn an_absolute_target_naming_another_host_is_not_the_requests_own_origin() {
        // POST https://attacker.example/api/visitor with Host: victim.example (issue 28, defect 5).
        let mut absolute = parts(
            &[
                ("host", "victim.example"),
                ("origin", "https://attacker.example"),
            ],
            None,
        );
        absolute.uri = "https://attacker.example/api/visitor".parse().unwrap();
        assert!(is_cross_origin(&absolute, &open()));
        assert_eq!(
            super::super::check(&absolute, &open()),
            Err(crate::refusal::Refusal::AmbiguousHost)
        );
        // Naming its own host, the absolute form is the origin-form request.
        let mut own = parts(
            &[
                ("host", "victim.example"),
                ("origin", "https://victim.example"),
            ],
            None,
        );
        own.uri = "https://victim.example/api/visitor".parse().unwrap();
        assert!(!is_cross_origin(&own, &open()));
        // HTTP/2 carries no Host: the authority is the host.
        let mut h2 = parts(&[("origin", "https://victim.example")], None);
        h2.uri = "https://victim.example/api/visitor".parse().unwrap();
        assert!(!is_cross_origin(&h2, &open()));
    }

    #[test]
    fn a_listed_origin_passes_behind_a_host_rewriting_proxy() {
        let listed = OriginConfig::builder()
            .allow_origin("https://example.com")
            .allow_origin("https://www.example.com")
            .build()
            .unwrap();
        for origin in ["https://www.example.com", "https://example.com:443"] {
            let p = parts(&[("origin", origin), ("host", "127.0.0.1:3000")], None);
            assert!(!is_cross_origin(&p, &listed), "{origin}");
            assert!(is_cross_origin(&p, &open()), "{origin} without the list");
        }
        let p = parts(
            &[
                ("origin", "https://evil.example"),
                ("host", "127.0.0.1:3000"),
            ],
            None,
        );
        assert!(is_cross_origin(&p, &listed));
    }

    #[test]
    fn a_missing_peer_is_reported_once() {
        let warned = AtomicBool::new(false);
        let logs = crate::telemetry::captured_logs(|| {
            for _ in 0..3 {
                warn_no_peer_once(&warned);
            }
        });
        assert_eq!(logs.matches("WARN").count(), 1, "{logs}");
        assert!(logs.contains("requests carry no peer address"), "{logs}");
        assert!(
            logs.contains("into_make_service_with_connect_info::<SocketAddr>()"),
            "{logs}"
        );
        assert!(logs.contains("janitor_axum::serve"), "{logs}");
    }

    #[test]
    fn forwarded_headers_count_only_from_trusted_proxies() {
        let trusting = OriginConfig::builder()
            .trust_proxy("10.0.0.0/8")
            .build()
            .unwrap();
        let headers = [
            ("origin", "https://example.com"),
            ("host", "app:3000"),
            ("x-forwarded-host", "example.com"),
            ("x-forwarded-proto", "https"),
        ];
        assert!(!is_cross_origin(
            &parts(&headers, Some("10.1.2.3:5000")),
            &trusting
        ));
        // The same headers from elsewhere, or with no peer address known, are the client's own words.
        assert!(is_cross_origin(
            &parts(&headers, Some("203.0.113.9:5000")),
            &trusting
        ));
        assert!(is_cross_origin(&parts(&headers, None), &trusting));
        assert!(is_cross_origin(
            &parts(&headers, Some("10.1.2.3:5000")),
            &open()
        ));
        // RFC 7239, the nearest proxy's entry last; a scheme that differs from the origin's refuses.
        let standard = [
            ("origin", "https://example.com"),
            ("host", "app:3000"),
            (
                "forwarded",
                "for=198.51.100.1;host=evil.example, for=10.0.0.1;proto=https;host=\"example.com\"",
            ),
        ];
        assert!(!is_cross_origin(
            &parts(&standard, Some("10.0.0.2:1")),
            &trusting
        ));
        let downgraded = [
            ("origin", "https://example.com"),
            ("host", "app:3000"),
            ("forwarded", "proto=http;host=example.com"),
        ];
        assert!(is_cross_origin(
            &parts(&downgraded, Some("10.0.0.2:1")),
            &trusting
        ));
    }
}
