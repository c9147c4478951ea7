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
