//! A deterministic population of browsers, for plan tests and benchmarks.
//!
//! Browser `n` is a fixed, plausible device: the mix of platforms, browsers, screens, core counts, renderers and
//! timezones of a typical audience, drawn from `n` by a hash. Common devices collide on purpose, so the broad
//! probes (platform + browser, timezone + browser, screen + cores) hit crowded buckets as they do in
//! production, while a desktop's renderer and driver version with its timezone usually narrow it down. Apple
//! devices, whose renderer is masked, mostly stay ambiguous, as they are in reality.

use janitor_core::{Observation, VisitorId, VisitorPayload};
use serde_json::{json, Value};
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{Json, Type};

use crate::Database;

/// One device family: user agent, `navigator.platform`, screens, core counts and renderers it comes with.
struct Family {
    weight: u64,
    user_agent: &'static str,
    platform: &'static str,
    screens: &'static [(u32, u32, f64)],
    cores: &'static [u32],
    renderers: &'static [&'static str],
    touch: u32,
}

const FAMILIES: &[Family] = &[
    Family {
        weight: 45,
        user_agent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
        platform: "Win32",
        screens: &[(1920, 1080, 1.0), (1366, 768, 1.0), (1536, 864, 1.25), (2560, 1440, 1.0), (1440, 900, 1.0)],
        cores: &[4, 8, 12, 16, 6, 2],
        renderers: &[
            "ANGLE (Intel, Intel(R) UHD Graphics 620 Direct3D11 vs_5_0 ps_5_0, D3D11)",
            "ANGLE (NVIDIA, NVIDIA GeForce RTX 3060 Direct3D11 vs_5_0 ps_5_0, D3D11)",
            "ANGLE (AMD, AMD Radeon(TM) Graphics Direct3D11 vs_5_0 ps_5_0, D3D11)",
            "ANGLE (Intel, Intel(R) Iris(R) Xe Graphics Direct3D11 vs_5_0 ps_5_0, D3D11)",
            "ANGLE (NVIDIA, NVIDIA GeForce GTX 1650 Direct3D11 vs_5_0 ps_5_0, D3D11)",
        ],
        touch: 0,
    },
    Family {
        weight: 10,
        user_agent: "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0",
        platform: "Win32",
        screens: &[(1920, 1080, 1.0), (1366, 768, 1.0), (1536, 864, 1.25)],
        cores: &[4, 8, 12],
        renderers: &[
            "ANGLE (Intel, Intel(R) UHD Graphics 620 Direct3D11 vs_5_0 ps_5_0, D3D11)",
            "ANGLE (Intel, Intel(R) Iris(R) Xe Graphics Direct3D11 vs_5_0 ps_5_0, D3D11)",
        ],
        touch: 0,
    },
    Family {
        weight: 12,
        user_agent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15",
        platform: "MacIntel",
        screens: &[(1440, 900, 2.0), (1512, 982, 2.0), (1728, 1117, 2.0), (2560, 1440, 1.0)],
        cores: &[8, 10, 12],
        renderers: &["apple gpu"],
        touch: 0,
    },
    Family {
        weight: 10,
        user_agent: "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36",
        platform: "MacIntel",
        screens: &[(1440, 900, 2.0), (1512, 982, 2.0), (1728, 1117, 2.0)],
        cores: &[8, 10, 12],
        renderers: &[
            "ANGLE (Apple, ANGLE Metal Renderer: Apple M1, Unspecified Version)",
            "ANGLE (Apple, ANGLE Metal Renderer: Apple M2, Unspecified Version)",
            "ANGLE (Apple, ANGLE Metal Renderer: Apple M3 Pro, Unspecified Version)",
        ],
        touch: 0,
    },
    Family {
        weight: 10,
        user_agent: "Mozilla/5.0 (Linux; Android 14; K) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36",
        platform: "Linux armv81",
        screens: &[(412, 915, 2.625), (393, 873, 2.75), (360, 800, 3.0), (384, 854, 2.8125)],
        cores: &[8],
        renderers: &["Adreno (TM) 730", "Mali-G78", "Adreno (TM) 660", "Mali-G710"],
        touch: 5,
    },
    Family {
        weight: 8,
        user_agent: "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1",
        platform: "iPhone",
        screens: &[(390, 844, 3.0), (393, 852, 3.0), (430, 932, 3.0), (375, 667, 2.0)],
        cores: &[4, 6],
        renderers: &["apple gpu"],
        touch: 5,
    },
    Family {
        weight: 5,
        user_agent: "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0",
        platform: "Linux x86_64",
        screens: &[(1920, 1080, 1.0), (2560, 1440, 1.0)],
        cores: &[4, 8, 16],
        renderers: &["mesa intel(r) uhd graphics 620 (kbl gt2)", "amd radeon rx 6600 (radeonsi, navy_flounder)"],
        touch: 0,
    },
];

