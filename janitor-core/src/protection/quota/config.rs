//! The quota options, their ranges, and the quota context server code attaches to a request.

use std::fmt;
use std::ops::RangeInclusive;

use serde_json::Value;

use super::{NetworkPrefixBits, QuotaAlgorithm};
use crate::config::{check, ConfigError, Limit};

/// Requests per window for the whole deployment (default 600).
pub const GLOBAL_LIMIT: Limit<u32> = Limit::new("global", 600, 1, 1_000_000);
/// Requests per window for one account (default 60).
pub const ACCOUNT_LIMIT: Limit<u32> = Limit::new("account", 60, 1, 1_000_000);
/// Requests per window for one session (default 30).
pub const SESSION_LIMIT: Limit<u32> = Limit::new("session", 30, 1, 1_000_000);
/// Requests per window from one network prefix (off unless set; no contract default).
pub const NETWORK_LIMIT: Limit<u32> = Limit::new("network", 60, 1, 1_000_000);
/// Slices the global quota is cut into, each its own row (default 1: no sharding).
pub const SHARDS: Limit<u32> = Limit::new("shards", 1, 1, 128);
/// Length of a quota window in milliseconds (default one minute).
pub const WINDOW_MS: Limit<i64> = Limit::new("window_ms", 60_000, 1_000, 3_600_000);
/// Length of an account or session id in the quota context, in characters.
pub const CONTEXT_ID_CHARS: RangeInclusive<usize> = 1..=512;

/// Why a quota configuration or a quota context was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaConfigError {
    /// A value outside its range.
    #[error(transparent)]
    OutOfRange(#[from] ConfigError),
    /// A key the configuration does not have.
    #[error(
        "unknown quota option {0:?} (known: global, account, session, network, network_algorithm, \
         network_ipv4_prefix, network_ipv6_prefix, shards, window_ms)"
    )]
    UnknownKey(String),
    /// A value of the wrong type.
    #[error("quota option {0} must be a whole number")]
    NotANumber(&'static str),
    /// The configuration is not a JSON object.
    #[error("quota options must be an object")]
    NotAnObject,
    /// An algorithm name that is neither `fixed_window` nor `gcra`.
    #[error("quota option network_algorithm must be \"fixed_window\" or \"gcra\"")]
    UnknownAlgorithm,
}

/// Validated request quota options. Each of the three counters is on with its limit, or off: an off counter
/// is never claimed and holds no row. The default (and [`from_value`](Self::from_value) of `{}`) has all three
/// on with the contract's limits; [`QuotaConfigBuilder::without_global`] and its siblings switch one off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaConfig {
    pub(super) global: Option<u32>,
    pub(super) account: Option<u32>,
    pub(super) session: Option<u32>,
    pub(super) network: Option<u32>,
    pub(super) network_algorithm: QuotaAlgorithm,
    pub(super) network_prefix: NetworkPrefixBits,
    pub(super) shards: u32,
    pub(super) window_ms: i64,
}

/// The network counter's algorithm unless set: GCRA, chosen by the sign-in benchmark
/// (docs/signin-defence.md): it delays honest clients of a busy network by one interval, not to the window's
/// end, and an attacker gets no edge burst.
pub const NETWORK_ALGORITHM: QuotaAlgorithm = QuotaAlgorithm::Gcra;

impl Default for QuotaConfig {
    fn default() -> Self {
        QuotaConfig {
            global: Some(GLOBAL_LIMIT.default),
            account: Some(ACCOUNT_LIMIT.default),
            session: Some(SESSION_LIMIT.default),
            network: None,
            network_algorithm: NETWORK_ALGORITHM,
            network_prefix: NetworkPrefixBits::default(),
            shards: SHARDS.default,
            window_ms: WINDOW_MS.default,
        }
    }
}

impl QuotaConfig {
    /// A builder starting from the defaults: every counter on.
    pub fn builder() -> QuotaConfigBuilder {
        QuotaConfigBuilder::default()
    }

