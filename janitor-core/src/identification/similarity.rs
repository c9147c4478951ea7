//! Similarity between two normalized observations, contradiction, and the evidence cap.
//!
//! Sums run over the features in the fixed order of [`WEIGHTS`], as the reference does, so that every float
//! agrees with it bit for bit (the published vectors hold values such as `0.9500000000000001`).

use serde::Serialize;

use crate::identification::observation::{Observation, Screen, Size};

/// Below this much available weight a score is scaled down: sparse evidence cannot reach 1.
pub const MIN_EVIDENCE_WEIGHT: f64 = 0.55;
/// Evidence cap of a contradicted pair.
pub const CONTRADICTION_CAP: f64 = 0.5;
/// A screen similarity strictly below this, with another class change, is a contradiction.
pub const CONTRADICTION_SCREEN: f64 = 0.55;

/// One identity feature and its weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Feature {
    Platform,
    Browser,
    Timezone,
    Languages,
    Screen,
    Viewport,
    HardwareConcurrency,
    DeviceMemory,
    TouchPoints,
    WebglVendor,
    WebglRenderer,
}

/// The weights, in summation order; they add up to 1.
pub const WEIGHTS: [(Feature, f64); 11] = [
    (Feature::Platform, 0.18),
    (Feature::Browser, 0.12),
    (Feature::Timezone, 0.05),
    (Feature::Languages, 0.07),
    (Feature::Screen, 0.14),
    (Feature::Viewport, 0.02),
    (Feature::HardwareConcurrency, 0.1),
    (Feature::DeviceMemory, 0.07),
    (Feature::TouchPoints, 0.05),
    (Feature::WebglVendor, 0.07),
    (Feature::WebglRenderer, 0.13),
];

/// Per-feature comparison; `None` means the feature was missing on one side and left out.
///
/// Serializes to the reference's feature map (`samePlatform`, `screenSimilarity`, …).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct Features {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_platform: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_browser: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_timezone: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_languages: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screen_similarity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub viewport_similarity: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_hardware_concurrency: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_device_memory: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_touch_capabilities: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_webgl_vendor: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_webgl_renderer: Option<bool>,
    /// `Some(true)` when either observation reports webdriver; carries no weight. (The reference
    /// implementation, TypeScript and Elixir alike, flags either side, and files it produces depend on it.)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webdriver_detected: Option<bool>,
}

impl Features {
    /// The feature's value as a number in [0, 1], or `None` when it was left out.
    pub fn value(&self, feature: Feature) -> Option<f64> {
        let b = |v: Option<bool>| v.map(|v| if v { 1.0 } else { 0.0 });
        match feature {
            Feature::Platform => b(self.same_platform),
            Feature::Browser => b(self.same_browser),
            Feature::Timezone => b(self.same_timezone),
            Feature::Languages => b(self.same_languages),
            Feature::Screen => self.screen_similarity,
            Feature::Viewport => self.viewport_similarity,
            Feature::HardwareConcurrency => b(self.same_hardware_concurrency),
            Feature::DeviceMemory => b(self.same_device_memory),
            Feature::TouchPoints => b(self.same_touch_capabilities),
            Feature::WebglVendor => b(self.same_webgl_vendor),
            Feature::WebglRenderer => b(self.same_webgl_renderer),
        }
    }
}

/// The outcome of comparing a stored snapshot with the current observation.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Similarity score in [0, 1].
    pub score: f64,
    /// Evidence cap: `min(1, available / 0.55)`, and at most 0.5 when contradicted.
    pub cap: f64,
    /// Whether the two cannot be the same device.
    pub contradiction: bool,
    /// The per-feature map.
    pub features: Features,
}

fn equal<T: PartialEq + ?Sized>(a: Option<&T>, b: Option<&T>) -> Option<bool> {
    Some(a? == b?)
}

/// Whether the lists joined with "," are equal (so `["en,pt"]` equals `["en", "pt"]`), without joining them.
fn joined_eq(a: &[String], b: &[String]) -> bool {
    fn bytes(list: &[String]) -> impl Iterator<Item = u8> + '_ {
        list.iter()
            .enumerate()
            .flat_map(|(i, s)| (i > 0).then_some(b',').into_iter().chain(s.bytes()))
    }
    bytes(a).eq(bytes(b))
}

fn ratio(a: f64, b: f64) -> f64 {
    if a == b {
        1.0
    } else {
        a.min(b) / a.max(b)
    }
}

