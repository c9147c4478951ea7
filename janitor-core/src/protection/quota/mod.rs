//! Request quotas: the global quota (optionally cut into shards), then one per account, then one per session.
//!
//! Counters are rows shared by every instance (`protection_quotas(id, used, reset_at)`), keyed by HMAC labels so
//! no raw account or session id is stored. Each counter is one atomic claim: allowed while the window has room,
//! restarted when its window has ended. Checks run in order and stop at the first denial; the counters before it
//! have counted the attempt, the denying one has not.

use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::error::StoreError;
use crate::label::{LabelKey, ProtectionKey};

mod algorithm;
mod chain;
mod config;
mod memory;
pub(crate) mod network;

pub use algorithm::{claim_row, gcra_interval, release_row, CounterRow, QuotaAlgorithm};
pub use chain::{ChainLink, ChainOutcome, ChainSettle, ClaimChain, ClaimWhen, LinkOutcome};
pub use config::{
    QuotaConfig, QuotaConfigBuilder, QuotaConfigError, QuotaContext, ACCOUNT_LIMIT,
    CONTEXT_ID_CHARS, GLOBAL_LIMIT, NETWORK_ALGORITHM, NETWORK_LIMIT, SESSION_LIMIT, SHARDS,
    WINDOW_MS,
};
pub use memory::MemoryQuotaStore;
pub use network::{
    network_label, shared_network_label, NetworkPrefixBits, IPV4_PREFIX_BITS, IPV6_PREFIX_BITS,
    OWN_LABEL_PREFIX,
};

/// One counter to claim: its row id, its limit, and the window the claim falls in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaClaim {
    /// The row id: a protection label.
    pub id: String,
    /// Claims allowed per window.
    pub limit: u32,
    /// Start of the current window: now, or for a sharded global quota now rounded down to the window length
    /// from the Unix epoch. A row whose `reset_at` is at or before it has expired and restarts.
    pub window_start: i64,
    /// Window length; a new or restarted row resets at `window_start + window_ms`.
    pub window_ms: i64,
    /// How the limit is spent: the contract's fixed window for its counters.
    pub algorithm: QuotaAlgorithm,
}

impl QuotaClaim {
    /// When a row created or restarted by this claim resets (for GCRA: the arrival time of a first claim).
    pub fn reset_at(&self) -> i64 {
        match self.algorithm {
            QuotaAlgorithm::FixedWindow => self.window_start + self.window_ms,
            QuotaAlgorithm::Gcra => self.window_start + gcra_interval(self.limit, self.window_ms),
        }
    }

    /// A fixed-window claim: the contract's counters.
    pub fn fixed(id: String, limit: u32, window_start: i64, window_ms: i64) -> QuotaClaim {
        QuotaClaim {
            id,
            limit,
            window_start,
            window_ms,
            algorithm: QuotaAlgorithm::FixedWindow,
        }
    }
}

/// What a claim did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// Counted: the request may go on.
    Allowed,
    /// The window is full; nothing was counted. `reset_at` is when the row's window ends, when the store could
    /// read it.
    Denied {
        /// End of the full window, epoch milliseconds.
        reset_at: Option<i64>,
    },
}

/// Storage of quota counters.
pub trait QuotaStore: Send + Sync {
    /// Atomically: create the row with `used = 1`; or restart it (`used = 1`, new `reset_at`) if its window has
    /// ended (`reset_at <= window_start`); or add one if `used < limit`; otherwise change nothing and deny.
    fn claim(
        &self,
        claim: &QuotaClaim,
    ) -> impl Future<Output = Result<ClaimOutcome, StoreError>> + Send;

    /// Atomically, in one step: reads whether the chain's known mark is live, then claims each link that
    /// applies, in order, as [`claim`](Self::claim) would, stopping at the first denial.
    fn claim_chain(
        &self,
        chain: &ClaimChain,
    ) -> impl Future<Output = Result<ChainOutcome, StoreError>> + Send;

