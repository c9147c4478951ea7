//! The accuracy benchmark on the committed CI log: the tallies add up, the JSON carries the interface other
//! tools read, and the precise policy is more precise than the reference's on the same visits.

use std::path::Path;

use janitor_benchmarks::accuracy::{log, replay, Figures, Report, Scenario, SignalSet};
use janitor_core::identification::policy::MatchingPolicy;

fn ci_log() -> Vec<log::Visit> {
    read("ci")
}

/// The committed log of `folder` under `benchmarks/accuracy/`.
fn read(folder: &str) -> Vec<log::Visit> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("accuracy")
        .join(folder)
        .join("visits.jsonl.gz");
    log::read(&path).unwrap()
}

fn run(visits: &[log::Visit], policy: MatchingPolicy, scenario: Scenario) -> Report {
    replay(visits, policy, scenario, SignalSet::default()).unwrap()
}

#[test]
fn the_tallies_add_up_in_both_scenarios() {
    let visits = ci_log();
    let devices = visits.iter().filter(|v| v.index == 0).count() as u64;
    let kept = visits.iter().filter(|v| v.index > 0 && !v.lost).count() as u64;
    for policy in MatchingPolicy::ALL {
        let lost = run(&visits, policy, Scenario::Lost).overall;
        assert_eq!(lost.visits, visits.len() as u64);
        assert_eq!(lost.cookie_visits, 0);
        assert_eq!(lost.new_devices, devices);
        assert_eq!(lost.returning_without_cookie, visits.len() as u64 - devices);
        assert!(lost.correct_restores <= lost.restores);
        assert!(lost.false_merges <= lost.restores);
        let partial = run(&visits, policy, Scenario::Partial).overall;
        assert_eq!(partial.cookie_visits, kept, "{policy}");
        assert_eq!(partial.new_devices, devices);
        assert_eq!(
            partial.returning_without_cookie,
            visits.len() as u64 - devices - kept
        );
    }
}

#[test]
fn the_precise_policy_is_more_precise_and_merges_fewer_new_devices() {
    let visits = ci_log();
    for scenario in [Scenario::Lost, Scenario::Partial] {
        let reference = run(&visits, MatchingPolicy::Reference, scenario).overall;
        let precise = run(&visits, MatchingPolicy::Precise, scenario).overall;
        let (r, p) = (reference.precision.unwrap(), precise.precision.unwrap());
        assert!(p > r + 0.1, "{scenario:?}: precision {p} against {r}");
        let (r, p) = (
            reference.first_visit_false_merges.unwrap(),
            precise.first_visit_false_merges.unwrap(),
        );
        assert!(p < r / 2.0, "{scenario:?}: false merges {p} against {r}");
    }
}

#[test]
fn the_json_holds_the_documented_interface() {
    let visits = ci_log();
    let report = run(&visits, MatchingPolicy::Precise, Scenario::Partial);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["policy"], "precise");
    assert_eq!(json["scenario"], "partial");
    for key in [
        "precision",
        "recovery",
        "first_visit_false_merges",
        "new_id_rate",
    ] {
        let value = json["overall"][key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key}"));
        assert!((0.0..=1.0).contains(&value), "{key} = {value}");
    }
    for class in ["android", "ios", "linux", "macos", "windows"] {
        assert!(
            json["by_class"][class]["visits"].as_u64().unwrap() > 0,
            "{class}"
        );
    }
    assert!(
        json["by_drift"]["none"]["returning_without_cookie"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(report
        .table()
        .starts_with("policy precise, scenario partial, signals payload: "));
}

#[test]
fn the_network_and_the_extended_signals_make_the_precise_policy_more_precise() {
    // The CI log again, made with --networks --extended (benchmarks/accuracy/README.md, "Networks" and
    // "Extended signals"); each signal set is replayed once per scenario.
    let visits = read("ci-extended");
    assert!(visits
        .iter()
        .all(|v| v.address.is_some() && v.extended.is_some()));
    for scenario in [Scenario::Lost, Scenario::Partial] {
        let replay_with = |signals| {
            let signals = SignalSet::parse(signals).unwrap();
            replay(&visits, MatchingPolicy::Precise, scenario, signals)
                .unwrap()
                .overall
        };
        let [payload, network, extended, both] =
            ["payload", "network", "extended", "network+extended"].map(replay_with);
        let precision = |o: &Figures| o.precision.unwrap();
        let merges = |o: &Figures| o.first_visit_false_merges.unwrap();
        // The network: more precise, and at most half the false merges.
        assert!(
            precision(&network) > precision(&payload),
            "{scenario:?}: {network:?} against {payload:?}"
        );
        assert!(
            merges(&network) < merges(&payload) / 2.0,
            "{scenario:?}: {network:?} against {payload:?}"
        );
        // The extended signals alone: more precise, fewer false merges.
        assert!(
            precision(&extended) > precision(&payload),
            "{scenario:?}: {extended:?} against {payload:?}"
        );
        assert!(
            merges(&extended) < merges(&payload),
            "{scenario:?}: {extended:?} against {payload:?}"
        );
        // Both: a candidate the extended signals vouch for is not refused for its network.
        let (before, after) = (network.recovery.unwrap(), both.recovery.unwrap());
        assert!(
            after > before,
            "{scenario:?}: recovery {after} against {before}"
        );
    }
    for (signals, generator_option) in [("network", "--networks"), ("extended", "--extended")] {
        let set = SignalSet::parse(signals).unwrap();
        let refused = replay(&ci_log(), MatchingPolicy::Precise, Scenario::Lost, set).unwrap_err();
        assert!(refused.contains(generator_option), "{refused}");
    }
}
