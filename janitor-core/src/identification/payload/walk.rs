//! Walking a JSON document with a field path for error messages.

use serde_json::{Map, Value};

use super::PayloadError;

/// A `null` in a conformance vector means "absent", as optional chaining reads it.
pub(super) fn without_nulls(value: &Value) -> Value {
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

/// Requests get the schema; conformance vectors only need the shapes the reference normalizer reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Strictness {
    Schema,
    Lenient,
}

pub(super) struct Fields<'a> {
    pub(super) map: &'a Map<String, Value>,
    pub(super) mode: Strictness,
}

impl Fields<'_> {
    pub(super) fn int(
        &self,
        at: &Path<'_>,
        key: &str,
        max: f64,
    ) -> Result<Option<f64>, PayloadError> {
        self.number(at, key, max, true)
    }

    pub(super) fn num(
        &self,
        at: &Path<'_>,
        key: &str,
        max: f64,
    ) -> Result<Option<f64>, PayloadError> {
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
pub(super) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    key: &'a str,
    index: Option<usize>,
}

impl<'a> Path<'a> {
    pub(super) const ROOT: Path<'static> = Path {
        parent: None,
        key: "$",
        index: None,
    };

    pub(super) fn child(&'a self, key: &'a str) -> Path<'a> {
        Path {
            parent: Some(self),
            key,
            index: None,
        }
    }

    pub(super) fn child_index(&'a self, key: &'a str, index: usize) -> Path<'a> {
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

    pub(super) fn error(&self, problem: &str) -> PayloadError {
        PayloadError {
            path: self.render(),
            problem: problem.to_owned(),
        }
    }
}

pub(super) fn object<'v>(
    value: &'v Value,
    at: &Path<'_>,
) -> Result<&'v Map<String, Value>, PayloadError> {
    value
        .as_object()
        .ok_or_else(|| at.error("must be an object"))
}

pub(super) fn only_keys(
    map: &Map<String, Value>,
    allowed: &[&str],
    at: &Path<'_>,
) -> Result<(), PayloadError> {
    match map.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(key) => Err(at.child(key).error("unknown field")),
        None => Ok(()),
    }
}

pub(super) fn boolean(value: &Value, at: &Path<'_>) -> Result<bool, PayloadError> {
    value.as_bool().ok_or_else(|| at.error("must be a boolean"))
}

pub(super) fn text(
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
    // PostgreSQL keeps U+0000 neither in text nor in jsonb: a payload holding one could be stored by the
    // memory store only, so every store refuses it here, before anything is written.
    if mode == Strictness::Schema && s.contains('\0') {
        return Err(at.error("must not contain U+0000"));
    }
    Ok(s.clone())
}

pub(super) fn bounded_number(value: &Value, max: f64, at: &Path<'_>) -> Result<f64, PayloadError> {
    let n = value
        .as_f64()
        .filter(|n| n.is_finite())
        .ok_or_else(|| at.error("must be a finite number"))?;
    if !(0.0..=max).contains(&n) {
        return Err(at.error(&format!("must be from 0 to {max}")));
    }
    Ok(n)
}

pub(super) fn integer(value: &Value, max: f64, at: &Path<'_>) -> Result<f64, PayloadError> {
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
