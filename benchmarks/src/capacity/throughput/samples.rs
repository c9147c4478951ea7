//! The timings of single requests and what a point adds up to. Pure arithmetic on offsets from the start of
//! a point, so it can be checked with made-up clocks.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::{ms, Percentiles, Summary};

/// One answered request, its times measured from the start of its point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// When the schedule said to send it.
    pub scheduled: Duration,
    /// When it was written to the socket (never before `scheduled`).
    pub sent: Duration,
    /// When its response was read.
    pub done: Duration,
    /// The response's status: 200 or 503 (anything else fails the run before it becomes a sample).
    pub status: u16,
}

impl Sample {
    /// Latency from the actual send: what the server and the network cost.
    pub fn raw(&self) -> Duration {
        self.done.saturating_sub(self.sent)
    }

    /// Latency from the scheduled send, corrected for coordinated omission: a request the generator could not
    /// send on time waited for it, as a real client would have.
    pub fn corrected(&self) -> Duration {
        self.done.saturating_sub(self.scheduled)
    }

    /// How late it was sent.
    pub fn lateness(&self) -> Duration {
        self.sent.saturating_sub(self.scheduled)
    }
}

/// When request `n` of a point at `rate` requests per second is due: `n · 1000 / rate` ms after the start,
/// computed from `n` each time so rounding never accumulates.
pub fn due(n: u64, rate: u64) -> Duration {
    Duration::from_nanos((u128::from(n) * 1_000_000_000 / u128::from(rate.max(1))) as u64)
}

/// The time between two requests at `rate`.
pub fn interval(rate: u64) -> Duration {
    due(1, rate)
}

/// A send later than this is late whatever the rate (see [`Tally::late`]).
pub const LATE: Duration = Duration::from_millis(1);

/// p50, p95, p99 and max of a set of latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    /// Nearest-rank percentiles.
    pub summary: Summary,
    /// The largest.
    pub max: Duration,
}

impl Latency {
    /// The latencies' summary; `None` when there are none.
    pub fn of(mut latencies: Vec<Duration>) -> Option<Latency> {
        let summary = Summary::of(&mut latencies)?;
        Some(Latency {
            summary,
            max: *latencies.last()?,
        })
    }

    /// As a report gives it, in milliseconds.
    pub fn report(self) -> LatencyReport {
        LatencyReport {
            samples: self.summary.samples,
            percentiles: Percentiles::of(&self.summary, self.max),
        }
    }
}

/// A set of latencies as a report gives it (`null` where the set is empty).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    /// How many.
    pub samples: usize,
    /// Their figures.
    #[serde(flatten)]
    pub percentiles: Percentiles,
}

/// Raw latency (from the actual send) and corrected latency (from the due time) of a set of requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RawAndCorrected {
    /// From the actual send.
    pub raw: Option<LatencyReport>,
    /// From the scheduled send.
    pub corrected: Option<LatencyReport>,
}

/// The latencies of every request and of the successes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    /// Every answered request.
    pub all: RawAndCorrected,
    /// The 200s.
    pub successes: RawAndCorrected,
}

/// What a set of samples adds up to, as a report gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TallyReport {
    /// Requests the schedule held.
    pub scheduled: u64,
    /// Requests answered.
    pub sent: u64,
    /// Answered 200.
    pub status_200: u64,
    /// Answered 503.
    pub status_503: u64,
    /// Sent more than one interval late.
    pub schedule_misses: u64,
    /// Sent more than 1 ms late.
    pub sent_over_1ms_late: u64,
    /// The latest send against its due time.
    pub max_lateness_ms: f64,
    /// From the start to the last answer.
    pub elapsed_ms: f64,
    /// 200s per second, to one decimal.
    pub completed_per_second: f64,
    /// 503s per second, to one decimal.
    pub overloads_per_second: f64,
    /// The four latency sets.
    pub latency: Latencies,
}

/// What a set of samples adds up to.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    /// Requests the schedule held.
    pub scheduled: u64,
    /// Requests answered (each was sent).
    pub sent: u64,
    /// Answered 200.
    pub ok: u64,
    /// Answered 503.
    pub overloaded: u64,
    /// Sent more than one interval after their due time (only for a schedule with an interval).
    pub misses: u64,
    /// Sent more than [`LATE`] after their due time, whatever the interval: at high rates one interval is
    /// shorter than the generator's own dispatch time, and this count does not depend on it.
    pub late: u64,
    /// The latest send against its due time.
    pub max_lateness: Duration,
    /// From the start to the last answer.
    pub elapsed: Duration,
    /// Raw latency of every request.
    pub all_raw: Option<Latency>,
    /// Corrected latency of every request.
    pub all_corrected: Option<Latency>,
    /// Raw latency of the 200s.
    pub ok_raw: Option<Latency>,
    /// Corrected latency of the 200s.
    pub ok_corrected: Option<Latency>,
}

impl Tally {
    /// Adds up `samples` out of `scheduled` requests; `interval` is the schedule's spacing, when it has one
    /// (a burst or a closed loop has none, so nothing there is a miss).
    pub fn of(samples: &[Sample], scheduled: u64, interval: Option<Duration>) -> Tally {
        let ok: Vec<&Sample> = samples.iter().filter(|s| s.status == 200).collect();
        let misses = match interval {
            Some(interval) => samples.iter().filter(|s| s.lateness() > interval).count() as u64,
            None => 0,
        };
        Tally {
            scheduled,
            sent: samples.len() as u64,
            ok: ok.len() as u64,
            overloaded: samples.iter().filter(|s| s.status == 503).count() as u64,
            misses,
            late: samples.iter().filter(|s| s.lateness() > LATE).count() as u64,
            max_lateness: samples
                .iter()
                .map(Sample::lateness)
                .max()
                .unwrap_or_default(),
            elapsed: samples.iter().map(|s| s.done).max().unwrap_or_default(),
            all_raw: Latency::of(samples.iter().map(Sample::raw).collect()),
            all_corrected: Latency::of(samples.iter().map(Sample::corrected).collect()),
            ok_raw: Latency::of(ok.iter().map(|s| s.raw()).collect()),
            ok_corrected: Latency::of(ok.iter().map(|s| s.corrected()).collect()),
        }
    }

