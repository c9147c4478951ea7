//! The rules of [`MatchingPolicy::Precise`](super::MatchingPolicy::Precise).
//!
//! The reference restores the best-scored candidate when it clears the threshold and the margin. Its score is a
//! weighted average, so a candidate can reach 0.9 while differing in a feature a device does not change between
//! visits, and a match on a device that reveals almost nothing about itself counts as much as any other. The
//! precise policy keeps the reference's ranking and adds two kinds of rules:
//!
//! - **Impossible candidates are dropped** before the decision, so that they neither win nor block the real
//!   device as a runner-up: one whose every stored snapshot differs from the visit in the device's hardware
//!   ([`hardware_differs`]), and one whose history holds a newer version of the visit's user agent
//!   ([`user_agent_older`]: browsers and systems update forwards).
//! - **Vetoes** refuse to restore the best candidate, which still counts as the runner-up of every other:
//!   its closest snapshot differs in hardware or in locale (timezone, languages), or the visit's browser hides
//!   its GPU ([`MASKED_RENDERERS`]), where identical devices are the rule.
//!
//! [docs/accuracy.md](https://github.com/janitor-rust/janitor/blob/main/docs/accuracy.md) measures each rule and
//! what it costs.

use crate::identification::decision::{closest_snapshot, ScoredCandidate};
use crate::identification::observation::Observation;
use crate::identification::similarity::size_similarity;

/// WebGL renderers that name no GPU model. WebKit on iPhone, iPad and Mac reports this one string for every
/// Apple GPU, so such a visit tells identical devices apart by screen size and locale alone.
pub const MASKED_RENDERERS: [&str; 1] = ["apple gpu"];

/// Whether both sides report a value and the values differ.
pub(super) fn differ<T: PartialEq + ?Sized>(a: Option<&T>, b: Option<&T>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a != b)
}

fn is_phone(o: &Observation) -> bool {
    matches!(o.platform.as_deref(), Some("ios" | "android"))
}

fn screen(o: &Observation) -> Option<(f64, f64)> {
    let s = o.screen.as_ref()?;
    Some((s.width?, s.height?))
}

/// Whether `snapshot` and `current`, where both report them, differ in CPU cores, memory, touch points, WebGL
/// vendor or renderer, or — on a phone, whose screen is its own — screen size. A desktop's screen is left out:
/// laptops are docked to other monitors.
pub fn hardware_differs(snapshot: &Observation, current: &Observation) -> bool {
    let hardware = |o: &Observation| o.hardware.clone().unwrap_or_default();
    let (a, b) = (hardware(snapshot), hardware(current));
    differ(
        a.hardware_concurrency.as_ref(),
        b.hardware_concurrency.as_ref(),
    ) || differ(a.device_memory.as_ref(), b.device_memory.as_ref())
        || differ(a.max_touch_points.as_ref(), b.max_touch_points.as_ref())
        || differ(snapshot.webgl_vendor(), current.webgl_vendor())
        || differ(snapshot.webgl_renderer(), current.webgl_renderer())
        || (is_phone(current)
            && size_similarity(screen(snapshot), screen(current)).is_some_and(|s| s < 1.0))
}

/// Whether `snapshot` and `current`, where both report them, differ in timezone or languages.
pub fn locale_differs(snapshot: &Observation, current: &Observation) -> bool {
    differ(snapshot.timezone.as_deref(), current.timezone.as_deref())
        || differ(snapshot.languages.as_ref(), current.languages.as_ref())
}

/// A user agent split into its text with every run of digits replaced by `#`, and those numbers in order.
fn versions(user_agent: &str) -> (String, Vec<u64>) {
    let mut shape = String::with_capacity(user_agent.len());
    let mut numbers = Vec::new();
    let mut digits: Option<u64> = None;
    for ch in user_agent.chars() {
        if let Some(d) = ch.to_digit(10) {
            digits = Some(
                digits
                    .unwrap_or(0)
                    .saturating_mul(10)
                    .saturating_add(u64::from(d)),
            );
            continue;
        }
        if let Some(n) = digits.take() {
            numbers.push(n);
            shape.push('#');
        }
        shape.push(ch);
    }
    if let Some(n) = digits {
        numbers.push(n);
        shape.push('#');
    }
    (shape, numbers)
}

/// Whether `current`'s user agent is an older version of `snapshot`'s: the same text with different numbers,
/// the first differing one lower. Browsers and systems update forwards, so such a visit is not that browser.
pub fn user_agent_older(snapshot: &Observation, current: &Observation) -> bool {
    let (Some(then), Some(now)) = (
        snapshot.user_agent.as_deref(),
        current.user_agent.as_deref(),
    ) else {
        return false;
    };
    if then == now {
        return false;
    }
    let ((then_shape, then_numbers), (now_shape, now_numbers)) = (versions(then), versions(now));
    then_shape == now_shape
        && then_numbers
            .iter()
            .zip(&now_numbers)
            .find(|(a, b)| a != b)
            .is_some_and(|(a, b)| b < a)
}

