//! The shared inference budget's completions (`finish`): lease release, failures, the circuit's opening and
//! closing, probes and stale epochs, with every bound on either side.

use janitor_core::protection::budget::{
    BudgetConfig, BudgetDenial, BudgetRecord, CallOutcome, LeaseRecord,
};

use crate::budget_support::{admitted, config, lease, reserve, T0};

/// A record holding `held`, as of epoch `epoch`, with `failures` failures.
fn holding(held: Vec<LeaseRecord>, epoch: u64, failures: u64) -> BudgetRecord {
    let mut record = BudgetRecord::fresh(T0);
    record.used = 5;
    record.epoch = epoch;
    record.failures = failures;
    record.leases = held;
    record
}

#[test]
fn finishing_an_unknown_lease_writes_nothing() {
    let record = holding(vec![lease("a", T0 + 10, 0, false, 1)], 0, 0);
    let stranger = lease("b", T0 + 10, 0, false, 1);
    for outcome in [
        CallOutcome::Success,
        CallOutcome::Failure,
        CallOutcome::Timeout,
    ] {
        assert_eq!(record.finish(&config(), &stranger, outcome, T0), None);
    }
}

#[test]
fn a_success_releases_the_lease_and_clears_failures() {
    let l = lease("a", T0 + 10, 0, false, 1);
    let other = lease("b", T0 - 10, 0, false, 1);
    let record = holding(vec![l.clone(), other.clone()], 0, 2);
    let next = record
        .finish(&config(), &l, CallOutcome::Success, T0)
        .unwrap();
    assert_eq!(
        next.leases,
        vec![other],
        "only its lease goes, even beside an expired one"
    );
    assert_eq!((next.failures, next.open_until, next.epoch), (0, 0, 0));
    assert_eq!(
        (next.used, next.window_start),
        (5, T0),
        "finishing never refunds"
    );
}

#[test]
fn failures_open_the_circuit_at_the_threshold() {
    let l = lease("a", T0 + 10, 0, false, 1);
    // Threshold 3: the second failure in a row (failures 1 → 2) leaves it closed.
    let next = holding(vec![l.clone()], 0, 1)
        .finish(&config(), &l, CallOutcome::Failure, T0)
        .unwrap();
    assert_eq!((next.failures, next.open_until, next.epoch), (2, 0, 0));
    assert!(next.leases.is_empty());
    // The third (2 → 3) opens it for the cooldown and starts a new epoch.
    let next = holding(vec![l.clone()], 0, 2)
        .finish(&config(), &l, CallOutcome::Failure, T0 + 7)
        .unwrap();
    assert_eq!(
        (next.failures, next.open_until, next.epoch),
        (3, T0 + 7 + 30_000, 1)
    );
    // A threshold of 1 opens on the first failure.
    let one = BudgetConfig::builder()
        .failure_threshold(1)
        .build()
        .unwrap();
    let next = holding(vec![l.clone()], 0, 0)
        .finish(&one, &l, CallOutcome::Failure, T0)
        .unwrap();
    assert_eq!((next.failures, next.epoch), (1, 1));
}

#[test]
fn the_cooldown_ends_exactly_cooldown_ms_after_opening() {
    let l = lease("a", T0 + 10, 0, false, 1);
    let opened = holding(vec![l.clone()], 0, 2)
        .finish(&config(), &l, CallOutcome::Failure, T0)
        .unwrap();
    assert_eq!(
        reserve(&opened, &config(), T0 + 29_999, 1, "x"),
        Err(BudgetDenial::CircuitOpen)
    );
    let (_, probe) = admitted(&opened, T0 + 30_000, 1, "x");
    assert!(probe.probe);
    assert_eq!(probe.epoch, 1);
}

#[test]
fn a_timeout_keeps_the_lease_and_counts_as_a_failure() {
    let l = lease("a", T0 + 6_000, 0, false, 1);
    let next = holding(vec![l.clone()], 0, 0)
        .finish(&config(), &l, CallOutcome::Timeout, T0 + 1_000)
        .unwrap();
    assert_eq!(
        next.leases,
        vec![l.clone()],
        "the provider may still be working"
    );
    assert_eq!(next.failures, 1);
    // It still counts against concurrency until it expires, then it goes.
    let mut full = next.clone();
    full.leases[0].cost = 4;
    assert_eq!(
        reserve(&full, &config(), T0 + 5_999, 1, "x"),
        Err(BudgetDenial::Concurrency)
    );
    let (after, _) = admitted(&full, T0 + 6_000, 1, "x");
    assert_eq!(after.leases.len(), 1);
    // The threshold-reaching timeout opens the circuit like any failure.
    let next = holding(vec![l.clone()], 0, 2)
        .finish(&config(), &l, CallOutcome::Timeout, T0)
        .unwrap();
    assert_eq!((next.open_until, next.epoch), (T0 + 30_000, 1));
    assert_eq!(next.leases.len(), 1);
}

