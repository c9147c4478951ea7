//! The suite's case on what a candidate lookup row carries: a store may ship only the compared part of an
//! observation, and then it must rank exactly as the whole observation does, whatever its strings hold.

use std::sync::Arc;

use super::super::{visitor, Fresh, T0};
use crate::identification::candidates::{probes_for, rank_lookup_rows, LookupRow};
use crate::identification::config::Retention;
use crate::identification::observation::{
    Automation, Graphics, Hardware, Observation, Screen, Size,
};
use crate::identification::similarity::compare;
use crate::identification::store::VisitorStore;

/// Platform and browser every observation of the case shares, so the platform + browser probe finds them all.
/// Separators, quotes, a backslash and non-ASCII letters: a compact row format must not split or unescape them.
const PLATFORM: &str = "ma,c:o|s \"1\" \\ {x}";
const BROWSER: &str = "chröme\u{1F600}-";

fn current() -> Observation {
    Observation {
        platform: Some(PLATFORM.into()),
        browser: Some(BROWSER.into()),
        languages: Some(vec!["en,".into(), "he".into()]),
        timezone: Some("Asia/\"Q\":1,-".into()),
        screen: Some(Screen {
            width: Some(900.0),
            height: Some(1440.0),
            ..Screen::default()
        }),
        viewport: Some(Size {
            width: Some(0.1 + 0.2),
            height: Some(700.0),
        }),
        hardware: Some(Hardware {
            hardware_concurrency: Some(8.0),
            device_memory: Some(1.7976931348623157e308),
            max_touch_points: Some(0.0),
        }),
        automation: Some(Automation {
            webdriver: Some(false),
        }),
        graphics: Some(Graphics {
            webgl_vendor: Some("".into()),
            webgl_renderer: Some("r:3:x\n\t\u{00e9}".into()),
        }),
        ..Observation::default()
    }
}

/// Stored observations: the current one with the fields that no comparison reads, and variants with odd
/// strings, extreme numbers, empty values and absent fields.
fn stored() -> Vec<Observation> {
    let mut whole = current();
    whole.user_agent = Some("Mozilla/5.0 \"quoted\" ,:|".into());
    whole.screen.as_mut().expect("screen").pixel_ratio = Some(2.625);
    whole.screen.as_mut().expect("screen").color_depth = Some(24.0);
    let mut joined = current();
    // Joined with commas this equals the current languages ("en,,he" against "en,,he").
    joined.languages = Some(vec!["en".into(), "".into(), "he".into()]);
    joined.timezone = Some("".into());
    joined.viewport = Some(Size {
        width: Some(5e-324),
        height: Some(1e21),
    });
    let mut unicode = current();
    unicode.languages = Some(vec![]);
    unicode.graphics = Some(Graphics {
        webgl_vendor: Some("-".into()),
        webgl_renderer: Some("\u{FEFF}ΑΒΓ 日本 \u{10FFFF}".into()),
    });
    unicode.automation = Some(Automation {
        webdriver: Some(true),
    });
    let partial = Observation {
        platform: Some(PLATFORM.into()),
        browser: Some(BROWSER.into()),
        screen: Some(Screen {
            width: Some(900.0),
            ..Screen::default()
        }),
        hardware: Some(Hardware {
            max_touch_points: Some(5.0),
            ..Hardware::default()
        }),
        graphics: Some(Graphics {
            webgl_vendor: Some("v".into()),
            webgl_renderer: None,
        }),
        ..Observation::default()
    };
    let bare = Observation {
        platform: Some(PLATFORM.into()),
        browser: Some(BROWSER.into()),
        ..Observation::default()
    };
    vec![whole, joined, unicode, partial, bare]
}

/// Case: Candidate rows rank as the whole observations do.
pub async fn lookup_rows_rank_as_observations(fresh: impl Fresh<Retention, Store: VisitorStore>) {
    let store = &fresh.store(Retention::default()).await;
    let saved = stored();
    for (i, o) in saved.iter().enumerate() {
        let v = visitor(i as u64 + 1);
        store.create_visitor(&v, T0).await.expect("create");
        store
            .save_observation(&v, o, T0 + i as i64)
            .await
            .expect("save");
    }
    let current = current();
    let rows = store
        .find_candidate_rows(&probes_for(&current), T0 + 100)
        .await
        .expect("lookup");
    let whole_of = |row: &LookupRow| {
        let i = (1..=saved.len() as u64)
            .position(|n| visitor(n) == row.visitor_id)
            .expect("a row of a saved visitor");
        &saved[i]
    };
    for row in &rows {
        let whole = whole_of(row);
        assert_eq!(
            compare(&row.observation, &current),
            compare(whole, &current),
            "lookup_rows_rank_as_observations: {whole:?}"
        );
        assert_eq!(
            compare(&current, &row.observation),
            compare(&current, whole),
            "lookup_rows_rank_as_observations (reversed): {whole:?}"
        );
    }
    let mut found: Vec<_> = rows.iter().map(|r| r.visitor_id.clone()).collect();
    found.sort();
    found.dedup();
    assert_eq!(found.len(), saved.len(), "every saved visitor is a row");
    let wholes: Vec<LookupRow> = rows
        .iter()
        .map(|row| LookupRow {
            observation: Arc::new(whole_of(row).clone()),
            ..row.clone()
        })
        .collect();
    let ranked = rank_lookup_rows(&rows, &current, 10);
    assert_eq!(ranked, rank_lookup_rows(&wholes, &current, 10));
    assert!(
        ranked.len() >= 2,
        "the whole and the joined-languages copies qualify: {ranked:?}"
    );
}