    /// Options from a JSON object such as `{"global": 600, "shards": 4}`: every key optional (an absent counter
    /// of the contract is on with its default, as the contract reads it; the network counter is off unless
    /// named), unknown keys and out-of-range values refused (the message names the range).
    pub fn from_value(value: &Value) -> Result<QuotaConfig, QuotaConfigError> {
        let object = value.as_object().ok_or(QuotaConfigError::NotAnObject)?;
        let mut builder = QuotaConfig::builder();
        for (key, value) in object {
            let number =
                |name: &'static str| value.as_i64().ok_or(QuotaConfigError::NotANumber(name));
            // Out-of-range values (negative, huge) keep their sign and size until `build` names the range.
            let as_u32 = |n: i64| u32::try_from(n).unwrap_or(if n < 0 { 0 } else { u32::MAX });
            builder = match key.as_str() {
                "global" => builder.global(as_u32(number("global")?)),
                "account" => builder.account(as_u32(number("account")?)),
                "session" => builder.session(as_u32(number("session")?)),
                "network" => builder.network(as_u32(number("network")?)),
                "network_algorithm" => builder.network_algorithm(
                    value
                        .as_str()
                        .and_then(QuotaAlgorithm::parse)
                        .ok_or(QuotaConfigError::UnknownAlgorithm)?,
                ),
                "network_ipv4_prefix" => {
                    let bits = number("network_ipv4_prefix")?;
                    builder.network_ipv4_prefix(u8::try_from(bits).unwrap_or(u8::MAX))
                }
                "network_ipv6_prefix" => {
                    let bits = number("network_ipv6_prefix")?;
                    builder.network_ipv6_prefix(u8::try_from(bits).unwrap_or(u8::MAX))
                }
                "shards" => builder.shards(as_u32(number("shards")?)),
                "window_ms" => builder.window_ms(number("window_ms")?),
                other => return Err(QuotaConfigError::UnknownKey(other.to_owned())),
            };
        }
        Ok(builder.build()?)
    }

    /// The global limit per window; `None` when the global counter is off.
    pub fn global(&self) -> Option<u32> {
        self.global
    }

    /// The per-account limit per window; `None` when the account counter is off.
    pub fn account(&self) -> Option<u32> {
        self.account
    }

    /// The per-session limit per window; `None` when the session counter is off.
    pub fn session(&self) -> Option<u32> {
        self.session
    }

    /// The limit of `counter` per window (for a sharded global quota, the whole deployment's); `None` when it
    /// is off.
    pub fn limit(&self, counter: super::QuotaCounter) -> Option<u32> {
        match counter {
            super::QuotaCounter::Global => self.global,
            super::QuotaCounter::Network => self.network,
            super::QuotaCounter::Account => self.account,
            super::QuotaCounter::Session => self.session,
        }
    }

    /// The per-network limit per window; `None` (the default) when the network counter is off.
    pub fn network(&self) -> Option<u32> {
        self.network
    }

    /// How the network counter spends its limit.
    pub fn network_algorithm(&self) -> QuotaAlgorithm {
        self.network_algorithm
    }

    /// The network counter's window: the quotas' window.
    pub fn network_window_ms(&self) -> i64 {
        self.window_ms
    }

    /// How much of a client address names its network.
    pub fn network_prefix(&self) -> NetworkPrefixBits {
        self.network_prefix
    }

    /// Whether at least one counter is on. A configuration with none counts nothing.
    pub fn any_counter_on(&self) -> bool {
        self.global.is_some()
            || self.account.is_some()
            || self.session.is_some()
            || self.network.is_some()
    }

    /// The shards asked for (see [`effective_shards`](Self::effective_shards) for the ones used).
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// Shards actually used: `min(shards, global)`, so that no slice has a limit of zero; 0 when the global
    /// counter is off (it has no row at all).
    pub fn effective_shards(&self) -> u32 {
        self.global.map_or(0, |global| self.shards.min(global))
    }

