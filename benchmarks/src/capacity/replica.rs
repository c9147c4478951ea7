//! The cookieless lookup on a read replica, against the primary alone, in one run: `janitor-capacity replica`
//! (`cargo xtask benchmark-replica`).
//!
//! Two disposable clusters of the run's own (a primary with the harness's settings and a hot standby made from
//! it, streaming asynchronously), a seeded population on the primary, then closed loops of missing-cookie
//! identifications in rounds A B B A: A with every statement on the primary, B with the lookup on the standby
//! (`LookupReplica`, 1 s of lag accepted). Each round counts identifications and the CPU time of every process
//! of each cluster (the postmaster and its children, from `/proc`), so the report gives what the primary spends
//! per identification with and without the replica. Writes `replica-<label>.json`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use janitor_core::{Engine, EngineConfig, Retention};
use janitor_sql::testing::population;
use janitor_sql::{Database, DatabaseConfig, LookupReplica, PgVisitorStore};
use janitor_test_support::cluster::{free_port, Cluster, ClusterSpec};
use serde::{Deserialize, Serialize};

use super::env::{CapacityEnv, Run};
use super::report::{self, Machine, Versions};
use super::seed::now_ms;

/// Identifications running at once: one per connection of the primary's pool.
const CLIENTS: usize = 8;
/// Visitors seeded when `JANITOR_BENCHMARK_LOOKUP_VISITORS` is not set.
const DEFAULT_VISITORS: u64 = 200_000;
/// The lag the replica side accepts.
const MAX_LAG_MS: u64 = 1_000;
/// How often the replica side reads the lag.
const CHECK_INTERVAL_MS: u64 = 500;

/// One round of one side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicaRound {
    /// The lookup read the standby.
    pub with_replica: bool,
    /// Identifications completed in the round.
    pub identifications: u64,
    /// Identifications per second.
    pub per_second: f64,
    /// CPU time of the primary's processes per identification, in ms.
    pub primary_cpu_ms: f64,
    /// CPU time of the standby's processes per identification, in ms (replay included).
    pub standby_cpu_ms: f64,
    /// Statements the standby's pool ran in the round (lag readings and lookups).
    pub standby_statements: u64,
}

/// The report, `replica-<label>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicaReport {
    /// `lookup-replica`.
    pub benchmark: String,
    /// The machine.
    pub machine: Machine,
    /// The versions.
    pub versions: Versions,
    /// Visitors seeded, one observation each.
    pub visitors: u64,
    /// Identifications at once.
    pub clients: usize,
    /// Seconds per round.
    pub seconds_per_round: u64,
    /// Lag the replica side accepted, in ms.
    pub max_lag_ms: u64,
    /// Every round, in the order run.
    pub rounds: Vec<ReplicaRound>,
    /// Identifications per second, with the replica over without, over all rounds.
    pub throughput_ratio: f64,
    /// The primary's CPU per identification, with the replica over without.
    pub primary_cpu_ratio: f64,
    /// What the figures cannot show.
    pub limitations: Vec<String>,
}

/// Runs the measurement with the run's settings and writes its report.
pub fn main() -> Result<(), String> {
    let env = CapacityEnv::from_process(Run::Single)?;
    let visitors = match env.lookup_visitors {
        0 => DEFAULT_VISITORS,
        n => n,
    };
    let report = run(visitors, env.rate_seconds)?;
    report::write(&format!("replica-{}.json", env.label), &report).map(|_| ())
}

