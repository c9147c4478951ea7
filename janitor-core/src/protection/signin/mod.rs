//! The sign-in defence: counters claimed before a password is checked, so that credential stuffing, password
//! spraying and lockout abuse each meet a limit, and the owner of an account keeps signing in from a browser
//! that signed in before (the pattern OWASP calls device cookies).
//!
//! One step before the check claims, in one store operation: the request quotas (global, network, account,
//! session: [`Verdict::Deny`]), then, for a browser that signed in to the account before (a *known* one), its
//! own failure slot for the account (`Deny` when spent), and for any other browser the failure budgets of the
//! site, its network and itself, and the account's lock for unknown browsers ([`Verdict::Challenge`] when one
//! is spent). Claiming before the check is what makes it atomic: however many attempts race, no more
//! passwords are checked than the slots allow. A right password gives its slots back and marks the browser
//! known; a wrong one leaves them taken, which is the failure counted.
//!
//! Every row is a counter of the quota store under this library's own prefix
//! ([`OWN_LABEL_PREFIX`](crate::protection::quota::OWN_LABEL_PREFIX)): keyed digests, never an account name, a
//! visitor id or an address.

use serde_json::json;

use crate::error::StoreError;
use crate::label::LabelKey;
use crate::protection::quota::network::own_label;
use crate::protection::quota::{
    retry_after_secs, ChainLink, ChainSettle, ClaimChain, ClaimWhen, LinkOutcome, QuotaAlgorithm,
    QuotaClaim, QuotaContext, QuotaStore, RequestQuotas,
};

mod config;
mod decision;

pub use config::{
    SignInConfig, SignInConfigBuilder, BROWSER_FAILURES, FAILURE_WINDOW_MS, KNOWN_BROWSER_DAYS,
    LOCK_FAILURES, LOCK_WINDOW_MS, NETWORK_FAILURES, SITE_FAILURES,
};
pub use decision::{SignInDecision, SignInReason, SpentLimit, Verdict};

const DAY_MS: i64 = 86_400_000;

/// One sign-in attempt, as server code knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInAttempt<'a> {
    /// The account being signed into, in its canonical form.
    pub account: &'a str,
    /// The application's session, if any (its quota applies).
    pub session: Option<&'a str>,
    /// The client's network: its prefix in CIDR notation, or a name shared by every client without one.
    pub network: Option<&'a str>,
    /// The network counter's id for the request quotas ([`network_label`](crate::protection::quota::network_label)).
    pub network_quota_id: Option<&'a str>,
    /// The browser's visitor id, when the form carried a payload; `None` for a client that sent none.
    pub browser: Option<&'a str>,
}

/// What each link of an attempt's chain stands for.
#[derive(Debug, Clone, Copy)]
enum Link {
    Quota(SignInReason),
    Failure(SignInReason),
}

/// The sign-in defence of one deployment: its options and label key. Cheap to share; the counters are in the
/// quota store the caller passes.
#[derive(Debug, Clone)]
pub struct SignInGuard {
    key: LabelKey,
    config: SignInConfig,
}

impl SignInGuard {
    /// A guard labelling its counters under `key`.
    pub fn new(key: LabelKey, config: SignInConfig) -> Self {
        SignInGuard { key, config }
    }

    /// The options.
    pub fn config(&self) -> &SignInConfig {
        &self.config
    }

    /// Decides `attempt` at `now_ms`, claiming its counters in one store operation (see the module's docs).
    /// `quotas` are the deployment's request quotas, when on. A store failure is an error, never an allowance.
    pub async fn begin<S: QuotaStore>(
        &self,
        store: &S,
        quotas: Option<&RequestQuotas<S>>,
        attempt: &SignInAttempt<'_>,
        now_ms: i64,
    ) -> Result<SignInDecision, StoreError> {
        let (chain, roles) = self.chain(quotas, attempt, now_ms)?;
        let outcome = store.claim_chain(&chain).await?;
        let mut decision = SignInDecision {
            decided: Verdict::Allow,
            dry_run: self.config.dry_run,
            reasons: Vec::new(),
            retry_after_secs: None,
            spent: None,
            known_browser: outcome.known,
            releases: Vec::new(),
            mark: chain.known_mark.clone(),
        };
        for ((link, role), result) in chain.links.iter().zip(&roles).zip(&outcome.links) {
            match (result, role) {
                (LinkOutcome::Allowed, Link::Failure(_)) => {
                    decision.releases.push(link.claim.clone())
                }
                (LinkOutcome::Denied { reset_at }, Link::Quota(reason) | Link::Failure(reason)) => {
                    let reset_at = reset_at.unwrap_or_else(|| link.claim.reset_at());
                    decision.decided = reason.verdict();
                    decision.reasons.push(*reason);
                    decision.retry_after_secs = Some(retry_after_secs(reset_at, now_ms));
                    decision.spent = Some(SpentLimit {
                        reason: *reason,
                        quota: link.claim.limit,
                        window_secs: u64::try_from(link.claim.window_ms / 1000).unwrap_or(1),
                    });
                }
                _ => {}
            }
        }
        Ok(decision)
    }

