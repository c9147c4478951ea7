//! The disposable PostgreSQL cluster of a run (to be written).

use super::env::CapacityEnv;

/// A cluster this run created; stopped and removed when dropped.
#[derive(Debug)]
pub struct Cluster;

/// The database URL of the run: `JANITOR_BENCHMARK_DATABASE_URL`, or a disposable cluster started now.
pub fn acquire(env: &CapacityEnv) -> Result<(String, Option<Cluster>), String> {
    match &env.database_url {
        Some(url) => Ok((url.clone(), None)),
        None => Err("the disposable cluster is not built yet".to_owned()),
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {}
}
