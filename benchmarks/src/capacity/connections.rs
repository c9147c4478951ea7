//! The connection workload (to be written).

use serde_json::Value;

use super::run::HttpRun;

/// Runs the connection stages and writes `docs/benchmarks/connections-current.json`.
pub async fn run(_run: &HttpRun) -> Result<Value, String> {
    Err("not built yet".to_owned())
}