/// Mean of the ratios of the short sides and of the long sides; `None` unless both sides are complete.
pub fn size_similarity(a: Option<(f64, f64)>, b: Option<(f64, f64)>) -> Option<f64> {
    let ((aw, ah), (bw, bh)) = (a?, b?);
    Some((ratio(aw.min(ah), bw.min(bh)) + ratio(aw.max(ah), bw.max(bh))) / 2.0)
}

fn dims_screen(o: &Observation) -> Option<(f64, f64)> {
    let s = o.screen.as_ref()?;
    Some((s.width?, s.height?))
}

fn dims(size: Option<&Size>) -> Option<(f64, f64)> {
    let s = size?;
    Some((s.width?, s.height?))
}

/// Compares every feature of a stored snapshot (`previous`) with the `current` observation.
pub fn features(previous: &Observation, current: &Observation) -> Features {
    let hw = |o: &Observation| o.hardware.clone().unwrap_or_default();
    let (pa, ca) = (hw(previous), hw(current));
    Features {
        same_platform: equal(previous.platform.as_deref(), current.platform.as_deref()),
        same_browser: equal(previous.browser.as_deref(), current.browser.as_deref()),
        same_timezone: equal(previous.timezone.as_deref(), current.timezone.as_deref()),
        same_languages: match (&previous.languages, &current.languages) {
            (Some(a), Some(b)) => Some(joined_eq(a, b)),
            _ => None,
        },
        screen_similarity: size_similarity(dims_screen(previous), dims_screen(current)),
        viewport_similarity: size_similarity(
            dims(previous.viewport.as_ref()),
            dims(current.viewport.as_ref()),
        ),
        same_hardware_concurrency: equal(
            pa.hardware_concurrency.as_ref(),
            ca.hardware_concurrency.as_ref(),
        ),
        same_device_memory: equal(pa.device_memory.as_ref(), ca.device_memory.as_ref()),
        same_touch_capabilities: equal(pa.max_touch_points.as_ref(), ca.max_touch_points.as_ref()),
        same_webgl_vendor: equal(previous.webgl_vendor(), current.webgl_vendor()),
        same_webgl_renderer: equal(previous.webgl_renderer(), current.webgl_renderer()),
        webdriver_detected: (previous.webdriver() || current.webdriver()).then_some(true),
    }
}

fn score_of(features: &Features) -> (f64, f64) {
    let (mut available, mut matched) = (0.0, 0.0);
    for (feature, weight) in WEIGHTS {
        if let Some(value) = features.value(feature) {
            available += weight;
            matched += value * weight;
        }
    }
    let score = 1f64
        .min(available / MIN_EVIDENCE_WEIGHT)
        .min(matched / available.max(MIN_EVIDENCE_WEIGHT));
    (score, available)
}

fn contradicted(previous: &Observation, current: &Observation, screen: Option<f64>) -> bool {
    if let (Some(a), Some(b)) = (&previous.platform, &current.platform) {
        if a != b {
            return true;
        }
    }
    // A graphics change alone can be a driver update; only a large screen change plus another class change
    // rules the pair out.
    let touch = equal(
        previous.max_touch_points().as_ref(),
        current.max_touch_points().as_ref(),
    );
    let vendor = equal(previous.webgl_vendor(), current.webgl_vendor());
    screen.is_some_and(|s| s < CONTRADICTION_SCREEN)
        && (touch == Some(false) || vendor == Some(false))
}

/// Full comparison: score, cap, contradiction and feature map in one pass.
pub fn compare(previous: &Observation, current: &Observation) -> Comparison {
    let features = features(previous, current);
    let (score, available) = score_of(&features);
    let contradiction = contradicted(previous, current, features.screen_similarity);
    let cap = 1f64
        .min(available / MIN_EVIDENCE_WEIGHT)
        .min(if contradiction {
            CONTRADICTION_CAP
        } else {
            1.0
        });
    Comparison {
        score,
        cap,
        contradiction,
        features,
    }
}

