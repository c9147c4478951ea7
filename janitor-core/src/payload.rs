//! The browser payload `{signals, behavior?, debug?}` and its strict validation.
//!
//! The rules are those of the published `payload.schema.json`: an unknown key at any level is refused, every
//! string length and number range is enforced, `null` is never accepted in place of a value. Lengths are counted
//! in UTF-16 code units, as the reference implementation counts them, so that a payload refused by one instance
//! sharing the database is refused by all. A number is an integer when it has no fractional part (`1.0` is the
//! integer 1, as it is for JavaScript).
//!
//! Parsing goes through [`serde_json::Value`] and a hand-written walk rather than derived deserializers, so that
//! every error names the offending field path and the bound it broke.

use serde::Serialize;
use serde_json::{Map, Value};

/// Largest `userAgent` and WebGL string, in UTF-16 code units.
pub const MAX_LONG_TEXT: usize = 512;
/// Largest `platform` and `timezone` string, in UTF-16 code units.
pub const MAX_SHORT_TEXT: usize = 128;
/// Most entries in `languages`.
pub const MAX_LANGUAGES: usize = 20;
/// Longest single language tag, in UTF-16 code units.
pub const MAX_LANGUAGE_LEN: usize = 64;
/// Largest screen or viewport side.
pub const MAX_DIMENSION: f64 = 32768.0;
/// Largest `screen.colorDepth`.
pub const MAX_COLOR_DEPTH: f64 = 64.0;
/// Largest `screen.pixelRatio`.
pub const MAX_PIXEL_RATIO: f64 = 16.0;
/// Largest `hardware.hardwareConcurrency`.
pub const MAX_HARDWARE_CONCURRENCY: f64 = 1024.0;
/// Largest `hardware.deviceMemory`.
pub const MAX_DEVICE_MEMORY: f64 = 1024.0;
/// Largest `hardware.maxTouchPoints`.
pub const MAX_TOUCH_POINTS: f64 = 256.0;

/// Why a payload was refused: the field path (`signals.screen.width`) and what was wrong with it.
///
/// The HTTP edge answers every such error with the same 400 "Invalid visitor payload"; this detail is for logs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid visitor payload at `{path}`: {problem}")]
pub struct PayloadError {
    /// Dotted path of the offending field (`$` for the document itself).
    pub path: String,
    /// What rule it broke, with the bound.
    pub problem: String,
}

/// The whole request body of `POST /api/visitor`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VisitorPayload {
    /// Device and browser measurements.
    pub signals: Signals,
    /// Aggregate interaction counts, if the client sent them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behavior: Option<Behavior>,
    /// The client asks for debug detail (only honoured when the server enables it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub debug: Option<bool>,
}

/// Raw browser measurements, before normalization. Numbers are kept as JavaScript numbers (`f64`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)] // the fields are the payload's own, documented in payload.schema.json
pub struct Signals {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub languages: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub screen: Option<RawScreen>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub viewport: Option<RawSize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hardware: Option<RawHardware>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub automation: Option<RawAutomation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graphics: Option<RawGraphics>,
}

/// `signals.screen` as sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct RawScreen {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub color_depth: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pixel_ratio: Option<f64>,
}

/// `signals.viewport` as sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct RawSize {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub width: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub height: Option<f64>,
}

/// `signals.hardware` as sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct RawHardware {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hardware_concurrency: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_memory: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_touch_points: Option<f64>,
}

/// `signals.automation` as sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[allow(missing_docs)]
pub struct RawAutomation {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webdriver: Option<bool>,
}

/// `signals.graphics` as sent (the masked WebGL strings).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct RawGraphics {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webgl_vendor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webgl_renderer: Option<String>,
}

