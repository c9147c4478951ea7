//! The precise policy's rules for a visit that carries extended client signals
//! ([`ExtendedSignals`]).
//!
//! Identical devices send the same payload, but their users set them up differently and update them at
//! different times. Those differences never find a candidate and never restore one alone; they only rule out
//! a lookalike that cannot be this browser:
//!
//! - a setting a user seldom changes differs from the candidate's newest extended snapshot: calendar, numbering
//!   system, hour cycle, reduced motion, contrast, or the available screen area on a screen of the same size
//!   (the taskbar, dock or menu bar);
//! - a version went backwards: any snapshot of the candidate holds a newer full version of a brand the visit
//!   also names, or a newer platform version. Browsers and systems update forwards.
//!
//! The colour scheme is never a reason: automatic appearance switches it with the time of day.
//!
//! A candidate that the extended signals agree with in every field both sides carry, versions included,
//! **vouches** for itself: the network veto ([`network`](super::network)) does not refuse it, so that a phone
//! seen on its home Wi-Fi and now on its carrier is restored when nothing else tells it from a lookalike.
//!
//! docs/accuracy.md measures what each rule buys and costs.

use std::cmp::Ordering;

use crate::identification::decision::ScoredCandidate;
use crate::identification::observation::Observation;
use crate::identification::payload::{BrandVersion, ExtendedSignals};

use super::precise::differ;

fn same_screen(snapshot: &Observation, current: &Observation) -> bool {
    snapshot.screen.is_some() && snapshot.screen == current.screen
}

/// Whether the settings of `then` and `now` (both extended) differ where a user seldom changes them.
fn settings_differ(then: &ExtendedSignals, now: &ExtendedSignals, same_screen: bool) -> bool {
    differ(then.calendar.as_ref(), now.calendar.as_ref())
        || differ(
            then.numbering_system.as_ref(),
            now.numbering_system.as_ref(),
        )
        || differ(then.hour_cycle.as_ref(), now.hour_cycle.as_ref())
        || differ(then.reduced_motion.as_ref(), now.reduced_motion.as_ref())
        || differ(then.contrast.as_ref(), now.contrast.as_ref())
        || (same_screen
            && (differ(then.avail_width.as_ref(), now.avail_width.as_ref())
                || differ(then.avail_height.as_ref(), now.avail_height.as_ref())))
}

/// A dotted version's numbers; `None` when a part is not a number.
fn numbers(version: &str) -> Option<Vec<u64>> {
    version.split('.').map(|part| part.parse().ok()).collect()
}

/// Whether `now` is an older version than `then` (both numeric; other text is never ordered).
fn older(then: &str, now: &str) -> bool {
    match (numbers(then), numbers(now)) {
        (Some(then), Some(now)) => now.cmp(&then) == Ordering::Less,
        _ => false,
    }
}

/// Chromium's GREASE brand (`Not.A/Brand`, `Not A(Brand`, …) changes its name and version with each release
/// on purpose, so it orders nothing.
fn is_grease(brand: &BrandVersion) -> bool {
    brand.brand.starts_with("Not")
        && brand
            .brand
            .chars()
            .any(|c| !c.is_ascii_alphanumeric() && c != ' ')
}

/// The versions of the brands both lists name (GREASE left out), as (then, now) pairs.
fn common_brands<'a>(
    then: &'a ExtendedSignals,
    now: &'a ExtendedSignals,
) -> impl Iterator<Item = (&'a str, &'a str)> {
    let (then, now) = (
        then.full_version_list.as_deref().unwrap_or_default(),
        now.full_version_list.as_deref().unwrap_or_default(),
    );
    then.iter().filter(|b| !is_grease(b)).filter_map(|a| {
        now.iter()
            .find(|b| b.brand == a.brand)
            .map(|b| (a.version.as_str(), b.version.as_str()))
    })
}

