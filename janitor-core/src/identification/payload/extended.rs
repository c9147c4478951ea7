//! Extended client signals: what a browser gives without a prompt beyond the 0.7 payload, and what differs
//! between identical devices as a setting or an exact version rather than as hardware.
//!
//! They never travel in the payload, whose schema refuses unknown keys on every Janitor server: the browser
//! client sends them, only when the application enables them, as a separate request header
//! ([`EXTENDED_SIGNALS_HEADER`]) that reference servers never read. A server that does not use them ignores the
//! header; one that does validates it as strictly as the payload (unknown keys, types, lengths and ranges) and
//! refuses a bad one as an invalid payload.
//!
//! The wire form is one JSON object of four optional sections:
//!
//! ```json
//! {"screen": {"availWidth": 1920, "availHeight": 1032},
//!  "userAgentData": {"platformVersion": "15.0.0",
//!                    "fullVersionList": [{"brand": "Chromium", "version": "147.0.7727.137"}]},
//!  "intl": {"calendar": "gregory", "numberingSystem": "latn", "hourCycle": "h12"},
//!  "preferences": {"colorScheme": "dark", "reducedMotion": false, "contrast": "no-preference"}}
//! ```

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::walk::{boolean, object, only_keys, text, Fields, Path, Strictness};
use super::{PayloadError, MAX_DIMENSION};

/// The request header that carries the extended signals: the wire form's JSON, base64url-encoded without
/// padding (a header value must be visible ASCII, and a brand name need not be).
pub const EXTENDED_SIGNALS_HEADER: &str = "janitor-extended-signals";
/// Longest header value accepted, in bytes: four times what a real browser sends.
pub const MAX_EXTENDED_HEADER: usize = 4096;
/// Most entries in `userAgentData.fullVersionList`.
pub const MAX_BRANDS: usize = 16;
/// Longest brand name, in UTF-16 code units.
pub const MAX_BRAND_LEN: usize = 64;
/// Longest version (`platformVersion` and each brand's), in UTF-16 code units.
pub const MAX_VERSION_LEN: usize = 32;
/// Longest `calendar` and `numberingSystem` (Unicode type identifiers are at most 8 characters a part).
pub const MAX_INTL_LEN: usize = 32;
/// The `hourCycle` values `Intl.DateTimeFormat` reports.
pub const HOUR_CYCLES: [&str; 4] = ["h11", "h12", "h23", "h24"];
/// The `colorScheme` values `prefers-color-scheme` matches.
pub const COLOR_SCHEMES: [&str; 2] = ["light", "dark"];
/// The `contrast` values `prefers-contrast` matches.
pub const CONTRASTS: [&str; 4] = ["more", "less", "custom", "no-preference"];

/// The extended signals of one visit, flattened; every field optional. Stored beside the observation (never in
/// the shared `signals_json`), in this type's own JSON form.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)] // the fields are the wire form's, documented in the module
pub struct ExtendedSignals {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avail_width: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avail_height: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_version_list: Option<Vec<BrandVersion>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calendar: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numbering_system: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hour_cycle: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub color_scheme: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reduced_motion: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contrast: Option<String>,
}

/// One entry of `userAgentData.fullVersionList`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrandVersion {
    /// The brand (`Chromium`, `Google Chrome`, a GREASE brand such as `Not.A/Brand`).
    pub brand: String,
    /// Its full version, dotted.
    pub version: String,
}

impl ExtendedSignals {
    /// Parses and validates the wire form's JSON text.
    pub fn from_slice(json: &[u8]) -> Result<Self, PayloadError> {
        let root = Path::ROOT.child("extended");
        let value: Value = serde_json::from_slice(json)
            .map_err(|e| root.error(&format!("is not valid JSON ({e})")))?;
        Self::from_value(&value)
    }

