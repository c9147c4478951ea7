//! The network a visit comes from, as evidence among lookalike devices (opt-in).
//!
//! Identical devices (same model, browser, timezone and languages) send identical payloads; what still tells
//! them apart is where they connect from. A household shares its home connection, an office its own. So the
//! engine may keep, with each observation, a **keyed digest of the client's network prefix** (IPv4 /24, IPv6
//! /48) and let the precise policy use it to confirm or veto a restore among candidates that look alike. It is
//! never a lookup key and never decides alone: a phone on its carrier, a laptop at work or a household that
//! moved still comes back through its browser signals.
//!
//! The digest is a label of the deployment's secret ([`LabelKey`]), so it cannot be reversed to an address
//! without the secret, and instances sharing a secret derive the same one. It is personal data all the same
//! (docs/security.md, "The network prefix").

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::label::{compact_json, LabelKey};

/// Bits of an IPv4 address kept: a /24, the smallest block routed between networks.
pub const IPV4_PREFIX_BITS: u8 = 24;
/// Bits of an IPv6 address kept: a /48, what an ISP assigns to one site.
pub const IPV6_PREFIX_BITS: u8 = 48;

/// An address's network prefix: its first 24 bits (IPv4) or 48 bits (IPv6) unless told otherwise, the rest
/// zeroed. An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) is the IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NetworkPrefix {
    network: IpAddr,
    bits: u8,
}

impl NetworkPrefix {
    /// The prefix `address` belongs to, at the network evidence's lengths (/24, /48).
    pub fn of(address: IpAddr) -> Self {
        Self::with_bits(address, IPV4_PREFIX_BITS, IPV6_PREFIX_BITS)
    }

    /// The prefix `address` belongs to, keeping `ipv4_bits` (at most 32) of an IPv4 address and `ipv6_bits`
    /// (at most 128) of an IPv6 one; longer lengths are taken as the whole address.
    pub fn with_bits(address: IpAddr, ipv4_bits: u8, ipv6_bits: u8) -> Self {
        let v4 = |v4: Ipv4Addr| {
            let bits = ipv4_bits.min(32);
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            (IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask)), bits)
        };
        let (network, bits) = match address {
            IpAddr::V4(address) => v4(address),
            IpAddr::V6(address) => match address.to_ipv4_mapped() {
                Some(address) => v4(address),
                None => {
                    let bits = ipv6_bits.min(128);
                    let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
                    (IpAddr::V6(Ipv6Addr::from(u128::from(address) & mask)), bits)
                }
            },
        };
        NetworkPrefix { network, bits }
    }

    /// The prefix's length in bits.
    pub fn bits(&self) -> u8 {
        self.bits
    }
}

impl fmt::Display for NetworkPrefix {
    /// CIDR notation: `203.0.113.0/24`, `2001:db8:1::/48`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.bits())
    }
}

/// The keyed digest of a [`NetworkPrefix`] that is stored with an observation: the label
/// ([`LabelKey::label`]) of `JSON(["network-v1", "<prefix in CIDR notation>"])`.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct NetworkDigest(String);

impl NetworkDigest {
    /// The digest of `prefix` under `key`.
    pub fn new(key: &LabelKey, prefix: NetworkPrefix) -> Self {
        let value = compact_json(&serde_json::json!(["network-v1", prefix.to_string()]));
        NetworkDigest(key.label(&value))
    }

    /// The digest of the prefix `address` belongs to.
    pub fn of(key: &LabelKey, address: IpAddr) -> Self {
        Self::new(key, NetworkPrefix::of(address))
    }

    /// The digest of a network nobody can name: a visit whose forwarding headers conflict or cannot be read.
    /// It is fresh for every visit (a keyed label of a random value, shaped like every other digest), so it
    /// confirms no candidate, and a candidate seen only on another network is vetoed as from any new network:
    /// a client that garbles its headers gains nothing a plain request from its own network would not.
    pub fn unplaced(key: &LabelKey) -> Self {
        let nonce: [u8; 16] = rand::random();
        let nonce: String = nonce.iter().map(|b| format!("{b:02x}")).collect();
        let value = compact_json(&serde_json::json!(["network-unplaced-v1", nonce]));
        NetworkDigest(key.label(&value))
    }

    /// A digest as stored (a store reading its rows back).
    pub fn from_stored(digest: String) -> Self {
        NetworkDigest(digest)
    }

    /// The digest as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for NetworkDigest {
    /// Only a short head: a digest in logs would link a visitor's requests as well as the whole one.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NetworkDigest({}…)", &self.0[..self.0.len().min(8)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(address: &str) -> String {
        NetworkPrefix::of(address.parse().unwrap()).to_string()
    }

    #[test]
    fn a_prefix_keeps_24_or_48_bits() {
        assert_eq!(prefix("203.0.113.77"), "203.0.113.0/24");
        assert_eq!(prefix("203.0.113.0"), "203.0.113.0/24");
        assert_eq!(prefix("203.0.113.255"), "203.0.113.0/24");
        assert_eq!(prefix("203.0.114.1"), "203.0.114.0/24");
        assert_eq!(prefix("2001:db8:1:2:3:4:5:6"), "2001:db8:1::/48");
        assert_eq!(prefix("2001:db8:1:ffff::1"), "2001:db8:1::/48");
        assert_eq!(prefix("2001:db8:2::1"), "2001:db8:2::/48");
        assert_eq!(prefix("::ffff:198.51.100.9"), "198.51.100.0/24");
        assert_eq!(prefix("::1"), "::/48");
    }

    #[test]
    fn an_unplaced_network_is_another_one_each_time() {
        let key = LabelKey::new(&"k".repeat(32), "app").unwrap();
        let (first, second) = (NetworkDigest::unplaced(&key), NetworkDigest::unplaced(&key));
        assert_ne!(first, second);
        let placed = NetworkDigest::of(&key, "203.0.113.1".parse().unwrap());
        assert_eq!(
            first.as_str().len(),
            placed.as_str().len(),
            "shaped like any digest"
        );
    }

    #[test]
    fn a_digest_is_keyed_and_shared_within_a_prefix() {
        let key = LabelKey::new(&"k".repeat(32), "app").unwrap();
        let other = LabelKey::new(&"q".repeat(32), "app").unwrap();
        let at = |key: &LabelKey, address: &str| NetworkDigest::of(key, address.parse().unwrap());
        assert_eq!(at(&key, "203.0.113.1"), at(&key, "203.0.113.200"));
        assert_eq!(at(&key, "203.0.113.1"), at(&key, "::ffff:203.0.113.9"));
        assert_ne!(at(&key, "203.0.113.1"), at(&key, "203.0.112.1"));
        assert_ne!(at(&key, "203.0.113.1"), at(&other, "203.0.113.1"));
        assert_ne!(
            at(&key, "2001:db8:1::1"),
            at(&key, "2001:db8:2::1"),
            "another /48"
        );
        let digest = at(&key, "203.0.113.1");
        assert_eq!(
            digest.as_str(),
            key.label(r#"["network-v1","203.0.113.0/24"]"#)
        );
        assert!(!format!("{digest:?}").contains(&digest.as_str()[8..]));
    }
}