    /// The window length in milliseconds.
    pub fn window_ms(&self) -> i64 {
        self.window_ms
    }

    /// The limit of global shard `shard`: `floor(global / shards)`, plus one for the first `global % shards`
    /// shards, so the slices sum exactly to the global limit; 0 when the global counter is off.
    pub fn shard_limit(&self, shard: u32) -> u32 {
        let Some(global) = self.global else {
            return 0;
        };
        let shards = self.effective_shards();
        global / shards + u32::from(shard < global % shards)
    }
}

/// Shows which counters are on and their limits, for the log line a handle writes at start:
/// `global 600 (1 shard), account 60, session off, window 60000 ms`.
impl fmt::Display for QuotaConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.global {
            Some(limit) => {
                let shards = self.effective_shards();
                let plural = if shards == 1 { "" } else { "s" };
                write!(f, "global {limit} ({shards} shard{plural})")?;
            }
            None => f.write_str("global off")?,
        }
        // The network counter is this library's own: named only when on, so the contract's line is unchanged.
        if let Some(limit) = self.network {
            write!(f, ", network {limit} ({})", self.network_algorithm.as_str())?;
        }
        for (name, limit) in [("account", self.account), ("session", self.session)] {
            match limit {
                Some(limit) => write!(f, ", {name} {limit}")?,
                None => write!(f, ", {name} off")?,
            }
        }
        write!(f, ", window {} ms", self.window_ms)
    }
}

/// What the builder holds for one counter.
#[derive(Debug, Clone, Copy, Default)]
enum Counter {
    /// Not mentioned: on with the default limit.
    #[default]
    Default,
    /// On with this limit (checked by `build`).
    Limit(u32),
    /// Switched off.
    Off,
}

impl Counter {
    fn build(self, limit: Limit<u32>) -> Result<Option<u32>, ConfigError> {
        match self {
            Counter::Default => Ok(Some(limit.default)),
            Counter::Limit(n) => limit.check(n).map(Some),
            Counter::Off => Ok(None),
        }
    }
}

/// Builds a [`QuotaConfig`]; [`build`](Self::build) checks every value. Every counter starts on with its
/// default; for each counter the last call wins (`without_account().account(5)` is on with 5).
#[derive(Debug, Clone, Copy, Default)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct QuotaConfigBuilder {
    global: Counter,
    account: Counter,
    session: Counter,
    network: Option<u32>,
    network_algorithm: Option<QuotaAlgorithm>,
    network_ipv4_prefix: Option<u8>,
    network_ipv6_prefix: Option<u8>,
    shards: Option<u32>,
    window_ms: Option<i64>,
}

impl QuotaConfigBuilder {
    /// Requests per window for the deployment: 1–1,000,000, default 600.
    pub fn global(mut self, limit: u32) -> Self {
        self.global = Counter::Limit(limit);
        self
    }

    /// Requests per window per account: 1–1,000,000, default 60.
    pub fn account(mut self, limit: u32) -> Self {
        self.account = Counter::Limit(limit);
        self
    }

    /// Requests per window per session: 1–1,000,000, default 30.
    pub fn session(mut self, limit: u32) -> Self {
        self.session = Counter::Limit(limit);
        self
    }

    /// Switches the network counter on: requests per window from one network prefix, 1–1,000,000 (off unless
    /// set). The client address is the one the origin policy vouches for (the peer, or what a trusted proxy
    /// forwarded).
    pub fn network(mut self, limit: u32) -> Self {
        self.network = Some(limit);
        self
    }

    /// How the network counter spends its limit (default [`NETWORK_ALGORITHM`]).
    pub fn network_algorithm(mut self, algorithm: QuotaAlgorithm) -> Self {
        self.network_algorithm = Some(algorithm);
        self
    }

