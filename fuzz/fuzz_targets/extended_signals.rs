//! Arbitrary bytes as the decoded `janitor-extended-signals` header (its JSON).
//!
//! When `ExtendedSignals::from_slice` accepts them:
//! - every bound of the wire form holds (lengths in UTF-16 units, listed values, whole numbers in range) and no
//!   string holds U+0000, so every store can keep what was accepted;
//! - the stored form (this type's own JSON, the `observations.extended_signals` column) reads back as the same
//!   signals, floats included.

#![no_main]

use janitor_core::identification::payload::{
    ExtendedSignals, COLOR_SCHEMES, CONTRASTS, HOUR_CYCLES, MAX_BRANDS, MAX_BRAND_LEN,
    MAX_INTL_LEN, MAX_VERSION_LEN,
};
use libfuzzer_sys::fuzz_target;

fn fits(text: &str, max: usize) -> bool {
    text.encode_utf16().count() <= max && !text.contains('\0')
}

fn whole_side(n: Option<f64>) -> bool {
    n.is_none_or(|n| n.fract() == 0.0 && (0.0..=32768.0).contains(&n))
}

fuzz_target!(|data: &[u8]| {
    let Ok(signals) = ExtendedSignals::from_slice(data) else {
        return;
    };
    assert!(whole_side(signals.avail_width) && whole_side(signals.avail_height));
    let text = |value: &Option<String>, max| value.as_deref().is_none_or(|v| fits(v, max));
    assert!(text(&signals.platform_version, MAX_VERSION_LEN));
    assert!(text(&signals.calendar, MAX_INTL_LEN) && text(&signals.numbering_system, MAX_INTL_LEN));
    let listed =
        |value: &Option<String>, list: &[&str]| value.as_deref().is_none_or(|v| list.contains(&v));
    assert!(listed(&signals.hour_cycle, &HOUR_CYCLES));
    assert!(listed(&signals.color_scheme, &COLOR_SCHEMES));
    assert!(listed(&signals.contrast, &CONTRASTS));
    let brands = signals.full_version_list.as_deref().unwrap_or_default();
    assert!(brands.len() <= MAX_BRANDS);
    assert!(brands
        .iter()
        .all(|b| fits(&b.brand, MAX_BRAND_LEN) && fits(&b.version, MAX_VERSION_LEN)));
    let stored = serde_json::to_string(&signals).expect("the stored form is JSON");
    let read: ExtendedSignals = serde_json::from_str(&stored).expect("the stored form reads back");
    assert_eq!(read, signals);
});
