//! The shared inference budget's configuration, record format and admission (`reserve`): every transition
//! and every bound the specification names, on either side. `budget_finish.rs` covers completions.

use janitor_core::protection::budget::{BudgetConfig, BudgetDenial, BudgetRecord, LEASE_GRACE_MS};
use serde_json::json;

use crate::budget_support::{admitted, config, lease, reserve, T0};

// ---- configuration ----

#[test]
fn config_defaults_match_the_specification() {
    let c = BudgetConfig::builder().build().unwrap();
    assert_eq!(c, BudgetConfig::default());
    assert_eq!(
        (
            c.max_calls(),
            c.window_ms(),
            c.max_concurrent(),
            c.failure_threshold(),
            c.cooldown_ms()
        ),
        (120, 60_000, 4, 3, 30_000)
    );
}

#[test]
fn config_bounds_are_checked_on_both_sides() {
    type Set = fn(u32) -> janitor_core::protection::budget::BudgetConfigBuilder;
    let cases: [(&str, Set, u32, u32, &str); 5] = [
        (
            "max_calls",
            |v| BudgetConfig::builder().max_calls(v),
            1,
            1_000_000,
            "from 1 to 1000000",
        ),
        (
            "window_ms",
            |v| BudgetConfig::builder().window_ms(v),
            1_000,
            3_600_000,
            "from 1000 to 3600000",
        ),
        (
            "max_concurrent",
            |v| BudgetConfig::builder().max_concurrent(v),
            1,
            32,
            "from 1 to 32",
        ),
        (
            "failure_threshold",
            |v| BudgetConfig::builder().failure_threshold(v),
            1,
            100,
            "from 1 to 100",
        ),
        (
            "cooldown_ms",
            |v| BudgetConfig::builder().cooldown_ms(v),
            1_000,
            3_600_000,
            "from 1000 to 3600000",
        ),
    ];
    for (field, set, low, high, range) in cases {
        assert!(set(low).build().is_ok(), "{field} = {low}");
        assert!(set(high).build().is_ok(), "{field} = {high}");
        for bad in [low - 1, high + 1] {
            let err = set(bad).build().unwrap_err();
            assert_eq!(err.field, field);
            assert_eq!(err.value, bad.to_string());
            assert!(err.to_string().contains(range), "{err}");
        }
    }
}

#[test]
fn row_expiry_is_twice_the_longest_period() {
    let c = |window, cooldown| {
        BudgetConfig::builder()
            .window_ms(window)
            .cooldown_ms(cooldown)
            .build()
            .unwrap()
    };
    // The window is longest.
    assert_eq!(c(60_000, 30_000).row_expires_at(T0, 1_200), T0 + 120_000);
    // The cooldown is longest.
    assert_eq!(c(1_000, 9_000).row_expires_at(T0, 1_200), T0 + 18_000);
    // The lease (timeout + grace) is longest.
    assert_eq!(c(1_000, 1_000).row_expires_at(T0, 5_000), T0 + 20_000);
    assert_eq!(LEASE_GRACE_MS, 5_000);
}

// ---- the record's JSON ----

#[test]
fn the_record_is_written_in_the_shared_format() {
    let record = BudgetRecord {
        version: 7,
        window_start: T0,
        used: 3,
        failures: 1,
        open_until: 0,
        epoch: 2,
        leases: vec![lease("a-1", T0 + 6_200, 2, false, 1)],
    };
    assert_eq!(
        serde_json::to_string(&record).unwrap(),
        r#"{"version":7,"windowStart":1735689600000,"used":3,"failures":1,"openUntil":0,"epoch":2,"leases":[{"id":"a-1","expiresAt":1735689606200,"epoch":2,"probe":false,"cost":1}]}"#
    );
}

