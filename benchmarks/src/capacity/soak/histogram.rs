//! Latency percentiles over a whole soak in bounded memory: a run of a day at 50,000/s holds billions of
//! requests, too many to keep each latency. Latencies are counted in microsecond buckets, exact below
//! 1,024 µs and within 1/512 (0.2 %) above; a percentile is the top of its bucket, never above the largest
//! latency seen. Each interval's own percentiles come from its exact samples.

use std::time::Duration;

use crate::Percentiles;

/// Below this many microseconds every microsecond has its bucket.
const EXACT: u64 = 1_024;

/// Buckets per power of two above [`EXACT`].
const PER_OCTAVE: u64 = 512;

/// Latencies are counted up to 2^40 µs (12 days); anything longer lands in the last bucket.
const TOP_BITS: u32 = 40;

/// Nearest-rank percentiles of a stream of latencies, counted in buckets.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    counts: Vec<u64>,
    total: u64,
    max: Duration,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

fn bucket(micros: u64) -> usize {
    let micros = micros.min((1 << TOP_BITS) - 1);
    if micros < EXACT {
        return micros as usize;
    }
    // The top ten bits of the value, and how far they were shifted.
    let shift = u64::from(63 - micros.leading_zeros()) - 9;
    (EXACT + (shift - 1) * PER_OCTAVE + ((micros >> shift) - PER_OCTAVE)) as usize
}

/// The largest value of bucket `index`, in microseconds.
fn top_of(index: usize) -> u64 {
    let index = index as u64;
    if index < EXACT {
        return index;
    }
    let shift = (index - EXACT) / PER_OCTAVE + 1;
    let mantissa = (index - EXACT) % PER_OCTAVE + PER_OCTAVE;
    ((mantissa + 1) << shift) - 1
}

impl Histogram {
    /// An empty histogram.
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; bucket((1 << TOP_BITS) - 1) + 1],
            total: 0,
            max: Duration::ZERO,
        }
    }

    /// Counts one latency.
    pub fn record(&mut self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        self.counts[bucket(micros)] += 1;
        self.total += 1;
        self.max = self.max.max(latency);
    }

    /// How many latencies were counted.
    pub fn len(&self) -> u64 {
        self.total
    }

    /// Whether none was.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The nearest-rank `p`-th quantile (0 < p ≤ 1): the top of its bucket, at most the largest latency.
    pub fn quantile(&self, p: f64) -> Option<Duration> {
        if self.total == 0 {
            return None;
        }
        let rank = ((p * self.total as f64).ceil() as u64).clamp(1, self.total);
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Some(Duration::from_micros(top_of(index)).min(self.max));
            }
        }
        Some(self.max)
    }

    /// p50, p95, p99 and the largest, as the reports give them; `None` when empty.
    pub fn percentiles(&self) -> Option<Percentiles> {
        let ms = |d: Option<Duration>| crate::ms(d.unwrap_or_default());
        (!self.is_empty()).then(|| Percentiles {
            p50_ms: ms(self.quantile(0.50)),
            p95_ms: ms(self.quantile(0.95)),
            p99_ms: ms(self.quantile(0.99)),
            max_ms: crate::ms(self.max),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Summary;

    #[test]
    fn buckets_are_exact_below_a_millisecond_and_within_a_fifth_of_a_percent_above() {
        for micros in [0, 1, 1_023] {
            assert_eq!(top_of(bucket(micros)), micros);
        }
        let mut last = 0;
        for micros in (1_024..40_000_000).step_by(997) {
            let index = bucket(micros);
            let top = top_of(index);
            assert!(
                top >= micros && (top - micros) as f64 <= micros as f64 / 512.0,
                "{micros}: {top}"
            );
            assert!(index >= last);
            last = index;
        }
        // Bucket boundaries: the top of one bucket and the next value fall in neighbouring buckets.
        for index in [1_023, 1_024, 1_535, 1_536, 2_047, 2_048] {
            let top = top_of(index);
            assert_eq!(bucket(top), index, "{index}");
            assert_eq!(bucket(top + 1), index + 1, "{index}");
        }
        assert_eq!(bucket(u64::MAX), bucket((1 << TOP_BITS) - 1));
    }

    #[test]
    fn quantiles_follow_the_nearest_rank_of_the_exact_samples() {
        // 1 ms to 20 ms in 1,000 steps, shuffled by a stride.
        let mut exact: Vec<Duration> = (0..1_000u64)
            .map(|i| Duration::from_micros(1_000 + (i * 7_919 % 1_000) * 19))
            .collect();
        let mut h = Histogram::new();
        for d in &exact {
            h.record(*d);
        }
        let s = Summary::of(&mut exact).unwrap();
        for (p, expected) in [(0.5, s.median), (0.95, s.p95), (0.99, s.p99)] {
            let got = h.quantile(p).unwrap();
            assert!(got >= expected, "{p}: {got:?} < {expected:?}");
            assert!(
                got.as_secs_f64() <= expected.as_secs_f64() * (1.0 + 1.0 / 512.0),
                "{p}"
            );
        }
        assert_eq!(h.len(), 1_000);
        let p = h.percentiles().unwrap();
        assert_eq!(p.max_ms, crate::ms(*exact.last().unwrap()));
        // Below a millisecond the figures are exact.
        let mut h = Histogram::new();
        for micros in [100, 200, 300, 400] {
            h.record(Duration::from_micros(micros) + Duration::from_nanos(999));
        }
        assert_eq!(h.quantile(0.5), Some(Duration::from_micros(200)));
        assert_eq!(h.quantile(1.0), Some(Duration::from_micros(400)));
        // Never above the largest latency seen.
        let mut h = Histogram::new();
        h.record(Duration::from_micros(5_000));
        assert_eq!(h.quantile(0.99), Some(Duration::from_micros(5_000)));
        assert_eq!(Histogram::new().percentiles(), None);
        assert!(Histogram::default().is_empty());
    }
}