    /// Bits of an IPv4 address that name its network: 8–32, default 24.
    pub fn network_ipv4_prefix(mut self, bits: u8) -> Self {
        self.network_ipv4_prefix = Some(bits);
        self
    }

    /// Bits of an IPv6 address that name its network: 16–128, default 48.
    pub fn network_ipv6_prefix(mut self, bits: u8) -> Self {
        self.network_ipv6_prefix = Some(bits);
        self
    }

    /// Switches the global counter off: no request counts against the whole deployment, and `shards` shapes
    /// nothing.
    pub fn without_global(mut self) -> Self {
        self.global = Counter::Off;
        self
    }

    /// Switches the account counter off: the account server code attaches to a request is not counted.
    pub fn without_account(mut self) -> Self {
        self.account = Counter::Off;
        self
    }

    /// Switches the session counter off: the session server code attaches to a request is not counted.
    pub fn without_session(mut self) -> Self {
        self.session = Counter::Off;
        self
    }

    /// Global shards: 1–128, default 1.
    pub fn shards(mut self, shards: u32) -> Self {
        self.shards = Some(shards);
        self
    }

    /// Window length: 1,000–3,600,000 ms, default 60,000.
    pub fn window_ms(mut self, ms: i64) -> Self {
        self.window_ms = Some(ms);
        self
    }

    /// Checks the values (the shards and the window too when the counters they shape are off).
    pub fn build(self) -> Result<QuotaConfig, ConfigError> {
        Ok(QuotaConfig {
            global: self.global.build(GLOBAL_LIMIT)?,
            account: self.account.build(ACCOUNT_LIMIT)?,
            session: self.session.build(SESSION_LIMIT)?,
            network: self.network.map(|n| NETWORK_LIMIT.check(n)).transpose()?,
            network_algorithm: self.network_algorithm.unwrap_or(NETWORK_ALGORITHM),
            network_prefix: NetworkPrefixBits::new(
                self.network_ipv4_prefix.unwrap_or(24),
                self.network_ipv6_prefix.unwrap_or(48),
            )?,
            shards: SHARDS.or_default(self.shards)?,
            window_ms: WINDOW_MS.or_default(self.window_ms)?,
        })
    }
}

/// Who a request is for, as server code knows it (never read from the request body): an account and a session,
/// each counted against its own quota.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuotaContext<'a> {
    account: Option<&'a str>,
    session: Option<&'a str>,
    network: Option<&'a str>,
}

impl<'a> QuotaContext<'a> {
    /// A context with neither: only the global quota applies.
    pub fn anonymous() -> Self {
        QuotaContext::default()
    }

    /// A context with an optional account and session id, each 1–512 characters.
    pub fn new(account: Option<&'a str>, session: Option<&'a str>) -> Result<Self, ConfigError> {
        for (field, value) in [("account", account), ("session", session)] {
            if let Some(value) = value {
                check(field, value.chars().count(), &CONTEXT_ID_CHARS).map_err(|mut e| {
                    // Name the length, never echo the id itself.
                    e.range = format!("1 to 512 characters long ({})", e.range);
                    e
                })?;
            }
        }
        Ok(QuotaContext {
            account,
            session,
            network: None,
        })
    }

    /// The same context from the network whose counter id is `network` (see
    /// [`network_label`](super::network_label)); the handle fills it from the client address.
    pub fn with_network(self, network: Option<&'a str>) -> Self {
        QuotaContext { network, ..self }
    }