macro_rules! behavior {
    ($( $(#[$doc:meta])* $field:ident : $name:literal, max $max:literal, $req:ident; )*) => {
        /// Aggregate interaction counts. No positions, keys or form values: counts and durations only.
        ///
        /// The six fields the schema requires are present after validation; the rest are optional.
        #[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct Behavior {
            $( $(#[$doc])* #[serde(default, skip_serializing_if = "Option::is_none")] pub $field: Option<u64>, )*
        }

        /// Every behaviour field: JSON name, largest value, and whether the schema requires it.
        pub const BEHAVIOR_FIELDS: &[(&str, u64, bool)] = &[ $( ($name, $max, behavior!(@req $req)), )* ];

        impl Behavior {
            fn parse(map: &Map<String, Value>, at: &Path<'_>) -> Result<Self, PayloadError> {
                let mut behavior = Behavior::default();
                for key in map.keys() {
                    if !BEHAVIOR_FIELDS.iter().any(|(name, _, _)| name == key) {
                        return Err(at.child(key).error("unknown field"));
                    }
                }
                $(
                    let path = at.child($name);
                    behavior.$field = match map.get($name) {
                        None if behavior!(@req $req) => return Err(path.error("required")),
                        None => None,
                        Some(value) => Some(integer(value, $max as f64, &path)? as u64),
                    };
                )*
                Ok(behavior)
            }
        }
    };
    (@req required) => { true };
    (@req optional) => { false };
}

behavior! {
    /// Milliseconds since the page loaded (0–604,800,000: seven days).
    page_age_ms: "pageAgeMs", max 604_800_000, required;
    /// Mouse moves seen.
    mouse_move_count: "mouseMoveCount", max 1_000_000, required;
    /// Pointer downs seen.
    pointer_down_count: "pointerDownCount", max 1_000_000, required;
    /// Key downs seen (never which keys).
    key_down_count: "keyDownCount", max 1_000_000, required;
    /// Scroll events seen.
    scroll_count: "scrollCount", max 1_000_000, required;
    /// Visibility changes seen.
    visibility_change_count: "visibilityChangeCount", max 1_000_000, required;
    /// Total mouse travel in CSS pixels.
    mouse_distance_px: "mouseDistancePx", max 1_000_000_000, optional;
    /// Milliseconds with mouse activity.
    mouse_active_ms: "mouseActiveMs", max 1_000_000_000, optional;
    /// Mouse samples taken.
    mouse_sample_count: "mouseSampleCount", max 1_000_000, optional;
    /// Mouse samples with a large jump.
    mouse_large_step_count: "mouseLargeStepCount", max 1_000_000, optional;
    /// Mouse intervals measured.
    mouse_interval_count: "mouseIntervalCount", max 1_000_000, optional;
    /// Mean mouse interval, milliseconds.
    mouse_interval_mean_ms: "mouseIntervalMeanMs", max 1000, optional;
    /// Standard deviation of the mouse interval, milliseconds.
    mouse_interval_std_dev_ms: "mouseIntervalStdDevMs", max 1000, optional;
    /// Interactions closer together than a short gap.
    interaction_short_gap_count: "interactionShortGapCount", max 1_000_000, optional;
    /// Interactions repeating the previous gap.
    interaction_repeat_gap_count: "interactionRepeatGapCount", max 1_000_000, optional;
    /// Interaction gaps that could be compared.
    interaction_comparable_gap_count: "interactionComparableGapCount", max 1_000_000, optional;
    /// Changes of mouse direction.
    mouse_direction_changes: "mouseDirectionChanges", max 1_000_000, optional;
    /// Mouse pauses.
    mouse_pause_count: "mousePauseCount", max 1_000_000, optional;
    /// Total scroll travel in CSS pixels.
    scroll_distance_px: "scrollDistancePx", max 1_000_000_000, optional;
    /// Changes of scroll direction.
    scroll_direction_changes: "scrollDirectionChanges", max 1_000_000, optional;
    /// Interaction intervals measured.
    interaction_interval_count: "interactionIntervalCount", max 1_000_000, optional;
    /// Mean interaction interval, milliseconds.
    interaction_interval_mean_ms: "interactionIntervalMeanMs", max 60_000, optional;
    /// Standard deviation of the interaction interval, milliseconds.
    interaction_interval_std_dev_ms: "interactionIntervalStdDevMs", max 60_000, optional;
}

impl VisitorPayload {
    /// Parses and validates a request body. Invalid UTF-8 and invalid JSON are errors at `$`.
    pub fn from_slice(body: &[u8]) -> Result<Self, PayloadError> {
        let text =
            std::str::from_utf8(body).map_err(|_| Path::ROOT.error("body is not valid UTF-8"))?;
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Path::ROOT.error(&format!("body is not valid JSON ({e})")))?;
        Self::from_value(&value)
    }

    /// Validates an already parsed JSON document.
    pub fn from_value(value: &Value) -> Result<Self, PayloadError> {
        let root = Path::ROOT;
        let map = object(value, &root)?;
        only_keys(map, &["signals", "behavior", "debug"], &root)?;
        let signals_path = root.child("signals");
        let signals = match map.get("signals") {
            Some(v) => Signals::parse(v, &signals_path, Strictness::Schema)?,
            None => return Err(signals_path.error("required")),
        };
        let behavior = match map.get("behavior") {
            Some(v) => {
                let path = root.child("behavior");
                Some(Behavior::parse(object(v, &path)?, &path)?)
            }
            None => None,
        };
        let debug = map
            .get("debug")
            .map(|v| boolean(v, &root.child("debug")))
            .transpose()?;
        Ok(VisitorPayload {
            signals,
            behavior,
            debug,
        })
    }
}

impl Signals {
    /// Reads a signals object the way the reference normalizer accepts it: known keys with the right JSON
    /// types, but no range, integer or length checks, and unknown keys ignored. For conformance vectors,
    /// which may hold values a browser payload never could (negative sizes, say); never for requests.
    /// A `null` counts as absent, as it does for the reference's optional chaining.
    pub fn from_value_lenient(value: &Value) -> Result<Self, PayloadError> {
        Signals::parse(&without_nulls(value), &Path::ROOT, Strictness::Lenient)
    }

    fn parse(value: &Value, at: &Path<'_>, mode: Strictness) -> Result<Self, PayloadError> {
        let map = object(value, at)?;
        if mode == Strictness::Schema {
            only_keys(
                map,
                &[
                    "userAgent",
                    "platform",
                    "languages",
                    "timezone",
                    "screen",
                    "viewport",
                    "hardware",
                    "automation",
                    "graphics",
                ],
                at,
            )?;
        }
        let text_field = |key: &str, max: usize| -> Result<Option<String>, PayloadError> {
            map.get(key)
                .map(|v| text(v, max, &at.child(key), mode))
                .transpose()
        };
        let languages = match map.get("languages") {
            None => None,
            Some(value) => {
                let path = at.child("languages");
                let Value::Array(items) = value else {
                    return Err(path.error("must be an array of strings"));
                };
                if mode == Strictness::Schema && items.len() > MAX_LANGUAGES {
                    return Err(path.error(&format!("must have at most {MAX_LANGUAGES} items")));
                }
                let tags = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| {
                        text(
                            item,
                            MAX_LANGUAGE_LEN,
                            &at.child_index("languages", i),
                            mode,
                        )
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Some(tags)
            }
        };
        let mut signals = Signals {
            user_agent: text_field("userAgent", MAX_LONG_TEXT)?,
            platform: text_field("platform", MAX_SHORT_TEXT)?,
            languages,
            timezone: text_field("timezone", MAX_SHORT_TEXT)?,
            ..Signals::default()
        };
        let section = |key: &'static str,
                       keys: &[&str]|
         -> Result<Option<(Fields<'_>, Path<'_>)>, PayloadError> {
            let Some(value) = map.get(key) else {
                return Ok(None);
            };
            let path = at.child(key);
            let inner = object(value, &path)?;
            if mode == Strictness::Schema {
                only_keys(inner, keys, &path)?;
            }
            Ok(Some((Fields { map: inner, mode }, path)))
        };
        if let Some((f, p)) = section("screen", &["width", "height", "colorDepth", "pixelRatio"])? {
            signals.screen = Some(RawScreen {
                width: f.int(&p, "width", MAX_DIMENSION)?,
                height: f.int(&p, "height", MAX_DIMENSION)?,
                color_depth: f.int(&p, "colorDepth", MAX_COLOR_DEPTH)?,
                pixel_ratio: f.num(&p, "pixelRatio", MAX_PIXEL_RATIO)?,
            });
        }
        if let Some((f, p)) = section("viewport", &["width", "height"])? {
            signals.viewport = Some(RawSize {
                width: f.int(&p, "width", MAX_DIMENSION)?,
                height: f.int(&p, "height", MAX_DIMENSION)?,
            });
        }
        if let Some((f, p)) = section(
            "hardware",
            &["hardwareConcurrency", "deviceMemory", "maxTouchPoints"],
        )? {
            signals.hardware = Some(RawHardware {
                hardware_concurrency: f.int(&p, "hardwareConcurrency", MAX_HARDWARE_CONCURRENCY)?,
                device_memory: f.num(&p, "deviceMemory", MAX_DEVICE_MEMORY)?,
                max_touch_points: f.int(&p, "maxTouchPoints", MAX_TOUCH_POINTS)?,
            });
        }
        if let Some((f, p)) = section("automation", &["webdriver"])? {
            let webdriver = f
                .map
                .get("webdriver")
                .map(|v| boolean(v, &p.child("webdriver")))
                .transpose()?;
            signals.automation = Some(RawAutomation { webdriver });
        }
        if let Some((f, p)) = section("graphics", &["webglVendor", "webglRenderer"])? {
            let string = |key: &str| {
                f.map
                    .get(key)
                    .map(|v| text(v, MAX_LONG_TEXT, &p.child(key), mode))
                    .transpose()
            };
            signals.graphics = Some(RawGraphics {
                webgl_vendor: string("webglVendor")?,
                webgl_renderer: string("webglRenderer")?,
            });
        }
        Ok(signals)
    }
}

fn without_nulls(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strictness {
    Schema,
    Lenient,
}

struct Fields<'a> {
    map: &'a Map<String, Value>,
    mode: Strictness,
}

impl Fields<'_> {
    fn int(&self, at: &Path<'_>, key: &str, max: f64) -> Result<Option<f64>, PayloadError> {
        self.number(at, key, max, true)
    }

    fn num(&self, at: &Path<'_>, key: &str, max: f64) -> Result<Option<f64>, PayloadError> {
        self.number(at, key, max, false)
    }

    fn number(
        &self,
        at: &Path<'_>,
        key: &str,
        max: f64,
        whole: bool,
    ) -> Result<Option<f64>, PayloadError> {
        let Some(value) = self.map.get(key) else {
            return Ok(None);
        };
        let path = at.child(key);
        match self.mode {
            Strictness::Schema if whole => integer(value, max, &path).map(Some),
            Strictness::Schema => bounded_number(value, max, &path).map(Some),
            Strictness::Lenient => value
                .as_f64()
                .map(Some)
                .ok_or_else(|| path.error("must be a number")),
        }
    }
}

/// A field path built lazily: only formatted when an error is reported.
struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    key: &'a str,
    index: Option<usize>,
}

impl<'a> Path<'a> {
    const ROOT: Path<'static> = Path {
        parent: None,
        key: "$",
        index: None,
    };

    fn child(&'a self, key: &'a str) -> Path<'a> {
        Path {
            parent: Some(self),
            key,
            index: None,
        }
    }

    fn child_index(&'a self, key: &'a str, index: usize) -> Path<'a> {
        Path {
            parent: Some(self),
            key,
            index: Some(index),
        }
    }

    fn render(&self) -> String {
        let mut parts = Vec::new();
        let mut node = Some(self);
        while let Some(p) = node {
            if p.parent.is_some() {
                parts.push(match p.index {
                    Some(i) => format!("{}[{i}]", p.key),
                    None => p.key.to_owned(),
                });
            }
            node = p.parent;
        }
        if parts.is_empty() {
            return "$".to_owned();
        }
        parts.reverse();
        parts.join(".")
    }

    fn error(&self, problem: &str) -> PayloadError {
        PayloadError {
            path: self.render(),
            problem: problem.to_owned(),
        }
    }
}

