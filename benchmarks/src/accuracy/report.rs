//! Tallies of a replay and the figures computed from them: precision, recovery, first-visit false merges and
//! the new-id rate, overall, by device class and by drift type, as a table and as JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use janitor_core::identification::policy::MatchingPolicy;
use serde::{Deserialize, Serialize};

use super::log::Visit;
use super::replay::{Outcome, Scenario, SignalSet};

fn payload_only() -> String {
    SignalSet::default().name().to_owned()
}

/// Reports of the payload alone say nothing of signals, as before the sets existed.
fn is_payload_only(signals: &str) -> bool {
    signals == SignalSet::default().name()
}

/// Visits counted by outcome.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    cookie: u64,
    first_new: u64,
    first_merged: u64,
    restored_right: u64,
    restored_wrong: u64,
    returning_new: u64,
}

impl Counts {
    fn add(&mut self, outcome: Outcome) {
        let slot = match outcome {
            Outcome::Cookie => &mut self.cookie,
            Outcome::FirstNew => &mut self.first_new,
            Outcome::FirstMerged => &mut self.first_merged,
            Outcome::RestoredRight => &mut self.restored_right,
            Outcome::RestoredWrong => &mut self.restored_wrong,
            Outcome::ReturningNew => &mut self.returning_new,
        };
        *slot += 1;
    }
}

/// Every visit's outcome, overall, by device class and, for returning visits without a cookie, by each drift
/// tag of the visit (`none` when nothing changed since the device's previous visit).
#[derive(Debug, Clone, Default)]
pub struct Tally {
    overall: Counts,
    by_class: BTreeMap<String, Counts>,
    by_drift: BTreeMap<String, Counts>,
}

impl Tally {
    /// Counts `visit`, which came to `outcome`.
    pub fn add(&mut self, visit: &Visit, outcome: Outcome) {
        self.overall.add(outcome);
        self.by_class
            .entry(visit.class.clone())
            .or_default()
            .add(outcome);
        if matches!(
            outcome,
            Outcome::RestoredRight | Outcome::RestoredWrong | Outcome::ReturningNew
        ) {
            if visit.drift.is_empty() {
                self.by_drift.entry("none".into()).or_default().add(outcome);
            }
            for tag in &visit.drift {
                self.by_drift.entry(tag.clone()).or_default().add(outcome);
            }
        }
    }
}

/// The figures of one group of visits. A share whose denominator is zero is `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    /// Correct restores ÷ restores (first visits' restores included: each one is wrong).
    pub precision: Option<f64>,
    /// Correct restores ÷ returning visits without a cookie.
    pub recovery: Option<f64>,
    /// New devices given another device's id on their first visit ÷ new devices.
    pub first_visit_false_merges: Option<f64>,
    /// Visits without a cookie answered with a newly minted id ÷ visits without a cookie.
    pub new_id_rate: Option<f64>,
    /// Visits in the group.
    pub visits: u64,
    /// Visits that sent their cookie.
    pub cookie_visits: u64,
    /// First visits.
    pub new_devices: u64,
    /// Returning visits without a cookie.
    pub returning_without_cookie: u64,
    /// Ids restored, right or wrong.
    pub restores: u64,
    /// Restores that gave the device its own id.
    pub correct_restores: u64,
    /// First visits given another device's id.
    pub false_merges: u64,
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

impl Figures {
    fn of(c: &Counts) -> Figures {
        let new_devices = c.first_new + c.first_merged;
        let returning = c.restored_right + c.restored_wrong + c.returning_new;
        let restores = c.first_merged + c.restored_right + c.restored_wrong;
        Figures {
            precision: share(c.restored_right, restores),
            recovery: share(c.restored_right, returning),
            first_visit_false_merges: share(c.first_merged, new_devices),
            new_id_rate: share(c.first_new + c.returning_new, new_devices + returning),
            visits: c.cookie + new_devices + returning,
            cookie_visits: c.cookie,
            new_devices,
            returning_without_cookie: returning,
            restores,
            correct_restores: c.restored_right,
            false_merges: c.first_merged,
        }
    }
}

