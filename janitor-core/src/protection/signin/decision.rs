//! What the sign-in defence decides, and why, in words an application and a log can act on.

use std::fmt;

use crate::protection::quota::{QuotaClaim, QuotaCounter};

/// What to do with a sign-in attempt before its password is checked. Its names (`allow`, `challenge`, `deny`)
/// are also its settings' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Check the password.
    Allow,
    /// Do not sign in on the password alone: ask for a second factor (an emailed link, a code), or refuse when
    /// the application has none. The owner of the account can pass it; a script with a stolen password cannot.
    Challenge,
    /// Refuse for now (429 with `Retry-After`).
    Deny,
}

impl Verdict {
    /// `allow`, `challenge` or `deny`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Challenge => "challenge",
            Verdict::Deny => "deny",
        }
    }
}

impl std::str::FromStr for Verdict {
    type Err = String;

    /// `allow`, `challenge` or `deny`, in any case.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.to_ascii_lowercase().as_str() {
            "allow" => Ok(Verdict::Allow),
            "challenge" => Ok(Verdict::Challenge),
            "deny" => Ok(Verdict::Deny),
            _ => Err(format!("{name} is not allow, challenge or deny")),
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an attempt was challenged or denied: machine-readable, stable names (`as_str`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SignInReason {
    /// The deployment's request quota is spent (deny).
    GlobalQuota,
    /// The client network's request quota is spent (deny).
    NetworkQuota,
    /// The account's request quota is spent (deny).
    AccountQuota,
    /// The session's request quota is spent (deny).
    SessionQuota,
    /// Too many recent failures from unknown browsers: the account is locked for them (challenge). Its known
    /// browsers still sign in.
    LockedForUnknownBrowsers,
    /// Too many recent failures from this known browser (deny).
    LockedForThisBrowser,
    /// Unknown browsers on this network failed too often (challenge).
    NetworkFailures,
    /// This unknown browser failed too often, on whatever accounts; clients without a browser payload count
    /// as one browser (challenge).
    BrowserFailures,
    /// Unknown browsers failed too often across the whole site (challenge).
    SiteFailures,
    /// The browser's automation verdict is `automated` (challenge unless
    /// [`SignInConfig::automated`](super::SignInConfig::automated) says otherwise).
    AutomatedBrowser,
    /// The browser's automation verdict is `suspected` (allowed unless
    /// [`SignInConfig::suspected`](super::SignInConfig::suspected) says otherwise).
    SuspectedAutomation,
}

impl SignInReason {
    /// The reason's name: `global_quota`, `network_quota`, `account_quota`, `session_quota`,
    /// `locked_for_unknown_browsers`, `locked_for_this_browser`, `network_failures`, `browser_failures`,
    /// `site_failures`, `automated_browser`, `suspected_automation`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SignInReason::GlobalQuota => "global_quota",
            SignInReason::NetworkQuota => "network_quota",
            SignInReason::AccountQuota => "account_quota",
            SignInReason::SessionQuota => "session_quota",
            SignInReason::LockedForUnknownBrowsers => "locked_for_unknown_browsers",
            SignInReason::LockedForThisBrowser => "locked_for_this_browser",
            SignInReason::NetworkFailures => "network_failures",
            SignInReason::BrowserFailures => "browser_failures",
            SignInReason::SiteFailures => "site_failures",
            SignInReason::AutomatedBrowser => "automated_browser",
            SignInReason::SuspectedAutomation => "suspected_automation",
        }
    }

    /// The verdict this reason leads to (for the automation reasons, the default; the configuration sets it).
    pub fn verdict(&self) -> Verdict {
        match self {
            SignInReason::LockedForUnknownBrowsers
            | SignInReason::NetworkFailures
            | SignInReason::BrowserFailures
            | SignInReason::SiteFailures
            | SignInReason::AutomatedBrowser => Verdict::Challenge,
            SignInReason::SuspectedAutomation => Verdict::Allow,
            _ => Verdict::Deny,
        }
    }

    pub(super) fn of_counter(counter: QuotaCounter) -> SignInReason {
        match counter {
            QuotaCounter::Global => SignInReason::GlobalQuota,
            QuotaCounter::Network => SignInReason::NetworkQuota,
            QuotaCounter::Account => SignInReason::AccountQuota,
            QuotaCounter::Session => SignInReason::SessionQuota,
        }
    }
}

impl fmt::Display for SignInReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The counter that stopped an attempt, as the IETF `RateLimit-Policy` field describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpentLimit {
    /// The policy's name: the reason's.
    pub reason: SignInReason,
    /// Its quota (requests or failures per window).
    pub quota: u32,
    /// Its window, in whole seconds.
    pub window_secs: u64,
}

/// The defence's answer to one attempt, and what the attempt claimed. Act on [`verdict`](Self::verdict); then
/// hand it back with the password check's outcome ([`SignInGuard::finish`](super::SignInGuard::finish)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInDecision {
    pub(super) decided: Verdict,
    pub(super) dry_run: bool,
    pub(super) reasons: Vec<SignInReason>,
    pub(super) retry_after_secs: Option<u64>,
    pub(super) spent: Option<SpentLimit>,
    pub(super) known_browser: bool,
    /// Failure slots taken before the check, given back when the password is right.
    pub(super) releases: Vec<QuotaClaim>,
    /// The mark that makes the browser known, set when the password is right.
    pub(super) mark: Option<String>,
}

impl SignInDecision {
    /// An allowance that claimed nothing yet.
    pub(super) fn allowed(dry_run: bool) -> Self {
        SignInDecision {
            decided: Verdict::Allow,
            dry_run,
            reasons: Vec::new(),
            retry_after_secs: None,
            spent: None,
            known_browser: false,
            releases: Vec::new(),
            mark: None,
        }
    }

    /// Records that `reason`'s counter (`quota` per `window_ms`) stopped the attempt, with `retry_after_secs`
    /// until it has room. The first stop decides; later ones only add their reason.
    pub(super) fn stop(
        &mut self,
        reason: SignInReason,
        retry_after_secs: u64,
        quota: Option<u32>,
        window_ms: i64,
    ) {
        if self.reasons.is_empty() {
            self.decided = reason.verdict();
            self.retry_after_secs = Some(retry_after_secs);
            self.spent = quota.map(|quota| SpentLimit {
                reason,
                quota,
                window_secs: u64::try_from(window_ms / 1000).unwrap_or(1),
            });
        }
        self.reasons.push(reason);
    }

    /// What to do: the decided verdict, or [`Verdict::Allow`] in dry run.
    pub fn verdict(&self) -> Verdict {
        if self.dry_run {
            Verdict::Allow
        } else {
            self.decided
        }
    }

    /// What the defence decided, enforced or not.
    pub fn decided(&self) -> Verdict {
        self.decided
    }

    /// Whether the decision is only logged and counted.
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// Why it was challenged or denied (empty when allowed).
    pub fn reasons(&self) -> &[SignInReason] {
        &self.reasons
    }

    /// Whole seconds until the counter that stopped the attempt has room (`Retry-After`).
    pub fn retry_after_secs(&self) -> Option<u64> {
        self.retry_after_secs
    }

    /// The counter that stopped the attempt, for the `RateLimit-Policy` and `RateLimit` fields.
    pub fn spent(&self) -> Option<SpentLimit> {
        self.spent
    }

    /// Whether the browser has signed in to this account successfully before (within the known period).
    pub fn known_browser(&self) -> bool {
        self.known_browser
    }
}