fn object<'v>(value: &'v Value, at: &Path<'_>) -> Result<&'v Map<String, Value>, PayloadError> {
    value
        .as_object()
        .ok_or_else(|| at.error("must be an object"))
}

fn only_keys(
    map: &Map<String, Value>,
    allowed: &[&str],
    at: &Path<'_>,
) -> Result<(), PayloadError> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(at.child(key).error("unknown field")),
        None => Ok(()),
    }
}

fn boolean(value: &Value, at: &Path<'_>) -> Result<bool, PayloadError> {
    value.as_bool().ok_or_else(|| at.error("must be a boolean"))
}

fn text(
    value: &Value,
    max: usize,
    at: &Path<'_>,
    mode: Strictness,
) -> Result<String, PayloadError> {
    let Value::String(s) = value else {
        return Err(at.error("must be a string"));
    };
    // Fast path: a UTF-8 string never has more UTF-16 units than bytes.
    if mode == Strictness::Schema && s.len() > max && s.encode_utf16().count() > max {
        return Err(at.error(&format!("must be at most {max} UTF-16 code units long")));
    }
    Ok(s.clone())
}

fn bounded_number(value: &Value, max: f64, at: &Path<'_>) -> Result<f64, PayloadError> {
    let n = value
        .as_f64()
        .filter(|n| n.is_finite())
        .ok_or_else(|| at.error("must be a finite number"))?;
    if !(0.0..=max).contains(&n) {
        return Err(at.error(&format!("must be from 0 to {max}")));
    }
    Ok(n)
}

