//! The restore decision: whether a cookieless visitor gets a known id back.

use std::cmp::Ordering;
use std::sync::Arc;

use crate::identification::candidates::{rank_order, Candidate, CANDIDATE_FLOOR};
use crate::identification::config::{AMBIGUITY_MARGIN, DETERMINISTIC_WEIGHT, EVALUATOR_WEIGHT};
use crate::identification::evaluator::Evaluation;
use crate::identification::observation::Observation;
use crate::identification::similarity::{compare, Comparison};

/// A candidate scored against its own history.
#[derive(Debug, Clone)]
pub struct ScoredCandidate {
    /// From the lookup ranking.
    pub candidate: Candidate,
    /// Its recent history, newest first.
    pub history: Vec<Arc<Observation>>,
    /// Best similarity over its non-contradicted snapshots.
    pub score: f64,
    /// Evidence cap of that snapshot.
    pub cap: f64,
    /// `min(cap, score)`, or the blend with an evaluator's answer.
    pub confidence: f64,
    /// The evaluator's answer for this candidate, if any.
    pub evaluation: Option<Evaluation>,
}

/// The snapshot of `history` a candidate is scored by: the best non-contradicted one, first of equals, with
/// its comparison. `None` when every snapshot is contradicted.
pub fn closest_snapshot<'a>(
    history: &'a [Arc<Observation>],
    current: &Observation,
) -> Option<(&'a Observation, Comparison)> {
    let mut best: Option<(&Observation, Comparison)> = None;
    for snapshot in history {
        let c = compare(snapshot, current);
        if !c.contradiction && best.as_ref().is_none_or(|(_, b)| c.score > b.score) {
            best = Some((snapshot, c));
        }
    }
    best
}

/// Scores a candidate over its history by its [`closest_snapshot`], or `None` when there is none or it is below
/// the candidate floor.
pub fn score_candidate(
    candidate: Candidate,
    history: Vec<Arc<Observation>>,
    current: &Observation,
) -> Option<ScoredCandidate> {
    let (score, cap) = closest_snapshot(&history, current).map(|(_, c)| (c.score, c.cap))?;
    (score >= CANDIDATE_FLOOR).then(|| ScoredCandidate {
        candidate,
        history,
        score,
        cap,
        confidence: cap.min(score),
        evaluation: None,
    })
}

/// Blends a valid evaluator answer into a candidate's confidence: `min(cap, 0.35·score + 0.65·sameVisitor)`.
pub fn blend(candidate: &mut ScoredCandidate, evaluation: Evaluation) {
    candidate.confidence = candidate
        .cap
        .min(candidate.score * DETERMINISTIC_WEIGHT + evaluation.same_visitor * EVALUATOR_WEIGHT);
    candidate.evaluation = Some(evaluation);
}

fn by(
    key: impl Fn(&ScoredCandidate) -> f64,
) -> impl Fn(&ScoredCandidate, &ScoredCandidate) -> Ordering {
    move |a, b| rank_order((key(a), &a.candidate), (key(b), &b.candidate))
}

/// The outcome of [`decide`]; the best candidate is the first one after it sorted them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    /// The best of the second candidate's confidence and every other candidate's deterministic score.
    pub runner_up: f64,
    /// Whether the best candidate's id is restored.
    pub restore: bool,
}

/// Sorts candidates by confidence (then recency, then id) and decides: restore the first only when it is not
/// saturated, reaches `threshold`, and leads the runner-up by at least [`AMBIGUITY_MARGIN`]. An evaluator
/// cannot erase a deterministic competitor: every other candidate's score counts toward the runner-up.
pub fn decide(candidates: &mut [ScoredCandidate], threshold: f64) -> Decision {
    candidates.sort_by(by(|c| c.confidence));
    let Some((best, others)) = candidates.split_first() else {
        return Decision {
            runner_up: 0.0,
            restore: false,
        };
    };
    let second = others.first().map_or(0.0, |c| c.confidence);
    let runner_up = others.iter().map(|c| c.score).fold(second, f64::max);
    let restore = !best.candidate.saturated
        && best.confidence >= threshold
        && best.confidence - runner_up >= AMBIGUITY_MARGIN;
    Decision { runner_up, restore }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str) -> crate::visitor::VisitorId {
        crate::visitor::VisitorId::parse(&format!("vis_{:048x}", name.as_bytes()[0])).unwrap()
    }

    fn scored(name: &str, score: f64, confidence: f64, saturated: bool) -> ScoredCandidate {
        ScoredCandidate {
            candidate: Candidate {
                visitor_id: id(name),
                last_seen_at: 0,
                score,
                saturated,
            },
            history: Vec::new(),
            score,
            cap: 1.0,
            confidence,
            evaluation: None,
        }
    }

    fn snapshot(platform: &str, timezone: &str) -> Arc<Observation> {
        Arc::new(crate::identification::observation::test_observation(
            platform, timezone,
        ))
    }

    #[test]
    fn contradicted_snapshots_never_score() {
        let current = snapshot("macos", "A");
        let candidate = Candidate {
            visitor_id: id("v"),
            last_seen_at: 0,
            score: 1.0,
            saturated: false,
        };
        // The other-platform snapshot is otherwise identical (it would score 0.82); the weaker one wins.
        let history = vec![snapshot("windows", "A"), snapshot("macos", "B")];
        let scored = score_candidate(candidate.clone(), history, &current).unwrap();
        assert!(scored.score < 1.0 && scored.score > 0.9, "{}", scored.score);
        assert!(score_candidate(candidate, vec![snapshot("windows", "A")], &current).is_none());
    }

    #[test]
    fn margin_threshold_and_saturation() {
        let mut one = vec![scored("a", 0.95, 0.95, false)];
        assert!(decide(&mut one, 0.9).restore);
        assert!(!decide(&mut one, 0.96).restore);
        let mut saturated = vec![scored("a", 1.0, 1.0, true)];
        assert!(!decide(&mut saturated, 0.9).restore);
        // Lead of exactly 0.03 restores (1.0 - 0.97 rounds just above 0.03); less does not.
        let mut lead = vec![scored("a", 1.0, 1.0, false), scored("b", 0.97, 0.97, false)];
        assert!(decide(&mut lead, 0.9).restore);
        let mut close = vec![scored("a", 1.0, 1.0, false), scored("b", 0.98, 0.98, false)];
        assert!(!decide(&mut close, 0.9).restore);
        assert!(!decide(&mut Vec::new(), 0.9).restore);
    }

    #[test]
    fn runner_up_counts_deterministic_scores_of_others() {
        // An evaluator lowered b's confidence, but its deterministic score still competes.
        let mut c = vec![scored("a", 0.99, 1.0, false), scored("b", 0.99, 0.2, false)];
        let d = decide(&mut c, 0.9);
        assert_eq!(d.runner_up, 0.99);
        assert!(!d.restore);
    }
}
