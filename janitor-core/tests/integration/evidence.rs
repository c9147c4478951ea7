//! Application evidence on the memory store: strict input rules bound by bound, and the
//! labels and records that cross languages.

use janitor_core::evidence::{
    Action, DeviceLinkInput, EventInput, EventType, Evidence, EvidenceConfig, MemoryEvidenceStore,
    SubjectId, VerificationInput, VerificationMethod,
};
use janitor_core::{LabelKey, VisitorId};
use serde_json::{json, Value};

fn subject() -> String {
    format!("sub_{}", "ab".repeat(32))
}

fn visitor() -> String {
    format!("vis_{}", "c".repeat(48))
}

fn valid() -> Value {
    json!({
        "id": "evt-1", "type": "login-failure", "action": "sign-in",
        "subjectId": subject(), "sessionId": "sess-1", "actorId": subject(), "visitorId": visitor()
    })
}

/// The field an event document is refused for.
fn refused(doc: Value) -> String {
    match EventInput::from_json(&doc) {
        Ok(input) => panic!("accepted {doc}: {input:?}"),
        Err(err) => {
            assert!(!err.problem.is_empty());
            err.field
        }
    }
}

fn with(key: &str, value: Value) -> Value {
    let mut doc = valid();
    doc[key] = value;
    doc
}

fn without(keys: &[&str]) -> Value {
    let mut doc = valid();
    for key in keys {
        doc.as_object_mut().unwrap().remove(*key);
    }
    doc
}

#[test]
fn a_complete_event_reads() {
    let input = EventInput::from_json(&valid()).unwrap();
    assert_eq!(input.id(), "evt-1");
    assert_eq!(input.event_type(), EventType::LoginFailure);
    assert_eq!(input.action(), Some(Action::SignIn));
    assert_eq!(input.session(), Some("sess-1"));
    assert_eq!(
        input.visitor().map(VisitorId::as_str),
        Some(visitor().as_str())
    );
    let minimal = EventInput::from_json(&json!({"id": "x", "type": "read-nothing"}));
    assert_eq!(minimal.unwrap_err().field, "type");
}

#[test]
fn event_id_bounds_after_trimming() {
    assert_eq!(refused(with("id", json!(""))), "id");
    assert_eq!(refused(with("id", json!(" \t\u{FEFF} "))), "id");
    let one = EventInput::from_json(&with("id", json!("a"))).unwrap();
    assert_eq!(one.id(), "a");
    let full = "i".repeat(256);
    assert_eq!(
        EventInput::from_json(&with("id", json!(full)))
            .unwrap()
            .id(),
        full
    );
    let padded = format!("  {full}\n");
    assert_eq!(
        EventInput::from_json(&with("id", json!(padded)))
            .unwrap()
            .id(),
        full
    );
    assert_eq!(refused(with("id", json!("i".repeat(257)))), "id");
    // Lengths are UTF-16 code units: 128 emoji fit, 128 emoji and a letter do not.
    assert!(EventInput::from_json(&with("id", json!("😀".repeat(128)))).is_ok());
    assert_eq!(
        refused(with("id", json!(format!("{}a", "😀".repeat(128))))),
        "id"
    );
    assert_eq!(refused(without(&["id"])), "id");
    assert_eq!(refused(with("id", json!(7))), "id");
}

#[test]
fn session_id_bounds() {
    let s256 = "s".repeat(256);
    assert_eq!(
        EventInput::from_json(&with("sessionId", json!(s256)))
            .unwrap()
            .session(),
        Some(s256.as_str())
    );
    assert_eq!(
        refused(with("sessionId", json!("s".repeat(257)))),
        "sessionId"
    );
    assert_eq!(refused(with("sessionId", json!("   "))), "sessionId");
    assert!(EventInput::from_json(&with("sessionId", json!("s"))).is_ok());
}

