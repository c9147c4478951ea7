//! How much memory the in-memory visitor store takes per visitor, as a cookieless flood fills it: each visitor
//! with one observation of a realistic browser, made as the engine makes them. Prints the resident set size
//! before and after, and the bytes per visitor, read from `/proc/self/statm` (Linux).
//!
//! Run with: `cargo run --release -p janitor-core --example memory_per_visitor [visitors] [extended]` (default
//! 50,000, the store's default capacity); `extended` gives each observation the extended client signals a
//! Chrome on Windows sends when the application enables them.

use janitor_core::identification::payload::ExtendedSignals;
use janitor_core::{
    MemoryVisitorStore, Observation, Retention, VisitorId, VisitorPayload, VisitorStore,
};

fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("Linux /proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages");
    pages * 4096
}

/// Visitor `n`'s browser: what janitor.js sends, with a timezone, renderer and screen that vary with `n`.
fn payload(n: u64) -> VisitorPayload {
    let doc = serde_json::json!({"signals": {
        "userAgent": format!("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{}.0.0.0 Safari/537.36", 120 + n % 12),
        "platform": "Win32",
        "languages": ["en-US", "en"],
        "timezone": format!("Zone/{}", n % 400),
        "screen": {"width": 1280 + (n % 7) * 160, "height": 720 + (n % 5) * 90, "colorDepth": 24, "pixelRatio": 1},
        "viewport": {"width": 1200, "height": 650},
        "hardware": {"hardwareConcurrency": 4 + n % 13, "deviceMemory": 8, "maxTouchPoints": 0},
        "graphics": {"webglVendor": "Google Inc. (NVIDIA)", "webglRenderer": format!("ANGLE (NVIDIA GeForce GTX {} Direct3D11)", 1000 + n % 900)},
        "automation": {"webdriver": false}
    }, "behavior": {"pageAgeMs": 1800 + n % 5000, "mouseMoveCount": n % 80, "pointerDownCount": 1,
        "keyDownCount": 0, "scrollCount": 2, "visibilityChangeCount": 0}});
    VisitorPayload::from_value(&doc).expect("a valid payload")
}

/// Visitor `n`'s extended signals, as janitor.js sends them from Chrome on Windows.
fn extended(n: u64) -> ExtendedSignals {
    let chrome = format!("{}.0.7727.{}", 120 + n % 12, 50 + n % 90);
    let doc = serde_json::json!({
        "screen": {"availWidth": 1280 + (n % 7) * 160, "availHeight": 672 + (n % 5) * 90},
        "userAgentData": {"platformVersion": "15.0.0", "fullVersionList": [
            {"brand": "Not.A/Brand", "version": "99.0.0.0"},
            {"brand": "Chromium", "version": chrome},
            {"brand": "Google Chrome", "version": chrome}]},
        "intl": {"calendar": "gregory", "numberingSystem": "latn", "hourCycle": "h12"},
        "preferences": {"colorScheme": if n % 3 == 0 { "dark" } else { "light" }, "reducedMotion": false,
            "contrast": "no-preference"}
    });
    ExtendedSignals::from_value(&doc).expect("valid extended signals")
}

fn main() {
    let visitors: u64 = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("a number of visitors"))
        .unwrap_or(50_000);
    let with_extended = std::env::args().nth(2).as_deref() == Some("extended");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let store = MemoryVisitorStore::new(Retention::default())
        .with_max_visitors(visitors as usize)
        .expect("a capacity in range");
    let before = resident_bytes();
    runtime.block_on(async {
        for n in 0..visitors {
            let id = VisitorId::generate();
            let payload = payload(n);
            let mut observation =
                Observation::normalize(&payload.signals, payload.behavior.as_ref());
            observation.extended = with_extended.then(|| extended(n));
            store.create_visitor(&id, n as i64).await.expect("created");
            store
                .save_observation(&id, &observation, n as i64)
                .await
                .expect("saved");
        }
    });
    let after = resident_bytes();
    let per_visitor = (after.saturating_sub(before)) as f64 / visitors as f64;
    println!(
        "{visitors} visitors, one observation each{}: resident {:.1} MiB -> {:.1} MiB, {per_visitor:.0} bytes per visitor",
        if with_extended { " with extended signals" } else { "" },
        before as f64 / 1048576.0,
        after as f64 / 1048576.0
    );
    assert_eq!(store.visitor_count() as u64, visitors);
}
