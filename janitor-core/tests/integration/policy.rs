//! The matching policies end to end on the in-memory store: what the precise policy refuses that the reference
//! restores, what it still restores, and the candidate it lets win by dropping an impossible rival.

use janitor_core::identification::policy::MatchingPolicy;
use janitor_core::identification::store::VisitWrite;
use janitor_core::testing::{mac_document, T0};
use janitor_core::{
    Engine, EngineConfig, MemoryVisitorStore, Observation, Retention, VisitorId, VisitorPayload,
    VisitorStore,
};
use serde_json::{json, Value};

fn engine(policy: MatchingPolicy) -> Engine<MemoryVisitorStore> {
    let config = EngineConfig::builder().policy(policy).build().unwrap();
    Engine::new(MemoryVisitorStore::new(Retention::default()), config)
}

fn payload(doc: &Value) -> VisitorPayload {
    VisitorPayload::from_value(doc).expect("valid payload")
}

/// `doc` with the signal at `path` (slash-separated) set to `value`.
fn with(doc: &Value, path: &str, value: Value) -> Value {
    let mut doc = doc.clone();
    let mut slot = &mut doc["signals"];
    for key in path.split('/') {
        slot = &mut slot[key];
    }
    *slot = value;
    doc
}

fn android() -> Value {
    json!({"signals": {
        "userAgent": "Mozilla/5.0 (Linux; Android 10; K) AppleWebKit/537.36 Chrome/147.0.0.0 Mobile Safari/537.36",
        "platform": "Linux armv81",
        "languages": ["en-US"],
        "timezone": "America/Chicago",
        "screen": {"width": 412, "height": 915},
        "viewport": {"width": 412, "height": 800},
        "hardware": {"hardwareConcurrency": 8, "deviceMemory": 8, "maxTouchPoints": 5},
        "graphics": {"webglVendor": "Qualcomm", "webglRenderer": "Adreno (TM) 640"}
    }})
}

fn iphone() -> Value {
    json!({"signals": {
        "userAgent": "Mozilla/5.0 (iPhone; CPU iPhone OS 18_7 like Mac OS X) Version/26.3 Mobile/15E148 Safari/604.1",
        "platform": "iPhone",
        "languages": ["en-GB", "en"],
        "timezone": "Europe/London",
        "screen": {"width": 390, "height": 844},
        "viewport": {"width": 390, "height": 698},
        "hardware": {"hardwareConcurrency": 4, "maxTouchPoints": 5},
        "graphics": {"webglVendor": "Apple Inc.", "webglRenderer": "Apple GPU"}
    }})
}

/// Whether `policy` restores the first visit's id for a cookieless `second` visit a day later.
async fn restores(policy: MatchingPolicy, first: &Value, second: &Value) -> bool {
    let engine = engine(policy);
    let minted = engine.identify_at(&payload(first), None, T0).await.unwrap();
    let again = engine
        .identify_at(&payload(second), None, T0 + 86_400_000)
        .await
        .unwrap();
    let restored = again.identity.visitor_id == minted.identity.visitor_id;
    assert_eq!(restored, again.identity.is_returning, "{policy}");
    restored
}

/// Restored by `reference`, refused by `precise`, for each `(what changed, second visit)`.
async fn only_the_reference_restores(first: &Value, cases: &[(&str, Value)]) {
    for (what, second) in cases {
        assert!(
            restores(MatchingPolicy::Reference, first, second).await,
            "reference, {what}"
        );
        assert!(
            !restores(MatchingPolicy::Precise, first, second).await,
            "precise, {what}"
        );
    }
}

#[tokio::test]
async fn both_policies_restore_a_device_that_updated_and_moved_its_window() {
    let mac = mac_document();
    let newer = with(
        &mac,
        "userAgent",
        json!("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/131.0.0.0 Safari/537.36"),
    );
    let moved = with(&newer, "viewport", json!({"width": 1000, "height": 700}));
    // A laptop on an external monitor: a desktop's screen is not its hardware.
    let docked = with(&mac, "screen", json!({"width": 1920, "height": 1080}));
    for second in [&mac, &moved, &docked] {
        for policy in MatchingPolicy::ALL {
            assert!(restores(policy, &mac, second).await, "{policy}");
        }
    }
    let phone = android();
    let bar = with(&phone, "viewport", json!({"width": 412, "height": 744}));
    for policy in MatchingPolicy::ALL {
        assert!(restores(policy, &phone, &bar).await, "{policy}");
    }
}

#[tokio::test]
async fn a_hardware_change_is_another_device() {
    let mac = mac_document();
    only_the_reference_restores(
        &mac,
        &[
            ("memory", with(&mac, "hardware/deviceMemory", json!(4))),
            (
                "cores",
                with(&mac, "hardware/hardwareConcurrency", json!(4)),
            ),
            ("touch", with(&mac, "hardware/maxTouchPoints", json!(1))),
            (
                "vendor",
                with(&mac, "graphics/webglVendor", json!("Intel Inc.")),
            ),
        ],
    )
    .await;
    // A phone's screen is its own: a different size is a different phone (each score is still ≥ 0.9).
    let phone = android();
    only_the_reference_restores(
        &phone,
        &[(
            "phone screen",
            with(&phone, "screen", json!({"width": 384, "height": 854})),
        )],
    )
    .await;
}

#[tokio::test]
async fn a_locale_change_is_not_restored() {
    let mac = mac_document();
    only_the_reference_restores(
        &mac,
        &[
            ("timezone", with(&mac, "timezone", json!("Europe/London"))),
            ("languages", with(&mac, "languages", json!(["en-US"]))),
        ],
    )
    .await;
}

#[tokio::test]
async fn an_older_user_agent_is_another_browser() {
    let mac = mac_document();
    let older = with(
        &mac,
        "userAgent",
        json!("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/129.0.0.0 Safari/537.36"),
    );
    only_the_reference_restores(&mac, &[("older user agent", older)]).await;
}

#[tokio::test]
async fn a_browser_that_hides_its_gpu_is_never_restored_without_a_cookie() {
    let phone = iphone();
    only_the_reference_restores(&phone, &[("identical iPhone", phone.clone())]).await;
}

#[tokio::test]
async fn an_impossible_rival_no_longer_blocks_the_real_device() {
    // Two Macs identical on every compared feature; the second already runs a newer browser. The reference sees
    // two equal candidates and restores neither; the precise policy knows that the visit's older browser cannot
    // be the second Mac, and restores the first.
    let mac = mac_document();
    let updated = with(
        &mac,
        "userAgent",
        json!("Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/131.0.0.0 Safari/537.36"),
    );
    for (policy, restored) in [
        (MatchingPolicy::Reference, false),
        (MatchingPolicy::Precise, true),
    ] {
        let engine = engine(policy);
        let first = engine.identify_at(&payload(&mac), None, T0).await.unwrap();
        let other = VisitorId::generate();
        let observation = Observation::normalize(&payload(&updated).signals, None);
        let write = VisitWrite {
            visitor: &other,
            create: true,
            observation: Some(&observation),
            now_ms: T0 + 1,
        };
        engine.store().record_visit(write).await.unwrap();
        let again = engine
            .identify_at(&payload(&mac), None, T0 + 2)
            .await
            .unwrap();
        assert_eq!(again.metrics.candidate_count, 2, "{policy}");
        assert_eq!(
            again.identity.visitor_id == first.identity.visitor_id,
            restored,
            "{policy}"
        );
        assert_ne!(again.identity.visitor_id, other, "{policy}");
    }
}