#[test]
fn subject_actor_and_visitor_formats() {
    let bad_subjects = [
        json!(format!("sub_{}", "a".repeat(63))),
        json!(format!("sub_{}", "a".repeat(65))),
        json!(format!("sub_{}", "A".repeat(64))),
        json!(format!("dev_{}", "a".repeat(64))),
        json!(format!("sub_{}g", "a".repeat(63))),
        json!(format!(" sub_{}", "a".repeat(64))),
        json!("account-123"),
        json!(""),
        json!(null),
        json!(5),
    ];
    for bad in &bad_subjects {
        assert_eq!(
            refused(with("subjectId", bad.clone())),
            "subjectId",
            "{bad}"
        );
        assert_eq!(refused(with("actorId", bad.clone())), "actorId", "{bad}");
    }
    let bad_visitors = [
        json!(format!("vis_{}", "c".repeat(47))),
        json!(format!("vis_{}", "c".repeat(49))),
        json!(format!("vis_{}", "C".repeat(48))),
        json!(format!("sub_{}", "c".repeat(48))),
        json!(null),
    ];
    for bad in &bad_visitors {
        assert_eq!(
            refused(with("visitorId", bad.clone())),
            "visitorId",
            "{bad}"
        );
    }
}

#[test]
fn types_actions_and_unknown_keys() {
    for name in janitor_core::evidence::EVENT_TYPES {
        assert!(
            EventInput::from_json(&with("type", json!(name))).is_ok(),
            "{name}"
        );
    }
    for name in janitor_core::evidence::ACTIONS {
        assert!(
            EventInput::from_json(&with("action", json!(name))).is_ok(),
            "{name}"
        );
    }
    assert_eq!(refused(with("type", json!("login"))), "type");
    assert_eq!(refused(without(&["type"])), "type");
    assert_eq!(refused(with("action", json!("delete"))), "action");
    assert_eq!(refused(with("action", json!(null))), "action");
    // No client timestamps, nothing else either.
    assert_eq!(refused(with("occurredAt", json!(1))), "occurredAt");
    assert_eq!(refused(with("expiresAt", json!(1))), "expiresAt");
    assert_eq!(refused(with("extra", json!("x"))), "extra");
    assert_eq!(refused(json!("evt")), "$");
    assert_eq!(refused(json!([valid()])), "$");
}

#[test]
fn one_of_subject_session_or_actor_is_required() {
    let field = "subjectId|sessionId|actorId";
    assert_eq!(
        refused(without(&["subjectId", "sessionId", "actorId"])),
        field
    );
    for keep in ["subjectId", "sessionId", "actorId"] {
        let others: Vec<&str> = ["subjectId", "sessionId", "actorId"]
            .into_iter()
            .filter(|k| *k != keep)
            .collect();
        assert!(
            EventInput::from_json(&without(&others)).is_ok(),
            "{keep} alone"
        );
    }
    let built = EventInput::builder("x", EventType::LoginAttempt)
        .visitor(VisitorId::parse(&visitor()).unwrap())
        .build();
    assert_eq!(built.unwrap_err().field, field);
}

#[test]
fn the_typed_builder_applies_the_same_rules() {
    let subject = SubjectId::parse(&subject()).unwrap();
    let ok = EventInput::builder(" id ", EventType::LoginAttempt)
        .subject(subject.clone())
        .build()
        .unwrap();
    assert_eq!(ok.id(), "id");
    let long = EventInput::builder(&"x".repeat(257), EventType::LoginAttempt)
        .subject(subject.clone())
        .build();
    assert_eq!(long.unwrap_err().field, "id");
    let session = EventInput::builder("id", EventType::LoginAttempt)
        .session(&"s".repeat(257))
        .build();
    assert_eq!(session.unwrap_err().field, "sessionId");
}

/// The published label vectors (`contract/conformance.json`, `evidenceLabels`) through the service.
#[test]
fn scope_and_session_labels_match_the_published_vectors() {
    let key = LabelKey::new(&"a".repeat(64), "fixture").unwrap();
    let evidence = Evidence::new(MemoryEvidenceStore::new(), key, EvidenceConfig::default());
    assert_eq!(
        evidence.scope(),
        "sub_71ba7f4d250df8969ed0c893619d01e7775a27b7e7c3602ffd7efdac8c4eb743"
    );
    assert_eq!(
        evidence.session_label("session-123"),
        "sub_359fd514c12de9aa2939cfda65ff6fc9aa3507525e333c92bbb1ca75e3d4e79b"
    );
    assert_eq!(
        evidence.subject_id("account-123").as_str(),
        "sub_ad5468c55bdc5ad66c5b0160c848079f3ca136d38735fd47687e0bb0c9f5dcd1"
    );
}

