//! Every bound of the payload schema: at the limit passes, one past it fails (and 0 / -1 at the bottom).

use janitor_core::identification::payload::{VisitorPayload, BEHAVIOR_FIELDS};
use serde_json::{json, Map, Value};

/// The six behaviour fields the schema requires, at zero.
fn behavior_base() -> Map<String, Value> {
    BEHAVIOR_FIELDS
        .iter()
        .filter(|(_, _, required)| *required)
        .map(|(name, _, _)| (name.to_string(), json!(0)))
        .collect()
}

/// Puts `value` at `path` (dotted) inside a minimal valid payload.
fn payload_with(path: &str, value: Value) -> Value {
    let mut doc = json!({"signals": {}});
    if path.starts_with("behavior.") {
        doc["behavior"] = Value::Object(behavior_base());
    }
    let mut node = &mut doc;
    let parts: Vec<&str> = path.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        if node.get(*part).is_none() {
            node[*part] = json!({});
        }
        node = &mut node[*part];
    }
    node[parts[parts.len() - 1]] = value;
    doc
}

fn accepts(doc: &Value) -> bool {
    VisitorPayload::from_value(doc).is_ok()
}

const INTEGER_FIELDS: &[(&str, i64)] = &[
    ("signals.screen.width", 32768),
    ("signals.screen.height", 32768),
    ("signals.screen.colorDepth", 64),
    ("signals.viewport.width", 32768),
    ("signals.viewport.height", 32768),
    ("signals.hardware.hardwareConcurrency", 1024),
    ("signals.hardware.maxTouchPoints", 256),
];

#[test]
fn integer_fields_at_and_past_their_bounds() {
    let behavior = BEHAVIOR_FIELDS
        .iter()
        .map(|(name, max, _)| (format!("behavior.{name}"), *max as i64));
    let all: Vec<(String, i64)> = INTEGER_FIELDS
        .iter()
        .map(|(p, m)| (p.to_string(), *m))
        .chain(behavior)
        .collect();
    assert_eq!(all.len(), 7 + 23);
    for (path, max) in all {
        assert!(
            accepts(&payload_with(&path, json!(max))),
            "{path} = {max} must pass"
        );
        assert!(
            accepts(&payload_with(&path, json!(0))),
            "{path} = 0 must pass"
        );
        let err = VisitorPayload::from_value(&payload_with(&path, json!(max + 1))).unwrap_err();
        assert_eq!(err.path, path, "{path} = max + 1 must fail at that field");
        assert!(
            err.problem.contains(&max.to_string()),
            "the error names the bound: {err}"
        );
        assert!(
            !accepts(&payload_with(&path, json!(-1))),
            "{path} = -1 must fail"
        );
        assert!(
            !accepts(&payload_with(&path, json!(0.5))),
            "{path} = 0.5 is not an integer"
        );
    }
}

#[test]
fn number_fields_at_and_past_their_bounds() {
    for (path, max) in [
        ("signals.screen.pixelRatio", 16.0),
        ("signals.hardware.deviceMemory", 1024.0),
    ] {
        for ok in [0.0, 0.25, max] {
            assert!(
                accepts(&payload_with(path, json!(ok))),
                "{path} = {ok} must pass"
            );
        }
        for bad in [-0.000001, max + 0.000001, max + 1.0] {
            assert!(
                !accepts(&payload_with(path, json!(bad))),
                "{path} = {bad} must fail"
            );
        }
        assert!(
            !accepts(&payload_with(path, json!("1"))),
            "{path} must be a number"
        );
    }
}

#[test]
fn string_lengths_at_and_past_their_bounds() {
    for (path, max) in [
        ("signals.userAgent", 512),
        ("signals.platform", 128),
        ("signals.timezone", 128),
        ("signals.graphics.webglVendor", 512),
        ("signals.graphics.webglRenderer", 512),
    ] {
        assert!(
            accepts(&payload_with(path, json!("x".repeat(max)))),
            "{path} at {max} must pass"
        );
        assert!(
            accepts(&payload_with(path, json!(""))),
            "{path} empty must pass"
        );
        let err = VisitorPayload::from_value(&payload_with(path, json!("x".repeat(max + 1))))
            .unwrap_err();
        assert_eq!(err.path, path);
    }
}