    /// 200s per second, over the time from the start to the last answer.
    pub fn ok_per_second(&self) -> f64 {
        per_second(self.ok, self.elapsed)
    }

    /// 503s per second, over the same time.
    pub fn overloads_per_second(&self) -> f64 {
        per_second(self.overloaded, self.elapsed)
    }

    /// Answers per second, over the same time.
    pub fn answers_per_second(&self) -> f64 {
        per_second(self.sent, self.elapsed)
    }

    /// As a report gives it: the counts, the rates and the four latency sets.
    pub fn report(&self) -> TallyReport {
        let pair = |raw: Option<Latency>, corrected: Option<Latency>| RawAndCorrected {
            raw: raw.map(Latency::report),
            corrected: corrected.map(Latency::report),
        };
        TallyReport {
            scheduled: self.scheduled,
            sent: self.sent,
            status_200: self.ok,
            status_503: self.overloaded,
            schedule_misses: self.misses,
            sent_over_1ms_late: self.late,
            max_lateness_ms: ms(self.max_lateness),
            elapsed_ms: ms(self.elapsed),
            completed_per_second: round1(self.ok_per_second()),
            overloads_per_second: round1(self.overloads_per_second()),
            latency: Latencies {
                all: pair(self.all_raw, self.all_corrected),
                successes: pair(self.ok_raw, self.ok_corrected),
            },
        }
    }
}

fn per_second(count: u64, elapsed: Duration) -> f64 {
    if elapsed.is_zero() {
        0.0
    } else {
        count as f64 / elapsed.as_secs_f64()
    }
}

/// One decimal, for rates in a report.
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    fn sample(scheduled: u64, sent: u64, done: u64, status: u16) -> Sample {
        Sample {
            scheduled: at(scheduled),
            sent: at(sent),
            done: at(done),
            status,
        }
    }

    #[test]
    fn the_schedule_never_drifts() {
        assert_eq!(due(0, 3), Duration::ZERO);
        assert_eq!(due(3, 3), at(1_000));
        // 1/3 s is not a whole number of nanoseconds; the millionth request is still on the second.
        assert_eq!(due(3_000_000, 3), at(1_000_000_000));
        assert_eq!(interval(2_000), Duration::from_micros(500));
        assert_eq!(due(50_000 * 60, 50_000), at(60_000));
    }

    /// A fake clock at 100/s (10 ms apart): on time, exactly one interval late, just over, far over.
    fn four_at_100_per_second() -> [Sample; 4] {
        [
            sample(0, 0, 2, 200),
            sample(10, 20, 22, 200),
            sample(20, 31, 40, 503),
            sample(30, 90, 91, 200),
        ]
    }

    #[test]
    fn misses_are_sends_more_than_one_interval_late() {
        let samples = four_at_100_per_second();
        let t = Tally::of(&samples, 5, Some(interval(100)));
        assert_eq!((t.scheduled, t.sent, t.ok, t.overloaded), (5, 4, 3, 1));
        assert_eq!(t.misses, 2);
        assert_eq!(t.late, 3);
        assert_eq!(t.max_lateness, at(60));
        assert_eq!(t.elapsed, at(91));
        // Without an interval (a burst) nothing is a miss.
        assert_eq!(Tally::of(&samples, 4, None).misses, 0);
    }

    #[test]
    fn corrected_latency_counts_the_wait_for_the_send() {
        let samples = four_at_100_per_second();
        let t = Tally::of(&samples, 4, Some(interval(100)));
        let ok_raw = t.ok_raw.unwrap();
        let ok_corrected = t.ok_corrected.unwrap();
        // Successes: raw 2, 2, 1 ms; corrected 2, 12, 61 ms.
        assert_eq!((ok_raw.summary.median, ok_raw.max), (at(2), at(2)));
        assert_eq!(
            (ok_corrected.summary.median, ok_corrected.max),
            (at(12), at(61))
        );
        // All: raw 2, 2, 9, 1; corrected 2, 12, 20, 61.
        let all_raw = t.all_raw.unwrap();
        assert_eq!((all_raw.summary.samples, all_raw.max), (4, at(9)));
        assert_eq!(t.all_corrected.unwrap().summary.median, at(12));
        assert_eq!(t.ok_per_second(), 3.0 / 0.091);
        let j = serde_json::to_value(t.report()).unwrap();
        assert_eq!(j["latency"]["successes"]["corrected"]["max_ms"], 61.0);
        assert_eq!(j["status_503"], 1);
        assert_eq!(j["schedule_misses"], 2);
    }

    #[test]
    fn nothing_answered_is_empty_not_zero() {
        let t = Tally::of(&[], 10, Some(interval(10)));
        assert_eq!((t.sent, t.ok, t.misses), (0, 0, 0));
        assert_eq!(t.ok_per_second(), 0.0);
        let j = serde_json::to_value(t.report()).unwrap();
        assert_eq!(j["latency"]["all"]["raw"], serde_json::Value::Null);
        assert_eq!(ms(Duration::from_micros(1_234_567)), 1234.57);
    }
}
