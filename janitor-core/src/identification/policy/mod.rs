//! Matching policies: how a missing-cookie visit's scored candidates become a restore, or a new id.
//!
//! [`MatchingPolicy::Reference`] is the reference implementation's decision, bit for bit: the conformance
//! vectors and a database shared with reference instances depend on it, so it is the default.
//! [`MatchingPolicy::Precise`] is opt-in and restores far less often wrongly
//! ([docs/accuracy.md](https://github.com/janitor-rust/janitor/blob/main/docs/accuracy.md) has both
//! policies' measurements and when to choose which).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;
use crate::identification::decision::{decide, Decision, ScoredCandidate};
use crate::identification::observation::Observation;

pub mod extended;
pub mod network;
pub mod precise;

/// How a missing-cookie visit decides between restoring a known id and minting a new one.
///
/// In settings files it is written by name: `matching_policy = "precise"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchingPolicy {
    /// The reference's decision (threshold, margin, saturation), bit for bit. The default.
    #[default]
    Reference,
    /// The reference's ranking with stricter restores: impossible candidates dropped, and vetoes on the best
    /// one ([`precise`] has the rules); on a visit that carries its network's digest, that network confirms or
    /// vetoes among lookalikes ([`network`] has those rules); on a visit with extended client signals, those
    /// rule out lookalikes set up or updated differently ([`extended`] has those rules).
    Precise,
}

impl MatchingPolicy {
    /// Every policy, default first.
    pub const ALL: [MatchingPolicy; 2] = [MatchingPolicy::Reference, MatchingPolicy::Precise];

    /// The name configuration uses: `reference` or `precise`.
    pub fn name(self) -> &'static str {
        match self {
            MatchingPolicy::Reference => "reference",
            MatchingPolicy::Precise => "precise",
        }
    }
}

impl MatchingPolicy {
    /// Decides over scored `candidates` of the `current` observation, as [`decide`] does for the reference:
    /// sorts them (the best first) and says whether the first is restored. The precise policy first drops the
    /// candidates it rules out, then may veto the restore, or confirm another by the visit's network.
    pub fn decide(
        self,
        candidates: &mut Vec<ScoredCandidate>,
        current: &Observation,
        threshold: f64,
    ) -> Decision {
        match self {
            MatchingPolicy::Reference => decide(candidates, threshold),
            MatchingPolicy::Precise => {
                candidates
                    .retain(|c| precise::possible(c, current) && !extended::ruled_out(c, current));
                if let Some(network) = &current.network {
                    return network::decide_on_network(candidates, current, network, threshold);
                }
                let mut decision = decide(candidates, threshold);
                if decision.restore && precise::vetoed(&candidates[0], current) {
                    decision.restore = false;
                }
                decision
            }
        }
    }
}

impl fmt::Display for MatchingPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for MatchingPolicy {
    type Err = ConfigError;

    /// A policy by its [`name`](Self::name), in any case.
    fn from_str(name: &str) -> Result<Self, ConfigError> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| ConfigError {
                field: "matching_policy",
                range: "one of reference, precise".to_owned(),
                value: name.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_refused() {
        for policy in MatchingPolicy::ALL {
            assert_eq!(policy.name().parse::<MatchingPolicy>(), Ok(policy));
        }
        assert_eq!("PRECISE".parse(), Ok(MatchingPolicy::Precise));
        assert_eq!(MatchingPolicy::default(), MatchingPolicy::Reference);
        let err = "strict".parse::<MatchingPolicy>().unwrap_err();
        assert_eq!(err.field, "matching_policy");
        assert_eq!(
            err.to_string(),
            "matching_policy must be one of reference, precise, got strict"
        );
    }
}
