//! The search for the highest rate the fleet serves cleanly: no 503 and a success p95 (measured from the
//! scheduled send) of at most 10 ms. Doubling from a low rate until a probe fails, then halving the gap
//! between the best pass and the lowest failure until it is within 5 %, in at most [`MAX_PROBES`] probes.

use std::time::Duration;

/// The success p95 a passing probe stays within.
pub const P95_LIMIT: Duration = Duration::from_millis(10);

/// The first rate probed.
pub const START: u64 = 250;

/// The highest rate probed (the generator's ceiling in the settings).
pub const CEILING: u64 = 50_000;

/// Probes at most; with probes of a few seconds this bounds the search to about a minute.
pub const MAX_PROBES: usize = 12;

/// Whether a probe passed: every request sent, none refused, and the success p95 within the limit.
pub fn passes(sent_all: bool, overloaded: u64, success_p95: Option<Duration>) -> bool {
    sent_all && overloaded == 0 && success_p95.is_some_and(|p95| p95 <= P95_LIMIT)
}

/// The best passing rate so far, if any.
pub fn best(probes: &[(u64, bool)]) -> Option<u64> {
    probes.iter().filter(|(_, ok)| *ok).map(|(r, _)| *r).max()
}

/// The next rate to probe after `probes` (rate, passed) in the order run, or `None` when the search is done.
pub fn next(probes: &[(u64, bool)]) -> Option<u64> {
    if probes.len() >= MAX_PROBES {
        return None;
    }
    let lowest_failure = probes.iter().filter(|(_, ok)| !*ok).map(|(r, _)| *r).min();
    let best = best(probes).unwrap_or(0);
    match lowest_failure {
        None => match probes.last() {
            None => Some(START),
            Some(&(rate, _)) if rate >= CEILING => None,
            Some(&(rate, _)) => Some((rate * 2).min(CEILING)),
        },
        // A pass above a failure (noise): the pass stands, and there is nothing left to narrow.
        Some(failure) if failure <= best => None,
        Some(failure) => {
            let tolerance = (failure / 20).max(10);
            if failure - best <= tolerance {
                None
            } else {
                Some(best + (failure - best) / 2)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(capacity: u64) -> Vec<(u64, bool)> {
        let mut probes = Vec::new();
        while let Some(rate) = next(&probes) {
            probes.push((rate, rate <= capacity));
        }
        probes
    }

    #[test]
    fn doubles_then_narrows_to_within_five_percent() {
        let probes = search(3_000);
        let rates: Vec<u64> = probes.iter().map(|(r, _)| *r).collect();
        assert_eq!(&rates[..5], [250, 500, 1_000, 2_000, 4_000]);
        assert_eq!(rates[5], 3_000);
        let found = best(&probes).unwrap();
        assert!(
            found <= 3_000 && found as f64 >= 3_000.0 * 0.95,
            "{probes:?}"
        );
        assert!(probes.len() <= MAX_PROBES);
    }

    #[test]
    fn bounded_both_ways() {
        // Nothing passes: it narrows towards zero and stops within the probe budget.
        let probes = search(0);
        assert_eq!(best(&probes), None);
        assert!(probes.len() <= MAX_PROBES);
        // Everything passes: it stops at the ceiling.
        let probes = search(u64::MAX);
        assert_eq!(probes.last(), Some(&(CEILING, true)));
        assert_eq!(best(&probes), Some(CEILING));
        // A pass above a failure ends the search.
        assert_eq!(next(&[(1_000, false), (2_000, true)]), None);
    }

    #[test]
    fn a_pass_needs_no_503_all_sent_and_the_p95() {
        let p = |ms| Some(Duration::from_millis(ms));
        assert!(passes(true, 0, p(10)));
        assert!(!passes(true, 0, p(11)));
        assert!(!passes(true, 1, p(1)));
        assert!(!passes(false, 0, p(1)));
        assert!(!passes(true, 0, None));
    }
}
