//! Normalized observations: what is compared, stored and sent to an evaluator.
//!
//! The JSON form (camelCase keys, absent values omitted, whole numbers written without a fraction) is the
//! `signals_json` column shared with Janitor instances in other languages, so field order and number format
//! follow JavaScript's `JSON.stringify` of the reference's normalized object.

use serde::{Deserialize, Serialize, Serializer};

use crate::identification::network::NetworkDigest;
use crate::identification::payload::{Behavior, ExtendedSignals, Signals};
use crate::js::{is_js_whitespace, js_f64};

/// One normalized browser observation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    /// The user agent, trimmed; kept for the record, never compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// Platform family: `ios`, `android`, `windows`, `macos`, `linux` or the lower-cased platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// Browser family from the user agent: `edge`, `opera`, `firefox`, `chrome` or `safari`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser: Option<String>,
    /// Lower-cased, de-duplicated, sorted language tags; absent when none remain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub languages: Option<Vec<String>>,
    /// IANA timezone as spelled by the browser, trimmed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// Screen with the shorter side as `width`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screen: Option<Screen>,
    /// Viewport as measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewport: Option<Size>,
    /// CPU, memory and touch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<Hardware>,
    /// Automation flags, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automation: Option<Automation>,
    /// Lower-cased WebGL vendor and renderer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graphics: Option<Graphics>,
    /// Aggregate behaviour counts, passed through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behavior: Option<Behavior>,
    /// The keyed digest of the network the visit came from, when the application enables it
    /// ([`network`](crate::identification::network)). Not part of the JSON form: it is no browser signal, and
    /// the shared `signals_json` column stays as the reference writes it.
    #[serde(skip)]
    pub network: Option<NetworkDigest>,
    /// The extended client signals of the visit, when the application enables them
    /// ([`ExtendedSignals`]). Not part of the JSON form either, for the same reason.
    #[serde(skip)]
    pub extended: Option<ExtendedSignals>,
}

/// Normalized screen.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct Screen {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "js_number"
    )]
    pub width: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "js_number"
    )]
    pub height: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "js_number"
    )]
    pub color_depth: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "js_number"
    )]
    pub pixel_ratio: Option<f64>,
}

/// Normalized viewport (or any width × height).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct Size {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "js_number"
    )]
    pub width: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "js_number"
    )]
    pub height: Option<f64>,
}

/// Normalized hardware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct Hardware {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "js_number"
    )]
    pub hardware_concurrency: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "js_number"
    )]
    pub device_memory: Option<f64>,
    /// Kept even when 0: "no touch" is a real signal.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "js_number"
    )]
    pub max_touch_points: Option<f64>,
}

/// Automation flags.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Automation {
    /// `navigator.webdriver`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webdriver: Option<bool>,
}

/// WebGL strings.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct Graphics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webgl_vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webgl_renderer: Option<String>,
}

/// Writes a number as JavaScript would: whole numbers without a fraction (`2`, not `2.0`), so that
/// `signals_json #>> '{screen,width}'` reads `900` whichever language wrote the row.
fn js_number<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(n) => js_f64(n, serializer),
        None => serializer.serialize_none(),
    }
}

