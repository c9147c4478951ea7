//! The replica measurement at its smallest: two real clusters, a small population, four one-second rounds;
//! the standby serves lookups only in the replica rounds, and both clusters are removed afterwards.

use janitor_benchmarks::capacity::replica;

#[test]
fn the_replica_rounds_read_the_standby_only_when_asked() {
    let report = replica::run(20_000, 1).expect("a replica run");
    let sides: Vec<bool> = report.rounds.iter().map(|r| r.with_replica).collect();
    assert_eq!(sides, [false, true, true, false]);
    for round in &report.rounds {
        assert!(
            round.identifications > 0 && round.primary_cpu_ms > 0.0,
            "{round:?}"
        );
        if round.with_replica {
            // Lookups that start while the first lag reading is being taken read the primary.
            assert!(
                round.standby_statements * 2 > round.identifications,
                "{round:?}"
            );
        } else {
            assert_eq!(round.standby_statements, 0, "{round:?}");
        }
    }
    assert!(report.primary_cpu_ratio > 0.0 && report.throughput_ratio > 0.0);
    let left: Vec<_> = std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("janitor-replica-{}", std::process::id()))
        })
        .collect();
    assert!(left.is_empty(), "the clusters' directories are removed");
}