const TIMEZONES: &[&str] = &[
    "America/New_York",
    "America/Chicago",
    "America/Los_Angeles",
    "America/Denver",
    "America/Sao_Paulo",
    "America/Mexico_City",
    "America/Toronto",
    "Europe/London",
    "Europe/Berlin",
    "Europe/Paris",
    "Europe/Madrid",
    "Europe/Rome",
    "Europe/Amsterdam",
    "Europe/Warsaw",
    "Europe/Stockholm",
    "Europe/Istanbul",
    "Asia/Tokyo",
    "Asia/Seoul",
    "Asia/Shanghai",
    "Asia/Singapore",
    "Asia/Kolkata",
    "Asia/Dubai",
    "Asia/Jerusalem",
    "Asia/Jakarta",
    "Australia/Sydney",
    "Australia/Melbourne",
    "Pacific/Auckland",
    "Africa/Johannesburg",
    "Africa/Lagos",
    "Africa/Cairo",
];

const LANGUAGES: &[&[&str]] = &[
    &["en-US"],
    &["en-US", "en"],
    &["en-GB"],
    &["de-DE", "de", "en"],
    &["fr-FR"],
    &["es-ES", "es"],
    &["pt-BR"],
    &["ja-JP"],
    &["he-IL", "en-US"],
];

/// A 64-bit mix of `n` and `salt` (splitmix64): the same inputs always give the same browser.
fn draw(n: u64, salt: u64) -> u64 {
    let mut z = n
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(salt.wrapping_mul(0xBF58_476D_1CE4_E5B9));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn pick<T: Copy>(items: &[T], n: u64, salt: u64) -> T {
    items[(draw(n, salt) % items.len() as u64) as usize]
}

/// The id seeded for browser `n`.
pub fn visitor(n: u64) -> VisitorId {
    VisitorId::parse(&format!(
        "vis_{:048x}",
        draw(n, 0) as u128 * 0x1_0000_0000 + n as u128
    ))
    .expect("well-formed id")
}

/// Desktop and Android renderer strings carry a driver version, which is where most of their variety lies;
/// Apple's masked "apple gpu" carries none.
fn renderer(family: &Family, n: u64) -> String {
    let base = pick(family.renderers, n, 7);
    if base == "apple gpu" {
        base.to_owned()
    } else {
        format!("{base} driver 31.0.{}", draw(n, 12) % 40)
    }
}

/// The payload browser `n` sends, as JSON (`{signals}`).
pub fn payload_json(n: u64) -> Value {
    let total: u64 = FAMILIES.iter().map(|f| f.weight).sum();
    let mut roll = draw(n, 1) % total;
    let family = FAMILIES
        .iter()
        .find(|f| {
            if roll < f.weight {
                true
            } else {
                roll -= f.weight;
                false
            }
        })
        .expect("weights cover the roll");
    let (width, height, ratio) = pick(family.screens, n, 2);
    json!({
        "signals": {
            "userAgent": family.user_agent,
            "platform": family.platform,
            "languages": pick(LANGUAGES, n, 3),
            "timezone": pick(TIMEZONES, n, 4),
            "screen": {"width": width, "height": height, "colorDepth": 24, "pixelRatio": ratio},
            "viewport": {"width": width.saturating_sub(draw(n, 5) as u32 % 200), "height": height - 120},
            "hardware": {
                "hardwareConcurrency": pick(family.cores, n, 6),
                "deviceMemory": if family.touch > 0 { 4 } else { 8 },
                "maxTouchPoints": family.touch,
            },
            "graphics": {"webglVendor": "Google Inc.", "webglRenderer": renderer(family, n)},
            "automation": {"webdriver": false},
        },
    })
}

/// The parsed payload of browser `n`.
pub fn payload(n: u64) -> VisitorPayload {
    VisitorPayload::from_value(&payload_json(n)).expect("population payloads are valid")
}

/// The normalized observation of browser `n`.
pub fn observation(n: u64) -> Observation {
    let p = payload(n);
    Observation::normalize(&p.signals, p.behavior.as_ref())
}

/// Seeds browsers `1..=visitors`, each with `per_visitor` observations spread over the 60 days before
/// `now_ms` (the newest at most a day old), with `COPY`, browser after browser; then `ANALYZE`s.
pub async fn seed(database: &Database, visitors: u64, per_visitor: u64, now_ms: i64) {
    seed_with(
        database,
        &Seeding {
            browsers: 1..=visitors,
            per_visitor,
            now_ms,
            row_order: RowOrder::ByBrowser,
            analyze: true,
        },
    )
    .await;
}

/// The order in which [`seed_with`] writes observations, which decides how `seen_at` correlates with the
/// table's physical order, and so how PostgreSQL prices a scan in `seen_at` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOrder {
    /// Browser after browser: `seen_at` scattered over the table's pages.
    ByBrowser,
    /// Oldest first, as a live table grows: `seen_at` follows the pages.
    ByTime,
}

