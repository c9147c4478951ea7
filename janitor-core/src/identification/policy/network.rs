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
//!   nor one with no network on record (rows from before the option, or from reference instances).
//!
//! docs/accuracy.md, "Networks", measures what each rule buys and costs.

use crate::identification::decision::{closest_snapshot, decide, Decision, ScoredCandidate};
use crate::identification::network::NetworkDigest;
use crate::identification::observation::Observation;

use super::precise;

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
    let restore = decision.restore
        && !precise::vetoed(&candidates[0], current)
        && !seen_only_elsewhere(&candidates[0], network);
    Decision {
        restore,
        ..decision
    }
}