/// The result of one replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The matching policy's name.
    pub policy: String,
    /// `lost` or `partial`.
    pub scenario: String,
    /// The evidence beyond the payload: `payload` (none; reports from before the sets say nothing) or
    /// `network`.
    #[serde(default = "payload_only", skip_serializing_if = "is_payload_only")]
    pub signals: String,
    /// Every visit.
    pub overall: Figures,
    /// By device class.
    pub by_class: BTreeMap<String, Figures>,
    /// Returning visits without a cookie, by what drifted since the device's previous visit.
    pub by_drift: BTreeMap<String, Figures>,
    /// Identifications per second of the replay (one thread, in-memory store, release build).
    pub identifications_per_second: f64,
    /// The replay's wall time.
    pub seconds: f64,
}

impl Report {
    /// The report of a replay of `visits` visits that took `elapsed`.
    pub fn new(
        policy: MatchingPolicy,
        scenario: Scenario,
        signals: SignalSet,
        tally: Tally,
        elapsed: Duration,
        visits: usize,
    ) -> Report {
        let seconds = elapsed.as_secs_f64();
        let all = |m: &BTreeMap<String, Counts>| {
            m.iter().map(|(k, c)| (k.clone(), Figures::of(c))).collect()
        };
        Report {
            policy: policy.name().to_owned(),
            scenario: scenario.name().to_owned(),
            signals: signals.name().to_owned(),
            overall: Figures::of(&tally.overall),
            by_class: all(&tally.by_class),
            by_drift: all(&tally.by_drift),
            identifications_per_second: (visits as f64 / seconds.max(1e-9)).round(),
            seconds: (seconds * 100.0).round() / 100.0,
        }
    }

    /// The report as a plain-text table.
    pub fn table(&self) -> String {
        let mut out = format!(
            "policy {}, scenario {}, signals {}: {} visits in {:.2} s ({} identifications/s)\n",
            self.policy,
            self.scenario,
            self.signals,
            self.overall.visits,
            self.seconds,
            self.identifications_per_second
        );
        let _ = writeln!(
            out,
            "{:<16} {:>9} {:>9} {:>12} {:>8} {:>9} {:>10}",
            "group", "precision", "recovery", "false merge", "new ids", "restores", "returning"
        );
        let row = |out: &mut String, name: &str, f: &Figures| {
            let p = |v: Option<f64>| v.map_or("-".to_owned(), |v| format!("{v:.3}"));
            let _ = writeln!(
                out,
                "{:<16} {:>9} {:>9} {:>12} {:>8} {:>9} {:>10}",
                name,
                p(f.precision),
                p(f.recovery),
                p(f.first_visit_false_merges),
                p(f.new_id_rate),
                f.restores,
                f.returning_without_cookie
            );
        };
        row(&mut out, "overall", &self.overall);
        for (class, f) in &self.by_class {
            row(&mut out, &format!("class {class}"), f);
        }
        for (tag, f) in &self.by_drift {
            row(&mut out, &format!("drift {tag}"), f);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_follow_the_definitions() {
        let c = Counts {
            cookie: 5,
            first_new: 6,
            first_merged: 4,
            restored_right: 30,
            restored_wrong: 6,
            returning_new: 24,
        };
        let f = Figures::of(&c);
        assert_eq!(f.new_devices, 10);
        assert_eq!(f.returning_without_cookie, 60);
        assert_eq!(f.restores, 40);
        assert_eq!(f.precision, Some(0.75));
        assert_eq!(f.recovery, Some(0.5));
        assert_eq!(f.first_visit_false_merges, Some(0.4));
        assert_eq!(f.new_id_rate, Some(30.0 / 70.0));
        assert_eq!(f.visits, 75);
        let none = Figures::of(&Counts::default());
        assert_eq!((none.precision, none.recovery), (None, None));
    }
}
