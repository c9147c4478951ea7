//! The fixtures of a run (to be written).

use std::path::Path;

use serde_json::Value;

use super::env::CapacityEnv;
use super::Target;

/// Creates the run's schema and applies the migrations; refuses when the schema exists and is not reused.
pub async fn prepare_schema(_target: &Target, _env: &CapacityEnv) -> Result<(), String> {
    Err("not built yet".to_owned())
}

/// Drops the run's schema.
pub async fn drop_schema(_target: &Target) -> Result<(), String> {
    Err("not built yet".to_owned())
}

/// Seeds the event fixture and describes it.
pub async fn events(_target: &Target, _env: &CapacityEnv) -> Result<Value, String> {
    Err("not built yet".to_owned())
}

/// Seeds the known-cookie visitors and writes the cookie file.
pub async fn visitors(
    _target: &Target,
    _env: &CapacityEnv,
    _cookies: &Path,
) -> Result<Value, String> {
    Err("not built yet".to_owned())
}