fn integer(value: &Value, max: f64, at: &Path<'_>) -> Result<f64, PayloadError> {
    let n = value
        .as_f64()
        .filter(|n| n.is_finite())
        .ok_or_else(|| at.error("must be an integer"))?;
    if n.fract() != 0.0 {
        return Err(at.error("must be an integer"));
    }
    if !(0.0..=max).contains(&n) {
        return Err(at.error(&format!("must be an integer from 0 to {max}")));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<VisitorPayload, PayloadError> {
        VisitorPayload::from_value(&v)
    }

    #[test]
    fn error_names_path_and_bound() {
        let err = parse(json!({"signals": {"screen": {"width": 32769}}})).unwrap_err();
        assert_eq!(err.path, "signals.screen.width");
        assert!(err.problem.contains("32768"), "{err}");
        let err = parse(json!({"signals": {"languages": ["en", 5]}})).unwrap_err();
        assert_eq!(err.path, "signals.languages[1]");
        let err = parse(json!({"signals": {}, "behavior": {"pageAgeMs": 1}})).unwrap_err();
        assert_eq!(err.path, "behavior.mouseMoveCount");
        assert_eq!(err.problem, "required");
    }

    #[test]
    fn unknown_keys_refused_at_every_level() {
        for (doc, path) in [
            (json!({"signals": {}, "extra": 1}), "extra"),
            (json!({"signals": {"ip": "1.2.3.4"}}), "signals.ip"),
            (
                json!({"signals": {"screen": {"depth": 1}}}),
                "signals.screen.depth",
            ),
            (
                json!({"signals": {"viewport": {"colorDepth": 1}}}),
                "signals.viewport.colorDepth",
            ),
            (
                json!({"signals": {"hardware": {"cpu": 1}}}),
                "signals.hardware.cpu",
            ),
            (
                json!({"signals": {"automation": {"headless": true}}}),
                "signals.automation.headless",
            ),
            (
                json!({"signals": {"graphics": {"gpu": "x"}}}),
                "signals.graphics.gpu",
            ),
        ] {
            assert_eq!(parse(doc).unwrap_err().path, path);
        }
    }

    #[test]
    fn wrong_types_and_nulls_refused() {
        assert!(parse(json!({"signals": {"platform": null}})).is_err());
        assert!(parse(json!({"signals": {"screen": {"width": "1"}}})).is_err());
        assert!(parse(json!({"signals": {"screen": {"width": 1.5}}})).is_err());
        assert!(parse(json!({"signals": {"automation": {"webdriver": 1}}})).is_err());
        assert!(parse(json!({"signals": [], "debug": true})).is_err());
        assert!(parse(json!({"signals": {}, "debug": "yes"})).is_err());
        assert!(parse(json!([])).is_err());
        assert!(parse(json!({})).is_err());
    }

    #[test]
    fn integral_floats_are_integers() {
        let p = parse(json!({"signals": {"screen": {"width": 1440.0}}})).unwrap();
        assert_eq!(p.signals.screen.unwrap().width, Some(1440.0));
    }

    #[test]
    fn lengths_count_utf16_units() {
        // 256 emoji are 512 UTF-16 units (1024 bytes): at the limit.
        let at_limit = "😀".repeat(256);
        assert!(parse(json!({"signals": {"userAgent": at_limit}})).is_ok());
        let past = format!("{at_limit}a");
        assert!(parse(json!({"signals": {"userAgent": past}})).is_err());
        // 512 two-byte characters are 512 units although 1024 bytes.
        assert!(parse(json!({"signals": {"userAgent": "é".repeat(512)}})).is_ok());
    }

    #[test]
    fn bytes_must_be_utf8_json() {
        assert_eq!(VisitorPayload::from_slice(b"\xff").unwrap_err().path, "$");
        assert_eq!(VisitorPayload::from_slice(b"{").unwrap_err().path, "$");
        assert!(VisitorPayload::from_slice(br#"{"signals":{}}"#).is_ok());
    }

    #[test]
    fn lenient_reads_out_of_range_values() {
        let s =
            Signals::from_value_lenient(&json!({"screen": {"width": -5, "height": 1e6}, "x": 1}))
                .unwrap();
        assert_eq!(s.screen.unwrap().width, Some(-5.0));
        assert!(Signals::from_value_lenient(&json!({"platform": 3})).is_err());
        let nulls =
            Signals::from_value_lenient(&json!({"platform": null, "screen": {"width": null}}))
                .unwrap();
        assert_eq!(nulls.platform, None);
        assert_eq!(nulls.screen.unwrap().width, None);
    }
}
