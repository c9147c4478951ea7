//! The public conformance file kept in the repository passes in full.

use std::path::Path;

use xtask::conformance::check_file;

#[test]
fn public_conformance_file_passes() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../janitor-core/contract/conformance.json");
    let report = check_file(&path).expect("the repository's conformance file is readable");
    assert!(
        report.failures.is_empty(),
        "failures:\n{}",
        report.failures.join("\n")
    );
    // 9 vectors × 5 checks + jev state and questions + 4 subjects + 4 protection + 4 evidence labels.
    assert_eq!(report.passed, 59);
    // `activity` and `activityLabel` are not checked, and say so.
    assert_eq!(report.notes.len(), 2, "{:?}", report.notes);
    assert!(report.notes.iter().all(|n| n.contains("section `activity")));
}

/// Key digests computed independently with the reference's documented rule (HMAC-SHA256 over
/// `JSON.stringify(["janitor-subject-v1", namespace, JSON.stringify(["identity-key-v1", type, issuer, value])])`
/// after trimming and lower-casing an email's domain) pass, and a wrong one fails with its case.
#[test]
fn identity_key_digests_pass() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/identity-keys.json");
    let report = check_file(&path).expect("readable");
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(report.passed, 1 + 5);
    assert!(report.notes.is_empty(), "{:?}", report.notes);
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    doc["identityKeys"][0]["value"] = "alice.smith@example.com".into();
    let report = xtask::conformance::check_document(&doc);
    assert_eq!(report.failures.len(), 1, "{:?}", report.failures);
    assert!(report.failures[0].starts_with("identityKeys[0]"));
}