#[test]
fn records_of_other_versions_are_read() {
    // Leases written before costs existed count as one call each.
    let written = json!({
        "version": 4, "windowStart": T0, "used": 2, "failures": 0, "openUntil": T0 + 10, "epoch": 1,
        "leases": [{"id": "x", "expiresAt": T0 + 5, "epoch": 1, "probe": true}]
    });
    let record: BudgetRecord = serde_json::from_value(written).unwrap();
    assert_eq!(record.leases, vec![lease("x", T0 + 5, 1, true, 1)]);
    assert_eq!((record.version, record.open_until), (4, T0 + 10));
}

#[test]
fn unreadable_records_are_refused() {
    for bad in [
        json!({"version": 1, "windowStart": T0, "used": -1, "failures": 0, "openUntil": 0, "epoch": 0, "leases": []}),
        json!({"version": 1, "windowStart": T0, "used": 0, "failures": 0, "openUntil": 0, "epoch": 0}),
        json!({"version": 1, "windowStart": T0, "used": 0, "failures": 0, "openUntil": 0, "epoch": 0,
               "leases": [{"id": "x", "expiresAt": T0, "epoch": 0, "probe": "yes"}]}),
    ] {
        assert!(
            serde_json::from_value::<BudgetRecord>(bad.clone()).is_err(),
            "{bad}"
        );
    }
}

// ---- reserve ----

#[test]
fn a_fresh_record_admits_and_writes_the_lease() {
    let fresh = BudgetRecord::fresh(T0);
    assert_eq!(
        (
            fresh.version,
            fresh.window_start,
            fresh.used,
            fresh.open_until
        ),
        (0, T0, 0, 0)
    );
    let (next, l) = admitted(&fresh, T0 + 5, 2, "id-1");
    assert_eq!(l, lease("id-1", T0 + 5 + 1_000 + 5_000, 0, false, 2));
    assert_eq!(next.leases, vec![l]);
    assert_eq!(next.used, 2);
    assert_eq!(next.window_start, T0, "the window is not restarted");
    assert_eq!(next.version, 0, "the writer sets the version");
    assert_eq!((next.failures, next.open_until, next.epoch), (0, 0, 0));
}

#[test]
fn a_cost_of_zero_counts_as_one() {
    let (next, l) = admitted(&BudgetRecord::fresh(T0), T0, 0, "z");
    assert_eq!((l.cost, next.used), (1, 1));
}

#[test]
fn expired_leases_are_dropped_at_their_expiry() {
    let mut record = BudgetRecord::fresh(T0);
    record.leases = vec![
        lease("gone", T0 + 100, 0, false, 2),
        lease("kept", T0 + 101, 0, false, 2),
    ];
    // At T0 + 100 the first has expired: 2 + 2 fits in 4.
    let (next, _) = admitted(&record, T0 + 100, 2, "new");
    let ids: Vec<&str> = next.leases.iter().map(|l| l.id.as_str()).collect();
    assert_eq!(ids, ["kept", "new"]);
    // One millisecond earlier both still count: 2 + 2 + 2 > 4.
    assert_eq!(
        reserve(&record, &config(), T0 + 99, 2, "new"),
        Err(BudgetDenial::Concurrency)
    );
}

#[test]
fn an_open_circuit_denies_until_its_cooldown_ends() {
    let mut record = BudgetRecord::fresh(T0);
    record.open_until = T0 + 30_000;
    assert_eq!(
        reserve(&record, &config(), T0 + 29_999, 1, "p"),
        Err(BudgetDenial::CircuitOpen)
    );
    let (_, l) = admitted(&record, T0 + 30_000, 1, "p");
    assert!(
        l.probe,
        "the first call at the end of the cooldown is a probe"
    );
    // The circuit is checked before the budget.
    record.used = 10;
    assert_eq!(
        reserve(&record, &config(), T0 + 1, 1, "p"),
        Err(BudgetDenial::CircuitOpen)
    );
}

#[test]
fn the_window_restarts_once_it_has_elapsed() {
    let mut record = BudgetRecord::fresh(T0);
    record.used = 10;
    assert_eq!(
        reserve(&record, &config(), T0 + 59_999, 1, "w"),
        Err(BudgetDenial::Budget)
    );
    let (next, _) = admitted(&record, T0 + 60_000, 1, "w");
    assert_eq!((next.window_start, next.used), (T0 + 60_000, 1));
    // Rolling, not aligned: the next window starts at the first call after the old one ended.
    let (next, _) = admitted(&record, T0 + 90_001, 1, "w");
    assert_eq!(next.window_start, T0 + 90_001);
}