/// The part of `observation` that [`compare`] reads, and nothing else: platform, browser, timezone, languages,
/// screen and viewport sizes, the three hardware numbers, the WebGL strings and the webdriver flag. Without
/// the user agent, colour depth, pixel ratio and behaviour, which no score or contradiction depends on.
///
/// `compare(&compared_part(a), b)` equals `compare(a, b)` for every pair, so a store may hand the candidate
/// lookup only this part of its rows (the PostgreSQL store does, to ship fewer bytes).
pub fn compared_part(observation: &Observation) -> Observation {
    let screen = observation.screen.as_ref().map(|s| Screen {
        width: s.width,
        height: s.height,
        ..Screen::default()
    });
    Observation {
        platform: observation.platform.clone(),
        browser: observation.browser.clone(),
        languages: observation.languages.clone(),
        timezone: observation.timezone.clone(),
        screen,
        viewport: observation.viewport.clone(),
        hardware: observation.hardware.clone(),
        automation: observation.automation.clone(),
        graphics: observation.graphics.clone(),
        ..Observation::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identification::observation::{Graphics, Hardware};

    fn obs(platform: &str, screen: (f64, f64), touch: f64, vendor: &str) -> Observation {
        Observation {
            platform: Some(platform.into()),
            screen: Some(Screen {
                width: Some(screen.0),
                height: Some(screen.1),
                ..Screen::default()
            }),
            hardware: Some(Hardware {
                max_touch_points: Some(touch),
                ..Hardware::default()
            }),
            graphics: Some(Graphics {
                webgl_vendor: Some(vendor.into()),
                webgl_renderer: None,
            }),
            ..Observation::default()
        }
    }

    #[test]
    fn weights_sum_to_one() {
        let total: f64 = WEIGHTS.iter().map(|(_, w)| w).sum();
        assert!((total - 1.0).abs() < 1e-12);
    }

    #[test]
    fn contradiction_needs_large_screen_change_and_another_class_change() {
        let a = obs("linux", (1000.0, 1000.0), 0.0, "x");
        // Screen similarity exactly 0.55 is not a contradiction, even with a different vendor.
        let at = obs("linux", (550.0, 550.0), 0.0, "y");
        assert_eq!(
            size_similarity(Some((1000.0, 1000.0)), Some((550.0, 550.0))),
            Some(0.55)
        );
        assert!(!compare(&a, &at).contradiction);
        let below = obs("linux", (549.0, 549.0), 0.0, "y");
        assert!(compare(&a, &below).contradiction);
        // Below 0.55 with the same touch and vendor: no contradiction.
        assert!(!compare(&a, &obs("linux", (549.0, 549.0), 0.0, "x")).contradiction);
        // A different touch capability with the small screen does contradict.
        assert!(compare(&a, &obs("linux", (549.0, 549.0), 5.0, "x")).contradiction);
        // Different platforms always contradict.
        assert!(compare(&a, &obs("windows", (1000.0, 1000.0), 0.0, "x")).contradiction);
        assert_eq!(compare(&a, &below).cap, CONTRADICTION_CAP);
    }

    #[test]
    fn webdriver_flag_from_either_side_without_weight() {
        let bot = Observation {
            automation: Some(crate::identification::observation::Automation {
                webdriver: Some(true),
            }),
            ..Observation::default()
        };
        let human = Observation {
            automation: Some(crate::identification::observation::Automation {
                webdriver: Some(false),
            }),
            ..Observation::default()
        };
        assert_eq!(features(&human, &bot).webdriver_detected, Some(true));
        assert_eq!(features(&bot, &human).webdriver_detected, Some(true));
        assert_eq!(features(&human, &human).webdriver_detected, None);
        assert_eq!(compare(&human, &bot).score, compare(&human, &human).score);
    }

    #[test]
    fn languages_compare_as_joined_lists() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(joined_eq(&l(&["en,pt,pt-br"]), &l(&["en", "pt", "pt-br"])));
        assert!(!joined_eq(&l(&["en", "pt"]), &l(&["en", "pt", ""])));
        assert!(joined_eq(&l(&["en", ""]), &l(&["en,"])));
        assert!(!joined_eq(&l(&["en"]), &l(&["e", "n"])));
    }

    #[test]
    fn empty_pair_scores_zero() {
        let c = compare(&Observation::default(), &Observation::default());
        assert_eq!((c.score, c.cap, c.contradiction), (0.0, 0.0, false));
        assert_eq!(serde_json::to_string(&c.features).unwrap(), "{}");
    }

    #[test]
    fn compared_part_compares_as_the_whole() {
        let mut whole = obs("linux", (1000.0, 1000.0), 0.0, "x");
        whole.user_agent = Some("UA".into());
        whole.screen.as_mut().unwrap().pixel_ratio = Some(2.0);
        whole.languages = Some(vec!["en".into(), "he".into()]);
        let part = compared_part(&whole);
        assert_eq!(part.user_agent, None);
        assert_eq!(part.screen.as_ref().unwrap().pixel_ratio, None);
        for other in [
            whole.clone(),
            obs("linux", (549.0, 549.0), 5.0, "y"),
            obs("windows", (1000.0, 1000.0), 0.0, "x"),
            Observation::default(),
        ] {
            assert_eq!(compare(&part, &other), compare(&whole, &other));
            assert_eq!(compare(&other, &part), compare(&other, &whole));
        }
    }
}