    /// Settles `decision` after the password check: `password_right` gives the attempt's failure slots back and
    /// marks the browser known to the account for [`SignInConfig::known_browser_days`]; a wrong password leaves
    /// the slots taken. Call it only when the password was checked. One store operation, or none.
    pub async fn finish<S: QuotaStore>(
        &self,
        store: &S,
        decision: &SignInDecision,
        password_right: bool,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        if !password_right {
            return Ok(());
        }
        let until = now_ms + i64::from(self.config.known_browser_days) * DAY_MS;
        let settle = ChainSettle {
            releases: decision.releases.clone(),
            mark: decision.mark.clone().map(|mark| (mark, until)),
        };
        if settle.is_empty() {
            return Ok(());
        }
        store.settle_chain(&settle).await
    }

    /// The chain of `attempt`, and what each link stands for.
    fn chain<S: QuotaStore>(
        &self,
        quotas: Option<&RequestQuotas<S>>,
        attempt: &SignInAttempt<'_>,
        now_ms: i64,
    ) -> Result<(ClaimChain, Vec<Link>), StoreError> {
        let mut links = Vec::new();
        let mut roles = Vec::new();
        if let Some(quotas) = quotas {
            let context = QuotaContext::new(Some(attempt.account), attempt.session)
                .map_err(|e| StoreError::Invalid(format!("sign-in context: {e}")))?
                .with_network(attempt.network_quota_id);
            for (counter, claim) in quotas.next_claims(&context, now_ms) {
                links.push(ChainLink {
                    claim,
                    when: ClaimWhen::Always,
                });
                roles.push(Link::Quota(SignInReason::of_counter(counter)));
            }
        }
        let config = &self.config;
        let account = attempt.account;
        let failure = |id: String, limit: u32| QuotaClaim {
            id,
            limit,
            window_start: now_ms,
            window_ms: config.failure_window_ms,
            algorithm: QuotaAlgorithm::Gcra,
        };
        let lock =
            |id: String| QuotaClaim::fixed(id, config.lock_failures, now_ms, config.lock_window_ms);
        // The broad budgets first: an attempt one of them stops does not also count against the account's lock,
        // so a campaign that is being stopped does not lock its targets for their owners' new browsers too.
        let mut unknown = Vec::new();
        if let Some(limit) = config.site_failures {
            let id = self.label(json!(["signin-site-v1"]));
            unknown.push((failure(id, limit), SignInReason::SiteFailures));
        }
        if let (Some(limit), Some(network)) = (config.network_failures, attempt.network) {
            let id = self.label(json!(["signin-network-v1", network]));
            unknown.push((failure(id, limit), SignInReason::NetworkFailures));
        }
        if let Some(limit) = config.browser_failures {
            // Every client without a payload is one browser: a script that leaves the payload out shares a
            // budget with every other such script.
            let id = self.label(json!(["signin-browser-v1", attempt.browser.unwrap_or("")]));
            unknown.push((failure(id, limit), SignInReason::BrowserFailures));
        }
        let account_lock = self.label(json!(["signin-lock-v1", account]));
        unknown.push((lock(account_lock), SignInReason::LockedForUnknownBrowsers));
        let known_mark = attempt
            .browser
            .map(|browser| self.label(json!(["signin-known-v1", account, browser])));
        if let Some(browser) = attempt.browser {
            let id = self.label(json!(["signin-browser-lock-v1", account, browser]));
            links.push(ChainLink {
                claim: lock(id),
                when: ClaimWhen::Known,
            });
            roles.push(Link::Failure(SignInReason::LockedForThisBrowser));
        }
        for (claim, reason) in unknown {
            links.push(ChainLink {
                claim,
                when: ClaimWhen::Unknown,
            });
            roles.push(Link::Failure(reason));
        }
        let chain = ClaimChain {
            known_mark,
            now_ms,
            links,
        };
        Ok((chain, roles))
    }

    fn label(&self, value: serde_json::Value) -> String {
        own_label(&self.key, &value)
    }
}
