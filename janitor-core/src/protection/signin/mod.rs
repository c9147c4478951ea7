//! The sign-in defence: counters claimed before a password is checked, so that credential stuffing, password
//! spraying and lockout abuse each meet a limit, and the owner of an account keeps signing in from a browser
//! that signed in before (the pattern OWASP calls device cookies).
//!
//! A first store step claims the request quotas (global, network, account, session: [`Verdict::Deny`]) before
//! anything else is spent on the attempt. A second, after the browser is identified, claims: for a browser that signed in to the account before (a *known* one: it
//! presents the cookie of that sign-in), its own failure slot for the account (`Deny` when spent), and for any
//! other browser the account's lock for unknown browsers and the failure budgets of the browser, its network
//! and the site ([`Verdict::Challenge`] when one is spent). These are claimed all or nothing: an attempt one of
//! them stops is counted by none. Claiming before the check is what makes it atomic: however many attempts race, no more
//! passwords are checked than the slots allow. A right password gives its slots back and marks the browser
//! known; a wrong one leaves them taken, which is the failure counted.
//!
//! Every row is a counter of the quota store under this library's own prefix
//! ([`OWN_LABEL_PREFIX`](crate::protection::quota::OWN_LABEL_PREFIX)): keyed digests, never an account name, a
//! visitor id or an address.

use serde_json::json;

use crate::automation::AutomationVerdict;
use crate::error::StoreError;
use crate::label::LabelKey;
use crate::protection::quota::network::own_label;
use crate::protection::quota::{
    retry_after_secs, ChainLink, ChainSettle, ClaimChain, ClaimWhen, LinkOutcome, QuotaAlgorithm,
    QuotaClaim, QuotaContext, QuotaDecision, QuotaStore, RequestQuotas,
};

mod config;
mod decision;

pub use config::{
    SignInConfig, SignInConfigBuilder, BROWSER_FAILURES, FAILURE_WINDOW_MS, KNOWN_BROWSER_DAYS,
    LOCK_FAILURES, LOCK_WINDOW_MS, NETWORK_FAILURES, SITE_FAILURES,
};
pub use decision::{SignInDecision, SignInReason, SpentLimit, Verdict};

