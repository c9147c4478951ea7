//! The address a request came from: the peer, or — only when the peer is a trusted proxy — the nearest address
//! the proxies forwarded that is not itself a trusted proxy.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::ConnectInfo;
use http::header::FORWARDED;
use http::request::Parts;
use http::HeaderMap;

use crate::config::OriginConfig;

/// Where a request came from, as far as the deployment can vouch for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ClientAddress {
    /// The peer, or the client a trusted proxy forwarded.
    Known(IpAddr),
    /// Nobody to name: no peer address (a router served without `ConnectInfo`), or a trusted proxy that
    /// forwarded no client (nothing, or only proxies). A guess would be worse than none.
    Unnamed,
    /// A trusted proxy's request whose forwarding headers cannot be read where the client should be (`unknown`,
    /// an obfuscated name, a `Forwarded` element without `for`, a byte that is not visible ASCII), or whose
    /// `Forwarded` and `X-Forwarded-For` name different clients. Such headers are the client's own writing at
    /// least in part, so the request counts as from a network nobody can name, never as from none.
    Unreadable,
}

/// Where the request `parts` came from. Forwarded addresses are read only from a trusted proxy, from the
/// right (the nearest proxy's entry first), skipping trusted proxies: entries further left were written by the
/// client or by proxies nobody vouches for. When both `Forwarded` (RFC 7239) and `X-Forwarded-For` are present
/// they must name the same client: a proxy writes one, so the other came from the client.
pub(crate) fn client_address(parts: &Parts, config: &OriginConfig) -> ClientAddress {
    let Some(peer) = parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0.ip())
    else {
        return ClientAddress::Unnamed;
    };
    if !config.trusts(Some(peer)) {
        if forwards(&parts.headers) && is_local(peer) {
            warn_untrusted_proxy_once(&UNTRUSTED_PROXY_WARNED);
        }
        return ClientAddress::Known(peer);
    }
    let headers = &parts.headers;
    let standard = nearest_client(entries(headers, FORWARDED.as_str(), forwarded_for), config);
    let legacy = nearest_client(entries(headers, "x-forwarded-for", node_address), config);
    match (standard, legacy) {
        (None, None) => ClientAddress::Unnamed,
        (Some(one), None) | (None, Some(one)) => one,
        (Some(a), Some(b)) if a == b => a,
        (Some(_), Some(_)) => ClientAddress::Unreadable,
    }
}

/// The nearest entry of one header that is no trusted proxy: `None` when the header is absent.
fn nearest_client(
    entries: Option<Vec<Option<IpAddr>>>,
    config: &OriginConfig,
) -> Option<ClientAddress> {
    for entry in entries?.into_iter().rev() {
        let Some(address) = entry else {
            return Some(ClientAddress::Unreadable);
        };
        if !config.trusts(Some(address)) {
            return Some(ClientAddress::Known(address));
        }
    }
    Some(ClientAddress::Unnamed)
}

/// The entries of header `name`, in order, each read by `read` (`None` for one that names no address); `None`
/// when the request has no such header. A value that is not visible ASCII is one unreadable entry.
fn entries(
    headers: &HeaderMap,
    name: &str,
    read: fn(&str) -> Option<IpAddr>,
) -> Option<Vec<Option<IpAddr>>> {
    let mut values = headers.get_all(name).iter().peekable();
    values.peek()?;
    let mut entries = Vec::new();
    for value in values {
        let Ok(text) = value.to_str() else {
            entries.push(None);
            continue;
        };
        let listed = text.split(',').map(str::trim).filter(|e| !e.is_empty());
        entries.extend(listed.map(read));
    }
    Some(entries)
}

/// The `for` parameter of a `Forwarded` element.
fn forwarded_for(element: &str) -> Option<IpAddr> {
    element.split(';').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("for")
            .then(|| node_address(value.trim().trim_matches('"')))?
    })
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

fn forwards(headers: &HeaderMap) -> bool {
    headers.contains_key(FORWARDED) || headers.contains_key("x-forwarded-for")
}

/// A peer on this machine or a private network: where a reverse proxy usually sits.
fn is_local(peer: IpAddr) -> bool {
    match peer {
        IpAddr::V4(v4) => v4.is_loopback() || v4.is_private() || v4.is_link_local(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_local(IpAddr::V4(v4)),
            // fc00::/7, unique local addresses.
            None => v6.is_loopback() || (v6.segments()[0] & 0xfe00) == 0xfc00,
        },
    }
}

/// Whether the process has said that forwarded headers arrive from a proxy nobody trusts.
static UNTRUSTED_PROXY_WARNED: AtomicBool = AtomicBool::new(false);

