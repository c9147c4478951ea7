//! The client's network as the network counter and the sign-in's network budget key it.

use http::request::Parts;
use janitor_core::protection::quota::QuotaCounter;
use janitor_core::protection::quota::{network_label, NetworkPrefixBits, QuotaConfig};
use janitor_core::protection::signin::SignInReason;

use crate::config::JanitorConfig;
use crate::origin::{client_address, ClientAddress};
use crate::refusal::RateLimitPolicy;

/// Where a request came from, as the counters key it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ClientNetwork {
    /// The network prefix in CIDR notation, or the name every client without one shares.
    pub(crate) network: String,
    /// The network counter's row id: a keyed digest in the library's own label namespace.
    pub(crate) quota_id: String,
}

/// Every request whose client nobody names (no peer address, or a trusted proxy that forwarded none): one
/// network, so such requests still meet the network counter, together.
const UNNAMED: &str = "unnamed";
/// Every request whose forwarding headers cannot be read or disagree: one network, so garbling them gains a
/// client nothing.
const UNREADABLE: &str = "unreadable";

/// The network of the request `parts`, by the origin policy's rules for the client address.
pub(crate) fn client_network(parts: &Parts, config: &JanitorConfig) -> ClientNetwork {
    let bits = config
        .quotas
        .as_ref()
        .map_or_else(NetworkPrefixBits::default, QuotaConfig::network_prefix);
    match client_address(parts, &config.origin) {
        ClientAddress::Known(address) => ClientNetwork {
            network: bits.network(address),
            quota_id: network_label(&config.key, bits, address),
        },
        ClientAddress::Unnamed => shared(config, UNNAMED),
        ClientAddress::Unreadable => shared(config, UNREADABLE),
    }
}

fn shared(config: &JanitorConfig, name: &str) -> ClientNetwork {
    // A name no prefix can take (it has no slash), labelled like a prefix.
    let quota_id = janitor_core::protection::quota::shared_network_label(&config.key, name);
    ClientNetwork {
        network: name.to_owned(),
        quota_id,
    }
}

/// The `RateLimit-Policy` of a spent request counter, when the configuration sends the fields.
pub(crate) fn quota_policy(
    config: &JanitorConfig,
    counter: QuotaCounter,
) -> Option<RateLimitPolicy> {
    let quotas = config
        .quotas
        .as_ref()
        .filter(|_| config.rate_limit_headers)?;
    Some(RateLimitPolicy {
        name: counter.as_str(),
        quota: quotas.limit(counter)?,
        window_secs: u64::try_from(quotas.window_ms() / 1000).unwrap_or(1),
    })
}

/// The `RateLimit-Policy` of a sign-in's spent counter, named after the decision's reason.
pub(crate) fn signin_policy(
    config: &JanitorConfig,
    spent: janitor_core::protection::signin::SpentLimit,
) -> Option<RateLimitPolicy> {
    config.rate_limit_headers.then_some(RateLimitPolicy {
        name: SignInReason::as_str(&spent.reason),
        quota: spent.quota,
        window_secs: spent.window_secs.max(1),
    })
}
