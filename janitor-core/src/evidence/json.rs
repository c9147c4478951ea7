//! Strict reading of evidence input from JSON: unknown keys refused, `null` never taken for "absent", every
//! error naming the field.

use serde_json::{Map, Value};

use super::error::InputError;
use crate::js::is_js_whitespace;

/// Longest label text (event ids, session ids, issuers), in UTF-16 code units after trimming.
pub const MAX_LABEL_TEXT: usize = 256;
/// Largest timestamp JavaScript holds exactly (`Number.MAX_SAFE_INTEGER`).
pub const MAX_SAFE_INTEGER: i64 = 9_007_199_254_740_991;

/// Text that is labelled (or kept as a short name): trimmed as JavaScript trims, then 1–256 UTF-16 code units,
/// counted as the reference counts a string's length.
pub(crate) fn label_text(field: &str, value: &str) -> Result<String, InputError> {
    let trimmed = value.trim_matches(is_js_whitespace);
    let units = trimmed.encode_utf16().count();
    if units == 0 {
        return Err(InputError::new(field, "must not be blank after trimming"));
    }
    if units > MAX_LABEL_TEXT {
        return Err(InputError::new(
            field,
            format!(
                "must be at most {MAX_LABEL_TEXT} UTF-16 code units after trimming, got {units}"
            ),
        ));
    }
    Ok(trimmed.to_owned())
}

/// One of a fixed list of names.
pub(crate) fn choice<T>(
    field: &str,
    value: &str,
    parse: fn(&str) -> Option<T>,
    names: &[&str],
) -> Result<T, InputError> {
    parse(value)
        .ok_or_else(|| InputError::new(field, format!("must be one of {}", names.join(", "))))
}

/// A JSON object whose keys are all known.
pub(crate) struct Object<'a> {
    map: &'a Map<String, Value>,
    prefix: String,
}

impl<'a> Object<'a> {
    /// `value` as an object holding only `allowed` keys; `path` names it in errors (`""` for the document).
    pub(crate) fn strict(
        value: &'a Value,
        path: &str,
        allowed: &[&str],
    ) -> Result<Self, InputError> {
        let Value::Object(map) = value else {
            let at = if path.is_empty() { "$" } else { path };
            return Err(InputError::new(at, "must be an object"));
        };
        let prefix = if path.is_empty() {
            String::new()
        } else {
            format!("{path}.")
        };
        if let Some(unknown) = map.keys().find(|k| !allowed.contains(&k.as_str())) {
            return Err(InputError::new(
                format!("{prefix}{unknown}"),
                format!("is not an allowed key (allowed: {})", allowed.join(", ")),
            ));
        }
        Ok(Object { map, prefix })
    }

    /// The full name of a key, for errors.
    pub(crate) fn field(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    fn missing(&self, key: &str) -> InputError {
        InputError::new(self.field(key), "is required")
    }

    /// An optional string. `null` is not "absent": it is refused like any other non-string.
    pub(crate) fn text(&self, key: &str) -> Result<Option<&'a str>, InputError> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(InputError::new(self.field(key), "must be a string")),
        }
    }

    /// A required string.
    pub(crate) fn required_text(&self, key: &str) -> Result<&'a str, InputError> {
        self.text(key)?.ok_or_else(|| self.missing(key))
    }

    /// An optional integer (a number with no fraction, as JavaScript's `Number.isInteger` sees it).
    pub(crate) fn integer(&self, key: &str) -> Result<Option<i64>, InputError> {
        let Some(value) = self.map.get(key) else {
            return Ok(None);
        };
        let Value::Number(number) = value else {
            return Err(InputError::new(self.field(key), "must be a number"));
        };
        if let Some(i) = number.as_i64() {
            return Ok(Some(i));
        }
        let float = number.as_f64().unwrap_or(f64::NAN);
        if float.is_finite() && float.fract() == 0.0 {
            // `as` saturates at the bounds of i64; such values are outside every range here, and the range
            // check names them.
            return Ok(Some(float as i64));
        }
        Err(InputError::new(self.field(key), "must be an integer"))
    }

    /// A required timestamp: an integer from 0 to 2^53 − 1 (epoch milliseconds).
    pub(crate) fn timestamp(&self, key: &str) -> Result<i64, InputError> {
        let value = self.integer(key)?.ok_or_else(|| self.missing(key))?;
        timestamp(&self.field(key), value)
    }

    /// A required nested object holding only `allowed` keys.
    pub(crate) fn object(&self, key: &str, allowed: &[&str]) -> Result<Object<'a>, InputError> {
        let value = self.map.get(key).ok_or_else(|| self.missing(key))?;
        Object::strict(value, &self.field(key), allowed)
    }
}

/// A timestamp in `[0, 2^53 − 1]`.
pub(crate) fn timestamp(field: &str, value: i64) -> Result<i64, InputError> {
    if (0..=MAX_SAFE_INTEGER).contains(&value) {
        Ok(value)
    } else {
        Err(InputError::new(
            field,
            format!("must be an integer from 0 to {MAX_SAFE_INTEGER}, got {value}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_text_bounds_count_utf16_after_trimming() {
        assert_eq!(label_text("id", " \u{FEFF}a\n").unwrap(), "a");
        assert!(label_text("id", " \u{3000} ").is_err());
        assert!(label_text("id", &"x".repeat(256)).is_ok());
        assert!(label_text("id", &format!("  {}  ", "x".repeat(256))).is_ok());
        let err = label_text("id", &"x".repeat(257)).unwrap_err();
        assert_eq!(err.field, "id");
        assert!(err.problem.contains("256"), "{err}");
        // 128 emoji are 256 UTF-16 units; one more is too long.
        assert!(label_text("id", &"😀".repeat(128)).is_ok());
        assert!(label_text("id", &format!("{}a", "😀".repeat(128))).is_err());
    }

    #[test]
    fn integers_as_javascript_reads_them() {
        let doc = json!({"a": 1000.0, "b": 1.5, "c": "1", "d": null, "e": 1e300, "f": -3});
        let o = Object::strict(&doc, "", &["a", "b", "c", "d", "e", "f"]).unwrap();
        assert_eq!(o.integer("a").unwrap(), Some(1000));
        assert!(o.integer("b").is_err());
        assert!(o.integer("c").is_err());
        assert!(o.integer("d").is_err());
        assert_eq!(o.integer("e").unwrap(), Some(i64::MAX));
        assert_eq!(o.integer("f").unwrap(), Some(-3));
        assert_eq!(o.integer("z").unwrap(), None);
        assert!(o.timestamp("f").is_err());
        assert!(o.timestamp("e").is_err());
        assert_eq!(o.timestamp("a").unwrap(), 1000);
        assert!(timestamp("t", MAX_SAFE_INTEGER).is_ok());
        assert!(timestamp("t", MAX_SAFE_INTEGER + 1).is_err());
        assert!(timestamp("t", 0).is_ok());
        assert!(timestamp("t", -1).is_err());
    }

    #[test]
    fn unknown_keys_and_shapes() {
        let err = Object::strict(&json!({"x": 1}), "", &["a"]).err().unwrap();
        assert_eq!(err.field, "x");
        let err = Object::strict(&json!({"x": 1}), "verification", &["a"])
            .err()
            .unwrap();
        assert_eq!(err.field, "verification.x");
        assert_eq!(
            Object::strict(&json!([1]), "", &[]).err().unwrap().field,
            "$"
        );
    }
}
