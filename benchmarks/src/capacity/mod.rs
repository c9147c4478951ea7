//! The capacity harness behind `cargo xtask benchmark-capacity`: a disposable database, the million-event
//! fixture, the security SQL run, 200,000 live connections and the rate sweep; and the soak behind
//! `cargo xtask soak`. Each workload lives in its own module; this one holds what they share (the database
//! target) and the order of a whole run.
//!
//! The harness is one binary, `janitor-capacity`, that also plays the server (`serve`) and load (`load`)
//! processes it starts, so every process of a run is the same build.

pub mod cluster;
pub mod connections;
pub mod cpu;
pub mod env;
pub mod growth;
pub mod load;
pub mod pgbench;
pub mod replica;
pub mod report;
pub mod run;
pub mod security;
pub mod seed;
pub mod server;
pub mod soak;
pub mod throughput;

use janitor_sql::{Database, DatabaseConfig};

/// The schema every workload works in. The run refuses to start when it already exists (unless
/// `JANITOR_BENCHMARK_REUSE=1` kept it from an earlier run) and drops it afterwards.
pub const SCHEMA: &str = "janitor_capacity";

/// The database a run works against: its URL and the harness's schema in it.
#[derive(Debug, Clone)]
pub struct Target {
    /// Connection string of the database (the disposable cluster's, or `JANITOR_BENCHMARK_DATABASE_URL`).
    pub url: String,
    /// The schema the run owns.
    pub schema: String,
}

impl Target {
    /// A pool on the run's schema with `connections` connections, waiting up to a minute for one (waits are
    /// part of what closed-loop points measure).
    pub fn database(&self, connections: usize) -> Result<Database, String> {
        let config = DatabaseConfig::builder(&self.url)
            .schema(&self.schema)
            .max_connections(connections)
            .wait_timeout_ms(60_000)
            .statement_timeout_ms(120_000)
            .build()
            .map_err(|e| format!("database settings: {e}"))?;
        Database::new(config).map_err(|e| format!("database pool: {e}"))
    }
}
