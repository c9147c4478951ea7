//! Fixtures shared by the budget state-machine tests (`budget.rs`, `budget_finish.rs`).
#![allow(dead_code)] // Each test file uses its own subset.

use janitor_core::protection::budget::{BudgetConfig, BudgetDenial, BudgetRecord, LeaseRecord};

pub use janitor_core::testing::T0;

pub fn config() -> BudgetConfig {
    BudgetConfig::builder()
        .max_calls(10)
        .window_ms(60_000)
        .max_concurrent(4)
        .failure_threshold(3)
        .cooldown_ms(30_000)
        .build()
        .unwrap()
}

pub fn lease(id: &str, expires_at: i64, epoch: u64, probe: bool, cost: u32) -> LeaseRecord {
    LeaseRecord {
        id: id.into(),
        expires_at,
        epoch,
        probe,
        cost,
    }
}

/// Reserves on `record` with timeout 1000 and lease id `id`.
pub fn reserve(
    record: &BudgetRecord,
    config: &BudgetConfig,
    now: i64,
    cost: u32,
    id: &str,
) -> Result<(BudgetRecord, LeaseRecord), BudgetDenial> {
    record.reserve(config, now, cost, 1_000, id.into())
}

pub fn admitted(
    record: &BudgetRecord,
    now: i64,
    cost: u32,
    id: &str,
) -> (BudgetRecord, LeaseRecord) {
    reserve(record, &config(), now, cost, id).expect("admitted")
}
