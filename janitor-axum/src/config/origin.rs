//! Which origins may call the endpoint, and which proxies may tell it the host and scheme the public used.
//!
//! By default a request's `Origin` must be the request's own host, as the browser reached it. Behind a reverse
//! proxy that rewrites `Host` (nginx's default), or when the site answers on several names, that is not what
//! the browser sent: list the public origins instead, or trust the `Forwarded` / `X-Forwarded-*` headers of
//! the proxies at known addresses. Forwarded headers from any other peer are ignored: a client could write
//! them.

use std::net::IpAddr;

use janitor_core::config::check;

use super::JanitorConfigError;

/// An origin as browsers send it, normalised: lower-case scheme and host, and no port when it is the scheme's
/// default (`https://example.com:443` is `https://example.com`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PublicOrigin(String);

/// Why a text is not an origin (`scheme://host[:port]`, http or https).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    /// A space or a control character anywhere.
    #[error("it holds a space or a control character")]
    Whitespace,
    /// No `://`.
    #[error("it has no scheme")]
    NoScheme,
    /// A scheme other than http and https.
    #[error("the scheme is neither http nor https")]
    Scheme,
    /// Nothing between `://` and the port.
    #[error("the host is missing")]
    NoHost,
    /// A host that is neither a name nor a bracketed IPv6 address (`[::1]`).
    #[error("the host is not a name or a bracketed IPv6 address")]
    Host,
    /// A port that is not a number from 0 to 65535.
    #[error("the port is not a number from 0 to 65535")]
    Port,
    /// `user@` or `user:password@` before the host.
    #[error("it holds user information (user@), which an origin never has")]
    UserInfo,
    /// A path after the host (a single trailing `/` is accepted and dropped).
    #[error("it has a path, which an origin never has")]
    Path,
    /// A `?query`.
    #[error("it has a query, which an origin never has")]
    Query,
    /// A `#fragment`.
    #[error("it has a fragment, which an origin never has")]
    Fragment,
}

impl PublicOrigin {
    /// Parses `scheme://host[:port]` (http or https) as a setting: one trailing `/` is dropped
    /// (`https://example.com/` is `https://example.com`), anything else after the authority is refused with
    /// its reason. Request headers are read strictly instead.
    pub fn parse(text: &str) -> Result<PublicOrigin, OriginError> {
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(OriginError::Whitespace);
        }
        let (scheme, rest) = text.split_once("://").ok_or(OriginError::NoScheme)?;
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "http" | "https") {
            return Err(OriginError::Scheme);
        }
        let (authority, tail) = rest.split_at(rest.find(['/', '?', '#']).unwrap_or(rest.len()));
        match tail.strip_prefix('/').unwrap_or(tail).chars().next() {
            None => {}
            Some('?') => return Err(OriginError::Query),
            Some('#') => return Err(OriginError::Fragment),
            Some(_) => return Err(OriginError::Path),
        }
        if authority.contains('@') {
            return Err(OriginError::UserInfo);
        }
        let (host, port) = split_host(authority)?;
        let authority = match port {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        Ok(PublicOrigin::of(&scheme, &authority))
    }

    /// An `Origin` header as a browser sends it: `scheme://host[:port]` exactly, nothing after the authority,
    /// no trailing `/` (a browser never sends one). Cheap and strict, as it runs on every request; anything
    /// else is no origin at all (and so, to the policy, another site).
    pub(crate) fn from_header(text: &str) -> Option<PublicOrigin> {
        let (scheme, authority) = text.split_once("://")?;
        let scheme = scheme.to_ascii_lowercase();
        if !matches!(scheme.as_str(), "http" | "https")
            || authority.is_empty()
            || authority.contains(['/', '?', '#', '@', ' '])
        {
            return None;
        }
        Some(PublicOrigin::of(&scheme, authority))
    }

    /// The origin of a host (`name[:port]`, `[v6][:port]`) reached over `scheme`.
    pub(crate) fn of(scheme: &str, authority: &str) -> PublicOrigin {
        let authority = authority.to_ascii_lowercase();
        let default_port = if scheme == "https" { ":443" } else { ":80" };
        let authority = authority
            .strip_suffix(default_port)
            .filter(|host| !host.is_empty() && !host.ends_with(':'))
            .unwrap_or(&authority);
        PublicOrigin(format!("{scheme}://{authority}"))
    }

    /// The normalised text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The host and the port (as a number, so `:0443` reads as `:443`) of an authority without user information.
