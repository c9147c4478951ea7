//! Arbitrary bytes as the body of `POST /api/visitor`.
//!
//! When `VisitorPayload::from_slice` accepts them:
//! - the `Deserialize` impl (a payload inside a larger document) accepts the same payload;
//! - no string in it holds U+0000 (the validation refuses it, as PostgreSQL cannot store it);
//! - normalizing it does not panic, and the normalized observation has the shapes its docs promise;
//! - the payload written with serde_json is accepted again and reads back as the same payload, and the
//!   observation written as the `signals_json` column reads back as the same observation.
//!
//! Both round trips hold exactly, floats included: serde_json writes a float as the shortest text that reads
//! back as the same double, and the workspace builds serde_json with `float_roundtrip`, so that text is read
//! to the nearest double. Without that feature serde_json's parser is best effort: `0.00036805669621101285`,
//! say, reads back one unit in the last place away (measured: up to 2 units over 40 million random doubles of
//! the payload's ranges), and a payload would not read back as itself. The target checks that the parser is
//! the exact one before anything else, so that losing the feature is a finding of its own, named as such.

#![no_main]

use janitor_core::identification::payload::Signals;
use janitor_core::{Observation, VisitorPayload};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    assert!(
        floats_read_exactly(),
        "serde_json reads floats only approximately: is its `float_roundtrip` feature still on?"
    );
    let Ok(payload) = VisitorPayload::from_slice(data) else {
        return;
    };

    let nested: VisitorPayload = serde_json::from_slice(data)
        .expect("the Deserialize impl refused what from_slice accepted");
    assert_eq!(nested, payload, "the Deserialize impl read another payload");

    let tree = serde_json::to_value(&payload).expect("a payload serializes");
    assert!(
        !any_string(&tree, &|s| s.contains('\0')),
        "an accepted payload holds U+0000: {tree}"
    );

    let observation = Observation::normalize(&payload.signals, payload.behavior.as_ref());
    check_observation(&observation, &payload.signals);
    assert_eq!(
        observation.behavior, payload.behavior,
        "the behaviour is passed through"
    );

    let written = serde_json::to_vec(&payload).expect("a payload serializes");
    let again = VisitorPayload::from_slice(&written).unwrap_or_else(|e| {
        panic!(
            "the payload's own JSON is refused ({e}): {}",
            String::from_utf8_lossy(&written)
        )
    });
    same(&payload, &again, "payload");

    let column = serde_json::to_vec(&observation).expect("an observation serializes");
    let stored: Observation = serde_json::from_slice(&column).unwrap_or_else(|e| {
        panic!(
            "the observation's own JSON is refused ({e}): {}",
            String::from_utf8_lossy(&column)
        )
    });
    same(&observation, &stored, "observation");
});

/// `a` and `b` are equal, printed both as read and as JSON when they are not.
fn same<T: PartialEq + std::fmt::Debug + serde::Serialize>(a: &T, b: &T, what: &str) {
    assert!(
        a == b,
        "the {what} changed through its JSON:\n{a:?}\n{b:?}\n{}\n{}",
        serde_json::to_string(a).unwrap(),
        serde_json::to_string(b).unwrap()
    );
}

/// Whether serde_json reads floats to the nearest double, as `str::parse` does. Each of these texts reads
/// back as a neighbouring double through serde_json's default, best-effort parser.
fn floats_read_exactly() -> bool {
    [
        "0.00036805669621101285",
        "3.4185347156887135e-7",
        "4.055474706295447e-187",
    ]
    .iter()
    .all(|text| serde_json::from_str::<f64>(text).ok() == text.parse::<f64>().ok())
}

fn any_string(value: &Value, test: &dyn Fn(&str) -> bool) -> bool {
    match value {
        Value::String(s) => test(s),
        Value::Array(items) => items.iter().any(|v| any_string(v, test)),
        Value::Object(map) => map.iter().any(|(k, v)| test(k) || any_string(v, test)),
        _ => false,
    }
}

/// JavaScript's `trim` white space: Unicode White_Space less U+0085, plus U+FEFF.
fn js_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{FEFF}'
}

/// Trimmed as JavaScript trims; empty becomes absent.
fn trimmed(raw: Option<&str>) -> Option<&str> {
    raw.map(|t| t.trim_matches(js_space))
        .filter(|t| !t.is_empty())
}

/// What `Observation::normalize` documents: positive sizes, the screen's shorter side first, trimmed text,
/// lower-cased, de-duplicated languages in JavaScript's sort order, lower-cased WebGL strings, the automation
/// flag and the behaviour passed through.
fn check_observation(o: &Observation, signals: &Signals) {
    let positive = |n: Option<f64>| n.filter(|n| n.is_finite() && *n > 0.0);
    if let Some(raw) = &signals.screen {
        let screen = o.screen.as_ref().expect("a screen was sent");
        let (mut w, mut h) = (positive(raw.width), positive(raw.height));
        if let (Some(a), Some(b)) = (w, h) {
            if a > b {
                (w, h) = (Some(b), Some(a));
            }
        }
        assert_eq!((screen.width, screen.height), (w, h), "{raw:?}");
        assert_eq!(screen.color_depth, positive(raw.color_depth));
        assert_eq!(screen.pixel_ratio, positive(raw.pixel_ratio));
    } else {
        assert!(o.screen.is_none());
    }
    if let Some(raw) = &signals.viewport {
        let viewport = o.viewport.as_ref().expect("a viewport was sent");
        assert_eq!(viewport.width, positive(raw.width));
        assert_eq!(viewport.height, positive(raw.height));
    }
    if let Some(raw) = &signals.hardware {
        let hardware = o.hardware.as_ref().expect("hardware was sent");
        assert_eq!(
            hardware.hardware_concurrency,
            positive(raw.hardware_concurrency)
        );
        assert_eq!(hardware.device_memory, positive(raw.device_memory));
        assert_eq!(
            hardware.max_touch_points, raw.max_touch_points,
            "0 touch points is kept"
        );
    }
    assert_eq!(
        o.user_agent.as_deref(),
        trimmed(signals.user_agent.as_deref())
    );
    assert_eq!(o.timezone.as_deref(), trimmed(signals.timezone.as_deref()));
    match &o.languages {
        None => assert!(signals
            .languages
            .iter()
            .flatten()
            .all(|tag| trimmed(Some(tag)).is_none())),
        Some(languages) => {
            assert!(!languages.is_empty());
            for pair in languages.windows(2) {
                assert!(
                    pair[0].encode_utf16().lt(pair[1].encode_utf16()),
                    "languages not sorted or repeated: {languages:?}"
                );
            }
            let sent: Vec<String> = signals
                .languages
                .iter()
                .flatten()
                .filter_map(|tag| trimmed(Some(tag)))
                .map(str::to_lowercase)
                .collect();
            assert!(
                languages.iter().all(|tag| sent.contains(tag)),
                "{languages:?}"
            );
            assert!(
                sent.iter().all(|tag| languages.contains(tag)),
                "{languages:?}"
            );
        }
    }
    if let Some(raw) = &signals.graphics {
        let graphics = o.graphics.as_ref().expect("graphics were sent");
        let lower = |t: Option<&String>| trimmed(t.map(String::as_str)).map(str::to_lowercase);
        assert_eq!(graphics.webgl_vendor, lower(raw.webgl_vendor.as_ref()));
        assert_eq!(graphics.webgl_renderer, lower(raw.webgl_renderer.as_ref()));
    }
    assert_eq!(
        o.automation.as_ref().and_then(|a| a.webdriver),
        signals.automation.as_ref().and_then(|a| a.webdriver)
    );
}
