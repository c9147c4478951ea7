//! Replays a visit log through the engine on the in-memory store, with the log's own times, and tallies every
//! visit by what the engine answered and whose id it was.

use std::collections::HashMap;
use std::time::Instant;

use janitor_core::identification::network::NetworkDigest;
use janitor_core::identification::policy::MatchingPolicy;
use janitor_core::{
    Engine, EngineConfig, IdentifyRequest, LabelKey, MemoryVisitorStore, Retention, VisitorId,
};

use super::log::Visit;
use super::report::{Report, Tally};

/// Which cookies the browsers keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    /// Every visit comes without a cookie (the reference's published setting).
    Lost,
    /// Returning visits marked `lost` in the log (30 %) come without their cookie; the rest bring it.
    Partial,
}

impl Scenario {
    /// `lost` or `partial`.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Lost => "lost",
            Scenario::Partial => "partial",
        }
    }

    /// A scenario by name.
    pub fn parse(name: &str) -> Result<Scenario, String> {
        match name {
            "lost" => Ok(Scenario::Lost),
            "partial" => Ok(Scenario::Partial),
            other => Err(format!("--scenario must be lost or partial, got {other:?}")),
        }
    }
}

/// Which opt-in evidence the engine gets beyond the 0.7 payload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SignalSet {
    /// The keyed digest of each visit's network prefix, from the log's `ip` (docs/accuracy.md, "Networks").
    pub network: bool,
    /// The extended client signals, from the log's `x` (docs/accuracy.md, "Extended client signals").
    pub extended: bool,
}

impl SignalSet {
    /// Every set, the payload alone first.
    pub const ALL: [SignalSet; 4] = [
        SignalSet {
            network: false,
            extended: false,
        },
        SignalSet {
            network: true,
            extended: false,
        },
        SignalSet {
            network: false,
            extended: true,
        },
        SignalSet {
            network: true,
            extended: true,
        },
    ];

    /// `payload` (the 0.7 payload alone), `network`, `extended` or `network+extended`.
    pub fn name(self) -> &'static str {
        match (self.network, self.extended) {
            (false, false) => "payload",
            (true, false) => "network",
            (false, true) => "extended",
            (true, true) => "network+extended",
        }
    }

    /// A set by name.
    pub fn parse(name: &str) -> Result<SignalSet, String> {
        Self::ALL.into_iter().find(|s| s.name() == name).ok_or_else(|| {
            format!("--signals must be payload, network, extended or network+extended, got {name:?}")
        })
    }
}

/// The key the replay's network digests are made with: any secret gives the same decisions.
const REPLAY_SECRET: &str = "accuracy-replay-network-key-0123456789";

/// What one visit came to, for the tallies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The browser sent its cookie.
    Cookie,
    /// A first visit given a new id.
    FirstNew,
    /// A first visit given another device's id: two devices merged into one id.
    FirstMerged,
    /// A returning visit without a cookie, given its own device's id back.
    RestoredRight,
    /// A returning visit without a cookie, given another device's id.
    RestoredWrong,
    /// A returning visit without a cookie, given a new id.
    ReturningNew,
}

/// Replays `visits` (in time order) with `policy` under `scenario`, giving the engine the evidence of `signals`.
/// A set that needs what the log does not hold (`network` on a log without addresses) is refused.
pub fn replay(
    visits: &[Visit],
    policy: MatchingPolicy,
    scenario: Scenario,
    signals: SignalSet,
) -> Result<Report, String> {
    if signals.network && visits.iter().any(|v| v.address.is_none()) {
        return Err(
            "--signals network needs a log made with the generator's --networks (a visit has no ip)".into(),
        );
    }
    if signals.extended && !visits.iter().any(|v| v.extended.is_some()) {
        return Err(
            "--signals extended needs a log made with the generator's --extended (no visit has x)"
                .into(),
        );
    }
    let key = LabelKey::new(REPLAY_SECRET, "accuracy").map_err(|e| e.to_string())?;
    let config = EngineConfig::builder()
        .policy(policy)
        .build()
        .map_err(|e| e.to_string())?;
    // The generator's window is 90 days, the default retention: nothing a device saw expires mid-log.
    let engine = Engine::new(MemoryVisitorStore::new(Retention::default()), config);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let mut owner: HashMap<VisitorId, u64> = HashMap::new();
    let mut cookie: HashMap<u64, VisitorId> = HashMap::new();
    let mut tally = Tally::default();
    let started = Instant::now();
    for visit in visits {
        let sent = match scenario {
            Scenario::Lost => None,
            Scenario::Partial if visit.lost => None,
            Scenario::Partial => cookie.get(&visit.device).cloned(),
        };
        let network = visit
            .address
            .filter(|_| signals.network)
            .map(|address| NetworkDigest::of(&key, address));
        let request = IdentifyRequest::new(&visit.payload, visit.at_ms)
            .with_cookie(sent.as_ref())
            .with_network(network)
            .with_extended(visit.extended.clone().filter(|_| signals.extended));
        let identity = runtime
            .block_on(engine.identify_request(request))
            .map_err(|e| format!("identification failed: {e}"))?
            .identity;
        if !identity.is_returning {
            owner.insert(identity.visitor_id.clone(), visit.device);
        }
        let own = owner.get(&identity.visitor_id) == Some(&visit.device);
        let outcome = match (sent.is_some(), visit.index == 0, identity.is_returning, own) {
            (true, ..) => Outcome::Cookie,
            (false, true, false, _) => Outcome::FirstNew,
            (false, true, true, _) => Outcome::FirstMerged,
            (false, false, false, _) => Outcome::ReturningNew,
            (false, false, true, true) => Outcome::RestoredRight,
            (false, false, true, false) => Outcome::RestoredWrong,
        };
        tally.add(visit, outcome);
        // The browser keeps whatever id the answer set.
        cookie.insert(visit.device, identity.visitor_id);
    }
    Ok(Report::new(
        policy,
        scenario,
        signals,
        tally,
        started.elapsed(),
        visits.len(),
    ))
}