/// Whether the visit's browser hides its GPU model ([`MASKED_RENDERERS`]).
pub fn renderer_masked(current: &Observation) -> bool {
    current
        .webgl_renderer()
        .is_some_and(|r| MASKED_RENDERERS.contains(&r))
}

/// Whether `candidate` may be this device: some snapshot of its history agrees with the visit's hardware, and
/// none holds a newer version of its user agent.
pub fn possible(candidate: &ScoredCandidate, current: &Observation) -> bool {
    let history = &candidate.history;
    history.iter().any(|s| !hardware_differs(s, current))
        && !history.iter().any(|s| user_agent_older(s, current))
}

/// Whether restoring `best` is refused (see the module documentation).
pub fn vetoed(best: &ScoredCandidate, current: &Observation) -> bool {
    let Some((snapshot, _)) = closest_snapshot(&best.history, current) else {
        return true;
    };
    hardware_differs(snapshot, current)
        || locale_differs(snapshot, current)
        || renderer_masked(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identification::observation::{Graphics, Hardware, Screen};

    fn agent(ua: &str) -> Observation {
        Observation {
            user_agent: Some(ua.to_owned()),
            ..Observation::default()
        }
    }

    #[test]
    fn only_an_older_version_of_the_same_agent_counts() {
        let older = |then: &str, now: &str| user_agent_older(&agent(then), &agent(now));
        assert!(older("Chrome/131.0.0.0", "Chrome/130.0.0.0"));
        assert!(older("OS 18_7 Version/26.3", "OS 18_7 Version/26.2"));
        // The first differing number decides: a newer system with an older browser is newer.
        assert!(!older("OS 18_7 Version/26.3", "OS 18_8 Version/26.2"));
        assert!(!older("Chrome/130.0.0.0", "Chrome/131.0.0.0"));
        assert!(!older("Chrome/130.0.0.0", "Chrome/130.0.0.0"));
        // Another shape is another browser or platform, not a version: no rule.
        assert!(!older("Chrome/131.0.0.0", "Firefox/130.0"));
        assert!(!older("Chrome/131.0.0.0", "Chrome/130.0.0"));
        assert!(!user_agent_older(
            &Observation::default(),
            &agent("Chrome/1")
        ));
        // Digits past u64 saturate rather than wrap.
        assert!(!older(
            "v99999999999999999999999",
            "v99999999999999999999998"
        ));
    }

    fn device(
        cores: Option<f64>,
        renderer: Option<&str>,
        platform: &str,
        screen: (f64, f64),
    ) -> Observation {
        Observation {
            platform: Some(platform.to_owned()),
            hardware: Some(Hardware {
                hardware_concurrency: cores,
                ..Hardware::default()
            }),
            graphics: Some(Graphics {
                webgl_vendor: None,
                webgl_renderer: renderer.map(str::to_owned),
            }),
            screen: Some(Screen {
                width: Some(screen.0),
                height: Some(screen.1),
                ..Screen::default()
            }),
            ..Observation::default()
        }
    }

    #[test]
    fn hardware_differs_only_where_both_sides_report() {
        let base = device(Some(8.0), Some("adreno"), "android", (412.0, 915.0));
        assert!(!hardware_differs(&base, &base));
        assert!(hardware_differs(
            &base,
            &device(Some(4.0), Some("adreno"), "android", (412.0, 915.0))
        ));
        assert!(!hardware_differs(
            &base,
            &device(None, Some("adreno"), "android", (412.0, 915.0))
        ));
        assert!(hardware_differs(
            &base,
            &device(Some(8.0), Some("mali"), "android", (412.0, 915.0))
        ));
        assert!(!hardware_differs(
            &base,
            &device(Some(8.0), None, "android", (412.0, 915.0))
        ));
        // A phone's screen counts, to the pixel; a desktop's does not.
        assert!(hardware_differs(
            &base,
            &device(Some(8.0), Some("adreno"), "android", (412.0, 914.0))
        ));
        let desk = device(Some(8.0), Some("intel"), "windows", (1080.0, 1920.0));
        assert!(!hardware_differs(
            &desk,
            &device(Some(8.0), Some("intel"), "windows", (768.0, 1366.0))
        ));
    }

    #[test]
    fn only_the_masked_renderer_is_masked() {
        assert!(renderer_masked(&device(
            None,
            Some("apple gpu"),
            "ios",
            (390.0, 844.0)
        )));
        assert!(!renderer_masked(&device(
            None,
            Some("apple m1"),
            "macos",
            (900.0, 1440.0)
        )));
        assert!(!renderer_masked(&Observation::default()));
    }
}
