//! How much memory the in-memory visitor store takes per visitor, as a cookieless flood fills it: each visitor
//! with one observation of a realistic browser, made as the engine makes them. Prints the resident set size
//! before and after, and the bytes per visitor, read from `/proc/self/statm` (Linux).
//!
//! Run with: `cargo run --release -p janitor-core --example memory_per_visitor [visitors] [extended]
//! [observations=N] [largest] [bounded]` (default 50,000 visitors, the store's default capacity, one observation each).
//! `extended` gives each observation the extended client signals a Chrome on Windows sends when the application
//! enables them; `observations=N` gives each visitor N observations that differ (a browser whose signals change
//! between cookie visits; the store keeps the newest 10 by default); `largest` fills every string of the
//! payload to its bound (512 characters of user agent, 20 languages of 64, …), the most a hostile client can
//! make each observation weigh. The byte bound is lifted to measure, and kept (256 MiB) with `bounded`. It also
//! prints what the store counts its observations as (`MemoryVisitorStore::weight`), which must stay above
//! the memory they take for the byte bound to hold.

use janitor_core::identification::payload::ExtendedSignals;
use janitor_core::{
    MemoryVisitorStore, Observation, Retention, VisitorId, VisitorPayload, VisitorStore,
    DEFAULT_MAX_BYTES,
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

/// The largest payload the endpoint accepts for visitor `n`'s observation `k`: every string at its bound, each
/// different, so that nothing is shared between observations.
fn largest(n: u64, k: u64) -> VisitorPayload {
    let fill = |len: usize, tag: &str| {
        let head = format!("{tag}-{n}-{k}-");
        format!("{head}{}", "x".repeat(len - head.len()))
    };
    let languages: Vec<String> = (0..20).map(|i| fill(64, &format!("l{i}"))).collect();
    let doc = serde_json::json!({"signals": {
        "userAgent": fill(512, "ua"), "platform": fill(128, "p"), "languages": languages,
        "timezone": fill(128, "tz"),
        "screen": {"width": 1280, "height": 720, "colorDepth": 24, "pixelRatio": 1},
        "viewport": {"width": 1200, "height": 650},
        "hardware": {"hardwareConcurrency": 8, "deviceMemory": 8, "maxTouchPoints": 0},
        "graphics": {"webglVendor": fill(512, "v"), "webglRenderer": fill(512, "r")},
        "automation": {"webdriver": false}
    }});
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
    let args: Vec<String> = std::env::args().skip(1).collect();
    let visitors: u64 = args
        .first()
        .filter(|a| a.parse::<u64>().is_ok())
        .map_or(50_000, |n| n.parse().expect("a number of visitors"));
    let with_extended = args.iter().any(|a| a == "extended");
    let largest_payloads = args.iter().any(|a| a == "largest");
    let observations: u64 = args
        .iter()
        .find_map(|a| a.strip_prefix("observations="))
        .map_or(1, |n| n.parse().expect("observations=N, a number"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    // `bounded` keeps the default byte bound (256 MiB), to see it hold; otherwise it is lifted, to measure.
    let bounded = args.iter().any(|a| a == "bounded");
    let max_bytes = if bounded { DEFAULT_MAX_BYTES } else { 1 << 40 };
    let store = MemoryVisitorStore::new(Retention::default())
        .with_max_visitors(visitors as usize)
        .and_then(|store| store.with_max_bytes(max_bytes))
        .expect("a capacity in range");
    let before = resident_bytes();
    runtime.block_on(async {
        for n in 0..visitors {
            let id = VisitorId::generate();
            store.create_visitor(&id, n as i64).await.expect("created");
            for k in 0..observations {
                // Another browser version each time, so every observation is recorded, not refreshed.
                let payload = if largest_payloads {
                    largest(n, k)
                } else {
                    payload(n + k * 7)
                };
                let mut observation =
                    Observation::normalize(&payload.signals, payload.behavior.as_ref());
                observation.extended = with_extended.then(|| extended(n));
                let seen_at = (n * observations + k) as i64;
                store
                    .save_observation(&id, &observation, seen_at)
                    .await
                    .expect("saved");
            }
        }
    });
    let after = resident_bytes();
    let per_visitor = (after.saturating_sub(before)) as f64 / visitors as f64;
    let held = store.visitor_count() as u64;
    println!(
        "{visitors} visitors, {observations} observation(s) each{}{}{}: resident {:.1} MiB -> {:.1} MiB, \
         {per_visitor:.0} bytes per visitor; {held} visitors held, counted {:.1} MiB ({:.2} of the growth)",
        if largest_payloads { ", every string at its bound" } else { "" },
        if with_extended { ", with extended signals" } else { "" },
        if bounded { ", default byte bound" } else { "" },
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        store.weight() as f64 / 1048576.0,
        store.weight() as f64 / after.saturating_sub(before).max(1) as f64,
    );
    if !bounded {
        assert_eq!(held, visitors);
    }
}