/// Whether `now` carries an older version than `then` of a brand or of the platform.
fn downgraded(then: &ExtendedSignals, now: &ExtendedSignals) -> bool {
    common_brands(then, now).any(|(a, b)| older(a, b))
        || matches!(
            (then.platform_version.as_deref(), now.platform_version.as_deref()),
            (Some(a), Some(b)) if older(a, b)
        )
}

/// The snapshots of `candidate` that carry extended signals, newest first, each with them.
fn extended_history(
    candidate: &ScoredCandidate,
) -> impl Iterator<Item = (&Observation, &ExtendedSignals)> {
    candidate
        .history
        .iter()
        .filter_map(|s| s.extended.as_ref().map(|e| (&**s, e)))
}

/// Whether the visit's extended signals rule `candidate` out (see the module documentation). A visit or a
/// history without extended signals rules nothing out.
pub fn ruled_out(candidate: &ScoredCandidate, current: &Observation) -> bool {
    let Some(now) = &current.extended else {
        return false;
    };
    let mut history = extended_history(candidate);
    let Some((newest, then)) = history.next() else {
        return false;
    };
    settings_differ(then, now, same_screen(newest, current))
        || downgraded(then, now)
        || history.any(|(_, then)| downgraded(then, now))
}

/// Whether `candidate`'s newest extended snapshot equals the visit's extended signals in every field both
/// carry, versions and colour scheme included, with at least one field in common.
pub fn vouches(candidate: &ScoredCandidate, current: &Observation) -> bool {
    let Some(now) = &current.extended else {
        return false;
    };
    let Some((newest, then)) = extended_history(candidate).next() else {
        return false;
    };
    let in_common = [
        then.calendar.is_some() && now.calendar.is_some(),
        then.hour_cycle.is_some() && now.hour_cycle.is_some(),
        then.color_scheme.is_some() && now.color_scheme.is_some(),
        then.avail_height.is_some() && now.avail_height.is_some(),
        then.platform_version.is_some() && now.platform_version.is_some(),
    ];
    in_common.contains(&true)
        && !settings_differ(then, now, same_screen(newest, current))
        && !differ(then.color_scheme.as_ref(), now.color_scheme.as_ref())
        && !differ(
            then.platform_version.as_ref(),
            now.platform_version.as_ref(),
        )
        && common_brands(then, now).all(|(a, b)| a == b)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::identification::candidates::Candidate;
    use crate::identification::decision::score_candidate;
    use crate::identification::observation::test_observation;
    use crate::visitor::VisitorId;

    fn with(extended: Option<ExtendedSignals>) -> Observation {
        let mut observation = test_observation("windows", "Europe/Paris");
        observation.extended = extended;
        observation
    }

    fn signals(hour_cycle: &str, chromium: &str, scheme: &str) -> ExtendedSignals {
        ExtendedSignals {
            avail_height: Some(1032.0),
            platform_version: Some("15.0.0".into()),
            full_version_list: Some(vec![
                BrandVersion {
                    brand: "Not.A/Brand".into(),
                    version: "99.0.0.0".into(),
                },
                BrandVersion {
                    brand: "Chromium".into(),
                    version: chromium.into(),
                },
            ]),
            calendar: Some("gregory".into()),
            hour_cycle: Some(hour_cycle.into()),
            color_scheme: Some(scheme.into()),
            ..ExtendedSignals::default()
        }
    }

    /// A candidate whose history is `snapshots` (extended signals on the fixture observation), newest first.
    fn candidate(snapshots: Vec<Option<ExtendedSignals>>) -> ScoredCandidate {
        candidate_from(snapshots.into_iter().map(with).collect())
    }

    fn candidate_from(history: Vec<Observation>) -> ScoredCandidate {
        let visitor = Candidate {
            visitor_id: VisitorId::parse(&format!("vis_{:048x}", 1)).unwrap(),
            last_seen_at: 1,
            score: 1.0,
            saturated: false,
        };
        let history = history.into_iter().map(Arc::new).collect();
        score_candidate(visitor, history, &with(None)).unwrap()
    }

    #[test]
    fn versions_order_by_number_and_grease_orders_nothing() {
        assert!(older("147.0.7727.137", "147.0.7727.55"));
        assert!(older("148.0.0.0", "147.9.9.9"));
        assert!(!older("147.0.7727.55", "147.0.7727.137"));
        assert!(!older("147.0.7727.55", "147.0.7727.55"));
        assert!(!older("147.0.x", "146.0.0"), "text is never ordered");
        let grease = |name: &str| {
            is_grease(&BrandVersion {
                brand: name.into(),
                version: "8".into(),
            })
        };
        assert!(grease("Not.A/Brand") && grease("Not A(Brand") && grease("Not;A=Brand"));
        assert!(!grease("Chromium") && !grease("Nothing Browser"));
    }

    #[test]
    fn another_setting_or_an_older_version_rules_a_candidate_out() {
        let visit = with(Some(signals("h12", "147.0.7727.137", "dark")));
        let out = |history| ruled_out(&candidate(history), &visit);
        assert!(
            !out(vec![Some(signals("h12", "147.0.7727.55", "light"))]),
            "an update and a darker evening"
        );
        assert!(
            out(vec![Some(signals("h23", "147.0.7727.137", "dark"))]),
            "another hour cycle"
        );
        assert!(
            out(vec![Some(signals("h12", "148.0.7778.1", "dark"))]),
            "a newer browser before"
        );
        // Only the newest snapshot's settings count (a user may change one), every snapshot's versions.
        assert!(!out(vec![
            Some(signals("h12", "147.0.7727.1", "dark")),
            Some(signals("h23", "146.0.1.1", "dark"))
        ]));
        assert!(out(vec![
            Some(signals("h12", "147.0.7727.1", "dark")),
            Some(signals("h12", "148.0.1.1", "dark"))
        ]));
        // The GREASE brand's version goes wherever it likes.
        let mut grease = signals("h12", "147.0.7727.137", "dark");
        grease.full_version_list.as_mut().unwrap()[0].version = "8.0.0.0".into();
        assert!(!out(vec![Some(signals("h12", "147.0.7727.137", "dark"))]));
        assert!(!ruled_out(
            &candidate(vec![Some(signals("h12", "147.0.7727.137", "dark"))]),
            &with(Some(grease))
        ));
        // The available area counts on a screen of the same size only: a laptop on a monitor has another one.
        let mut taskbar = signals("h12", "147.0.7727.137", "dark");
        taskbar.avail_height = Some(1080.0);
        assert!(out(vec![Some(taskbar.clone())]), "another taskbar setting");
        let mut docked = with(Some(taskbar));
        docked.screen.as_mut().unwrap().height = Some(1600.0);
        assert!(!ruled_out(&candidate_from(vec![docked]), &visit));
        // A newer system before is as impossible as a newer browser.
        let mut newer_system = signals("h12", "147.0.7727.137", "dark");
        newer_system.platform_version = Some("15.1.0".into());
        assert!(out(vec![Some(newer_system)]));
        // Nothing to compare: nothing ruled out.
        assert!(!out(vec![None]));
        assert!(!ruled_out(
            &candidate(vec![Some(signals("h23", "1", "dark"))]),
            &with(None)
        ));
    }

    #[test]
    fn only_an_exact_match_vouches() {
        let visit = with(Some(signals("h12", "147.0.7727.137", "dark")));
        let vouch = |e| vouches(&candidate(vec![Some(e)]), &visit);
        assert!(vouch(signals("h12", "147.0.7727.137", "dark")));
        assert!(
            !vouch(signals("h12", "147.0.7727.55", "dark")),
            "another patch"
        );
        assert!(
            !vouch(signals("h12", "147.0.7727.137", "light")),
            "another scheme"
        );
        assert!(!vouch(ExtendedSignals::default()), "nothing in common");
        assert!(!vouches(&candidate(vec![None]), &visit));
    }
}