    /// Validates the wire form (an error's path starts at `extended`).
    pub fn from_value(value: &Value) -> Result<Self, PayloadError> {
        let at = Path::ROOT.child("extended");
        let map = object(value, &at)?;
        only_keys(
            map,
            &["screen", "userAgentData", "intl", "preferences"],
            &at,
        )?;
        let mut signals = ExtendedSignals::default();
        let section = |key: &'static str, keys: &[&str]| match map.get(key) {
            None => Ok(None),
            Some(value) => {
                let inner = object(value, &at.child(key))?;
                only_keys(inner, keys, &at.child(key))?;
                Ok(Some(inner))
            }
        };
        if let Some(screen) = section("screen", &["availWidth", "availHeight"])? {
            let (fields, p) = (schema(screen), at.child("screen"));
            signals.avail_width = fields.int(&p, "availWidth", MAX_DIMENSION)?;
            signals.avail_height = fields.int(&p, "availHeight", MAX_DIMENSION)?;
        }
        if let Some(data) = section("userAgentData", &["platformVersion", "fullVersionList"])? {
            let p = at.child("userAgentData");
            signals.platform_version = string(data, &p, "platformVersion", MAX_VERSION_LEN)?;
            signals.full_version_list = data
                .get("fullVersionList")
                .map(|list| brands(list, &p))
                .transpose()?;
        }
        if let Some(intl) = section("intl", &["calendar", "numberingSystem", "hourCycle"])? {
            let p = at.child("intl");
            signals.calendar = string(intl, &p, "calendar", MAX_INTL_LEN)?;
            signals.numbering_system = string(intl, &p, "numberingSystem", MAX_INTL_LEN)?;
            signals.hour_cycle = one_of(intl, &p, "hourCycle", &HOUR_CYCLES)?;
        }
        let keys = ["colorScheme", "reducedMotion", "contrast"];
        if let Some(preferences) = section("preferences", &keys)? {
            let p = at.child("preferences");
            signals.color_scheme = one_of(preferences, &p, "colorScheme", &COLOR_SCHEMES)?;
            signals.reduced_motion = preferences
                .get("reducedMotion")
                .map(|v| boolean(v, &p.child("reducedMotion")))
                .transpose()?;
            signals.contrast = one_of(preferences, &p, "contrast", &CONTRASTS)?;
        }
        Ok(signals)
    }

    /// Whether no field is set (an empty object was sent).
    pub fn is_empty(&self) -> bool {
        *self == ExtendedSignals::default()
    }
}

type Map = serde_json::Map<String, Value>;

fn schema(map: &Map) -> Fields<'_> {
    Fields {
        map,
        mode: Strictness::Schema,
    }
}

fn string(map: &Map, at: &Path<'_>, key: &str, max: usize) -> Result<Option<String>, PayloadError> {
    map.get(key)
        .map(|v| text(v, max, &at.child(key), Strictness::Schema))
        .transpose()
}

fn one_of(
    map: &Map,
    at: &Path<'_>,
    key: &str,
    allowed: &[&str],
) -> Result<Option<String>, PayloadError> {
    let Some(value) = string(map, at, key, MAX_INTL_LEN)? else {
        return Ok(None);
    };
    if !allowed.contains(&value.as_str()) {
        let list = allowed.join(", ");
        return Err(at.child(key).error(&format!("must be one of {list}")));
    }
    Ok(Some(value))
}

