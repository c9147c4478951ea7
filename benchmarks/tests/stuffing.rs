//! The sign-in defence benchmark at a small size on the committed CI population (1,000 devices with their
//! networks), on the memory stores: the undefended site loses accounts and locks owners out, the defended one
//! does neither, and owners pay for it with no refusal.

use std::path::Path;

use janitor_benchmarks::accuracy::log;
use janitor_benchmarks::stuffing::attack::Scenario;
use janitor_benchmarks::stuffing::report::Row;
use janitor_benchmarks::stuffing::{population, run, Options};

async fn rows(scenarios: Vec<Scenario>, days: i64) -> Vec<Row> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("accuracy/ci-extended/visits.jsonl.gz");
    let visits = log::read(&path).unwrap();
    let population = population::build(&visits, 1_000, days, 7).unwrap();
    let options = Options {
        accounts: 1_000,
        days,
        seed: 7,
        memory: true,
        postgres: false,
        scenarios,
        compare_algorithms: false,
    };
    run(&population, &options, "test".to_owned()).await.rows
}

fn row<'a>(rows: &'a [Row], scenario: &str, defence: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.scenario == scenario && r.defence == defence)
        .unwrap_or_else(|| panic!("no row {scenario} {defence}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_defence_stops_stuffing_and_lockout_abuse_at_no_cost_to_owners() {
    let rows = rows(vec![Scenario::OneNetwork, Scenario::LockoutAbuse], 4).await;
    let (off, on) = (
        row(&rows, "one_network", "off"),
        row(&rows, "one_network", "on"),
    );
    // Undefended, every pair is checked and every valid one taken.
    assert_eq!(off.attacker.checked, off.attacker.attempts);
    assert_eq!(off.attacker.compromised, 10, "1% of 1,000 pairs");
    assert!(on.attacker.checked * 10 < off.attacker.checked, "{on:?}");
    assert!(on.attacker.compromised < off.attacker.compromised, "{on:?}");
    let (off, on) = (
        row(&rows, "lockout_abuse", "off"),
        row(&rows, "lockout_abuse", "on"),
    );
    // Undefended, the abuser keeps the accounts locked: their owners are refused, whatever their browser.
    assert!(off.owners.refused > 0, "{off:?}");
    assert_eq!(off.attacker.checked, off.attacker.attempts, "{off:?}");
    assert_eq!((on.owners.locked_out, on.owners.refused), (0, 0), "{on:?}");
    for row in &rows {
        assert_eq!(row.owners.errors, 0, "{row:?}");
        if row.defence == "on" {
            assert_eq!(row.owners.refused, 0, "{row:?}");
            assert!(row.owners_challenged_share <= 0.02, "{row:?}");
        }
        let o = row.owners;
        assert_eq!(
            o.signed_in + o.refused + o.challenged + o.errors,
            o.sign_ins,
            "{row:?}"
        );
    }
}
