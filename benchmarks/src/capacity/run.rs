//! The order of a run: settings, database, schema, fixture, workloads, clean-up.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::env::{CapacityEnv, Run};
use super::report::{Machine, Versions};
use super::seed::LookupFigures;
use super::{cluster, connections, report, security, seed, throughput, Target, SCHEMA};

/// What the HTTP workloads share: the database, the settings, the cookie fixture and the harness binary they
/// start as server and load processes.
#[derive(Debug, Clone)]
pub struct HttpRun {
    /// The run's database.
    pub target: Target,
    /// The run's settings.
    pub env: CapacityEnv,
    /// The known-cookie fixture: one `visitor-id<TAB>payload-json` per line.
    pub cookies: PathBuf,
    /// This binary, started again as `serve` and `load` processes.
    pub binary: PathBuf,
    /// A directory of the run's own, removed afterwards.
    pub scratch: PathBuf,
}

/// Runs `command` (`capacity`, `security`, `connections`, `throughput` or `seed`).
pub fn main(command: &str) -> Result<(), String> {
    let run = if command == "capacity" {
        Run::Capacity
    } else {
        Run::Single
    };
    let env = CapacityEnv::from_process(run)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    // The cluster (when the run made one) is stopped and removed when it drops, after the runtime is done.
    let (url, cluster) = cluster::acquire(&env)?;
    let target = Target {
        url,
        schema: SCHEMA.to_owned(),
    };
    // Refused when the schema exists and is not being reused: then nothing of it is ours to remove.
    runtime.block_on(seed::prepare_schema(&target, &env))?;
    let outcome = runtime.block_on(workloads(command, &env, &target));
    let cleanup = if env.reuse {
        Ok(())
    } else {
        runtime.block_on(seed::drop_schema(&target))
    };
    drop(cluster);
    outcome.and(cleanup)
}

async fn workloads(command: &str, env: &CapacityEnv, target: &Target) -> Result<(), String> {
    let wants = |what: &[&str]| what.contains(&command);
    let dataset = if wants(&["capacity", "security", "seed"]) {
        Some(seed::events(target, env).await?)
    } else {
        None
    };
    let scratch = std::env::temp_dir().join(format!("janitor-capacity-{}", std::process::id()));
    std::fs::create_dir(&scratch).map_err(|e| format!("creating {}: {e}", scratch.display()))?;
    let outcome = async {
        let http = HttpRun {
            target: target.clone(),
            env: env.clone(),
            cookies: scratch.join("cookies.tsv"),
            binary: std::env::current_exe().map_err(|e| format!("own path: {e}"))?,
            scratch: scratch.clone(),
        };
        if wants(&["capacity", "connections", "throughput", "seed"]) {
            seed::visitors(target, env, &http.cookies).await?;
        }
        if command == "seed" {
            println!("fixture ready in schema {}", target.schema);
            return Ok(());
        }
        if let Some(dataset) = &dataset {
            security::run(target, env, dataset).await?;
        }
        if wants(&["capacity", "security", "lookup"]) {
            lookup(target, env).await?;
        }
        if wants(&["capacity", "connections"]) {
            connections::run(&http).await?;
        }
        if wants(&["capacity", "throughput"]) {
            throughput::run(&http).await?;
        }
        Ok(())
    }
    .await;
    let _ = std::fs::remove_dir_all(&scratch);
    outcome
}

/// The report of the missing-cookie lookup at scale, `lookup-<label>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LookupReport {
    /// `missing-cookie-lookup`.
    pub benchmark: String,
    /// The run's label.
    pub label: String,
    /// The machine.
    pub machine: Machine,
    /// The versions.
    pub versions: Versions,
    /// What was measured.
    pub figures: LookupFigures,
    /// What the figures cannot show.
    pub limitations: Vec<String>,
}

/// The missing-cookie lookup at scale, when `JANITOR_BENCHMARK_LOOKUP_VISITORS` asks for it:
/// `lookup-<label>.json`.
async fn lookup(target: &Target, env: &CapacityEnv) -> Result<(), String> {
    let Some(figures) = seed::lookup_scale(target, env).await? else {
        return Ok(());
    };
    let database = target.database(1)?;
    let report = LookupReport {
        benchmark: "missing-cookie-lookup".to_owned(),
        label: env.label.clone(),
        machine: report::machine(),
        versions: report::versions(&database).await?,
        figures,
        limitations: vec![
            "One sequential client on the same 2 cores as PostgreSQL; latencies include loopback round trips."
                .to_owned(),
        ],
    };
    report::write(&format!("lookup-{}.json", env.label), &report).map(|_| ())
}
