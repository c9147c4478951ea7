//! How a counter spends its limit: the contract's fixed window, or GCRA (the generic cell rate algorithm), which
//! spreads the same limit evenly and so never lets a client spend two windows' worth at a window's edge.

use serde::{Deserialize, Serialize};

/// How a counter spends its limit over its window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuotaAlgorithm {
    /// The contract's counter: `limit` claims from the first claim of a window until the window ends, then a
    /// fresh window. A client can spend a window's limit at its very end and the next one's at the start.
    #[default]
    FixedWindow,
    /// GCRA: one claim every `window / limit` on average, with at most `limit` at once after a quiet window.
    /// The row's `reset_at` holds the theoretical arrival time; a row whose time has passed is as good as
    /// absent, so the contract's cleanup (which deletes ended rows) stays correct for it.
    Gcra,
}

impl QuotaAlgorithm {
    /// The name used in settings and reports: `fixed_window` or `gcra`.
    pub fn as_str(&self) -> &'static str {
        match self {
            QuotaAlgorithm::FixedWindow => "fixed_window",
            QuotaAlgorithm::Gcra => "gcra",
        }
    }

    /// Reads [`as_str`](Self::as_str)'s names.
    pub fn parse(name: &str) -> Option<QuotaAlgorithm> {
        match name {
            "fixed_window" => Some(QuotaAlgorithm::FixedWindow),
            "gcra" => Some(QuotaAlgorithm::Gcra),
            _ => None,
        }
    }
}

/// The GCRA emission interval of `limit` claims per `window_ms`: at least 1 ms (the algorithm's resolution).
pub fn gcra_interval(limit: u32, window_ms: i64) -> i64 {
    (window_ms / i64::from(limit.max(1))).max(1)
}

/// A counter row as the algorithms read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterRow {
    /// Claims counted in the current window (informational for GCRA).
    pub used: u32,
    /// End of the fixed window, or GCRA's theoretical arrival time.
    pub reset_at: i64,
}

/// The row after a claim, or `Err(reset_at)` when denied (when the caller may try again). `None` row: none yet.
pub fn claim_row(
    algorithm: QuotaAlgorithm,
    row: Option<CounterRow>,
    limit: u32,
    window_start: i64,
    window_ms: i64,
) -> Result<CounterRow, i64> {
    match algorithm {
        QuotaAlgorithm::FixedWindow => {
            let fresh = CounterRow {
                used: 1,
                reset_at: window_start + window_ms,
            };
            match row {
                None => Ok(fresh),
                Some(row) if row.reset_at <= window_start => Ok(fresh),
                Some(row) if row.used < limit => Ok(CounterRow {
                    used: row.used + 1,
                    ..row
                }),
                Some(row) => Err(row.reset_at),
            }
        }
        QuotaAlgorithm::Gcra => {
            let interval = gcra_interval(limit, window_ms);
            let now = window_start;
            let base = row.map_or(now, |r| r.reset_at.max(now));
            let arrival = base + interval;
            if arrival - now <= window_ms {
                let used = row.map_or(0, |r| if r.reset_at <= now { 0 } else { r.used });
                Ok(CounterRow {
                    used: used.saturating_add(1),
                    reset_at: arrival,
                })
            } else {
                Err(arrival - window_ms)
            }
        }
    }
}

/// The row after giving one claim back (a sign-in whose password was right), or `None` when nothing is left.
pub fn release_row(
    algorithm: QuotaAlgorithm,
    row: CounterRow,
    limit: u32,
    window_ms: i64,
) -> CounterRow {
    match algorithm {
        QuotaAlgorithm::FixedWindow => CounterRow {
            used: row.used.saturating_sub(1),
            ..row
        },
        QuotaAlgorithm::Gcra => CounterRow {
            used: row.used.saturating_sub(1),
            reset_at: row.reset_at - gcra_interval(limit, window_ms),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_window_spends_its_limit_then_waits_for_the_end() {
        let fixed = QuotaAlgorithm::FixedWindow;
        let mut row = None;
        for t in 0..3 {
            row = Some(claim_row(fixed, row, 3, t, 60_000).unwrap());
        }
        assert_eq!(claim_row(fixed, row, 3, 59_999, 60_000), Err(60_000));
        let fresh = claim_row(fixed, row, 3, 60_000, 60_000).unwrap();
        assert_eq!(
            fresh,
            CounterRow {
                used: 1,
                reset_at: 120_000
            }
        );
    }

    #[test]
    fn gcra_allows_a_burst_of_the_limit_then_one_per_interval() {
        let gcra = QuotaAlgorithm::Gcra;
        let mut row = None;
        for _ in 0..3 {
            row = Some(claim_row(gcra, row, 3, 0, 60_000).unwrap());
        }
        // The fourth at once waits one interval (20 s), not a whole window.
        assert_eq!(claim_row(gcra, row, 3, 0, 60_000), Err(20_000));
        assert_eq!(claim_row(gcra, row, 3, 19_999, 60_000), Err(20_000));
        let next = claim_row(gcra, row, 3, 20_000, 60_000).unwrap();
        assert_eq!(next.reset_at, 80_000);
        // No edge burst: right after, nothing more until the next interval.
        assert_eq!(claim_row(gcra, Some(next), 3, 20_001, 60_000), Err(40_000));
        // Giving one back makes room for one.
        let released = release_row(gcra, next, 3, 60_000);
        assert!(claim_row(gcra, Some(released), 3, 20_001, 60_000).is_ok());
        // A row whose time has passed is as good as none.
        let old = CounterRow {
            used: 9,
            reset_at: 10,
        };
        assert_eq!(
            claim_row(gcra, Some(old), 3, 1_000_000, 60_000),
            Ok(CounterRow {
                used: 1,
                reset_at: 1_020_000
            })
        );
    }

    #[test]
    fn names_round_trip() {
        for algorithm in [QuotaAlgorithm::FixedWindow, QuotaAlgorithm::Gcra] {
            assert_eq!(QuotaAlgorithm::parse(algorithm.as_str()), Some(algorithm));
        }
        assert_eq!(QuotaAlgorithm::parse("sliding"), None);
    }
}