/// Evidence on the memory store under the key of the reference records, and that key.
fn app_evidence() -> (LabelKey, Evidence<MemoryEvidenceStore>) {
    let key = LabelKey::new(&"k".repeat(40), "app").unwrap();
    let evidence = Evidence::new(
        MemoryEvidenceStore::new(),
        key.clone(),
        EvidenceConfig::default(),
    )
    .with_clock(janitor_core::Clock::manual(0));
    (key, evidence)
}

#[test]
fn the_event_record_holds_labels_and_the_reference_digest() {
    let (key, evidence) = app_evidence();
    let subject = evidence.subject_id("acct-raw-123");
    let input = EventInput::builder(" evt-raw-789 ", EventType::LoginFailure)
        .subject(subject.clone())
        .session("sess-raw-456")
        .build()
        .unwrap();
    let now = 1_735_689_600_000_i64;
    let record = evidence.event_record(&input, now);
    let label =
        |purpose: &str, value: &str| key.label(&format!(r#"["evidence-v1","{purpose}",{value}]"#));
    assert_eq!(record.id, label("event", r#""evt-raw-789""#));
    assert_eq!(
        record.session_id.as_deref(),
        Some(label("session", r#""sess-raw-456""#).as_str())
    );
    assert_eq!(record.scope, label("scope", r#""application""#));
    // [type, action, subject, session (raw, trimmed), actor, visitor], absent ones null.
    let digest_value = format!(
        r#"["login-failure",null,"{}","sess-raw-456",null,null]"#,
        subject.as_str()
    );
    assert_eq!(record.digest, label("event-payload", &digest_value));
    assert_eq!(record.occurred_at, now);
    assert_eq!(record.expires_at, now + 7 * 86_400_000);
    let stored = serde_json::to_value(&record).unwrap();
    let mut keys: Vec<&str> = stored
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "digest",
            "expiresAt",
            "id",
            "occurredAt",
            "scope",
            "sessionId",
            "subjectId",
            "type"
        ]
    );
    let text = stored.to_string();
    for raw in ["acct-raw-123", "sess-raw-456", "evt-raw-789"] {
        assert!(!text.contains(raw), "{raw} in {text}");
    }
}

#[tokio::test]
async fn the_device_link_record_matches_the_reference_layout() {
    let (key, evidence) = app_evidence();
    let subject = evidence.subject_id("acct-raw-123");
    let visitor = VisitorId::parse(&visitor()).unwrap();
    let now = 1_735_689_600_000_i64;
    let input = DeviceLinkInput {
        subject: subject.clone(),
        visitor: visitor.clone(),
        verification: VerificationInput {
            method: VerificationMethod::EmailLink,
            issuer: "auth".into(),
            event_id: "proof-raw".into(),
            verified_at: now - 10,
        },
        expires_at: now + 1000,
    };
    let link = evidence.at(now).link(&input).await.unwrap();
    let proof = key.label(r#"["evidence-v1","verification",["auth","proof-raw"]]"#);
    assert_eq!(link.verification.event_id, proof);
    assert_eq!(link.id.as_str(), proof.replacen("sub_", "dev_", 1));
    let digest_value = format!(
        r#"["evidence-v1","device-payload",["{}","{}","email-link",{},{}]]"#,
        subject.as_str(),
        visitor.as_str(),
        now - 10,
        now + 1000
    );
    assert_eq!(link.digest, key.label(&digest_value));
    let json = serde_json::to_value(&link).unwrap();
    assert_eq!(
        json["verification"],
        json!({"method": "email-link", "issuer": "auth", "eventId": proof, "verifiedAt": now - 10})
    );
    assert_eq!(json["createdAt"], json!(now));
    assert_eq!(json["expiresAt"], json!(now + 1000));
    assert!(json.get("revocation").is_none());
    assert!(!json.to_string().contains("proof-raw"));
    let back: janitor_core::evidence::DeviceLink = serde_json::from_value(json).unwrap();
    assert_eq!(back, link);
}
