//! Payloads a hostile or broken client sends: values the schema's types allow but a store cannot keep, JSON
//! at the edges of what parsers agree on, and numbers whose decimal text is longer than a double.

use janitor_core::identification::payload::VisitorPayload;

/// Every string field of the payload, as a path of object keys (`languages` is an array of strings).
const STRING_FIELDS: &[&[&str]] = &[
    &["userAgent"],
    &["platform"],
    &["timezone"],
    &["graphics", "webglVendor"],
    &["graphics", "webglRenderer"],
];

/// A payload with the JSON string text `value` (escapes as written) at `path` inside `signals`.
fn signals_with(path: &[&str], value: &str) -> String {
    let mut json = format!("\"{value}\"");
    for key in path.iter().rev() {
        json = format!("{{\"{key}\":{json}}}");
    }
    format!("{{\"signals\":{json}}}")
}

#[test]
fn a_nul_character_is_refused_in_every_string_field() {
    // PostgreSQL stores neither U+0000 in text nor `\u0000` in jsonb, so a payload holding one could never be
    // saved; both stores refuse it the same way, as an invalid payload, before anything is written.
    for path in STRING_FIELDS {
        let body = signals_with(path, r"a\u0000b");
        let error = VisitorPayload::from_slice(body.as_bytes()).unwrap_err();
        assert_eq!(error.path, format!("signals.{}", path.join(".")), "{body}");
        assert!(error.problem.contains("U+0000"), "{error}");
        // The same field without the NUL is fine.
        let clean = signals_with(path, "ab");
        assert!(
            VisitorPayload::from_slice(clean.as_bytes()).is_ok(),
            "{clean}"
        );
    }
    let language = br#"{"signals":{"languages":["en","f\u0000r"]}}"#;
    let error = VisitorPayload::from_slice(language).unwrap_err();
    assert_eq!(error.path, "signals.languages[1]");
    // A raw NUL byte inside a JSON string is not JSON at all.
    assert!(VisitorPayload::from_slice(b"{\"signals\":{\"timezone\":\"a\0b\"}}").is_err());
}

#[test]
fn other_control_characters_are_kept() {
    // Only NUL is unstorable; a tab or a unit separator is a string like any other.
    let body = br#"{"signals":{"timezone":"a\tb\u001fc"}}"#;
    let payload = VisitorPayload::from_slice(body).unwrap();
    assert_eq!(payload.signals.timezone.as_deref(), Some("a\tb\u{1f}c"));
}

#[test]
fn lone_surrogates_overflowing_numbers_and_deep_nesting_are_invalid_json() {
    let refused: &[&[u8]] = &[
        br#"{"signals":{"timezone":"\ud800"}}"#,
        br#"{"signals":{"timezone":"\udc00x"}}"#,
        br#"{"signals":{"screen":{"pixelRatio":1e400}}}"#,
        br#"{"signals":{"screen":{"pixelRatio":-1e400}}}"#,
        br#"{"signals":{"screen":{"width":NaN}}}"#,
    ];
    for body in refused {
        assert!(
            VisitorPayload::from_slice(body).is_err(),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    // A pair of surrogates is one character.
    let pair = br#"{"signals":{"timezone":"\ud83d\ude00"}}"#;
    assert_eq!(
        VisitorPayload::from_slice(pair)
            .unwrap()
            .signals
            .timezone
            .as_deref(),
        Some("😀")
    );
    // Nesting far past the parser's recursion limit is an error, not a stack overflow.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(VisitorPayload::from_slice(deep.as_bytes()).is_err());
    let deep_object = format!(
        "{{\"signals\":{}1{}}}",
        "{\"a\":".repeat(50_000),
        "}".repeat(50_000)
    );
    assert!(VisitorPayload::from_slice(deep_object.as_bytes()).is_err());
}

#[test]
fn long_decimals_round_as_javascript_rounds_them() {
    // A browser's JSON.parse rounds a decimal to the nearest double, however many digits it has; so does
    // Rust's `str::parse`. Just past the midpoint between 1 and the next double, 74 digits long: a parser that
    // stops early lands one ULP low, and a stored `deviceMemory` then differs from the browser's own.
    let digits = "1.0000000000000001110223024625156540423631668090820312500000000000000000001";
    assert_eq!(digits.len(), 75);
    let expected: f64 = digits.parse().unwrap();
    assert_eq!(expected, 1.0 + f64::EPSILON);
    let body = format!(
        r#"{{"signals":{{"screen":{{"pixelRatio":{digits}}},"hardware":{{"deviceMemory":{digits}}}}}}}"#
    );
    let payload = VisitorPayload::from_slice(body.as_bytes()).unwrap();
    let screen = payload.signals.screen.unwrap();
    let hardware = payload.signals.hardware.unwrap();
    assert_eq!(screen.pixel_ratio.unwrap().to_bits(), expected.to_bits());
    assert_eq!(
        hardware.device_memory.unwrap().to_bits(),
        expected.to_bits()
    );
    // Decimals at the hard edges of correct rounding: without serde_json's `float_roundtrip` the first of
    // these reads one ULP off.
    for text in [
        "2.2250738585072011e-308",
        "0.30000000000000004440892098500626161694526672363281250000000000000001",
        "8.98846567431157953864652595394512366e-1",
        "15.99999999999999999999999999999999999999999999999999999999999999999999999999",
    ] {
        let body = format!(r#"{{"signals":{{"screen":{{"pixelRatio":{text}}}}}}}"#);
        let parsed = VisitorPayload::from_slice(body.as_bytes())
            .map(|p| p.signals.screen.unwrap().pixel_ratio.unwrap().to_bits());
        let expected: f64 = text.parse().unwrap();
        if expected <= 16.0 {
            assert_eq!(parsed, Ok(expected.to_bits()), "{text}");
        }
    }
}