    /// The network counter's id, if any.
    pub fn network(&self) -> Option<&'a str> {
        self.network
    }

    /// The account, if any.
    pub fn account(&self) -> Option<&'a str> {
        self.account
    }

    /// The session, if any.
    pub fn session(&self) -> Option<&'a str> {
        self.session
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_bound_is_checked() {
        type Setter = fn(QuotaConfigBuilder, i64) -> QuotaConfigBuilder;
        let cases: [(Setter, i64, i64, &str); 8] = [
            (|b, v| b.global(v as u32), 1, 1_000_000, "global"),
            (|b, v| b.network(v as u32), 1, 1_000_000, "network"),
            (
                |b, v| b.network_ipv4_prefix(v as u8),
                8,
                32,
                "network_ipv4_prefix",
            ),
            (
                |b, v| b.network_ipv6_prefix(v as u8),
                16,
                128,
                "network_ipv6_prefix",
            ),
            (|b, v| b.account(v as u32), 1, 1_000_000, "account"),
            (|b, v| b.session(v as u32), 1, 1_000_000, "session"),
            (|b, v| b.shards(v as u32), 1, 128, "shards"),
            (|b, v| b.window_ms(v), 1_000, 3_600_000, "window_ms"),
        ];
        for (set, low, high, field) in cases {
            for ok in [low, high] {
                assert!(
                    set(QuotaConfig::builder(), ok).build().is_ok(),
                    "{field} {ok}"
                );
            }
            for bad in [low - 1, high + 1] {
                let err = set(QuotaConfig::builder(), bad).build().unwrap_err();
                assert_eq!(err.field, field);
                assert!(
                    err.to_string().contains(&format!("from {low} to {high}")),
                    "{err}"
                );
            }
        }
    }

    #[test]
    fn from_value_refuses_unknown_keys_types_and_ranges() {
        let config =
            QuotaConfig::from_value(&json!({"global": 21, "shards": 4, "window_ms": 1000}))
                .unwrap();
        assert_eq!(
            (
                config.global(),
                config.effective_shards(),
                config.window_ms()
            ),
            (Some(21), 4, 1000)
        );
        assert_eq!(
            QuotaConfig::from_value(&json!({})).unwrap(),
            QuotaConfig::default()
        );
        assert!(matches!(
            QuotaConfig::from_value(&json!({"globl": 1})),
            Err(QuotaConfigError::UnknownKey(k)) if k == "globl"
        ));
        assert!(matches!(
            QuotaConfig::from_value(&json!({"global": "600"})),
            Err(QuotaConfigError::NotANumber("global"))
        ));
        assert!(matches!(
            QuotaConfig::from_value(&json!({"global": 1.5})),
            Err(QuotaConfigError::NotANumber("global"))
        ));
        let err = QuotaConfig::from_value(&json!({"shards": 129})).unwrap_err();
        assert!(err.to_string().contains("from 1 to 128"), "{err}");
        let err = QuotaConfig::from_value(&json!({"global": -1})).unwrap_err();
        assert!(err.to_string().contains("from 1 to 1000000"), "{err}");
        let err = QuotaConfig::from_value(&json!({"global": 5_000_000_000_i64})).unwrap_err();
        assert!(err.to_string().contains("from 1 to 1000000"), "{err}");
        assert!(matches!(
            QuotaConfig::from_value(&json!([1])),
            Err(QuotaConfigError::NotAnObject)
        ));
    }

    #[test]
    fn the_default_is_every_counter_on_with_the_contract_limits() {
        let expected = QuotaConfig {
            global: Some(600),
            account: Some(60),
            session: Some(30),
            network: None,
            network_algorithm: QuotaAlgorithm::Gcra,
            network_prefix: NetworkPrefixBits::default(),
            shards: 1,
            window_ms: 60_000,
        };
        assert_eq!(QuotaConfig::default(), expected);
        assert_eq!(QuotaConfig::from_value(&json!({})).unwrap(), expected);
        assert_eq!(QuotaConfig::builder().build().unwrap(), expected);
        // A counter the JSON names changes only its own limit: the others stay on, as the contract reads it.
        let account = QuotaConfig::from_value(&json!({"account": 3})).unwrap();
        assert_eq!(
            (account.global(), account.account(), account.session()),
            (Some(600), Some(3), Some(30))
        );
        assert!(expected.any_counter_on());
    }

    #[test]
    fn counters_can_be_switched_off() {
        let only_account = QuotaConfig::builder()
            .without_global()
            .account(3)
            .without_session()
            .build()
            .unwrap();
        assert_eq!(
            (
                only_account.global(),
                only_account.account(),
                only_account.session()
            ),
            (None, Some(3), None)
        );
        assert!(only_account.any_counter_on());
        assert_eq!(only_account.effective_shards(), 0, "no global row at all");
        assert_eq!(only_account.shard_limit(0), 0);
        let none = QuotaConfig::builder()
            .without_global()
            .without_account()
            .without_session()
            .build()
            .unwrap();
        assert!(!none.any_counter_on());
        // The last call wins, either way round.
        let on_again = QuotaConfig::builder().without_account().account(5).build();
        assert_eq!(on_again.unwrap().account(), Some(5));
        let off_again = QuotaConfig::builder().session(5).without_session().build();
        assert_eq!(off_again.unwrap().session(), None);
        // The shape is still checked when the counter it shapes is off.
        let shards = QuotaConfig::builder().without_global().shards(129).build();
        assert_eq!(shards.unwrap_err().field, "shards");
        let window = QuotaConfig::builder()
            .without_account()
            .window_ms(999)
            .build();
        assert_eq!(window.unwrap_err().field, "window_ms");
        // An off counter's limit is not checked: it has none.
        let sharded = QuotaConfig::builder().without_global().shards(4).build();
        assert_eq!(sharded.unwrap().shards(), 4);
    }

    #[test]
    fn display_names_each_counter_on_or_off() {
        assert_eq!(
            QuotaConfig::default().to_string(),
            "global 600 (1 shard), account 60, session 30, window 60000 ms"
        );
        let config = QuotaConfig::builder()
            .global(21)
            .shards(4)
            .without_account()
            .session(2)
            .window_ms(1_000)
            .build()
            .unwrap();
        assert_eq!(
            config.to_string(),
            "global 21 (4 shards), account off, session 2, window 1000 ms"
        );
        let only_account = QuotaConfig::builder()
            .without_global()
            .account(3)
            .without_session()
            .build()
            .unwrap();
        assert_eq!(
            only_account.to_string(),
            "global off, account 3, session off, window 60000 ms"
        );
    }

    #[test]
    fn shard_slices_sum_to_the_global_limit() {
        for global in [1, 2, 7, 21, 600, 1_000_000] {
            for shards in [1, 2, 3, 4, 7, 32, 128] {
                let c = QuotaConfig::builder()
                    .global(global)
                    .shards(shards)
                    .build()
                    .unwrap();
                let n = c.effective_shards();
                assert_eq!(n, shards.min(global));
                let slices: Vec<u32> = (0..n).map(|i| c.shard_limit(i)).collect();
                assert_eq!(
                    Some(slices.iter().sum::<u32>()),
                    c.global(),
                    "global {global} shards {shards}"
                );
                assert!(slices.iter().all(|&s| s >= 1));
                assert!(slices.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1));
            }
        }
        let c = QuotaConfig::builder().global(21).shards(4).build().unwrap();
        assert_eq!(
            (0..4).map(|i| c.shard_limit(i)).collect::<Vec<_>>(),
            [6, 5, 5, 5]
        );
    }

    #[test]
    fn context_ids_are_1_to_512_characters() {
        let long = "é".repeat(512);
        assert!(QuotaContext::new(Some(&long), Some("s")).is_ok());
        let too_long = "é".repeat(513);
        let err = QuotaContext::new(Some(&too_long), None).unwrap_err();
        assert_eq!(err.field, "account");
        assert!(!err.to_string().contains('é'));
        assert_eq!(
            QuotaContext::new(None, Some("")).unwrap_err().field,
            "session"
        );
        assert_eq!(
            QuotaContext::anonymous(),
            QuotaContext::new(None, None).unwrap()
        );
    }
}