impl Observation {
    /// Normalizes raw signals (and optional behaviour). Never mutates its input.
    pub fn normalize(signals: &Signals, behavior: Option<&Behavior>) -> Observation {
        let mut screen = signals.screen.as_ref().map(|s| Screen {
            width: positive(s.width),
            height: positive(s.height),
            color_depth: positive(s.color_depth),
            pixel_ratio: positive(s.pixel_ratio),
        });
        if let Some(Screen {
            width: Some(w),
            height: Some(h),
            ..
        }) = screen.as_mut()
        {
            if *w > *h {
                std::mem::swap(w, h);
            }
        }
        Observation {
            user_agent: text(signals.user_agent.as_deref()).map(str::to_owned),
            platform: platform_family(signals.platform.as_deref(), signals.user_agent.as_deref()),
            browser: browser_family(signals.user_agent.as_deref()).map(str::to_owned),
            languages: signals.languages.as_deref().and_then(languages),
            timezone: text(signals.timezone.as_deref()).map(str::to_owned),
            screen,
            viewport: signals.viewport.as_ref().map(|v| Size {
                width: positive(v.width),
                height: positive(v.height),
            }),
            hardware: signals.hardware.as_ref().map(|h| Hardware {
                hardware_concurrency: positive(h.hardware_concurrency),
                device_memory: positive(h.device_memory),
                max_touch_points: h.max_touch_points,
            }),
            automation: signals.automation.as_ref().map(|a| Automation {
                webdriver: a.webdriver,
            }),
            graphics: signals.graphics.as_ref().map(|g| Graphics {
                webgl_vendor: lower(g.webgl_vendor.as_deref()),
                webgl_renderer: lower(g.webgl_renderer.as_deref()),
            }),
            behavior: behavior.cloned(),
            network: None,
            extended: None,
        }
    }

    /// Whether `other` describes the same device in the same state: every field equal but the behaviour
    /// summary, which a browser's page age and event counts change on almost every visit. The network and the
    /// extended signals count, so that a visit from another network or with a newer version is kept in the
    /// history the precise policy reads.
    pub fn same_signals(&self, other: &Observation) -> bool {
        // Destructured, so a field added later must be placed on one side or the other.
        let Observation {
            user_agent,
            platform,
            browser,
            languages,
            timezone,
            screen,
            viewport,
            hardware,
            automation,
            graphics,
            behavior: _,
            network,
            extended,
        } = self;
        *user_agent == other.user_agent
            && *platform == other.platform
            && *browser == other.browser
            && *languages == other.languages
            && *timezone == other.timezone
            && *screen == other.screen
            && *viewport == other.viewport
            && *hardware == other.hardware
            && *automation == other.automation
            && *graphics == other.graphics
            && *network == other.network
            && *extended == other.extended
    }

    /// The `webglRenderer`, if any.
    pub fn webgl_renderer(&self) -> Option<&str> {
        self.graphics.as_ref()?.webgl_renderer.as_deref()
    }

    /// The `webglVendor`, if any.
    pub fn webgl_vendor(&self) -> Option<&str> {
        self.graphics.as_ref()?.webgl_vendor.as_deref()
    }

    /// `hardware.maxTouchPoints`, if any.
    pub fn max_touch_points(&self) -> Option<f64> {
        self.hardware.as_ref()?.max_touch_points
    }

    /// `hardware.hardwareConcurrency`, if any.
    pub fn hardware_concurrency(&self) -> Option<f64> {
        self.hardware.as_ref()?.hardware_concurrency
    }

    /// `true` only when `automation.webdriver` is `true`.
    pub fn webdriver(&self) -> bool {
        self.automation.as_ref().and_then(|a| a.webdriver) == Some(true)
    }
}

fn positive(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite() && *v > 0.0)
}

/// Trimmed text; empty becomes absent.
fn text(value: Option<&str>) -> Option<&str> {
    value
        .map(|v| v.trim_matches(is_js_whitespace))
        .filter(|v| !v.is_empty())
}

fn lower(value: Option<&str>) -> Option<String> {
    text(value).map(str::to_lowercase)
}

// The reference's case-insensitive regular expressions (without the `u` flag) never fold non-ASCII letters onto
// ASCII ones, so ASCII-only lower-casing and plain substring search give the same answers.

fn browser_family(user_agent: Option<&str>) -> Option<&'static str> {
    let ua = user_agent.filter(|ua| !ua.is_empty())?.to_ascii_lowercase();
    let any = |needles: &[&str]| needles.iter().any(|n| ua.contains(n));
    if any(&["edg/", "edge/", "edga/", "edgios/"]) {
        Some("edge")
    } else if any(&["opr/", "opera"]) {
        Some("opera")
    } else if any(&["firefox/", "fxios/"]) {
        Some("firefox")
    } else if any(&["chrome/", "crios/"]) {
        Some("chrome")
    } else if any(&["safari/"]) {
        Some("safari")
    } else {
        None
    }
}

