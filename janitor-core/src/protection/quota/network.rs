//! The network counter's key: a keyed digest of the client's network prefix, in a label namespace of this
//! library's own.
//!
//! The counter is an extension of the contract: Janitor instances in other languages neither count it nor read
//! its rows. Its ids start with [`OWN_LABEL_PREFIX`] instead of the contract's `sub_`, and label a value the
//! contract never labels, so a database shared with them stays correct: their cleanup may delete one of these
//! rows only once its window has ended, which is what this library's own cleanup does.

use std::net::IpAddr;
use std::ops::RangeInclusive;

use serde_json::json;

use crate::config::{check, ConfigError};
use crate::identification::network::NetworkPrefix;
use crate::label::{compact_json, LabelKey, LABEL_PREFIX};

/// The start of every row id this library writes that the contract does not define.
pub const OWN_LABEL_PREFIX: &str = "jrs_";
/// Bits of an IPv4 address the network counter keeps: 8–32, default 24.
pub const IPV4_PREFIX_BITS: RangeInclusive<u8> = 8..=32;
/// Bits of an IPv6 address the network counter keeps: 16–128, default 48.
pub const IPV6_PREFIX_BITS: RangeInclusive<u8> = 16..=128;

/// How much of an address names its network: IPv4 /24 and IPv6 /48 by default (a routed block; an ISP's
/// site assignment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkPrefixBits {
    ipv4: u8,
    ipv6: u8,
}

impl Default for NetworkPrefixBits {
    fn default() -> Self {
        NetworkPrefixBits { ipv4: 24, ipv6: 48 }
    }
}

impl NetworkPrefixBits {
    /// Prefix lengths, checked against [`IPV4_PREFIX_BITS`] and [`IPV6_PREFIX_BITS`].
    pub fn new(ipv4: u8, ipv6: u8) -> Result<Self, ConfigError> {
        Ok(NetworkPrefixBits {
            ipv4: check("network_ipv4_prefix", ipv4, &IPV4_PREFIX_BITS)?,
            ipv6: check("network_ipv6_prefix", ipv6, &IPV6_PREFIX_BITS)?,
        })
    }

    /// The IPv4 prefix length.
    pub fn ipv4(&self) -> u8 {
        self.ipv4
    }

    /// The IPv6 prefix length.
    pub fn ipv6(&self) -> u8 {
        self.ipv6
    }

    /// The network `address` belongs to, in CIDR notation (see [`NetworkPrefix::with_bits`]).
    pub fn network(&self, address: IpAddr) -> String {
        NetworkPrefix::with_bits(address, self.ipv4, self.ipv6).to_string()
    }
}

/// The network counter's row id for `address`: [`OWN_LABEL_PREFIX`] and the keyed digest of
/// `JSON(["quota-network-v1", "<network in CIDR notation>"])`. Neither the address nor the prefix is stored.
pub fn network_label(key: &LabelKey, bits: NetworkPrefixBits, address: IpAddr) -> String {
    own_label(key, &json!(["quota-network-v1", bits.network(address)]))
}

/// The network counter's row id for every client of a kind that has no address (`unnamed`, `unreadable`):
/// the digest of `JSON(["quota-network-v1", name])`, which no prefix in CIDR notation can equal.
pub fn shared_network_label(key: &LabelKey, name: &str) -> String {
    own_label(key, &json!(["quota-network-v1", name]))
}

/// A label of `value` under this library's own prefix.
pub(crate) fn own_label(key: &LabelKey, value: &serde_json::Value) -> String {
    let label = key.label(&compact_json(value));
    let digest = label.strip_prefix(LABEL_PREFIX).unwrap_or(&label);
    format!("{OWN_LABEL_PREFIX}{digest}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> LabelKey {
        LabelKey::new(&"a".repeat(64), "fixture").unwrap()
    }

    #[test]
    fn prefixes_follow_the_configured_lengths() {
        let bits = NetworkPrefixBits::default();
        assert_eq!(
            bits.network("203.0.113.77".parse().unwrap()),
            "203.0.113.0/24"
        );
        assert_eq!(
            bits.network("::ffff:203.0.113.77".parse().unwrap()),
            "203.0.113.0/24"
        );
        assert_eq!(
            bits.network("2001:db8:1:2::9".parse().unwrap()),
            "2001:db8:1::/48"
        );
        let wide = NetworkPrefixBits::new(16, 32).unwrap();
        assert_eq!(
            wide.network("203.0.113.77".parse().unwrap()),
            "203.0.0.0/16"
        );
        assert_eq!(
            wide.network("2001:db8:1:2::9".parse().unwrap()),
            "2001:db8::/32"
        );
        let exact = NetworkPrefixBits::new(32, 128).unwrap();
        assert_eq!(
            exact.network("203.0.113.77".parse().unwrap()),
            "203.0.113.77/32"
        );
        let widest = NetworkPrefixBits::new(8, 16).unwrap();
        assert_eq!(
            widest.network("203.0.113.77".parse().unwrap()),
            "203.0.0.0/8"
        );
    }

    #[test]
    fn every_bound_is_checked() {
        for (v4, v6, ok) in [
            (8, 48, true),
            (32, 48, true),
            (7, 48, false),
            (33, 48, false),
        ]
        .into_iter()
        .chain([
            (24, 16, true),
            (24, 128, true),
            (24, 15, false),
            (24, 129, false),
        ]) {
            let built = NetworkPrefixBits::new(v4, v6);
            assert_eq!(built.is_ok(), ok, "{v4} {v6}");
            if let Err(e) = built {
                assert!(e.field.starts_with("network_ipv"), "{e}");
            }
        }
    }

    #[test]
    fn labels_are_own_keyed_and_shared_by_a_network() {
        let bits = NetworkPrefixBits::default();
        let a = network_label(&key(), bits, "203.0.113.1".parse().unwrap());
        let b = network_label(&key(), bits, "203.0.113.254".parse().unwrap());
        let c = network_label(&key(), bits, "203.0.114.1".parse().unwrap());
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.starts_with(OWN_LABEL_PREFIX) && a.len() == 4 + 64, "{a}");
        assert!(!a.contains("203"), "no address in the id");
        let other = LabelKey::new(&"b".repeat(64), "fixture").unwrap();
        assert_ne!(
            a,
            network_label(&other, bits, "203.0.113.1".parse().unwrap())
        );
    }
}
