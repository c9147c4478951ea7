//! The precise policy's rules for a visit that carries its network's digest
//! ([`network`](crate::identification::network)).
//!
//! Lookalike devices send the same payload; a household, an office or a carrier is what still tells them apart.
//! The network never finds a candidate and never restores one alone: it only chooses among candidates the
//! payload already made contenders, or refuses the one it would restore.
//!
//! - **Confirm.** Among the contenders (possible candidates at or above the restore threshold whose closest
//!   snapshot agrees in hardware and locale), exactly one was seen on this network: it is restored, even when
//!   the payload alone could not pick it (a runner-up within the margin, a crowded lookup, a browser that
//!   hides its GPU).
//! - **Veto.** Otherwise the precise decision stands, and a restore is refused when every snapshot of the best
//!   candidate that carries a network carries one other network: a device seen only elsewhere, such as a
//!   lookalike from another household. A candidate seen on several networks (a phone, a laptop) is not vetoed,
//!   nor one with no network on record (rows from before the option, or from reference instances), nor one
//!   whose extended client signals vouch for it ([`extended::vouches`]).
//!
//! docs/accuracy.md, "Networks", measures what each rule buys and costs.

use crate::identification::decision::{closest_snapshot, decide, Decision, ScoredCandidate};
use crate::identification::network::NetworkDigest;
use crate::identification::observation::Observation;

use super::{extended, precise};

/// Whether any snapshot of `candidate`'s history came from `network`.
pub fn seen_on(candidate: &ScoredCandidate, network: &NetworkDigest) -> bool {
    candidate
        .history
        .iter()
        .any(|s| s.network.as_ref() == Some(network))
}

/// Whether every snapshot of `candidate` that carries a network carries the same one, other than `network`.
pub fn seen_only_elsewhere(candidate: &ScoredCandidate, network: &NetworkDigest) -> bool {
    let mut seen = candidate.history.iter().filter_map(|s| s.network.as_ref());
    match seen.next() {
        Some(first) => first != network && seen.all(|n| n == first),
        None => false,
    }
}

fn contender(candidate: &ScoredCandidate, current: &Observation, threshold: f64) -> bool {
    candidate.confidence >= threshold
        && closest_snapshot(&candidate.history, current).is_some_and(|(snapshot, _)| {
            !precise::hardware_differs(snapshot, current)
                && !precise::locale_differs(snapshot, current)
        })
}

/// The precise decision over possible `candidates` of a visit from `network` (see the module documentation).
/// A confirmed candidate is moved first, as the restored one always is.
pub fn decide_on_network(
    candidates: &mut [ScoredCandidate],
    current: &Observation,
    network: &NetworkDigest,
    threshold: f64,
) -> Decision {
    let decision = decide(candidates, threshold);
    let mut here = (0..candidates.len()).filter(|&i| {
        contender(&candidates[i], current, threshold) && seen_on(&candidates[i], network)
    });
    if let (Some(only), None) = (here.next(), here.next()) {
        candidates[..=only].rotate_right(1);
        return Decision {
            restore: true,
            ..decision
        };
    }
    // The first candidate is read only when the decision restores it: there may be none.
    let refused = |best: &ScoredCandidate| {
        precise::vetoed(best, current)
            || (seen_only_elsewhere(best, network) && !extended::vouches(best, current))
    };
    let restore = decision.restore && !refused(&candidates[0]);
    Decision {
        restore,
        ..decision
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::identification::candidates::Candidate;
    use crate::identification::decision::score_candidate;
    use crate::identification::observation::test_observation;
    use crate::visitor::VisitorId;

    fn on(network: Option<&str>) -> Observation {
        let mut observation = test_observation("windows", "Europe/Paris");
        observation.network = network.map(|n| NetworkDigest::from_stored(n.to_owned()));
        observation
    }

    /// A candidate seen on each of `networks` with the same signals as the visit.
    fn seen(n: u8, networks: &[Option<&str>]) -> ScoredCandidate {
        let candidate = Candidate {
            visitor_id: VisitorId::parse(&format!("vis_{n:048x}")).unwrap(),
            last_seen_at: i64::from(n),
            score: 1.0,
            saturated: false,
        };
        let history = networks.iter().map(|n| Arc::new(on(*n))).collect();
        score_candidate(candidate, history, &on(None)).unwrap()
    }

    fn home() -> NetworkDigest {
        NetworkDigest::from_stored("home".into())
    }

    #[test]
    fn only_a_history_of_one_other_network_is_seen_only_elsewhere() {
        let elsewhere =
            |networks: &[Option<&str>]| seen_only_elsewhere(&seen(1, networks), &home());
        assert!(elsewhere(&[Some("office")]));
        assert!(elsewhere(&[Some("office"), None, Some("office")]));
        assert!(
            !elsewhere(&[Some("office"), Some("cafe")]),
            "a device that moves"
        );
        assert!(!elsewhere(&[Some("home"), Some("office")]));
        assert!(!elsewhere(&[None, None]), "no network on record");
    }

    #[test]
    fn the_one_lookalike_seen_here_is_confirmed_and_one_seen_only_elsewhere_vetoed() {
        let current = on(Some("home"));
        let threshold = 0.9;
        // Two identical candidates: the payload alone refuses (no margin); the network picks the one seen here.
        let mut pair = vec![seen(1, &[Some("office")]), seen(2, &[Some("home")])];
        assert!(!decide(&mut pair.clone(), threshold).restore);
        let decision = decide_on_network(&mut pair, &current, &home(), threshold);
        assert!(decision.restore);
        assert_eq!(
            pair[0].candidate.visitor_id,
            seen(2, &[None]).candidate.visitor_id
        );
        // Both seen here: a household of lookalikes, left to the payload, which refuses.
        let mut both = vec![seen(1, &[Some("home")]), seen(2, &[Some("home")])];
        assert!(!decide_on_network(&mut both, &current, &home(), threshold).restore);
        // A lone candidate seen only on another network is vetoed; one never seen on any network is not.
        let mut lone = vec![seen(1, &[Some("office")])];
        assert!(!decide_on_network(&mut lone, &current, &home(), threshold).restore);
        let mut unknown = vec![seen(1, &[None])];
        assert!(decide_on_network(&mut unknown, &current, &home(), threshold).restore);
        // No candidate at all: a new visitor.
        assert!(!decide_on_network(&mut Vec::new(), &current, &home(), threshold).restore);
    }
}
