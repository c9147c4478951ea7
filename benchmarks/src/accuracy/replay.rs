//! Replays a visit log through the engine on the in-memory store, with the log's own times, and tallies every
//! visit by what the engine answered and whose id it was.

use std::collections::HashMap;
use std::time::Instant;

use janitor_core::identification::policy::MatchingPolicy;
use janitor_core::{Engine, EngineConfig, MemoryVisitorStore, Retention, VisitorId};

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

/// Replays `visits` (in time order) with `policy` under `scenario`.
pub fn replay(
    visits: &[Visit],
    policy: MatchingPolicy,
    scenario: Scenario,
) -> Result<Report, String> {
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
        let identity = runtime
            .block_on(engine.identify_at(&visit.payload, sent.as_ref(), visit.at_ms))
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
        tally,
        started.elapsed(),
        visits.len(),
    ))
}
