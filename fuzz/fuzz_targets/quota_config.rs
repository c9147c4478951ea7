//! Arbitrary calls to `QuotaConfig::builder()`, then `build()`.
//!
//! The input is a sequence of setter calls with arbitrary numbers (a later call of a setter replaces the
//! earlier one). `build()` must either refuse with an error naming the first field out of its documented range
//! (checked in the order global, account, session, shards, window_ms), its range and the value given, or
//! return a config holding exactly the values given (the defaults for the others), every one inside its range,
//! whose global shards slice the global limit exactly. `QuotaConfig::from_value` on the same options as JSON
//! must agree.

#![no_main]

use arbitrary::Arbitrary;
use janitor_core::config::Limit;
use janitor_core::protection::quota::{
    QuotaConfig, QuotaConfigError, ACCOUNT_LIMIT, GLOBAL_LIMIT, SESSION_LIMIT, SHARDS, WINDOW_MS,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Call {
    Global(u32),
    Account(u32),
    Session(u32),
    Shards(u32),
    WindowMs(i64),
}

/// The documented ranges, restated from the builder's docs so that a change of a constant is noticed.
const DOCUMENTED: [(&str, i64, i64, i64); 5] = [
    ("global", 600, 1, 1_000_000),
    ("account", 60, 1, 1_000_000),
    ("session", 30, 1, 1_000_000),
    ("shards", 1, 1, 128),
    ("window_ms", 60_000, 1_000, 3_600_000),
];

fuzz_target!(|calls: Vec<Call>| {
    let limits: [(&str, i64, i64, i64); 5] = [
        widen(GLOBAL_LIMIT),
        widen(ACCOUNT_LIMIT),
        widen(SESSION_LIMIT),
        widen(SHARDS),
        (
            WINDOW_MS.name,
            WINDOW_MS.default,
            WINDOW_MS.min,
            WINDOW_MS.max,
        ),
    ];
    assert_eq!(
        limits, DOCUMENTED,
        "a quota limit moved away from its documentation"
    );

    let mut builder = QuotaConfig::builder();
    // The value each field ends up with, in the order `build` checks them.
    let mut given: [Option<i64>; 5] = [None; 5];
    for call in &calls {
        builder = match *call {
            Call::Global(n) => builder.global(n),
            Call::Account(n) => builder.account(n),
            Call::Session(n) => builder.session(n),
            Call::Shards(n) => builder.shards(n),
            Call::WindowMs(n) => builder.window_ms(n),
        };
        let (index, value) = match *call {
            Call::Global(n) => (0, i64::from(n)),
            Call::Account(n) => (1, i64::from(n)),
            Call::Session(n) => (2, i64::from(n)),
            Call::Shards(n) => (3, i64::from(n)),
            Call::WindowMs(n) => (4, n),
        };
        given[index] = Some(value);
    }
    let values: Vec<i64> = given
        .iter()
        .zip(DOCUMENTED)
        .map(|(v, (_, default, _, _))| v.unwrap_or(default))
        .collect();
    let first_bad = values
        .iter()
        .zip(DOCUMENTED)
        .find(|(v, (_, _, min, max))| !(min..=max).contains(v));

    let built = builder.build();
    match (&built, first_bad) {
        (Err(error), Some((value, (field, _, min, max)))) => {
            assert_eq!(error.field, field, "{error}");
            assert_eq!(error.range, format!("from {min} to {max}"), "{error}");
            assert_eq!(error.value, value.to_string(), "{error}");
            assert!(error.to_string().starts_with(field), "{error}");
        }
        (Ok(config), None) => check_config(config, &values),
        (Err(error), None) => panic!("refused values within range {values:?}: {error}"),
        (Ok(config), Some(bad)) => panic!("accepted {bad:?} out of range: {config:?}"),
    }

    // The same options as a JSON object read the same.
    let object: Map<String, Value> = given
        .iter()
        .zip(DOCUMENTED)
        .filter_map(|(v, (name, _, _, _))| v.map(|v| (name.to_owned(), Value::from(v))))
        .collect();
    let from_value = QuotaConfig::from_value(&Value::Object(object));
    match (&built, from_value) {
        (Ok(a), Ok(b)) => assert_eq!(*a, b),
        (Err(a), Err(QuotaConfigError::OutOfRange(b))) => assert_eq!(*a, b),
        (a, b) => panic!("the builder gave {a:?}, from_value {b:?}"),
    }
});

fn widen(limit: Limit<u32>) -> (&'static str, i64, i64, i64) {
    (
        limit.name,
        i64::from(limit.default),
        i64::from(limit.min),
        i64::from(limit.max),
    )
}

fn check_config(config: &QuotaConfig, values: &[i64]) {
    // No call switches a counter off, so every counter is on.
    let on = |limit: Option<u32>| i64::from(limit.expect("a counter switched off"));
    let read = [
        on(config.global()),
        on(config.account()),
        on(config.session()),
        i64::from(config.effective_shards()),
        config.window_ms(),
    ];
    for (i, (value, (field, _, min, max))) in read.iter().zip(DOCUMENTED).enumerate() {
        assert!((min..=max).contains(value), "{field} {value} out of range");
        if i != 3 {
            assert_eq!(*value, values[i], "{field} is not the value given");
        }
    }
    // Shards actually used: never more than the global limit, so that no slice is empty.
    let shards = config.effective_shards();
    assert_eq!(i64::from(shards), values[3].min(values[0]));
    let slices: Vec<u32> = (0..shards).map(|s| config.shard_limit(s)).collect();
    assert_eq!(
        slices.iter().map(|&s| u64::from(s)).sum::<u64>(),
        values[0] as u64,
        "the slices do not sum to the global limit: {slices:?}"
    );
    assert!(slices.iter().all(|&s| s >= 1), "{slices:?}");
    assert!(
        slices.windows(2).all(|w| w[0] >= w[1] && w[0] - w[1] <= 1),
        "{slices:?}"
    );
}
