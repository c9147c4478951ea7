use super::*;
use AutomationReason as R;

fn payload(json: serde_json::Value) -> VisitorPayload {
    VisitorPayload::from_slice(json.to_string().as_bytes()).unwrap()
}

fn verdict(reasons: &[AutomationReason]) -> AutomationVerdict {
    Automation::from_reasons(reasons.to_vec()).verdict()
}

#[test]
fn points_add_up_to_the_verdict_at_each_threshold() {
    assert_eq!(verdict(&[]), AutomationVerdict::Human);
    assert_eq!(verdict(&[R::SoftwareRenderer]), AutomationVerdict::Human);
    assert_eq!(
        verdict(&[R::SoftwareRenderer, R::NoWindowFrame]),
        AutomationVerdict::Suspected
    );
    assert_eq!(verdict(&[R::NoPointer]), AutomationVerdict::Suspected);
    // Three points: still suspected; four: automated.
    assert_eq!(
        verdict(&[R::NoPointer, R::SoftwareRenderer]),
        AutomationVerdict::Suspected
    );
    assert_eq!(
        verdict(&[R::NoPointer, R::SoftwareRenderer, R::PluginsEmpty]),
        AutomationVerdict::Automated
    );
    assert_eq!(
        verdict(&[R::NoPointer, R::WorkerMismatch]),
        AutomationVerdict::Automated
    );
    assert_eq!(verdict(&[R::Webdriver]), AutomationVerdict::Automated);
    // A reason counts once however many sources report it.
    assert_eq!(
        verdict(&[R::NoPointer, R::NoPointer]),
        AutomationVerdict::Suspected
    );
}

#[test]
fn every_reason_has_a_stable_distinct_name() {
    let mut names: Vec<&str> = AutomationReason::ALL.iter().map(|r| r.as_str()).collect();
    assert!(names
        .iter()
        .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase() || c == '_')));
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), AutomationReason::ALL.len());
}

#[test]
fn each_evidence_field_maps_to_its_reason() {
    let cases = [
        (r#"{"webdriver":true}"#, R::Webdriver),
        (r#"{"driverGlobals":1}"#, R::DriverGlobals),
        (r#"{"headless":true}"#, R::Headless),
        (r#"{"workerMismatch":true}"#, R::WorkerMismatch),
        (r#"{"emptyVersionList":true}"#, R::UserAgentOverride),
        (r#"{"noPointer":true}"#, R::NoPointer),
        (r#"{"permissionsMismatch":true}"#, R::PermissionsMismatch),
        (r#"{"untrustedInput":1}"#, R::UntrustedInput),
        (r#"{"noFrame":true}"#, R::NoWindowFrame),
        (r#"{"windowOverScreen":true}"#, R::WindowOverScreen),
        (r#"{"pluginsEmpty":true}"#, R::PluginsEmpty),
        (r#"{"chromeMissing":true}"#, R::ChromeMissing),
    ];
    for (json, reason) in cases {
        let evidence = AutomationEvidence::from_slice(json.as_bytes()).unwrap();
        let input = AutomationInput {
            evidence: Some(&evidence),
            ..AutomationInput::default()
        };
        assert_eq!(assess(&input).reasons(), [reason], "{json}");
    }
    // The clean values fire nothing.
    let clean = br#"{"webdriver":false,"driverGlobals":0,"headless":false,"workerMismatch":false,
        "emptyVersionList":false,"noPointer":false,"pluginsEmpty":false,"chromeMissing":false,
        "noFrame":false,"windowOverScreen":false,"permissionsMismatch":false,"untrustedInput":0}"#;
    let evidence = AutomationEvidence::from_slice(clean).unwrap();
    let input = AutomationInput {
        evidence: Some(&evidence),
        ..AutomationInput::default()
    };
    assert_eq!(assess(&input).verdict(), AutomationVerdict::Human);
    assert!(assess(&input).reasons().is_empty());
}

#[test]
fn the_payloads_own_signals_are_read() {
    let driven = payload(serde_json::json!({"signals": {
        "automation": {"webdriver": true},
        "graphics": {"webglRenderer": "ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero)), SwiftShader driver)"},
        "languages": []
    }}));
    let input = AutomationInput {
        payload: Some(&driven),
        ..AutomationInput::default()
    };
    let found = assess(&input);
    assert_eq!(
        found.reasons(),
        [R::Webdriver, R::SoftwareRenderer, R::LanguagesEmpty]
    );
    assert_eq!(found.verdict(), AutomationVerdict::Automated);
    let person = payload(serde_json::json!({"signals": {
        "automation": {"webdriver": false},
        "graphics": {"webglRenderer": "ANGLE (Intel, Mesa Intel(R) UHD Graphics 620, OpenGL 4.6)"},
        "languages": ["en-US"]
    }}));
    let input = AutomationInput {
        payload: Some(&person),
        ..AutomationInput::default()
    };
    assert!(assess(&input).reasons().is_empty());
}

#[test]
fn a_form_submitted_without_any_input_event_only_counts_on_a_form() {
    let behavior = |keys: u64| {
        payload(serde_json::json!({"signals": {}, "behavior": {
            "pageAgeMs": 4000, "mouseMoveCount": 0, "pointerDownCount": 0, "keyDownCount": keys,
            "scrollCount": 0, "visibilityChangeCount": 0
        }}))
    };
    let untouched = behavior(0);
    let typed = behavior(1);
    let on = |payload: &VisitorPayload, form: bool| {
        let input = AutomationInput {
            payload: Some(payload),
            form,
            ..AutomationInput::default()
        };
        assess(&input).reasons().to_vec()
    };
    assert_eq!(on(&untouched, true), [R::NoInteraction]);
    assert_eq!(on(&untouched, false), []);
    assert_eq!(on(&typed, true), []);
}