/// What [`seed_with`] writes.
#[derive(Debug, Clone)]
pub struct Seeding {
    /// The browsers seeded (`visitor(n)`, `observation(n)`).
    pub browsers: std::ops::RangeInclusive<u64>,
    /// Observations per browser, spread over the 60 days before `now_ms`, the newest at most a day old.
    pub per_visitor: u64,
    /// The clock the times count back from (ms).
    pub now_ms: i64,
    /// The order the rows are written in.
    pub row_order: RowOrder,
    /// Whether to `ANALYZE` both tables afterwards (not: statistics stay as they were, or were never gathered).
    pub analyze: bool,
}

impl Seeding {
    /// Browsers `browsers` written oldest first, two observations each, statistics left as they were: a live
    /// table growing, as the plan tests and the plan benchmark need it.
    pub fn oldest_first(browsers: std::ops::RangeInclusive<u64>, now_ms: i64) -> Seeding {
        Seeding {
            browsers,
            per_visitor: 2,
            now_ms,
            row_order: RowOrder::ByTime,
            analyze: false,
        }
    }
}

/// Seeds `seeding.browsers` with `COPY`, in one transaction.
pub async fn seed_with(database: &Database, seeding: &Seeding) {
    const HOUR: i64 = 3_600_000;
    let Seeding {
        browsers,
        per_visitor,
        now_ms,
        ..
    } = seeding.clone();
    let client = database.pool().get().await.expect("seeding connection");
    // One transaction, free of the pool's statement timeout: a large COPY takes longer than any identification.
    client
        .batch_execute("BEGIN; SET LOCAL statement_timeout = 0")
        .await
        .expect("BEGIN");
    let sink = client
        .copy_in("COPY visitors (id, created_at, last_seen_at) FROM STDIN BINARY")
        .await
        .expect("COPY visitors");
    let writer = BinaryCopyInWriter::new(sink, &[Type::TEXT, Type::INT8, Type::INT8]);
    tokio::pin!(writer);
    let newest = |n: u64| now_ms - (draw(n, 10) % 24) as i64 * HOUR;
    for n in browsers.clone() {
        let id = visitor(n);
        let created = now_ms - 60 * 24 * HOUR;
        writer
            .as_mut()
            .write(&[&id.as_str(), &created, &newest(n)])
            .await
            .expect("visitor row");
    }
    writer.finish().await.expect("COPY visitors ends");

    // (seen_at, browser): the rows, in the order they are written.
    let mut rows: Vec<(i64, u64)> = Vec::new();
    for n in browsers {
        // Evenly spaced back from the newest, the oldest within 58 days.
        let spacing = (draw(n, 11) as i64 % (58 * 24 / per_visitor.max(1) as i64) + 1) * HOUR;
        rows.extend((0..per_visitor).map(|k| (newest(n) - k as i64 * spacing, n)));
    }
    if seeding.row_order == RowOrder::ByTime {
        rows.sort_unstable();
    }
    let sink = client
        .copy_in(
            "COPY observations (visitor_id, seen_at, platform, browser, timezone, webgl_renderer, signals_json) \
             FROM STDIN BINARY",
        )
        .await
        .expect("COPY observations");
    let types = [
        Type::TEXT,
        Type::INT8,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::JSONB,
    ];
    let writer = BinaryCopyInWriter::new(sink, &types);
    tokio::pin!(writer);
    for (seen_at, n) in rows {
        let id = visitor(n);
        let o = observation(n);
        writer
            .as_mut()
            .write(&[
                &id.as_str(),
                &seen_at,
                &o.platform,
                &o.browser,
                &o.timezone,
                &o.webgl_renderer(),
                &Json(&o),
            ])
            .await
            .expect("observation row");
    }
    writer.finish().await.expect("COPY observations ends");
    client.batch_execute("COMMIT").await.expect("COMMIT");
    if seeding.analyze {
        client
            .batch_execute("ANALYZE visitors; ANALYZE observations")
            .await
            .expect("ANALYZE");
    }
}