    /// In one step: gives one claim back to each counter in `settle.releases` (a fixed window's `used` less
    /// one, never below zero; a GCRA row's time one interval earlier) and makes the mark live until at least
    /// its time. Rows that are gone are left gone.
    fn settle_chain(
        &self,
        settle: &ChainSettle,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes at most `batch` rows whose window ended at or before `now_ms`, oldest first; returns how many.
    fn cleanup(
        &self,
        batch: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<usize, StoreError>> + Send;
}

/// Which counter denied a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaCounter {
    /// The global quota (or, when sharded, the shard this request used).
    Global,
    /// The quota of the client's network prefix (an extension of this library, off unless configured).
    Network,
    /// The account's quota.
    Account,
    /// The session's quota.
    Session,
}

impl QuotaCounter {
    /// `global`, `network`, `account` or `session`.
    pub fn as_str(&self) -> &'static str {
        match self {
            QuotaCounter::Global => "global",
            QuotaCounter::Network => "network",
            QuotaCounter::Account => "account",
            QuotaCounter::Session => "session",
        }
    }
}

/// The answer to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaDecision {
    /// Every counter had room.
    Allowed,
    /// A counter was full.
    Limited {
        /// Which one.
        counter: QuotaCounter,
        /// Whole seconds until its window ends, at least 1: the `Retry-After` value. (Janitor 0.7 sends the
        /// full window length instead; this is the time actually left.)
        retry_after_secs: u64,
    },
}

/// The request quotas of one instance: configuration, labels, and this instance's shard rotation.
#[derive(Debug)]
pub struct RequestQuotas<S> {
    store: S,
    key: LabelKey,
    config: QuotaConfig,
    /// Labels of the global counter: one, or one per shard.
    global_ids: Vec<String>,
    next_shard: AtomicU32,
}

impl<S: QuotaStore> RequestQuotas<S> {
    /// Quotas over `store`, with labels under `key`. Each instance starts its shard rotation at a random shard,
    /// so instances started together do not all hit shard 0 first.
    pub fn new(store: S, key: LabelKey, config: QuotaConfig) -> Self {
        // Reduced modulo the rotation's length by `with_first_shard`.
        let start = rand::random::<u32>();
        Self::with_first_shard(store, key, config, start)
    }