/// Starts the two clusters, seeds `visitors` and runs the four rounds of `seconds` each. The clusters are
/// stopped and removed however it ends.
pub fn run(visitors: u64, seconds: u64) -> Result<ReplicaReport, String> {
    let scratch = std::env::temp_dir().join(format!("janitor-replica-{}", std::process::id()));
    let spec = |name: &str| -> Result<ClusterSpec, String> {
        Ok(ClusterSpec {
            settings: super::cluster::SETTINGS
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            ..ClusterSpec::new(
                "janitor-capacity-replica",
                std::path::PathBuf::from(format!("{}-{name}", scratch.display())),
                free_port()?,
            )
        })
    };
    let primary = Cluster::start(spec("primary")?)?;
    let standby = Cluster::start_standby(spec("standby")?, &primary)?;
    println!(
        "replica: primary at {}, hot standby at {}",
        primary.url(),
        standby.url()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let report = runtime.block_on(measure(&primary, &standby, visitors, seconds));
    // The pools close before their servers stop.
    drop(runtime);
    drop((standby, primary));
    report
}

fn pool(url: &str) -> Result<Database, String> {
    let config = DatabaseConfig::builder(url)
        .max_connections(CLIENTS)
        .build()
        .map_err(|e| e.to_string())?;
    Database::new(config).map_err(|e| e.to_string())
}

async fn measure(
    primary: &Cluster,
    standby: &Cluster,
    visitors: u64,
    seconds: u64,
) -> Result<ReplicaReport, String> {
    let (on_primary, on_standby) = (pool(&primary.url())?, pool(&standby.url())?);
    on_primary.migrate().await.map_err(|e| e.to_string())?;
    let started = Instant::now();
    population::seed(&on_primary, visitors, 1, now_ms()).await;
    println!(
        "replica: {visitors} visitors seeded in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let replica = LookupReplica::new(on_standby.clone(), MAX_LAG_MS, CHECK_INTERVAL_MS)
        .map_err(|e| e.to_string())?;
    let store = PgVisitorStore::new(on_primary.clone(), Retention::default());
    let engines = [
        Arc::new(Engine::new(store.clone(), EngineConfig::default())),
        Arc::new(Engine::new(
            store
                .with_lookup_replica(replica)
                .map_err(|e| e.to_string())?,
            EngineConfig::default(),
        )),
    ];
    let next = Arc::new(AtomicU64::new(0));
    let mut rounds = Vec::new();
    for with_replica in [false, true, true, false] {
        let engine = Arc::clone(&engines[usize::from(with_replica)]);
        let cpu = (cluster_cpu(primary.dir())?, cluster_cpu(standby.dir())?);
        let statements = on_standby.statements_executed();
        let begun = Instant::now();
        let done = closed_loop(engine, Arc::clone(&next), visitors, seconds).await?;
        let elapsed = begun.elapsed().as_secs_f64();
        let spent = |before: Duration, dir: &Path| -> Result<f64, String> {
            let used = cluster_cpu(dir)?.saturating_sub(before);
            Ok(round3(used.as_secs_f64() * 1000.0 / done.max(1) as f64))
        };
        let round = ReplicaRound {
            with_replica,
            identifications: done,
            per_second: (done as f64 / elapsed * 10.0).round() / 10.0,
            primary_cpu_ms: spent(cpu.0, primary.dir())?,
            standby_cpu_ms: spent(cpu.1, standby.dir())?,
            standby_statements: on_standby.statements_executed() - statements,
        };
        println!(
            "replica: {} — {}/s, primary CPU {} ms and standby CPU {} ms per identification",
            if with_replica {
                "lookup on the standby"
            } else {
                "all on the primary"
            },
            round.per_second,
            round.primary_cpu_ms,
            round.standby_cpu_ms
        );
        rounds.push(round);
    }
    let side = |with: bool, figure: fn(&ReplicaRound) -> f64| {
        let taken: Vec<f64> = rounds
            .iter()
            .filter(|r| r.with_replica == with)
            .map(figure)
            .collect();
        taken.iter().sum::<f64>() / taken.len() as f64
    };
    let ratio = |figure: fn(&ReplicaRound) -> f64| {
        (side(true, figure) / side(false, figure) * 100.0).round() / 100.0
    };
    Ok(ReplicaReport {
        benchmark: "lookup-replica".to_owned(),
        machine: report::machine(),
        versions: report::versions(&on_primary).await?,
        visitors,
        clients: CLIENTS,
        seconds_per_round: seconds,
        max_lag_ms: MAX_LAG_MS,
        throughput_ratio: ratio(|r| r.per_second),
        primary_cpu_ratio: ratio(|r| r.primary_cpu_ms),
        rounds,
        limitations: vec![
            "Both clusters, the client and the library share the same 2 cores: the standby's work is taken from \
             the cores the primary uses, so throughput shows the cost moved, not a second machine's capacity."
                .to_owned(),
        ],
    })
}

/// `CLIENTS` tasks identifying browsers of the population without their cookie, one after another, for
/// `seconds`; returns how many completed.
async fn closed_loop(
    engine: Arc<Engine<PgVisitorStore>>,
    next: Arc<AtomicU64>,
    visitors: u64,
    seconds: u64,
) -> Result<u64, String> {
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..CLIENTS {
        let (engine, next, stop, done) = (
            Arc::clone(&engine),
            Arc::clone(&next),
            Arc::clone(&stop),
            Arc::clone(&done),
        );
        tasks.spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let n = next
                    .fetch_add(1, Ordering::Relaxed)
                    .wrapping_mul(2_654_435_761)
                    % visitors
                    + 1;
                engine
                    .identify_at(&population::payload(n), None, now_ms())
                    .await
                    .map_err(|e| format!("identification of browser {n}: {e}"))?;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), String>(())
        });
    }
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    while let Some(ended) = tasks.join_next().await {
        ended.map_err(|e| e.to_string())??;
    }
    Ok(done.load(Ordering::Relaxed))
}

/// CPU time of the cluster in `dir`: its postmaster, every process it started, and those it reaped.
fn cluster_cpu(dir: &Path) -> Result<Duration, String> {
    let pid_file = dir.join("data").join("postmaster.pid");
    let text = std::fs::read_to_string(&pid_file)
        .map_err(|e| format!("reading {}: {e}", pid_file.display()))?;
    let postmaster: u64 = text
        .lines()
        .next()
        .and_then(|line| line.trim().parse().ok())
        .ok_or_else(|| format!("{} names no process", pid_file.display()))?;
    let ticks = super::cpu::cluster_ticks(postmaster)
        .ok_or_else(|| format!("the postmaster {postmaster} is not readable in /proc"))?;
    Ok(Duration::from_millis(ticks * super::cpu::TICK_MS))
}

fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}