#[test]
fn a_successful_probe_closes_the_circuit() {
    let probe = lease("p", T0 + 10, 1, true, 1);
    let mut record = holding(vec![probe.clone()], 1, 3);
    record.open_until = T0 - 5;
    let next = record
        .finish(&config(), &probe, CallOutcome::Success, T0)
        .unwrap();
    assert_eq!((next.open_until, next.failures, next.epoch), (0, 0, 2));
    assert!(next.leases.is_empty());
    let (_, l) = admitted(&next, T0, 1, "after");
    assert!(!l.probe, "calls after closing are ordinary");
}

#[test]
fn a_failed_probe_reopens_the_circuit() {
    let probe = lease("p", T0 + 10, 1, true, 1);
    for outcome in [CallOutcome::Failure, CallOutcome::Timeout] {
        let mut record = holding(vec![probe.clone()], 1, 3);
        record.open_until = T0 - 5;
        let next = record.finish(&config(), &probe, outcome, T0).unwrap();
        assert_eq!(
            (next.open_until, next.epoch),
            (T0 + 30_000, 2),
            "{outcome:?}"
        );
        assert_eq!(
            next.failures, 3,
            "a failed probe is not one more failure in a row"
        );
        assert_eq!(
            next.leases.len(),
            usize::from(outcome == CallOutcome::Timeout)
        );
    }
    // Reopening needs no threshold: a probe fails with no failures recorded.
    let mut record = holding(vec![probe.clone()], 1, 0);
    record.open_until = T0 - 5;
    let next = record
        .finish(&config(), &probe, CallOutcome::Failure, T0)
        .unwrap();
    assert_eq!((next.open_until, next.failures), (T0 + 30_000, 0));
}

#[test]
fn a_timed_out_probe_blocks_the_next_probe_until_it_expires() {
    let probe = lease("p", T0 + 6_000, 1, true, 1);
    let mut record = holding(vec![probe.clone()], 1, 3);
    record.open_until = T0 - 5;
    let cooldown_1s = BudgetConfig::builder().cooldown_ms(1_000).build().unwrap();
    let next = record
        .finish(&cooldown_1s, &probe, CallOutcome::Timeout, T0)
        .unwrap();
    assert_eq!(next.open_until, T0 + 1_000);
    assert_eq!(
        reserve(&next, &cooldown_1s, T0 + 1_000, 1, "q"),
        Err(BudgetDenial::Concurrency)
    );
    let (_, q) = reserve(&next, &cooldown_1s, T0 + 6_000, 1, "q").unwrap();
    assert!(q.probe);
}

#[test]
fn stale_epoch_completions_only_release_their_lease() {
    // The circuit opened (epoch 0 → 1) while this call ran.
    let stale = lease("s", T0 + 10, 0, false, 1);
    let mut record = holding(vec![stale.clone()], 1, 3);
    record.open_until = T0 + 20_000;
    let success = record
        .finish(&config(), &stale, CallOutcome::Success, T0)
        .unwrap();
    assert_eq!(
        (
            success.open_until,
            success.failures,
            success.epoch,
            success.leases.len()
        ),
        (T0 + 20_000, 3, 1, 0),
        "an old success cannot close a newer circuit"
    );
    let failure = record
        .finish(&config(), &stale, CallOutcome::Failure, T0)
        .unwrap();
    assert_eq!(
        (
            failure.open_until,
            failure.failures,
            failure.epoch,
            failure.leases.len()
        ),
        (T0 + 20_000, 3, 1, 0),
        "an old failure cannot extend it"
    );
    let timeout = record
        .finish(&config(), &stale, CallOutcome::Timeout, T0)
        .unwrap();
    assert_eq!(timeout, record, "an old timeout changes nothing at all");
    // An old probe's success after the circuit moved on cannot close it either.
    let old_probe = lease("p", T0 + 10, 1, true, 1);
    let mut reopened = holding(vec![old_probe.clone()], 2, 3);
    reopened.open_until = T0 + 20_000;
    let next = reopened
        .finish(&config(), &old_probe, CallOutcome::Success, T0)
        .unwrap();
    assert_eq!((next.open_until, next.epoch), (T0 + 20_000, 2));
}

#[test]
fn a_success_between_failures_restarts_the_count() {
    let c = config();
    let mut record = BudgetRecord::fresh(T0);
    for (k, outcome) in [
        CallOutcome::Failure,
        CallOutcome::Failure,
        CallOutcome::Success,
        CallOutcome::Failure,
        CallOutcome::Failure,
    ]
    .into_iter()
    .enumerate()
    {
        let (held, l) = reserve(&record, &c, T0, 1, &format!("c{k}")).unwrap();
        record = held.finish(&c, &l, outcome, T0).unwrap();
    }
    assert_eq!((record.failures, record.open_until), (2, 0));
    let (held, l) = reserve(&record, &c, T0, 1, "last").unwrap();
    record = held.finish(&c, &l, CallOutcome::Failure, T0).unwrap();
    assert_eq!((record.failures, record.open_until), (3, T0 + 30_000));
}