fn platform_family(platform: Option<&str>, user_agent: Option<&str>) -> Option<String> {
    let ua = user_agent.unwrap_or("").to_ascii_lowercase();
    let raw = platform.unwrap_or("").to_ascii_lowercase();
    let either = |needle: &str| ua.contains(needle) || raw.contains(needle);
    if either("iphone") || either("ipad") || either("ipod") || raw == "ios" {
        return Some("ios".to_owned());
    }
    if either("android") {
        return Some("android".to_owned());
    }
    let p = lower(platform)?;
    Some(if p.starts_with("win") {
        "windows".to_owned()
    } else if p.starts_with("mac") {
        "macos".to_owned()
    } else if p.contains("linux") {
        "linux".to_owned()
    } else {
        p
    })
}

fn languages(raw: &[String]) -> Option<Vec<String>> {
    let mut tags: Vec<String> = Vec::with_capacity(raw.len());
    for tag in raw.iter().filter_map(|t| lower(Some(t))) {
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    // JavaScript's default sort compares UTF-16 code units, which differs from byte order above U+FFFF.
    tags.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
    (!tags.is_empty()).then_some(tags)
}

/// A fully described observation for unit tests: every probe family applies to it.
#[cfg(test)]
pub(crate) fn test_observation(platform: &str, timezone: &str) -> Observation {
    Observation {
        platform: Some(platform.into()),
        browser: Some("chrome".into()),
        timezone: Some(timezone.into()),
        screen: Some(Screen {
            width: Some(900.0),
            height: Some(1440.0),
            ..Screen::default()
        }),
        hardware: Some(Hardware {
            hardware_concurrency: Some(8.0),
            ..Hardware::default()
        }),
        graphics: Some(Graphics {
            webgl_vendor: Some("v".into()),
            webgl_renderer: Some("r".into()),
        }),
        ..Observation::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identification::payload::{RawHardware, RawScreen};

    fn signals(ua: &str, platform: &str) -> Signals {
        Signals {
            user_agent: Some(ua.into()),
            platform: Some(platform.into()),
            ..Signals::default()
        }
    }

    #[test]
    fn js_trim_differs_from_rust_trim() {
        assert_eq!(text(Some("\u{FEFF} x \u{00A0}")), Some("x"));
        assert_eq!(text(Some("\u{0085}x")), Some("\u{0085}x"));
        assert_eq!(text(Some("\u{200B}x")), Some("\u{200B}x"));
        assert_eq!(text(Some(" \t\n")), None);
    }

    #[test]
    fn browser_families() {
        for (ua, family) in [
            ("Mozilla/5.0 Chrome/130 Safari/537 Edg/130", Some("edge")),
            ("Mozilla/5.0 EdgiOS/100 Safari/604", Some("edge")),
            ("Opera/9.80 (Windows NT 6.1) Presto/2.12", Some("opera")),
            ("Mozilla/5.0 Chrome/130 Safari/537 OPR/100", Some("opera")),
            ("Mozilla/5.0 Firefox/130", Some("firefox")),
            ("Mozilla/5.0 FxiOS/130 Safari/605", Some("firefox")),
            ("Mozilla/5.0 HeadlessChrome/130 Safari/537", Some("chrome")),
            ("Mozilla/5.0 CriOS/130 Safari/604", Some("chrome")),
            ("Mozilla/5.0 Version/18 Safari/604.1", Some("safari")),
            ("curl/8", None),
            ("", None),
        ] {
            assert_eq!(browser_family(Some(ua)), family, "{ua}");
        }
    }

    #[test]
    fn platform_families() {
        let p = |ua: &str, platform: &str| {
            Observation::normalize(&signals(ua, platform), None).platform
        };
        assert_eq!(p("x", "MacIntel").as_deref(), Some("macos"));
        assert_eq!(p("Windows NT 10.0", "MacIntel").as_deref(), Some("macos"));
        assert_eq!(p("iPad; CPU OS 17", "MacIntel").as_deref(), Some("ios"));
        assert_eq!(p("x", "iOS").as_deref(), Some("ios"));
        // " ios" misses the exact-match rule but lower-cases to the same family name.
        assert_eq!(p("x", " ios").as_deref(), Some("ios"));
        assert_eq!(
            p("Linux; Android 14", "Linux armv8l").as_deref(),
            Some("android")
        );
        assert_eq!(p("x", "Linux x86_64").as_deref(), Some("linux"));
        assert_eq!(p("x", " Win32 ").as_deref(), Some("windows"));
        assert_eq!(p("x", "FreeBSD amd64").as_deref(), Some("freebsd amd64"));
        assert_eq!(p("x", "   ").as_deref(), None);
    }

    #[test]
    fn sizes_languages_and_numbers() {
        let raw = Signals {
            languages: Some(vec![
                "he".into(),
                "EN-us".into(),
                "".into(),
                "he".into(),
                " ".into(),
            ]),
            screen: Some(RawScreen {
                width: Some(1440.0),
                height: Some(900.0),
                color_depth: Some(0.0),
                pixel_ratio: Some(f64::INFINITY),
            }),
            hardware: Some(RawHardware {
                hardware_concurrency: Some(-1.0),
                device_memory: None,
                max_touch_points: Some(0.0),
            }),
            ..Signals::default()
        };
        let before = raw.clone();
        let o = Observation::normalize(&raw, None);
        assert_eq!(raw, before);
        assert_eq!(o.languages, Some(vec!["en-us".to_owned(), "he".to_owned()]));
        let screen = o.screen.clone().unwrap();
        assert_eq!(
            (
                screen.width,
                screen.height,
                screen.color_depth,
                screen.pixel_ratio
            ),
            (Some(900.0), Some(1440.0), None, None)
        );
        assert_eq!(o.max_touch_points(), Some(0.0));
        assert_eq!(o.hardware_concurrency(), None);
        let json = serde_json::to_string(&o).unwrap();
        assert_eq!(
            json,
            r#"{"languages":["en-us","he"],"screen":{"width":900,"height":1440},"hardware":{"maxTouchPoints":0}}"#
        );
    }

    #[test]
    fn rows_written_by_other_instances_are_read() {
        // A JavaScript instance's signals_json: integers, a behaviour section, and keys this version ignores.
        let row = r#"{"userAgent":"UA","platform":"macos","browser":"chrome","languages":["en-us"],
            "screen":{"width":900,"height":1440,"pixelRatio":1.5},"hardware":{"maxTouchPoints":0},
            "automation":{"webdriver":false,"headless":true},"graphics":{"webglVendor":"webkit"},
            "behavior":{"pageAgeMs":10,"mouseMoveCount":1,"pointerDownCount":0,"keyDownCount":0,
            "scrollCount":0,"visibilityChangeCount":0},"fonts":{"version":"x"}}"#;
        let o: Observation = serde_json::from_str(row).unwrap();
        assert_eq!(o.screen.as_ref().unwrap().pixel_ratio, Some(1.5));
        assert_eq!(o.behavior.as_ref().unwrap().page_age_ms, Some(10));
        // Written back in the shared form: whole numbers stay integers, ignored keys are gone.
        let json = serde_json::to_string(&o).unwrap();
        assert!(
            json.contains(r#""screen":{"width":900,"height":1440,"pixelRatio":1.5}"#),
            "{json}"
        );
        assert!(!json.contains("headless") && !json.contains("fonts"));
        assert_eq!(serde_json::from_str::<Observation>(&json).unwrap(), o);
    }

    #[test]
    fn languages_sort_by_utf16_units() {
        // U+FF41 sorts after U+1F600 by code point, before it by UTF-16 unit (0xD83D < 0xFF41).
        let tags = languages(&["\u{FF41}".into(), "\u{1F600}".into()]).unwrap();
        assert_eq!(tags, vec!["\u{1F600}".to_owned(), "\u{FF41}".to_owned()]);
    }
}
