//! The growth measurement at its smallest: 100,000 events on a cluster of its own, the oldest tenth cleaned
//! up in both step sizes, the vacuum, and the cluster removed afterwards.

use std::collections::BTreeMap;

use janitor_benchmarks::capacity::env::{CapacityEnv, Run};
use janitor_benchmarks::capacity::growth;

#[test]
fn the_growth_run_cleans_the_due_tenth_and_vacuums() {
    let env = CapacityEnv::from_vars(&BTreeMap::new(), Run::Single).unwrap();
    let report = growth::run(&env, 100_000).expect("a growth run");
    assert_eq!(report.events, 100_001, "the fixture and its API event");
    let due = report.cleanup_small_steps.deleted + report.cleanup_large_steps.deleted;
    assert!(
        (9_000..=11_000).contains(&due),
        "about a tenth is due: {due}"
    );
    // Fewer rows are due than the small steps stop at: they take them all, the large steps find none.
    assert_eq!(report.cleanup_small_steps.batch, 100);
    assert_eq!(report.cleanup_large_steps.deleted, 0);
    assert!(report.bytes.total > 0 && report.bytes_per_million.total > report.bytes.total);
    assert!(report.vacuum_seconds >= 0.0);
    let left = std::env::temp_dir().join(format!("janitor-growth-{}", std::process::id()));
    assert!(!left.exists(), "the cluster's directory is removed");
}