fn split_host(authority: &str) -> Result<(&str, Option<u16>), OriginError> {
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let end = bracketed.find(']').ok_or(OriginError::Host)?;
        let (host, after) = authority.split_at(end + 2);
        let address = &bracketed[..end];
        if !address.is_empty() && address.parse::<std::net::Ipv6Addr>().is_err()
            || !after.is_empty() && !after.starts_with(':')
        {
            return Err(OriginError::Host);
        }
        (host, after.strip_prefix(':'))
    } else {
        match authority.split_once(':') {
            Some((_, port)) if port.contains(':') => return Err(OriginError::Host),
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(OriginError::NoHost);
    }
    let port = port
        .map(|port| {
            // u16's parser alone would take a leading `+`.
            if port.bytes().all(|b| b.is_ascii_digit()) {
                port.parse::<u16>().map_err(|_| OriginError::Port)
            } else {
                Err(OriginError::Port)
            }
        })
        .transpose()?;
    Ok((host, port))
}

/// A range of proxy addresses: one address, or a CIDR block (`10.0.0.0/8`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyRange {
    network: IpAddr,
    prefix: u8,
}

/// Why a text is not a proxy address or block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProxyRangeError {
    /// Not an IPv4 or IPv6 address (host names are not resolved).
    #[error("it is not an IP address (host names are not resolved)")]
    NotAnAddress,
    /// Something after `/` that is not a number.
    #[error("the prefix after / is not a number")]
    Prefix,
    /// A prefix longer than the address: more than 32 for IPv4, 128 for IPv6.
    #[error("the prefix must be from 0 to {max} for this address")]
    PrefixTooLong {
        /// The address's width in bits.
        max: u8,
    },
}

impl ProxyRange {
    /// Parses `address` or `address/prefix` (0–32 for IPv4, 0–128 for IPv6).
    pub fn parse(text: &str) -> Result<ProxyRange, ProxyRangeError> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let network: IpAddr = address.parse().map_err(|_| ProxyRangeError::NotAnAddress)?;
        let width = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(prefix) if !prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_digit()) => {
                prefix.parse::<u8>().unwrap_or(u8::MAX)
            }
            Some(_) => return Err(ProxyRangeError::Prefix),
            None => width,
        };
        if prefix > width {
            return Err(ProxyRangeError::PrefixTooLong { max: width });
        }
        Ok(ProxyRange { network, prefix })
    }

    /// Whether `peer` is in the range (an IPv4 peer seen as `::ffff:a.b.c.d` counts as IPv4).
    pub fn contains(&self, peer: IpAddr) -> bool {
        let peer = match peer {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, IpAddr::V4),
            v4 => v4,
        };
        match (self.network, peer) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                same_prefix(&net.octets(), &ip.octets(), self.prefix)
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                same_prefix(&net.octets(), &ip.octets(), self.prefix)
            }
            _ => false,
        }
    }
}

fn same_prefix(a: &[u8], b: &[u8], prefix: u8) -> bool {
    let (whole, rest) = (usize::from(prefix / 8), prefix % 8);
    if a[..whole] != b[..whole] {
        return false;
    }
    rest == 0 || (a[whole] ^ b[whole]) >> (8 - rest) == 0
}

/// The origin checks of the endpoint. The default: no listed origins, no trusted proxies.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OriginConfig {
    allowed: Vec<PublicOrigin>,
    trusted_proxies: Vec<ProxyRange>,
}