    /// The same, starting the rotation at `first_shard` (taken modulo the shard count), for tests.
    pub fn with_first_shard(
        store: S,
        key: LabelKey,
        config: QuotaConfig,
        first_shard: u32,
    ) -> Self {
        let global_ids = match config.effective_shards() {
            0 => Vec::new(),
            1 => vec![key.protection(&ProtectionKey::Global)],
            shards => (0..shards)
                .map(|shard| key.protection(&ProtectionKey::GlobalShard { shards, shard }))
                .collect(),
        };
        RequestQuotas {
            store,
            key,
            config,
            next_shard: AtomicU32::new(first_shard % rotation(&global_ids)),
            global_ids,
        }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The configuration.
    pub fn config(&self) -> &QuotaConfig {
        &self.config
    }

    /// The label key.
    pub fn key(&self) -> &LabelKey {
        &self.key
    }

    /// The claims of the request quotas a request makes, the global counter on this instance's next shard.
    pub fn next_claims(
        &self,
        context: &QuotaContext<'_>,
        now_ms: i64,
    ) -> Vec<(QuotaCounter, QuotaClaim)> {
        self.claims(context, now_ms, self.next_shard())
    }

    fn next_shard(&self) -> u32 {
        let shards = rotation(&self.global_ids);
        // Round-robin within this instance; a request uses one shard and never borrows from another. With one
        // global row, or none, there is nothing to rotate: no shared write on every request.
        if shards > 1 {
            self.next_shard
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
                    Some((s + 1) % shards)
                })
                .unwrap_or(0)
        } else {
            0
        }
    }

    /// The claims one request makes, in order, using global shard `shard` (ignored when unsharded). A counter
    /// that is off makes no claim, nor does an account or session counter for a request without one.
    pub fn claims(
        &self,
        context: &QuotaContext<'_>,
        now_ms: i64,
        shard: u32,
    ) -> Vec<(QuotaCounter, QuotaClaim)> {
        let window_ms = self.config.window_ms();
        let mut claims = Vec::with_capacity(4);
        if let Some(global) = self.global_claim(now_ms, shard) {
            claims.push((QuotaCounter::Global, global));
        }
        // Before the account's: a client spraying many accounts from one network spends its own counter, not
        // the accounts' owners'.
        if let (Some(limit), Some(network)) = (self.config.network(), context.network()) {
            claims.push((
                QuotaCounter::Network,
                QuotaClaim {
                    id: network.to_owned(),
                    limit,
                    window_start: now_ms,
                    window_ms: self.config.network_window_ms(),
                    algorithm: self.config.network_algorithm(),
                },
            ));
        }
        let exact = [
            (
                QuotaCounter::Account,
                self.config.account(),
                context.account().map(ProtectionKey::Account),
            ),
            (
                QuotaCounter::Session,
                self.config.session(),
                context.session().map(ProtectionKey::Session),
            ),
        ];
        for (counter, limit, subject) in exact {
            if let (Some(limit), Some(subject)) = (limit, subject) {
                let claim =
                    QuotaClaim::fixed(self.key.protection(&subject), limit, now_ms, window_ms);
                claims.push((counter, claim));
            }
        }
        claims
    }

    /// The global counter's claim on `shard`, when the global counter is on.
    fn global_claim(&self, now_ms: i64, shard: u32) -> Option<QuotaClaim> {
        let window_ms = self.config.window_ms();
        match self.global_ids.as_slice() {
            [] => None,
            [id] => Some(QuotaClaim::fixed(
                id.clone(),
                self.config.global()?,
                now_ms,
                window_ms,
            )),
            ids => {
                let shard = shard % rotation(ids);
                // Every slice shares the epoch-aligned clock, so slices fill and reset together.
                Some(QuotaClaim::fixed(
                    ids[shard as usize].clone(),
                    self.config.shard_limit(shard),
                    now_ms.div_euclid(window_ms) * window_ms,
                    window_ms,
                ))
            }
        }
    }

    /// Claims the request's counters in order (global, network, account, session), stopping at the first denial;
    /// counters that are off are skipped. A store failure is an error, never an allowance.
    pub async fn check(
        &self,
        context: &QuotaContext<'_>,
        now_ms: i64,
    ) -> Result<QuotaDecision, StoreError> {
        let claims = self.next_claims(context, now_ms);
        let denied = match claims.as_slice() {
            [] => None,
            [(counter, claim)] => match self.store.claim(claim).await? {
                ClaimOutcome::Allowed => None,
                ClaimOutcome::Denied { reset_at } => Some((*counter, claim, reset_at)),
            },
            // Several counters in one store step (one statement on PostgreSQL), with the same order and the
            // same stop at the first denial as one claim after another.
            _ => {
                let chain = ClaimChain {
                    all_or_nothing: false,
                    known_mark: None,
                    now_ms,
                    links: claims
                        .iter()
                        .map(|(_, claim)| ChainLink {
                            claim: claim.clone(),
                            when: ClaimWhen::Always,
                        })
                        .collect(),
                };
                let outcome = self.store.claim_chain(&chain).await?;
                claims
                    .iter()
                    .zip(outcome.links)
                    .find_map(|((counter, claim), link)| match link {
                        LinkOutcome::Denied { reset_at } => Some((*counter, claim, reset_at)),
                        _ => None,
                    })
            }
        };
        Ok(match denied {
            None => QuotaDecision::Allowed,
            Some((counter, claim, reset_at)) => {
                let reset_at = reset_at.unwrap_or_else(|| claim.reset_at());
                QuotaDecision::Limited {
                    counter,
                    retry_after_secs: retry_after_secs(reset_at, now_ms),
                }
            }
        })
    }

    /// Deletes at most `batch` ended windows (see [`QuotaStore::cleanup`]); `batch` is clamped to 1–1000.
    pub async fn cleanup(&self, batch: usize, now_ms: i64) -> Result<usize, StoreError> {
        self.store
            .cleanup(crate::config::clamp_cleanup_batch(batch), now_ms)
            .await
    }
}

/// The length of the shard rotation: one per global row, and 1 when the global counter is off (the rotation
/// then picks nothing, but must never divide by zero).
fn rotation(global_ids: &[String]) -> u32 {
    u32::try_from(global_ids.len()).map_or(1, |n| n.max(1))
}