fn brands(list: &Value, at: &Path<'_>) -> Result<Vec<BrandVersion>, PayloadError> {
    let path = at.child("fullVersionList");
    let Value::Array(items) = list else {
        return Err(path.error("must be an array of objects"));
    };
    if items.len() > MAX_BRANDS {
        return Err(path.error(&format!("must have at most {MAX_BRANDS} items")));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let p = at.child_index("fullVersionList", i);
            let map = object(item, &p)?;
            only_keys(map, &["brand", "version"], &p)?;
            let field =
                |key, max| string(map, &p, key, max)?.ok_or_else(|| p.child(key).error("required"));
            Ok(BrandVersion {
                brand: field("brand", MAX_BRAND_LEN)?,
                version: field("version", MAX_VERSION_LEN)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<ExtendedSignals, PayloadError> {
        ExtendedSignals::from_value(&v)
    }

    fn full() -> Value {
        json!({
            "screen": {"availWidth": 1920, "availHeight": 1032},
            "userAgentData": {"platformVersion": "15.0.0",
                "fullVersionList": [{"brand": "Chromium", "version": "147.0.7727.137"}]},
            "intl": {"calendar": "gregory", "numberingSystem": "latn", "hourCycle": "h12"},
            "preferences": {"colorScheme": "dark", "reducedMotion": false, "contrast": "no-preference"}
        })
    }

    #[test]
    fn every_field_is_read_and_stored_flat() {
        let signals = parse(full()).unwrap();
        assert_eq!(signals.avail_height, Some(1032.0));
        assert_eq!(signals.platform_version.as_deref(), Some("15.0.0"));
        assert_eq!(
            signals.full_version_list.as_ref().unwrap()[0].brand,
            "Chromium"
        );
        assert_eq!(signals.hour_cycle.as_deref(), Some("h12"));
        assert_eq!(signals.reduced_motion, Some(false));
        assert_eq!(signals.contrast.as_deref(), Some("no-preference"));
        let stored = serde_json::to_string(&signals).unwrap();
        assert_eq!(
            serde_json::from_str::<ExtendedSignals>(&stored).unwrap(),
            signals
        );
        assert!(parse(json!({})).unwrap().is_empty());
    }

    #[test]
    fn unknown_keys_wrong_types_and_unlisted_values_are_refused_with_their_path() {
        for (doc, path) in [
            (json!({"battery": {}}), "extended.battery"),
            (
                json!({"screen": {"availTop": 0}}),
                "extended.screen.availTop",
            ),
            (
                json!({"screen": {"availWidth": 1.5}}),
                "extended.screen.availWidth",
            ),
            (
                json!({"screen": {"availWidth": -1}}),
                "extended.screen.availWidth",
            ),
            (
                json!({"screen": {"availWidth": 32769}}),
                "extended.screen.availWidth",
            ),
            (
                json!({"intl": {"hourCycle": "h13"}}),
                "extended.intl.hourCycle",
            ),
            (
                json!({"intl": {"calendar": null}}),
                "extended.intl.calendar",
            ),
            (
                json!({"preferences": {"colorScheme": "auto"}}),
                "extended.preferences.colorScheme",
            ),
            (
                json!({"preferences": {"contrast": "high"}}),
                "extended.preferences.contrast",
            ),
            (
                json!({"preferences": {"reducedMotion": "yes"}}),
                "extended.preferences.reducedMotion",
            ),
            (
                json!({"userAgentData": {"fullVersionList": [{"brand": "Chromium"}]}}),
                "extended.userAgentData.fullVersionList[0].version",
            ),
            (
                json!({"userAgentData": {"fullVersionList": [{"brand": "A", "version": "1", "x": 1}]}}),
                "extended.userAgentData.fullVersionList[0].x",
            ),
            (
                json!({"userAgentData": {"fullVersionList": {}}}),
                "extended.userAgentData.fullVersionList",
            ),
            (json!([]), "extended"),
        ] {
            assert_eq!(parse(doc.clone()).unwrap_err().path, path, "{doc}");
        }
        assert_eq!(
            ExtendedSignals::from_slice(b"{").unwrap_err().path,
            "extended"
        );
    }

    #[test]
    fn every_bound_holds_at_its_limit_and_refuses_one_past() {
        let side = |n: u32| parse(json!({"screen": {"availHeight": n}}));
        assert!(side(0).is_ok() && side(32768).is_ok() && side(32769).is_err());
        let version =
            |n: usize| parse(json!({"userAgentData": {"platformVersion": "1".repeat(n)}}));
        assert!(version(MAX_VERSION_LEN).is_ok() && version(MAX_VERSION_LEN + 1).is_err());
        let brand = |n: usize| {
            let entry = json!({"brand": "b".repeat(n), "version": "1"});
            parse(json!({"userAgentData": {"fullVersionList": [entry]}}))
        };
        assert!(brand(MAX_BRAND_LEN).is_ok() && brand(MAX_BRAND_LEN + 1).is_err());
        let list = |n: usize| {
            let entries = vec![json!({"brand": "b", "version": "1"}); n];
            parse(json!({"userAgentData": {"fullVersionList": entries}}))
        };
        assert!(list(MAX_BRANDS).is_ok() && list(MAX_BRANDS + 1).is_err());
        let calendar = |n: usize| parse(json!({"intl": {"calendar": "c".repeat(n)}}));
        assert!(calendar(MAX_INTL_LEN).is_ok() && calendar(MAX_INTL_LEN + 1).is_err());
        assert!(parse(json!({"intl": {"numberingSystem": "la\u{0}tn"}})).is_err());
    }
}
