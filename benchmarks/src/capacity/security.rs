//! The security SQL workload (to be written).

use serde_json::Value;

use super::env::CapacityEnv;
use super::Target;

/// Runs the SQL points and writes `docs/benchmarks/security-<label>.json`.
pub async fn run(_target: &Target, _env: &CapacityEnv, _dataset: &Value) -> Result<Value, String> {
    Err("not built yet".to_owned())
}
