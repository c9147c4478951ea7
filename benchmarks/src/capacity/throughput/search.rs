//! The search for the highest rate the fleet serves cleanly and sustains: no 503 and a success p95 (measured
//! from the scheduled send) of at most 10 ms in each of [`WINDOWS`] consecutive windows of one continuous
//! probe, so that one good stretch cannot pass a rate the fleet does not hold. Doubling from a low rate until
//! a probe fails, then halving the gap between the best pass and the lowest failure until it is within 5 %, in
//! at most [`MAX_PROBES`] probes. Every window of every probe is reported.

use std::time::Duration;

use janitor_test_support::http1::Connection;

use super::report::{RatePoint, SearchReport};
use super::samples::{interval, Sample, Tally};
use super::{open_loop_point, Fixture};
use crate::capacity::server::Fleet;

/// Consecutive windows of one probe; the rate passes only when every one of them does.
pub const WINDOWS: u32 = 3;

/// Seconds of one window (at most; shorter when the sweep's rates run shorter).
pub const WINDOW_SECONDS: u64 = 15;

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

/// Splits the samples of one continuous open loop into `count` windows of `window`, by when each request was
/// due (a late send still belongs to the window that scheduled it).
pub fn windows(samples: &[Sample], window: Duration, count: u32) -> Vec<Vec<Sample>> {
    let mut windows = vec![Vec::new(); count as usize];
    for sample in samples {
        let k = (sample.scheduled.as_nanos() / window.as_nanos().max(1)) as usize;
        windows[k.min(count as usize - 1)].push(*sample);
    }
    windows
}

/// The search, one sustained probe after another, each [`WINDOWS`] windows of `window` long.
pub(super) async fn run(
    fleet: &Fleet,
    mut connections: Vec<Connection>,
    fixture: &Fixture,
    window: Duration,
) -> Result<(Vec<Connection>, SearchReport), String> {
    let mut probes = Vec::new();
    let mut details = Vec::new();
    while let Some(rate) = next(&probes) {
        let (back, point) = probe(fleet, connections, fixture, rate, window).await?;
        connections = back;
        probes.push((rate, point.passes_search));
        details.push(point);
    }
    let report = SearchReport {
        criterion: format!(
            "sustained: in each of {WINDOWS} consecutive windows of {} s of one continuous probe, no 503 and \
             a success p95 from the scheduled send ≤ {} ms; every request of the probe sent",
            window.as_secs_f64(),
            P95_LIMIT.as_millis()
        ),
        seconds_per_probe: window.as_secs_f64() * f64::from(WINDOWS),
        windows_per_probe: Some(WINDOWS),
        best_rate: best(&probes),
        probes: details,
    };
    Ok((connections, report))
}

/// One probe at `rate`: a continuous open loop of [`WINDOWS`] × `window`, judged window by window.
async fn probe(
    fleet: &Fleet,
    connections: Vec<Connection>,
    fixture: &Fixture,
    rate: u64,
    window: Duration,
) -> Result<(Vec<Connection>, RatePoint), String> {
    let (back, mut point, samples) =
        open_loop_point(fleet, connections, fixture, rate, window * WINDOWS).await?;
    point.windows = windows(&samples, window, WINDOWS)
        .iter()
        .map(|w| {
            let tally = Tally::of(w, w.len() as u64, Some(interval(rate)));
            RatePoint {
                passes_search: passes(
                    true,
                    tally.overloaded,
                    tally.ok_corrected.map(|l| l.summary.p95),
                ),
                tally: tally.report(),
                offered_rate: rate,
                seconds: window.as_secs_f64(),
                windows: Vec::new(),
            }
        })
        .collect();
    point.passes_search &= point.windows.iter().all(|w| w.passes_search);
    Ok((back, point))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_split_by_due_time_and_one_bad_window_is_visible() {
        let sample = |due_ms: u64, status: u16| Sample {
            scheduled: Duration::from_millis(due_ms),
            // Sent late: still counted in the window that scheduled it.
            sent: Duration::from_millis(due_ms + 1_500),
            done: Duration::from_millis(due_ms + 1_501),
            status,
        };
        let samples = [
            sample(0, 200),
            sample(999, 200),
            sample(1_000, 503),
            sample(2_999, 200),
        ];
        let split = windows(&samples, Duration::from_secs(1), 3);
        let statuses: Vec<Vec<u16>> = split
            .iter()
            .map(|w| w.iter().map(|s| s.status).collect())
            .collect();
        assert_eq!(statuses, [vec![200, 200], vec![503], vec![200]]);
        // A sample due past the last window (rounding at the end) stays in the last one.
        assert_eq!(
            windows(&[sample(3_000, 200)], Duration::from_secs(1), 3)[2].len(),
            1
        );
    }

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
