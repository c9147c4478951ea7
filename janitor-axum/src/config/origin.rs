//! Which origins may call the endpoint, and which proxies may tell it the host and scheme the public used.
//!
//! By default a request's `Origin` must be the request's own host, as the browser reached it. Behind a reverse
//! proxy that rewrites `Host` (nginx's default), or when the site answers on several names, that is not what
//! the browser sent: list the public origins instead, or trust the `Forwarded` / `X-Forwarded-*` headers of
//! the proxies at known addresses. Forwarded headers from any other peer are ignored: a client could write
//! them.

use std::net::IpAddr;

use super::JanitorConfigError;

/// An origin as browsers send it, normalised: lower-case scheme and host, and no port when it is the scheme's
/// default (`https://example.com:443` is `https://example.com`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PublicOrigin(String);

impl PublicOrigin {
    /// Parses `scheme://host[:port]` (http or https, nothing after the authority).
    pub fn parse(text: &str) -> Option<PublicOrigin> {
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

/// A range of proxy addresses: one address, or a CIDR block (`10.0.0.0/8`, `fd00::/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProxyRange {
    network: IpAddr,
    prefix: u8,
}

impl ProxyRange {
    /// Parses `address` or `address/prefix`.
    pub fn parse(text: &str) -> Option<ProxyRange> {
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix.parse::<u8>().ok()?)),
            None => (text, None),
        };
        let network: IpAddr = address.parse().ok()?;
        let width = if network.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(width);
        (prefix <= width).then_some(ProxyRange { network, prefix })
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

/// Most origins a list may hold: enough for every name of a site, small enough to check per request.
const MAX_ORIGINS: usize = 64;

impl OriginConfigBuilder {
    /// A public origin the browser client is served from (`https://example.com`, `https://www.example.com`);
    /// once any is listed, only listed origins may call. At most 64.
    pub fn allow_origin(mut self, origin: &str) -> Self {
        self.allowed.push(origin.to_owned());
        self
    }

    /// Believe `Forwarded`, `X-Forwarded-Host` and `X-Forwarded-Proto` from peers in `range` (`127.0.0.1`,
    /// `10.0.0.0/8`). The server must be run with the peer address (axum's
    /// `into_make_service_with_connect_info::<SocketAddr>()`), or no peer is trusted. At most 64.
    pub fn trust_proxy(mut self, range: &str) -> Self {
        self.trusted_proxies.push(range.to_owned());
        self
    }

    /// Checks the values.
    pub fn build(self) -> Result<OriginConfig, JanitorConfigError> {
        let invalid = |field, reason| JanitorConfigError::Invalid { field, reason };
        if self.allowed.len() > MAX_ORIGINS {
            return Err(invalid("allowed_origins", "at most 64 origins"));
        }
        if self.trusted_proxies.len() > MAX_ORIGINS {
            return Err(invalid("trusted_proxies", "at most 64 ranges"));
        }
        let allowed = self
            .allowed
            .iter()
            .map(|o| PublicOrigin::parse(o))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                invalid(
                    "allowed_origins",
                    "each must be http(s)://host[:port], nothing after",
                )
            })?;
        let trusted_proxies = self
            .trusted_proxies
            .iter()
            .map(|r| ProxyRange::parse(r))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| {
                invalid(
                    "trusted_proxies",
                    "each must be an IP address or address/prefix",
                )
            })?;
        Ok(OriginConfig {
            allowed,
            trusted_proxies,
        })
    }
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
            ("HTTPS://www.example.com", "https://www.example.com"),
        ] {
            assert_eq!(
                PublicOrigin::parse(text).unwrap().as_str(),
                normal,
                "{text}"
            );
        }
        for bad in [
            "example.com",
            "ftp://example.com",
            "https://",
            "https://a/b",
            "https://u@h",
            "null",
        ] {
            assert!(PublicOrigin::parse(bad).is_none(), "{bad}");
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
        for bad in ["10.0.0.0/33", "::/129", "10.0.0", "host", "10.0.0.0/x"] {
            assert!(ProxyRange::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn the_builder_refuses_what_does_not_parse() {
        assert!(OriginConfig::builder()
            .allow_origin("example.com")
            .build()
            .is_err());
        assert!(OriginConfig::builder()
            .trust_proxy("proxy.local")
            .build()
            .is_err());
        let mut many = OriginConfig::builder();
        for n in 0..=MAX_ORIGINS {
            many = many.allow_origin(&format!("https://h{n}.example"));
        }
        assert!(many.build().is_err());
        let config = OriginConfig::builder()
            .allow_origin("https://example.com")
            .trust_proxy("127.0.0.1")
            .build()
            .unwrap();
        assert!(config.trusts(Some("127.0.0.1".parse().unwrap())));
        assert!(!config.trusts(None));
        let listed = PublicOrigin::parse("https://example.com:443").unwrap();
        assert!(config.allows(&listed, None));
        let other = PublicOrigin::parse("https://evil.example").unwrap();
        assert!(
            !config.allows(&other, Some(&other)),
            "a list replaces the own-host rule"
        );
    }
}
