//! Several counters claimed in one step, some only for a browser known to the account: what a sign-in claims
//! before it checks a password, so that a store makes it in one statement and concurrent attempts can never
//! check more passwords than the counters allow.

use super::{ClaimOutcome, QuotaClaim};

/// When a link of a chain applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimWhen {
    /// Always.
    Always,
    /// Only when the chain's known mark is live.
    Known,
    /// Only when it is not (or the chain has none).
    Unknown,
}

/// One counter of a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainLink {
    /// The claim.
    pub claim: QuotaClaim,
    /// When it applies.
    pub when: ClaimWhen,
}

/// Counters claimed in order in one step, stopping at the first denial. Link ids are distinct.
///
/// In order ([`all_or_nothing`](Self::all_or_nothing) false), the links before a denial stay counted, as the
/// contract's quotas count. All or nothing, a chain claims its links only when every one that applies has
/// room, so an attempt stopped by one counter is not counted by the others: exact on the memory store; on
/// PostgreSQL the room is read from the statement's snapshot before the claims, so only two chains racing for
/// the last slot of the same counter can leave one of them counted by its other links.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimChain {
    /// The row whose being live (`reset_at > now_ms`) makes the browser known; `None`: unknown.
    pub known_mark: Option<String>,
    /// Now, to read the mark.
    pub now_ms: i64,
    /// The counters, in order.
    pub links: Vec<ChainLink>,
    /// Whether a denial leaves the other links uncounted.
    pub all_or_nothing: bool,
}

/// What happened to one link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkOutcome {
    /// Claimed.
    Allowed,
    /// Full: the chain stopped here. `reset_at` as in [`ClaimOutcome::Denied`].
    Denied {
        /// When the next claim fits, epoch milliseconds, when the store could read it.
        reset_at: Option<i64>,
    },
    /// Not claimed: it did not apply, or an earlier link was denied.
    Skipped,
}

/// What a chain did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainOutcome {
    /// Whether the known mark was live.
    pub known: bool,
    /// One outcome per link, in order.
    pub links: Vec<LinkOutcome>,
}

impl ChainOutcome {
    /// Builds the outcome from whether the mark was live and, for each link that applied, in order, how its
    /// claim went (`claim` gets the link's index): links after a denial are skipped.
    pub fn from_claims(
        chain: &ClaimChain,
        known: bool,
        mut claim: impl FnMut(usize, &QuotaClaim) -> ClaimOutcome,
    ) -> ChainOutcome {
        let mut stopped = false;
        let links = chain
            .links
            .iter()
            .enumerate()
            .map(|(i, link)| {
                if stopped || !link.applies(known) {
                    return LinkOutcome::Skipped;
                }
                match claim(i, &link.claim) {
                    ClaimOutcome::Allowed => LinkOutcome::Allowed,
                    ClaimOutcome::Denied { reset_at } => {
                        stopped = true;
                        LinkOutcome::Denied { reset_at }
                    }
                }
            })
            .collect();
        ChainOutcome { known, links }
    }
}

impl ChainOutcome {
    /// What an all-or-nothing chain did when link `full` had no room: claimed nothing, denied there.
    pub fn stopped_at(
        chain: &ClaimChain,
        known: bool,
        full: usize,
        reset_at: Option<i64>,
    ) -> ChainOutcome {
        let links = (0..chain.links.len())
            .map(|i| {
                if i == full {
                    LinkOutcome::Denied { reset_at }
                } else {
                    LinkOutcome::Skipped
                }
            })
            .collect();
        ChainOutcome { known, links }
    }
}

impl ChainLink {
    /// Whether the link applies to a browser that is (`known`) or is not known.
    pub fn applies(&self, known: bool) -> bool {
        match self.when {
            ClaimWhen::Always => true,
            ClaimWhen::Known => known,
            ClaimWhen::Unknown => !known,
        }
    }
}

/// What a chain's caller gives back or marks after it checked the password, in one step.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChainSettle {
    /// Claims to give back one each (a right password is no failure).
    pub releases: Vec<QuotaClaim>,
    /// A mark to make live until the given time (epoch milliseconds), or keep live at least that long.
    pub mark: Option<(String, i64)>,
}

impl ChainSettle {
    /// Whether there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.releases.is_empty() && self.mark.is_none()
    }
}
