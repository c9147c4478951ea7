//! The memory rule of the soak: after a warm-up, the server's resident memory may not grow by more than 10 %.
//!
//! The warm-up is the first 20 % of the run, at least a minute. The baseline is the first sample at or after
//! its end; the run fails when any later sample exceeds the baseline by more than 10 %.

use serde::{Deserialize, Serialize};

/// The share of the run that is warm-up, in percent.
pub const WARMUP_PERCENT: u64 = 20;

/// The shortest warm-up, in seconds.
pub const MIN_WARMUP_SECONDS: u64 = 60;

/// How much the resident memory may grow over the baseline after the warm-up, in percent.
pub const LIMIT_PERCENT: u64 = 10;

/// Why the rule is what it is; the report carries it.
pub const RULE: &str = "The warm-up is the first 20 % of the run (at least 1 minute); the baseline is the server's \
     resident memory at the first sample at or after its end, and the run fails when any later sample exceeds the \
     baseline by more than 10 %. Why: a server's memory grows at first for reasons that are not leaks (the \
     allocator's arenas and the runtime's worker caches fill, every keep-alive connection gets its buffers, the \
     database pool opens its connections and prepares its statements, the first slow requests leave their peak), \
     so samples before the warm-up's end are not compared. After it, a server whose state is bounded stays \
     level, while a leak grows with the requests served, so over the remaining 80 % of the run it keeps \
     climbing. 10 % leaves room for the allocator's fragmentation and for a burst of slow requests without \
     hiding a leak that grows for the whole run. A leak smaller than 10 % of the baseline over the run's \
     length passes: a longer run is the way to see a slower one.";

/// The warm-up of a run of `run_seconds`: 20 % of it rounded up, at least [`MIN_WARMUP_SECONDS`].
pub fn warmup_seconds(run_seconds: u64) -> u64 {
    (run_seconds * WARMUP_PERCENT)
        .div_ceil(100)
        .max(MIN_WARMUP_SECONDS)
}

/// Whether `rss` exceeds `baseline` by more than [`LIMIT_PERCENT`] (exactly the limit passes).
pub fn exceeds(baseline: u64, rss: u64) -> bool {
    u128::from(rss) * 100 > u128::from(baseline) * u128::from(100 + LIMIT_PERCENT)
}

/// What the rule found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftReport {
    /// The rule and why.
    pub rule: String,
    /// Seconds of warm-up.
    pub warmup_seconds: u64,
    /// The allowed growth over the baseline, in percent.
    pub limit_percent: u64,
    /// When the baseline was sampled (`null` when the run ended before the warm-up did).
    pub baseline_at_seconds: Option<u64>,
    /// The resident memory at the baseline.
    pub baseline_rss_bytes: Option<u64>,
    /// The most the baseline may be exceeded to: baseline × 1.10.
    pub limit_rss_bytes: Option<u64>,
    /// Samples after the baseline, the ones compared.
    pub samples_compared: usize,
    /// The largest resident memory among them.
    pub max_rss_bytes_after: Option<u64>,
    /// When it was sampled.
    pub max_at_seconds: Option<u64>,
    /// Its growth over the baseline, in percent, to two decimals (negative when it shrank).
    pub drift_percent: Option<f64>,
    /// The first sample above the limit, if any.
    pub first_exceeded_at_seconds: Option<u64>,
    /// `true` within the limit, `false` above it, `null` when nothing came after the baseline to compare.
    pub within_limit: Option<bool>,
}

