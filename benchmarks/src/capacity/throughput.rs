//! The rate sweep (to be written).

use serde_json::Value;

use super::run::HttpRun;

/// Runs the sweep and writes `docs/benchmarks/throughput-current.json`.
pub async fn run(_run: &HttpRun) -> Result<Value, String> {
    Err("not built yet".to_owned())
}