/// Whole seconds from `now_ms` until `reset_at`, rounded up, at least 1.
pub fn retry_after_secs(reset_at: i64, now_ms: i64) -> u64 {
    let left = reset_at.saturating_sub(now_ms).max(0) as u64;
    left.div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> LabelKey {
        LabelKey::new(&"a".repeat(64), "fixture").unwrap()
    }

    #[test]
    fn retry_after_rounds_up_and_is_at_least_one_second() {
        assert_eq!(retry_after_secs(10_000, 10_000), 1);
        assert_eq!(retry_after_secs(10_000, 20_000), 1);
        assert_eq!(retry_after_secs(10_001, 10_000), 1);
        assert_eq!(retry_after_secs(11_000, 10_000), 1);
        assert_eq!(retry_after_secs(11_001, 10_000), 2);
        assert_eq!(retry_after_secs(70_000, 10_000), 60);
    }

    #[test]
    #[cfg(feature = "testing")]
    fn claims_follow_the_order_and_the_label_contract() {
        let config = crate::testing::quota_store::sharded_quotas();
        let quotas = RequestQuotas::with_first_shard(MemoryQuotaStore::new(), key(), config, 0);
        let context = QuotaContext::new(Some("account-123"), Some("s-1")).unwrap();
        let now = 1_735_689_631_234;
        let claims = quotas.claims(&context, now, 1);
        let counters: Vec<QuotaCounter> = claims.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            counters,
            [
                QuotaCounter::Global,
                QuotaCounter::Account,
                QuotaCounter::Session
            ]
        );
        let (_, global) = &claims[0];
        assert_eq!(
            global.id,
            key().protection(&ProtectionKey::GlobalShard {
                shards: 4,
                shard: 1
            })
        );
        assert_eq!(global.limit, 5);
        assert_eq!(
            global.window_start, 1_735_689_600_000,
            "epoch-aligned when sharded"
        );
        let (_, account) = &claims[1];
        // The public vector for ["account","account-123"].
        assert_eq!(
            account.id,
            "sub_3270e5c2f8f309ab0c42955bb143c499f10aad4f8b766ef1e6a107f17e5cde50"
        );
        assert_eq!(
            (account.limit, account.window_start),
            (60, now),
            "account windows start at the hit"
        );
        assert_eq!(claims[2].1.limit, 30);

        let single = RequestQuotas::new(MemoryQuotaStore::new(), key(), QuotaConfig::default());
        let claims = single.claims(&QuotaContext::anonymous(), now, 7);
        assert_eq!(claims.len(), 1);
        assert_eq!(
            claims[0].1.id, "sub_ace649205ec1f3a17e27be1f8d4ce96faa97d0caf1f9b3aed494dc97c418f819",
            "the public vector for \"global\""
        );
        assert_eq!((claims[0].1.limit, claims[0].1.window_start), (600, now));
    }

    #[test]
    fn an_off_counter_makes_no_claim() {
        let context = QuotaContext::new(Some("account-123"), Some("s-1")).unwrap();
        let counters = |config: QuotaConfig| -> Vec<QuotaCounter> {
            RequestQuotas::new(MemoryQuotaStore::new(), key(), config)
                .claims(&context, 0, 0)
                .into_iter()
                .map(|(counter, _)| counter)
                .collect()
        };
        let only_account = QuotaConfig::builder()
            .without_global()
            .account(3)
            .without_session()
            .build()
            .unwrap();
        assert_eq!(counters(only_account), [QuotaCounter::Account]);
        let sharded_without_global = QuotaConfig::builder()
            .without_global()
            .shards(4)
            .build()
            .unwrap();
        assert_eq!(
            counters(sharded_without_global),
            [QuotaCounter::Account, QuotaCounter::Session]
        );
        let without_account = QuotaConfig::builder().without_account().build().unwrap();
        assert_eq!(
            counters(without_account),
            [QuotaCounter::Global, QuotaCounter::Session]
        );
        let none = QuotaConfig::builder()
            .without_global()
            .without_account()
            .without_session()
            .build()
            .unwrap();
        assert!(counters(none).is_empty());
        // The limit of a claim is the configured one, unchanged by the others being off.
        let quotas =
            RequestQuotas::with_first_shard(MemoryQuotaStore::new(), key(), only_account, 9);
        let claims = quotas.claims(&context, 5, 0);
        assert_eq!((claims[0].1.limit, claims[0].1.window_start), (3, 5));
    }

    #[test]
    fn effective_shards_never_exceed_the_global_limit() {
        let config = QuotaConfig::builder().global(3).shards(8).build().unwrap();
        let quotas = RequestQuotas::with_first_shard(MemoryQuotaStore::new(), key(), config, 5);
        assert_eq!(quotas.global_ids.len(), 3);
        let ids: Vec<String> = (0..3)
            .map(|s| {
                quotas.claims(&QuotaContext::anonymous(), 0, s)[0]
                    .1
                    .id
                    .clone()
            })
            .collect();
        assert_eq!(
            ids[0],
            key().protection(&ProtectionKey::GlobalShard {
                shards: 3,
                shard: 0
            })
        );
        assert!(quotas.claims(&QuotaContext::anonymous(), 0, 0)[0].1.limit == 1);
    }
}