#[test]
fn languages_count_and_length() {
    let tags = |n: usize, len: usize| json!(vec!["a".repeat(len); n]);
    assert!(accepts(&payload_with("signals.languages", tags(20, 64))));
    assert!(accepts(&payload_with("signals.languages", tags(0, 1))));
    assert!(!accepts(&payload_with("signals.languages", tags(21, 2))));
    let err =
        VisitorPayload::from_value(&payload_with("signals.languages", tags(3, 65))).unwrap_err();
    assert_eq!(err.path, "signals.languages[0]");
}

#[test]
fn behavior_requires_its_six_fields() {
    for (name, _, required) in BEHAVIOR_FIELDS.iter().filter(|(_, _, r)| *r) {
        assert!(required);
        let mut behavior = behavior_base();
        behavior.remove(*name);
        let err =
            VisitorPayload::from_value(&json!({"signals": {}, "behavior": behavior})).unwrap_err();
        assert_eq!(err.path, format!("behavior.{name}"));
    }
    assert!(accepts(
        &json!({"signals": {}, "behavior": behavior_base(), "debug": false})
    ));
    let mut extra = behavior_base();
    extra.insert("clickX".into(), json!(1));
    assert!(!accepts(&json!({"signals": {}, "behavior": extra})));
}

#[test]
fn server_context_in_the_body_is_refused() {
    // Account and session come from server code only; a body carrying them fails the schema.
    for key in ["account", "session", "visitorId"] {
        let mut doc = json!({"signals": {}});
        doc[key] = json!("x");
        assert_eq!(VisitorPayload::from_value(&doc).unwrap_err().path, key);
    }
}

#[test]
fn mangled_bodies_are_refused_without_panicking() {
    // A small deterministic generator: truncations, byte flips and insertions of a valid body.
    let valid = br#"{"signals":{"userAgent":"Mozilla/5.0 Chrome/130","platform":"MacIntel","languages":["en-US"],"screen":{"width":1440,"height":900,"pixelRatio":2},"hardware":{"deviceMemory":8}},"behavior":{"pageAgeMs":1,"mouseMoveCount":2,"pointerDownCount":0,"keyDownCount":0,"scrollCount":0,"visibilityChangeCount":0},"debug":false}"#;
    assert!(VisitorPayload::from_slice(valid).is_ok());
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut refused = 0;
    for _ in 0..20_000 {
        let mut body = valid.to_vec();
        for _ in 0..1 + next() % 3 {
            let at = (next() as usize) % body.len();
            match next() % 3 {
                0 => body.truncate(at),
                1 => body[at] = next() as u8,
                _ => {
                    let tokens = b"{}[]\",:0-e.\\\xff";
                    body.insert(at, tokens[(next() as usize) % tokens.len()])
                }
            }
            if body.is_empty() {
                break;
            }
        }
        if let Err(e) = VisitorPayload::from_slice(&body) {
            refused += 1;
            assert!(!e.path.is_empty() && !e.problem.is_empty());
        }
    }
    assert!(
        refused > 10_000,
        "most mangled bodies must be refused, got {refused}"
    );
}

#[test]
fn deep_nesting_and_huge_numbers_are_errors() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert_eq!(
        VisitorPayload::from_slice(deep.as_bytes())
            .unwrap_err()
            .path,
        "$"
    );
    let huge = br#"{"signals":{"screen":{"width":1e400}}}"#;
    assert!(VisitorPayload::from_slice(huge).is_err());
    let big_int = br#"{"signals":{"screen":{"width":18446744073709551616}}}"#;
    assert_eq!(
        VisitorPayload::from_slice(big_int).unwrap_err().path,
        "signals.screen.width"
    );
}