/// Applies the rule to `samples`, `(seconds into the run, resident bytes)` in the order taken, of a run of
/// `run_seconds`.
pub fn evaluate(samples: &[(u64, u64)], run_seconds: u64) -> DriftReport {
    let warmup = warmup_seconds(run_seconds);
    let baseline = samples.iter().position(|&(at, _)| at >= warmup);
    let mut report = DriftReport {
        rule: RULE.to_owned(),
        warmup_seconds: warmup,
        limit_percent: LIMIT_PERCENT,
        baseline_at_seconds: None,
        baseline_rss_bytes: None,
        limit_rss_bytes: None,
        samples_compared: 0,
        max_rss_bytes_after: None,
        max_at_seconds: None,
        drift_percent: None,
        first_exceeded_at_seconds: None,
        within_limit: None,
    };
    let Some(index) = baseline else {
        return report;
    };
    let (at, base) = samples[index];
    let after = &samples[index + 1..];
    report.baseline_at_seconds = Some(at);
    report.baseline_rss_bytes = Some(base);
    report.limit_rss_bytes = Some(base + base * LIMIT_PERCENT / 100);
    report.samples_compared = after.len();
    // The first of equal maxima, so the report names when it was first reached.
    let max = after
        .iter()
        .fold(None, |best: Option<(u64, u64)>, &(t, rss)| match best {
            Some((_, top)) if top >= rss => best,
            _ => Some((t, rss)),
        });
    if let Some((t, rss)) = max {
        report.max_rss_bytes_after = Some(rss);
        report.max_at_seconds = Some(t);
        report.drift_percent = Some(if base == 0 {
            0.0
        } else {
            ((rss as f64 / base as f64 - 1.0) * 10_000.0).round() / 100.0
        });
        report.first_exceeded_at_seconds = after
            .iter()
            .find(|&&(_, rss)| exceeds(base, rss))
            .map(|&(t, _)| t);
        report.within_limit = Some(report.first_exceeded_at_seconds.is_none());
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    /// A sample every 10 s from 0 to `run` seconds, resident memory from `rss(t)`.
    fn series(run: u64, rss: impl Fn(u64) -> u64) -> Vec<(u64, u64)> {
        (0..=run / 10).map(|i| (i * 10, rss(i * 10))).collect()
    }

    #[test]
    fn the_warm_up_is_a_fifth_of_the_run_and_at_least_a_minute() {
        assert_eq!(warmup_seconds(60), 60);
        assert_eq!(warmup_seconds(120), 60);
        assert_eq!(warmup_seconds(300), 60);
        assert_eq!(warmup_seconds(301), 61);
        assert_eq!(warmup_seconds(1_800), 360);
        assert_eq!(warmup_seconds(1_440 * 60), 17_280);
    }

    #[test]
    fn a_server_that_levels_off_passes() {
        // 30 minutes: grows from 12 to 30 MiB during the warm-up, then wanders within 2 MiB of 30.
        let samples = series(1_800, |t| {
            if t < 360 {
                12 * MIB + t * 50_000
            } else {
                30 * MIB + ((t - 360) % 70) * 30_000
            }
        });
        let r = evaluate(&samples, 1_800);
        assert_eq!((r.warmup_seconds, r.baseline_at_seconds), (360, Some(360)));
        assert_eq!(r.baseline_rss_bytes, Some(30 * MIB));
        assert_eq!(r.samples_compared, 144);
        assert_eq!(r.within_limit, Some(true));
        assert_eq!(r.first_exceeded_at_seconds, None);
        assert_eq!(r.max_rss_bytes_after, Some(30 * MIB + 60 * 30_000));
        assert_eq!(r.max_at_seconds, Some(420));
        assert_eq!(r.drift_percent, Some(5.72));
        assert_eq!(r.limit_rss_bytes, Some(33 * MIB));
    }

    #[test]
    fn a_leak_fails_where_it_crosses_the_limit() {
        // From the end of the first minute, 100 KiB more every 10 s: the baseline (at 120 s, the warm-up of a
        // 10-minute run) is exceeded by 10 % some 220 s later.
        let samples = series(600, |t| 20 * MIB + t.saturating_sub(60) * 10 * 1024);
        let r = evaluate(&samples, 600);
        assert_eq!(r.baseline_at_seconds, Some(120));
        let base = 20 * MIB + 60 * 10 * 1024;
        assert_eq!(r.baseline_rss_bytes, Some(base));
        assert_eq!(r.within_limit, Some(false));
        let first = r.first_exceeded_at_seconds.unwrap();
        let rss_at = |t: u64| samples.iter().find(|s| s.0 == t).unwrap().1;
        assert!(exceeds(base, rss_at(first)) && !exceeds(base, rss_at(first - 10)));
        assert_eq!(first, 340);
        assert_eq!(r.max_at_seconds, Some(600));
        assert!(r.drift_percent.unwrap() > 10.0);
    }

    #[test]
    fn the_warm_up_boundary() {
        // A 2-minute run: the warm-up is 60 s, so the sample at 60 s is the baseline and a peak before it is
        // not compared, however high.
        let mut samples = series(120, |_| 10 * MIB);
        samples[5].1 = 50 * MIB; // at 50 s, inside the warm-up
        let r = evaluate(&samples, 120);
        assert_eq!((r.baseline_at_seconds, r.samples_compared), (Some(60), 6));
        assert_eq!((r.within_limit, r.drift_percent), (Some(true), Some(0.0)));
        // Exactly +10 % after the baseline passes; one byte more fails.
        let limit = 11 * MIB;
        samples[7].1 = limit;
        let r = evaluate(&samples, 120);
        assert_eq!(
            (r.within_limit, r.limit_rss_bytes),
            (Some(true), Some(limit))
        );
        assert_eq!(r.drift_percent, Some(10.0));
        samples[7].1 = limit + 1;
        let r = evaluate(&samples, 120);
        assert_eq!(
            (r.within_limit, r.first_exceeded_at_seconds),
            (Some(false), Some(70))
        );
        // The same jump at the baseline itself raises the baseline instead.
        let mut samples = series(120, |_| 10 * MIB);
        samples[6].1 = 12 * MIB;
        let r = evaluate(&samples, 120);
        assert_eq!(r.baseline_rss_bytes, Some(12 * MIB));
        assert_eq!(r.within_limit, Some(true));
        // When no sample falls on the end of the warm-up, the first one after it is the baseline.
        let samples = series(310, |t| MIB + t);
        assert_eq!(evaluate(&samples, 310).baseline_at_seconds, Some(70));
    }

    #[test]
    fn too_short_a_run_compares_nothing() {
        // A 1-minute run: its last sample is the baseline, nothing follows it.
        let r = evaluate(&series(60, |_| MIB), 60);
        assert_eq!((r.baseline_at_seconds, r.samples_compared), (Some(60), 0));
        assert_eq!((r.within_limit, r.drift_percent), (None, None));
        // A run stopped during the warm-up has no baseline at all.
        let r = evaluate(&series(30, |_| MIB), 600);
        assert_eq!((r.baseline_at_seconds, r.within_limit), (None, None));
        assert_eq!(evaluate(&[], 600).baseline_rss_bytes, None);
    }
}