const DAY_MS: i64 = 86_400_000;
/// `Retry-After` of an attempt denied for its automation verdict: the verdict does not expire, so a minute
/// only paces the retries.
pub const AUTOMATION_RETRY_SECS: u64 = 60;
/// The long tier of each failure budget spans this many failure windows (30 days by default)...
pub const LONG_TIER_WINDOWS: i64 = 30;
/// ...and allows this many windows' worth of the budget's limit in that span: over a month, a tenth of the
/// daily rate.
pub const LONG_TIER_WINDOWS_OF_LIMIT: u32 = 3;

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
    /// The visitor id the request's `__visitor` cookie carries: the browser's proof that it is the one that
    /// signed in before (a copied payload is not). Only it makes a browser known.
    pub cookie: Option<&'a str>,
    /// The browser's visitor id as identified from the form's payload, or the cookie's when there was no
    /// payload; `None` for a client that sent neither. Its failures count against it, and a right password
    /// makes it known.
    pub browser: Option<&'a str>,
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

    /// Claims the request quotas of `attempt` (global, network, account, session, as configured) in one store
    /// step, before anything else is spent on it: `Some` decision ([`Verdict::Deny`], with the counter as its
    /// reason) when one is full. Run it first, then identify the browser, then [`begin`](Self::begin).
    pub async fn check_quotas<S: QuotaStore>(
        &self,
        quotas: &RequestQuotas<S>,
        attempt: &SignInAttempt<'_>,
        now_ms: i64,
    ) -> Result<Option<SignInDecision>, StoreError> {
        let context = QuotaContext::new(Some(attempt.account), attempt.session)
            .map_err(|e| StoreError::Invalid(format!("sign-in context: {e}")))?
            .with_network(attempt.network_quota_id);
        let QuotaDecision::Limited {
            counter,
            retry_after_secs,
        } = quotas.check(&context, now_ms).await?
        else {
            return Ok(None);
        };
        let config = quotas.config();
        let mut decision = SignInDecision::allowed(self.config.dry_run);
        let reason = SignInReason::of_counter(counter);
        decision.stop(
            reason,
            retry_after_secs,
            config.limit(counter),
            config.window_ms(),
        );
        Ok(Some(decision))
    }

    /// What the browser's automation verdict does to an attempt, before any counter is claimed: `None` when the
    /// configuration allows it ([`SignInConfig::automated`], [`SignInConfig::suspected`]), else a decision with
    /// the reason (`automated_browser`, `suspected_automation`). A browser stopped here claims no failure slot:
    /// its password is never checked, and the request quotas already counted it. In dry run the decision is
    /// to be logged and passed to [`begin`](Self::begin) as `earlier`.
    pub fn check_automation(&self, verdict: AutomationVerdict) -> Option<SignInDecision> {
        let (action, reason) = match verdict {
            AutomationVerdict::Human => return None,
            AutomationVerdict::Suspected => {
                (self.config.suspected, SignInReason::SuspectedAutomation)
            }
            AutomationVerdict::Automated => (self.config.automated, SignInReason::AutomatedBrowser),
        };
        if action == Verdict::Allow {
            return None;
        }
        let mut decision = SignInDecision::allowed(self.config.dry_run);
        decision.stop(reason, AUTOMATION_RETRY_SECS, None, 0);
        decision.decided = action;
        Some(decision)
    }

    /// Decides `attempt` at `now_ms`, claiming its failure counters in one store operation (see the module's
    /// docs). `earlier` is what [`check_quotas`](Self::check_quotas) decided in dry run, kept as the first
    /// reason. A store failure is an error, never an allowance.
    pub async fn begin<S: QuotaStore>(
        &self,
        store: &S,
        attempt: &SignInAttempt<'_>,
        earlier: Option<SignInDecision>,
        now_ms: i64,
    ) -> Result<SignInDecision, StoreError> {
        let (chain, roles) = self.chain(attempt, now_ms);
        let outcome = store.claim_chain(&chain).await?;
        let mut decision = earlier.unwrap_or_else(|| SignInDecision::allowed(self.config.dry_run));
        decision.known_browser = outcome.known;
        decision.mark = attempt
            .browser
            .or(attempt.cookie)
            .map(|browser| self.known_mark(attempt.account, browser));
        for ((link, reason), result) in chain.links.iter().zip(&roles).zip(&outcome.links) {
            match result {
                LinkOutcome::Allowed => decision.releases.push(link.claim.clone()),
                LinkOutcome::Denied { reset_at } => {
                    let reset_at = reset_at.unwrap_or_else(|| link.claim.reset_at());
                    let retry = retry_after_secs(reset_at, now_ms);
                    decision.stop(*reason, retry, Some(link.claim.limit), link.claim.window_ms);
                }
                LinkOutcome::Skipped => {}
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

    /// The chain of `attempt`'s failure counters, and the reason each stands for.
    fn chain(&self, attempt: &SignInAttempt<'_>, now_ms: i64) -> (ClaimChain, Vec<SignInReason>) {
        let mut links = Vec::new();
        let mut roles = Vec::new();
        let config = &self.config;
        let account = attempt.account;
        let failure = |id: String, limit: u32, windows: i64| QuotaClaim {
            id,
            limit,
            window_start: now_ms,
            window_ms: config.failure_window_ms * windows,
            algorithm: QuotaAlgorithm::Gcra,
        };
        let lock =
            |id: String| QuotaClaim::fixed(id, config.lock_failures, now_ms, config.lock_window_ms);
        // The account's lock first: an attempt at a locked account names that reason, the most specific.
        let mut unknown = Vec::new();
        let account_lock = self.label(json!(["signin-lock-v1", account]));
        unknown.push((lock(account_lock), SignInReason::LockedForUnknownBrowsers));
        // Every client without a payload or cookie is one browser: a script that leaves them out shares a
        // budget with every other such script.
        let browser = attempt.browser.or(attempt.cookie).unwrap_or("");
        let budgets = [
            (
                config.browser_failures,
                "signin-browser-v1",
                Some(browser),
                SignInReason::BrowserFailures,
            ),
            (
                config.network_failures,
                "signin-network-v1",
                attempt.network,
                SignInReason::NetworkFailures,
            ),
            (
                config.site_failures,
                "signin-site-v1",
                Some(""),
                SignInReason::SiteFailures,
            ),
        ];
        for (limit, kind, key, reason) in budgets {
            let (Some(limit), Some(key)) = (limit, key) else {
                continue;
            };
            // Two tiers: a window's worth at once, and over the long run a tenth of that rate. A person has a
            // bad day; a script that comes back every day for a month is not a person.
            let short = self.label(json!([kind, key]));
            let long = self.label(json!([kind, key, "long"]));
            unknown.push((failure(short, limit, 1), reason));
            let long_limit = limit.saturating_mul(LONG_TIER_WINDOWS_OF_LIMIT);
            unknown.push((failure(long, long_limit, LONG_TIER_WINDOWS), reason));
        }
        let known_mark = attempt
            .cookie
            .map(|cookie| self.known_mark(account, cookie));
        if let Some(cookie) = attempt.cookie {
            let id = self.label(json!(["signin-browser-lock-v1", account, cookie]));
            links.push(ChainLink {
                claim: lock(id),
                when: ClaimWhen::Known,
            });
            roles.push(SignInReason::LockedForThisBrowser);
        }
        for (claim, reason) in unknown {
            links.push(ChainLink {
                claim,
                when: ClaimWhen::Unknown,
            });
            roles.push(reason);
        }
        // All or nothing: an attempt one counter stops is not counted by the others (a bot that waits on its
        // browser's budget and retries must not lock the account it keeps trying for its owner's new browsers).
        let chain = ClaimChain {
            all_or_nothing: true,
            known_mark,
            now_ms,
            links,
        };
        (chain, roles)
    }

    /// The row whose being live makes `browser` known to `account`.
    fn known_mark(&self, account: &str, browser: &str) -> String {
        self.label(json!(["signin-known-v1", account, browser]))
    }

    fn label(&self, value: serde_json::Value) -> String {
        own_label(&self.key, &value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(config: SignInConfig) -> SignInGuard {
        let key = LabelKey::new("a secret of thirty-two bytes ok!", "test").unwrap();
        SignInGuard::new(key, config)
    }

    #[test]
    fn the_automation_verdict_stops_an_attempt_as_configured() {
        let defaults = guard(SignInConfig::default());
        assert_eq!(defaults.check_automation(AutomationVerdict::Human), None);
        assert_eq!(
            defaults.check_automation(AutomationVerdict::Suspected),
            None
        );
        let stopped = defaults
            .check_automation(AutomationVerdict::Automated)
            .unwrap();
        assert_eq!(stopped.verdict(), Verdict::Challenge);
        assert_eq!(stopped.reasons(), [SignInReason::AutomatedBrowser]);
        assert_eq!(stopped.retry_after_secs(), Some(AUTOMATION_RETRY_SECS));
        assert!(stopped.releases.is_empty(), "nothing was claimed");

        let strict = SignInConfig::builder()
            .automated(Verdict::Deny)
            .suspected(Verdict::Challenge)
            .build()
            .unwrap();
        let strict = guard(strict);
        let denied = strict.check_automation(AutomationVerdict::Automated);
        assert_eq!(denied.map(|d| d.verdict()), Some(Verdict::Deny));
        let suspected = strict
            .check_automation(AutomationVerdict::Suspected)
            .unwrap();
        assert_eq!(suspected.verdict(), Verdict::Challenge);
        assert_eq!(suspected.reasons(), [SignInReason::SuspectedAutomation]);

        let counted_only = SignInConfig::builder().automated(Verdict::Allow).build();
        let counted_only = guard(counted_only.unwrap());
        assert_eq!(
            counted_only.check_automation(AutomationVerdict::Automated),
            None
        );
        let dry = guard(SignInConfig::builder().dry_run(true).build().unwrap());
        let logged = dry.check_automation(AutomationVerdict::Automated).unwrap();
        assert_eq!(
            (logged.decided(), logged.verdict()),
            (Verdict::Challenge, Verdict::Allow)
        );
    }
}