impl OriginConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> OriginConfigBuilder {
        OriginConfigBuilder::default()
    }

    /// The listed public origins; empty means "the request's own host".
    pub fn allowed_origins(&self) -> &[PublicOrigin] {
        &self.allowed
    }

    /// The proxies whose forwarded headers are believed.
    pub fn trusted_proxies(&self) -> &[ProxyRange] {
        &self.trusted_proxies
    }

    /// Whether the forwarded headers of a request from `peer` are believed.
    pub(crate) fn trusts(&self, peer: Option<IpAddr>) -> bool {
        peer.is_some_and(|peer| self.trusted_proxies.iter().any(|r| r.contains(peer)))
    }

    /// Whether `origin` may call the endpoint when the request's own origin is `own`.
    pub(crate) fn allows(&self, origin: &PublicOrigin, own: Option<&PublicOrigin>) -> bool {
        if self.allowed.is_empty() {
            own == Some(origin)
        } else {
            self.allowed.contains(origin)
        }
    }
}

/// Builds an [`OriginConfig`]; [`build`](Self::build) refuses what does not parse.
#[derive(Debug, Clone, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct OriginConfigBuilder {
    allowed: Vec<String>,
    trusted_proxies: Vec<String>,
}

/// Most entries `allowed_origins` and `trusted_proxies` may each hold (0–64): enough for every name of a site
/// and every proxy in front of it, small enough to check per request.
pub const MAX_ORIGIN_ENTRIES: usize = 64;

impl OriginConfigBuilder {
    /// A public origin the browser client is served from (`https://example.com`, `https://www.example.com`;
    /// a trailing `/` is dropped); once any is listed, only listed origins may call. At most 64.
    pub fn allow_origin(mut self, origin: &str) -> Self {
        self.allowed.push(origin.to_owned());
        self
    }

    /// Believe `Forwarded`, `X-Forwarded-Host` and `X-Forwarded-Proto` (and, for network evidence, the client
    /// address of `Forwarded` or `X-Forwarded-For`) from peers in `range` (`127.0.0.1`,
    /// `10.0.0.0/8`). The server must be run with the peer address (axum's
    /// `into_make_service_with_connect_info::<SocketAddr>()`, or [`serve`](crate::serve::serve)), or no peer is
    /// trusted; a request that would need it logs a warning once. At most 64.
    pub fn trust_proxy(mut self, range: &str) -> Self {
        self.trusted_proxies.push(range.to_owned());
        self
    }