/// Network evidence behind a proxy that is not listed takes the proxy's own address for every visitor: say so,
/// once per process (`warned`).
fn warn_untrusted_proxy_once(warned: &AtomicBool) {
    if !warned.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            "network evidence is on and requests with forwarded headers arrive from a loopback or private \
             peer that trusted_proxies (JANITOR_TRUSTED_PROXIES) does not list: every visitor behind that \
             proxy gets the proxy's network; list the proxy's address to read the client's"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::origin::test_parts as parts;
    use ClientAddress::{Known, Unnamed, Unreadable};

    fn behind(proxies: &[&str]) -> OriginConfig {
        let mut builder = OriginConfig::builder();
        for proxy in proxies {
            builder = builder.trust_proxy(proxy);
        }
        builder.build().unwrap()
    }

    fn known(text: &str) -> ClientAddress {
        Known(text.parse().unwrap())
    }

    #[test]
    fn the_peer_is_the_client_unless_it_is_a_trusted_proxy() {
        let open = OriginConfig::default();
        let spoofed = [("x-forwarded-for", "198.51.100.7")];
        assert_eq!(
            client_address(&parts(&spoofed, Some("203.0.113.9:5000")), &open),
            known("203.0.113.9"),
            "forwarded addresses count only from trusted proxies"
        );
        assert_eq!(client_address(&parts(&spoofed, None), &open), Unnamed);
        let config = behind(&["10.0.0.0/8"]);
        assert_eq!(
            client_address(&parts(&spoofed, Some("10.1.2.3:5000")), &config),
            known("198.51.100.7")
        );
        assert_eq!(
            client_address(&parts(&[], Some("10.1.2.3:5000")), &config),
            Unnamed,
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
            known("198.51.100.7")
        );
        assert_eq!(
            at(&[
                ("x-forwarded-for", "6.6.6.6"),
                ("x-forwarded-for", "198.51.100.7")
            ]),
            known("198.51.100.7")
        );
        assert_eq!(
            at(&[(
                "forwarded",
                "for=6.6.6.6, for=\"[2001:db8::7]:4711\";proto=https"
            )]),
            known("2001:db8::7")
        );
        assert_eq!(
            at(&[("forwarded", "for=192.0.2.60:80;by=10.0.0.1")]),
            known("192.0.2.60")
        );
        // Every entry a trusted proxy: no client named.
        assert_eq!(at(&[("x-forwarded-for", "10.9.9.9, 10.2.2.2")]), Unnamed);
        assert_eq!(
            at(&[("x-forwarded-for", "_hidden, 198.51.100.7")]),
            known("198.51.100.7"),
            "entries past the client are never read"
        );
    }

    /// The probe's variants: each let a client behind a trusted proxy choose its network, or remove it and
    /// with it the veto. Each now reads as a network nobody can name.
    #[test]
    fn headers_the_client_wrote_never_choose_its_network() {
        let config = behind(&["127.0.0.1"]);
        let at = |headers: &[(&str, &str)]| {
            client_address(&parts(headers, Some("127.0.0.1:1")), &config)
        };
        let appended = ("x-forwarded-for", "203.0.113.66");
        // A Forwarded header of the client's beside the X-Forwarded-For the proxy wrote.
        assert_eq!(
            at(&[("forwarded", "for=198.51.100.7"), appended]),
            Unreadable
        );
        assert_eq!(at(&[("forwarded", "for=unknown"), appended]), Unreadable);
        assert_eq!(at(&[("forwarded", "proto=https"), appended]), Unreadable);
        assert_eq!(at(&[("forwarded", "for=unknown")]), Unreadable);
        assert_eq!(
            at(&[("forwarded", "proto=https;host=a.example")]),
            Unreadable
        );
        assert_eq!(at(&[("x-forwarded-for", "_hidden, 127.0.0.1")]), Unreadable);
        let mut non_ascii = parts(&[], Some("127.0.0.1:1"));
        let garbled = http::HeaderValue::from_bytes(b"203.0.113.66\xff").unwrap();
        non_ascii.headers.insert("x-forwarded-for", garbled);
        assert_eq!(client_address(&non_ascii, &config), Unreadable);
        // Both headers naming the same client (a proxy that writes both) agree.
        let both = [("forwarded", "for=203.0.113.66"), appended];
        assert_eq!(at(&both), known("203.0.113.66"));
        assert_eq!(at(&[appended]), known("203.0.113.66"));
    }

    #[test]
    fn loopback_and_private_peers_are_where_proxies_sit() {
        for local in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.1.1",
            "172.16.0.1",
            "::1",
            "fd00::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(is_local(local.parse().unwrap()), "{local}");
        }
        for public in ["203.0.113.9", "2001:db8::1", "172.32.0.1"] {
            assert!(!is_local(public.parse().unwrap()), "{public}");
        }
        let warned = AtomicBool::new(false);
        warn_untrusted_proxy_once(&warned);
        assert!(warned.load(Ordering::Relaxed));
    }
}