#[test]
fn a_window_start_in_the_future_is_not_restarted() {
    // Another instance's clock may run ahead.
    let mut record = BudgetRecord::fresh(T0 + 1_000);
    record.used = 10;
    assert_eq!(
        reserve(&record, &config(), T0, 1, "w"),
        Err(BudgetDenial::Budget)
    );
}

#[test]
fn the_budget_admits_exactly_up_to_max_calls() {
    let mut record = BudgetRecord::fresh(T0);
    record.used = 7;
    let (next, _) = admitted(&record, T0, 3, "fits");
    assert_eq!(next.used, 10);
    assert_eq!(
        reserve(&record, &config(), T0, 4, "over"),
        Err(BudgetDenial::Budget)
    );
    record.used = 9;
    assert!(reserve(&record, &config(), T0, 1, "last").is_ok());
    record.used = 10;
    assert_eq!(
        reserve(&record, &config(), T0, 1, "none"),
        Err(BudgetDenial::Budget)
    );
}

#[test]
fn the_budget_is_checked_before_concurrency() {
    let mut record = BudgetRecord::fresh(T0);
    record.used = 10;
    record.leases = vec![lease("full", T0 + 10, 0, false, 4)];
    assert_eq!(
        reserve(&record, &config(), T0, 1, "x"),
        Err(BudgetDenial::Budget)
    );
}

#[test]
fn concurrency_sums_lease_costs() {
    let mut record = BudgetRecord::fresh(T0);
    record.leases = vec![
        lease("a", T0 + 10, 0, false, 2),
        lease("b", T0 + 10, 0, false, 1),
    ];
    assert_eq!(record.held(), 3);
    let (next, _) = admitted(&record, T0, 1, "c");
    assert_eq!(next.held(), 4, "3 + 1 = max_concurrent is admitted");
    assert_eq!(
        reserve(&record, &config(), T0, 2, "d"),
        Err(BudgetDenial::Concurrency),
        "3 + 2 > max_concurrent"
    );
    // A call costing more than max_concurrent can never run.
    assert_eq!(
        reserve(&BudgetRecord::fresh(T0), &config(), T0, 5, "e"),
        Err(BudgetDenial::Concurrency)
    );
}

#[test]
fn a_half_open_circuit_admits_one_probe_at_a_time() {
    let mut record = BudgetRecord::fresh(T0);
    record.open_until = T0 - 1;
    record.epoch = 1;
    // A call of an older epoch still running does not block the probe (only other probes do).
    record.leases = vec![lease("old", T0 + 10, 0, false, 1)];
    let (next, probe) = admitted(&record, T0, 1, "probe");
    assert!(probe.probe);
    assert_eq!(probe.epoch, 1);
    assert_eq!(
        next.open_until,
        T0 - 1,
        "admitting a probe does not close the circuit"
    );
    assert_eq!(
        reserve(&next, &config(), T0, 1, "second"),
        Err(BudgetDenial::Concurrency),
        "a second probe is refused although there is room"
    );
    // Once the first probe's lease has expired, another probe may run.
    assert!(reserve(&next, &config(), probe.expires_at, 1, "later").is_ok());
    // Probes also respect max_concurrent.
    record.leases = vec![lease("busy", T0 + 10, 0, false, 4)];
    assert_eq!(
        reserve(&record, &config(), T0, 1, "probe"),
        Err(BudgetDenial::Concurrency)
    );
}

#[test]
fn a_closed_circuit_admits_ordinary_calls_side_by_side() {
    let (next, a) = admitted(&BudgetRecord::fresh(T0), T0, 1, "a");
    let (next, b) = admitted(&next, T0, 1, "b");
    assert!(!a.probe && !b.probe);
    assert_eq!(next.leases.len(), 2);
}