    /// Checks the values: a refusal names the list, the entry, its position and the form it must take.
    pub fn build(self) -> Result<OriginConfig, JanitorConfigError> {
        check_count("allowed_origins", self.allowed.len())?;
        check_count("trusted_proxies", self.trusted_proxies.len())?;
        let count = self.allowed.len();
        let allowed = self
            .allowed
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                PublicOrigin::parse(entry).map_err(|reason| JanitorConfigError::AllowedOrigin {
                    position: index + 1,
                    count,
                    entry: entry.clone(),
                    reason,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let count = self.trusted_proxies.len();
        let trusted_proxies = self
            .trusted_proxies
            .iter()
            .enumerate()
            .map(|(index, entry)| {
                ProxyRange::parse(entry).map_err(|reason| JanitorConfigError::TrustedProxy {
                    position: index + 1,
                    count,
                    entry: entry.clone(),
                    reason,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(OriginConfig {
            allowed,
            trusted_proxies,
        })
    }
}

fn check_count(field: &'static str, entries: usize) -> Result<(), JanitorConfigError> {
    check(field, entries, &(0..=MAX_ORIGIN_ENTRIES)).map_err(|mut e| {
        e.range = format!("at most {MAX_ORIGIN_ENTRIES} entries");
        e.value = format!("{entries} entries");
        JanitorConfigError::OutOfRange(e)
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_normalised() {
        for (text, normal) in [
            ("https://Example.COM", "https://example.com"),
            ("https://example.com:443", "https://example.com"),
            ("http://example.com:80", "http://example.com"),
            ("https://example.com:8443", "https://example.com:8443"),
            ("http://[::1]:80", "http://[::1]"),
            ("http://[::1]:3000", "http://[::1]:3000"),
            ("HTTPS://www.example.com", "https://www.example.com"),
            ("https://example.com/", "https://example.com"),
            ("https://example.com:443/", "https://example.com"),
            ("https://example.com:0443", "https://example.com"),
            ("http://localhost:0", "http://localhost:0"),
            ("http://localhost:65535", "http://localhost:65535"),
        ] {
            assert_eq!(
                PublicOrigin::parse(text).unwrap().as_str(),
                normal,
                "{text}"
            );
        }
    }

    #[test]
    fn every_refusal_of_an_origin_says_why() {
        for (bad, why) in [
            ("example.com", OriginError::NoScheme),
            ("null", OriginError::NoScheme),
            ("ftp://example.com", OriginError::Scheme),
            ("://example.com", OriginError::Scheme),
            ("https://", OriginError::NoHost),
            ("https://:443", OriginError::NoHost),
            ("https://[]:443", OriginError::NoHost),
            ("https://u@h", OriginError::UserInfo),
            ("https://user:pw@example.com", OriginError::UserInfo),
            ("https://example.com/app", OriginError::Path),
            ("https://example.com//", OriginError::Path),
            ("https://example.com?a=1", OriginError::Query),
            ("https://example.com/?a=1", OriginError::Query),
            ("https://example.com#top", OriginError::Fragment),
            ("https://example.com/#top", OriginError::Fragment),
            ("https://example.com:", OriginError::Port),
            ("https://example.com:65536", OriginError::Port),
            ("https://example.com:+80", OriginError::Port),
            ("https://example.com:http", OriginError::Port),
            ("https://::1", OriginError::Host),
            ("https://[::1", OriginError::Host),
            ("https://[::1]x", OriginError::Host),
            ("https://[example.com]", OriginError::Host),
            ("https://exa mple.com", OriginError::Whitespace),
            (" https://example.com", OriginError::Whitespace),
            ("https://example.com\n", OriginError::Whitespace),
        ] {
            assert_eq!(PublicOrigin::parse(bad), Err(why), "{bad}");
        }
    }

    #[test]
    fn proxy_ranges() {
        let range = |t| ProxyRange::parse(t).unwrap();
        assert!(range("10.0.0.0/8").contains("10.255.1.2".parse().unwrap()));
        assert!(!range("10.0.0.0/8").contains("11.0.0.1".parse().unwrap()));
        assert!(range("192.168.1.0/25").contains("192.168.1.127".parse().unwrap()));
        assert!(!range("192.168.1.0/25").contains("192.168.1.128".parse().unwrap()));
        assert!(range("127.0.0.1").contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(range("fd00::/8").contains("fd12::1".parse().unwrap()));
        assert!(!range("fd00::/8").contains("10.0.0.1".parse().unwrap()));
        assert!(range("0.0.0.0/0").contains("8.8.8.8".parse().unwrap()));
        // The bounds of a prefix.
        for ok in ["10.0.0.1/32", "10.0.0.0/0", "::1/128", "::/0"] {
            assert!(ProxyRange::parse(ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("10.0.0.0/33", ProxyRangeError::PrefixTooLong { max: 32 }),
            ("10.0.0.0/300", ProxyRangeError::PrefixTooLong { max: 32 }),
            ("::/129", ProxyRangeError::PrefixTooLong { max: 128 }),
            ("10.0.0.0/x", ProxyRangeError::Prefix),
            ("10.0.0.0/", ProxyRangeError::Prefix),
            ("10.0.0.0/+8", ProxyRangeError::Prefix),
            ("10.0.0", ProxyRangeError::NotAnAddress),
            ("host", ProxyRangeError::NotAnAddress),
            ("proxy.local/8", ProxyRangeError::NotAnAddress),
            ("[::1]", ProxyRangeError::NotAnAddress),
            ("/8", ProxyRangeError::NotAnAddress),
            ("", ProxyRangeError::NotAnAddress),
        ] {
            assert_eq!(ProxyRange::parse(bad), Err(why), "{bad}");
        }
    }

    #[test]
    fn a_refused_entry_is_named_with_its_position_and_the_form() {
        let err = OriginConfig::builder()
            .allow_origin("https://example.com")
            .allow_origin("https://example.com/app")
            .allow_origin("https://www.example.com")
            .build()
            .unwrap_err();
        assert_eq!(
            err,
            JanitorConfigError::AllowedOrigin {
                position: 2,
                count: 3,
                entry: "https://example.com/app".to_owned(),
                reason: OriginError::Path,
            }
        );
        let text = err.to_string();
        for part in [
            "allowed_origins entry 2 of 3",
            "\"https://example.com/app\"",
            "it has a path",
            "scheme://host[:port] with http or https",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        let err = OriginConfig::builder()
            .trust_proxy("proxy.local")
            .build()
            .unwrap_err();
        assert_eq!(
            err,
            JanitorConfigError::TrustedProxy {
                position: 1,
                count: 1,
                entry: "proxy.local".to_owned(),
                reason: ProxyRangeError::NotAnAddress,
            }
        );
        let text = err.to_string();
        for part in [
            "trusted_proxies entry 1 of 1 (\"proxy.local\")",
            "host names are not resolved",
            "an IP address (10.0.0.1, fd00::1) or a CIDR block (10.0.0.0/8, fd00::/8)",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
        let text = OriginConfig::builder()
            .trust_proxy("10.0.0.0/8")
            .trust_proxy("10.0.0.0/33")
            .build()
            .unwrap_err()
            .to_string();
        assert!(
            text.contains("entry 2 of 2 (\"10.0.0.0/33\"): the prefix must be from 0 to 32"),
            "{text}"
        );
    }

    #[test]
    fn each_list_holds_at_most_64_entries() {
        let origins = |n: usize| {
            (0..n).fold(OriginConfig::builder(), |b, i| {
                b.allow_origin(&format!("https://h{i}.example"))
            })
        };
        assert_eq!(
            origins(MAX_ORIGIN_ENTRIES)
                .build()
                .unwrap()
                .allowed_origins()
                .len(),
            64
        );
        let err = origins(MAX_ORIGIN_ENTRIES + 1).build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "allowed_origins must be at most 64 entries, got 65 entries"
        );
        let proxies = |n: usize| {
            (0..n).fold(OriginConfig::builder(), |b, i| {
                b.trust_proxy(&format!("10.0.0.{i}"))
            })
        };
        assert_eq!(
            proxies(MAX_ORIGIN_ENTRIES)
                .build()
                .unwrap()
                .trusted_proxies()
                .len(),
            64
        );
        let err = proxies(MAX_ORIGIN_ENTRIES + 1).build().unwrap_err();
        assert!(matches!(
            err,
            JanitorConfigError::OutOfRange(ref e) if e.field == "trusted_proxies"
        ));
    }

    #[test]
    fn the_built_config_trusts_and_allows() {
        let config = OriginConfig::builder()
            .allow_origin("https://example.com/")
            .trust_proxy("127.0.0.1")
            .build()
            .unwrap();
        assert!(config.trusts(Some("127.0.0.1".parse().unwrap())));
        assert!(!config.trusts(None));
        let listed = PublicOrigin::parse("https://example.com:443").unwrap();
        assert!(config.allows(&listed, None), "the trailing / was dropped");
        let other = PublicOrigin::parse("https://evil.example").unwrap();
        assert!(
            !config.allows(&other, Some(&other)),
            "a list replaces the own-host rule"
        );
    }
}
