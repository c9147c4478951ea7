//! How long a server process took to answer identify requests, from the request as its app received it
//! (parsed, past the socket and the driver) to the answer: the time admission governs, so a refusal's time is
//! its wait for a slot plus whatever kept its task from running. Kept as counts in fixed buckets that only
//! grow, as a Prometheus histogram keeps them, so that a stage's figures are the difference of two readings
//! like every other counter of [`ServerStats`](super::ServerStats).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The buckets' upper bounds in microseconds: fine around the library's slot wait (20 ms by default, 5 and 10
/// in the measured alternatives), coarse beyond. A time past the last bound counts in one more bucket.
pub const BOUNDS_MICROS: [u64; 40] = [
    100, 250, 500, 750, 1_000, 1_500, 2_000, 3_000, 4_000, 5_000, 6_000, 7_000, 8_000, 9_000,
    10_000, 11_000, 12_000, 14_000, 16_000, 18_000, 20_000, 21_000, 22_000, 23_000, 24_000, 25_000,
    27_500, 30_000, 35_000, 40_000, 50_000, 75_000, 100_000, 250_000, 500_000, 1_000_000,
    2_500_000, 5_000_000, 10_000_000, 60_000_000,
];

/// The buckets of one outcome, counted by the serving process's requests as they end.
#[derive(Debug)]
pub(super) struct AnswerClock([AtomicU64; BOUNDS_MICROS.len() + 1]);

impl Default for AnswerClock {
    fn default() -> Self {
        AnswerClock(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

impl AnswerClock {
    /// Counts one answer that took `elapsed`.
    pub fn record(&self, elapsed: Duration) {
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let bucket = BOUNDS_MICROS.partition_point(|&bound| bound < micros);
        self.0[bucket].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn reading(&self) -> AnswerTimes {
        AnswerTimes {
            counts: self.0.iter().map(|c| c.load(Ordering::Relaxed)).collect(),
        }
    }
}

/// Answers counted per bucket of [`BOUNDS_MICROS`], the last past every bound; empty when none was counted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnswerTimes {
    /// Answers per bucket.
    pub counts: Vec<u64>,
}

impl AnswerTimes {
    /// True when no answer was counted.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }

    /// The answers counted after `then` (a reading of the same process, or nothing); empty when none were.
    pub fn since(&self, then: &AnswerTimes) -> AnswerTimes {
        let counts: Vec<u64> = (0..self.counts.len())
            .map(|i| {
                let old = then.counts.get(i).copied().unwrap_or(0);
                self.counts[i] - old.min(self.counts[i])
            })
            .collect();
        let times = AnswerTimes { counts };
        if times.is_empty() {
            AnswerTimes::default()
        } else {
            times
        }
    }

    /// Adds `other`'s counts (another process's) to these.
    pub fn add(&mut self, other: &AnswerTimes) {
        if self.counts.len() < other.counts.len() {
            self.counts.resize(other.counts.len(), 0);
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
    }

    /// Answers counted.
    pub fn answers(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The bound, in milliseconds, under which the share `q` (0 < q ≤ 1) of the answers took their time: the
    /// upper bound of the bucket the answer of rank ⌈q·n⌉ fell in. `None` when there is no answer, or when
    /// that answer took longer than the last bound.
    pub fn at_most_ms(&self, q: f64) -> Option<f64> {
        let n = self.answers();
        if n == 0 {
            return None;
        }
        let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (bucket, &count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return BOUNDS_MICROS.get(bucket).map(|&us| us as f64 / 1_000.0);
            }
        }
        None
    }

    /// The median, p99 and maximum of these answers, as bounds.
    pub fn summary(&self) -> AnswerSummary {
        AnswerSummary {
            answers: self.answers(),
            p50_ms_at_most: self.at_most_ms(0.5),
            p99_ms_at_most: self.at_most_ms(0.99),
            max_ms_at_most: self.at_most_ms(1.0),
        }
    }
}

/// The shape of a set of answer times, each figure the upper bound of its bucket (`null` when there were no
/// answers, or past the last bound of 60 s).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswerSummary {
    /// Answers counted.
    pub answers: u64,
    /// Half the answers took at most this, in ms.
    pub p50_ms_at_most: Option<f64>,
    /// 99 % of the answers took at most this, in ms.
    pub p99_ms_at_most: Option<f64>,
    /// Every answer took at most this, in ms.
    pub max_ms_at_most: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock_of(micros: &[u64]) -> AnswerClock {
        let clock = AnswerClock::default();
        for &us in micros {
            clock.record(Duration::from_micros(us));
        }
        clock
    }

    #[test]
    fn a_time_counts_in_the_first_bucket_whose_bound_holds_it() {
        let reading = clock_of(&[0, 100, 101, 20_000, 20_001, 60_000_000, 60_000_001]).reading();
        let at =
            |bound: u64| reading.counts[BOUNDS_MICROS.iter().position(|&b| b == bound).unwrap()];
        assert_eq!(reading.counts.len(), BOUNDS_MICROS.len() + 1);
        assert_eq!((at(100), at(250), at(20_000), at(21_000)), (2, 1, 1, 1));
        assert_eq!(at(60_000_000), 1);
        assert_eq!(reading.counts[BOUNDS_MICROS.len()], 1, "past every bound");
        assert_eq!(reading.answers(), 7);
    }

    #[test]
    fn bounds_rise() {
        assert!(BOUNDS_MICROS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn quantiles_are_the_bounds_of_the_ranked_answers_bucket() {
        // 98 quick answers, one at 19.5 ms and one at 30 ms: the p99 is the 99th answer's bucket.
        let mut micros = vec![400; 98];
        micros.extend([19_500, 30_000]);
        let times = clock_of(&micros).reading();
        assert_eq!(times.at_most_ms(0.5), Some(0.5));
        assert_eq!(times.at_most_ms(0.98), Some(0.5));
        assert_eq!(times.at_most_ms(0.99), Some(20.0));
        assert_eq!(times.at_most_ms(1.0), Some(30.0));
        assert_eq!(AnswerTimes::default().at_most_ms(0.99), None);
        assert_eq!(clock_of(&[61_000_000]).reading().at_most_ms(1.0), None);
    }

    #[test]
    fn a_stage_is_the_difference_of_two_readings_and_processes_add_up() {
        let clock = clock_of(&[400, 400]);
        let before = clock.reading();
        assert_eq!(clock.reading().since(&before), AnswerTimes::default());
        clock.record(Duration::from_millis(19));
        let stage = clock.reading().since(&before);
        assert_eq!(stage.answers(), 1);
        assert_eq!(stage.at_most_ms(1.0), Some(20.0));
        // A reading from before the process counted anything (or from an older report) is empty.
        assert_eq!(stage.since(&AnswerTimes::default()), stage);
        let mut all = AnswerTimes::default();
        all.add(&stage);
        all.add(&clock_of(&[40_000]).reading());
        let summary = all.summary();
        assert_eq!(summary.answers, 2);
        assert_eq!(
            (summary.p50_ms_at_most, summary.max_ms_at_most),
            (Some(20.0), Some(40.0))
        );
    }
}
