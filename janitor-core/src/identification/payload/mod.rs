//! The browser payload `{signals, behavior?, debug?}` and its strict validation.
//!
//! The rules are those of the published `payload.schema.json`: an unknown key at any level is refused, every
//! string length and number range is enforced, `null` is never accepted in place of a value. Lengths are counted
//! in UTF-16 code units, as the reference implementation counts them, so that a payload refused by one instance
//! sharing the database is refused by all. A number is an integer when it has no fractional part (`1.0` is the
//! integer 1, as it is for JavaScript).
//!
//! One rule goes past the schema: no string may hold U+0000. PostgreSQL can store it neither in `text` nor in
//! `jsonb`, so such a payload could only ever be saved by the memory store; every store refuses it as an
//! invalid payload instead (400), rather than one store answering 200 and the other 503. Numbers are read to
//! the nearest double however many digits they have (serde_json's `float_roundtrip`), as a browser reads them.
//!
//! Parsing goes through [`serde_json::Value`] and a hand-written walk rather than derived deserializers, so that
//! every error names the offending field path and the bound it broke.

use serde::Serialize;
use serde_json::Value;

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

mod behavior;
mod extended;
mod walk;

pub use behavior::{Behavior, BEHAVIOR_FIELDS};
pub use extended::{
    BrandVersion, ExtendedSignals, COLOR_SCHEMES, CONTRASTS, EXTENDED_SIGNALS_HEADER, HOUR_CYCLES,
    MAX_BRANDS, MAX_BRAND_LEN, MAX_EXTENDED_HEADER, MAX_INTL_LEN, MAX_VERSION_LEN,
};
use walk::{boolean, object, only_keys, text, without_nulls, Fields, Path, Strictness};

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

/// Reads a payload inside a larger document (a login form's `visitor` field, say) with the same strict
/// validation as [`VisitorPayload::from_value`]; the error names the payload's own path.
impl<'de> serde::Deserialize<'de> for VisitorPayload {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        VisitorPayload::from_value(&value).map_err(serde::de::Error::custom)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<VisitorPayload, PayloadError> {
        VisitorPayload::from_value(&v)
    }

    #[test]
    fn a_payload_inside_a_form_is_validated_as_strictly() {
        #[derive(serde::Deserialize)]
        struct Login {
            email: String,
            visitor: VisitorPayload,
        }
        let form: Login = serde_json::from_value(json!({
            "email": "a@example.com",
            "visitor": {"signals": {"timezone": "Europe/Paris"}}
        }))
        .unwrap();
        assert_eq!(form.email, "a@example.com");
        assert_eq!(
            form.visitor.signals.timezone.as_deref(),
            Some("Europe/Paris")
        );
        let refused = serde_json::from_value::<Login>(json!({
            "email": "a@example.com",
            "visitor": {"signals": {"screen": {"width": 32769}}}
        }))
        .err()
        .unwrap();
        assert!(
            refused.to_string().contains("signals.screen.width"),
            "{refused}"
        );
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
        // A language of 32 emoji is 64 units, at the limit; 33 are 33 code points, which the published JSON
        // Schema's maxLength of 64 accepts, but 66 units, which the reference (and so this) refuses.
        assert!(parse(json!({"signals": {"languages": ["😀".repeat(32)]}})).is_ok());
        let refused = parse(json!({"signals": {"languages": ["😀".repeat(33)]}})).unwrap_err();
        assert_eq!(refused.path, "signals.languages[0]");
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
