//! The address a request came from: the peer, or — only when the peer is a trusted proxy — the nearest address
//! the proxies forwarded that is not itself a trusted proxy.

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use http::header::FORWARDED;
use http::request::Parts;
use http::HeaderMap;

use crate::config::OriginConfig;

/// The client's address, or `None` when the request carries no peer address (a router served without
/// `ConnectInfo`), or the peer is a trusted proxy that forwarded no client (nothing, only proxies, or an
/// address that cannot be read: `unknown`, an obfuscated name): a guess would be worse than none.
///
/// Forwarded addresses are read from the right, the nearest proxy's entry first, skipping trusted proxies:
/// entries further left were written by the client or by proxies nobody vouches for. `Forwarded` (RFC 7239)
/// is read when present, `X-Forwarded-For` otherwise.
pub(crate) fn client_address(parts: &Parts, config: &OriginConfig) -> Option<IpAddr> {
    let peer = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip())?;
    if !config.trusts(Some(peer)) {
        return Some(peer);
    }
    // The nearest entry that is no trusted proxy; an unreadable entry before it, or none at all (a trusted
    // proxy that forwarded nothing, or only proxies), gives no address: the proxies' own network would make
    // every visitor look alike.
    for entry in forwarded_for(&parts.headers).into_iter().rev() {
        let address = entry?;
        if !config.trusts(Some(address)) {
            return Some(address);
        }
    }
    None
}

/// Every forwarded client address, in header order; an entry that is not an address is `None`.
fn forwarded_for(headers: &HeaderMap) -> Vec<Option<IpAddr>> {
    let values = |name| {
        headers
            .get_all(name)
            .iter()
            .flat_map(|v| v.to_str().ok().unwrap_or("").split(','))
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .collect::<Vec<&str>>()
    };
    let elements = values(FORWARDED.as_str());
    if !elements.is_empty() {
        return elements
            .into_iter()
            .map(|element| {
                element.split(';').find_map(|pair| {
                    let (key, value) = pair.split_once('=')?;
                    key.trim()
                        .eq_ignore_ascii_case("for")
                        .then(|| node_address(value.trim().trim_matches('"')))
                })?
            })
            .collect();
    }
    values("x-forwarded-for")
        .into_iter()
        .map(node_address)
        .collect()
}

/// An address as forwarded: `192.0.2.1`, `192.0.2.1:8080`, `[2001:db8::1]`, `[2001:db8::1]:8080` or a bare
/// IPv6 address.
fn node_address(node: &str) -> Option<IpAddr> {
    if let Some(rest) = node.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    node.parse::<IpAddr>()
        .ok()
        .or_else(|| node.parse::<SocketAddr>().ok().map(|s| s.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::origin::test_parts as parts;

    fn behind(proxies: &[&str]) -> OriginConfig {
        let mut builder = OriginConfig::builder();
        for proxy in proxies {
            builder = builder.trust_proxy(proxy);
        }
        builder.build().unwrap()
    }

    fn address(text: &str) -> Option<IpAddr> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn the_peer_is_the_client_unless_it_is_a_trusted_proxy() {
        let open = OriginConfig::default();
        let spoofed = [("x-forwarded-for", "198.51.100.7")];
        assert_eq!(
            client_address(&parts(&spoofed, Some("203.0.113.9:5000")), &open),
            address("203.0.113.9"),
            "forwarded addresses count only from trusted proxies"
        );
        assert_eq!(client_address(&parts(&spoofed, None), &open), None);
        let config = behind(&["10.0.0.0/8"]);
        assert_eq!(
            client_address(&parts(&spoofed, Some("10.1.2.3:5000")), &config),
            address("198.51.100.7")
        );
        assert_eq!(
            client_address(&parts(&[], Some("10.1.2.3:5000")), &config),
            None,
            "a trusted proxy that forwards nothing names no client"
        );
    }

    #[test]
    fn forwarded_chains_are_read_from_the_nearest_proxy() {
        let config = behind(&["10.0.0.0/8"]);
        let at =
            |headers: &[(&str, &str)]| client_address(&parts(headers, Some("10.0.0.1:1")), &config);
        // The leftmost entry is whatever the client wrote; the nearest untrusted one is the client.
        assert_eq!(
            at(&[("x-forwarded-for", "6.6.6.6, 198.51.100.7, 10.2.2.2")]),
            address("198.51.100.7")
        );
        assert_eq!(
            at(&[
                ("x-forwarded-for", "6.6.6.6"),
                ("x-forwarded-for", "198.51.100.7")
            ]),
            address("198.51.100.7")
        );
        assert_eq!(
            at(&[(
                "forwarded",
                "for=6.6.6.6, for=\"[2001:db8::7]:4711\";proto=https"
            )]),
            address("2001:db8::7")
        );
        assert_eq!(
            at(&[("forwarded", "for=192.0.2.60:80;by=10.0.0.1")]),
            address("192.0.2.60")
        );
        // Forwarded wins over X-Forwarded-For when both are sent.
        assert_eq!(
            at(&[
                ("forwarded", "for=192.0.2.60"),
                ("x-forwarded-for", "198.51.100.7")
            ]),
            address("192.0.2.60")
        );
        // Every entry a trusted proxy: no client named.
        assert_eq!(at(&[("x-forwarded-for", "10.9.9.9, 10.2.2.2")]), None);
        // An entry that is no address, where the client should be: no guess.
        assert_eq!(at(&[("forwarded", "for=unknown")]), None);
        assert_eq!(at(&[("x-forwarded-for", "_hidden, 10.2.2.2")]), None);
        assert_eq!(
            at(&[("x-forwarded-for", "_hidden, 198.51.100.7")]),
            address("198.51.100.7"),
            "entries past the client are never read"
        );
    }
}
