//! Evidence at scale: `janitor-capacity growth` (`cargo xtask benchmark-growth`).
//!
//! On a disposable cluster of its own (the harness's settings), the security fixture at
//! `JANITOR_BENCHMARK_GROWTH_EVENTS` events (default 10,000,000), then what a user pays as it ages: the bytes
//! per million rows, the library's cleanup of the oldest tenth in steps of 1,000 (the most a step takes) and
//! of 100 (maintenance's default) for the first 100,000 of them, and the `VACUUM` that makes their space
//! reusable. Writes `growth-<label>.json`.

use std::time::Instant;

use janitor_test_support::cluster::{free_port, Cluster, ClusterSpec};
use serde::{Deserialize, Serialize};

use super::env::{CapacityEnv, Run};
use super::report::{self, Machine, Versions};
use super::seed::{self, pg, TableBytes};
use super::Target;

/// Events seeded when `JANITOR_BENCHMARK_GROWTH_EVENTS` is not set.
const DEFAULT_EVENTS: u64 = 10_000_000;
/// The share of the events made due before the cleanup.
const DUE_SHARE: f64 = 0.1;
/// Rows the small-step cleanup deletes before it stops.
const SMALL_STEP_ROWS: u64 = 100_000;

/// A cleanup in steps of one size.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CleanupFigures {
    /// Rows a step deletes at most.
    pub batch: usize,
    /// Rows deleted.
    pub deleted: u64,
    /// Seconds it took.
    pub seconds: f64,
    /// Rows per second.
    pub rows_per_second: f64,
}

/// The report, `growth-<label>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrowthReport {
    /// `evidence-growth`.
    pub benchmark: String,
    /// The machine.
    pub machine: Machine,
    /// The versions.
    pub versions: Versions,
    /// Events seeded.
    pub events: u64,
    /// Seconds the load took: `COPY`, constraints and indexes, `VACUUM ANALYZE`.
    pub load_seconds: f64,
    /// `application_events` after the load.
    pub bytes: TableBytes,
    /// Table and index bytes per million events.
    pub bytes_per_million: TableBytes,
    /// The cleanup in maintenance's default steps, stopped after its first rows.
    pub cleanup_small_steps: CleanupFigures,
    /// The cleanup of the rest of the due events in the largest steps.
    pub cleanup_large_steps: CleanupFigures,
    /// Seconds the `VACUUM` of `application_events` took, after the cleanup (it removes the deleted rows).
    pub vacuum_seconds: f64,
    /// `application_events` after the cleanup and the `VACUUM` (the space is reusable, not returned).
    pub bytes_after: TableBytes,
    /// What the figures cannot show.
    pub limitations: Vec<String>,
}

/// Runs the measurement with the run's settings and writes its report.
pub fn main() -> Result<(), String> {
    let env = CapacityEnv::from_process(Run::Single)?;
    let events = match std::env::var("JANITOR_BENCHMARK_GROWTH_EVENTS") {
        Ok(text) => text
            .parse::<u64>()
            .ok()
            .filter(|n| (100_000..=100_000_000).contains(n))
            .ok_or_else(|| {
                format!("JANITOR_BENCHMARK_GROWTH_EVENTS must be 100000-100000000, got {text:?}")
            })?,
        Err(_) => DEFAULT_EVENTS,
    };
    let report = run(&env, events)?;
    report::write(&format!("growth-{}.json", env.label), &report).map(|_| ())
}

/// Starts a cluster, seeds `events` and measures; the cluster is stopped and removed however it ends.
pub fn run(env: &CapacityEnv, events: u64) -> Result<GrowthReport, String> {
    let dir = std::env::temp_dir().join(format!("janitor-growth-{}", std::process::id()));
    let spec = ClusterSpec {
        settings: super::cluster::SETTINGS
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect(),
        ..ClusterSpec::new("janitor-capacity-growth", dir, free_port()?)
    };
    let cluster = Cluster::start(spec)?;
    let target = Target {
        url: cluster.url(),
        schema: "janitor_growth".to_owned(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let env = CapacityEnv {
        events,
        reuse: false,
        ..env.clone()
    };
    let report = runtime.block_on(measure(&target, &env));
    drop(runtime);
    drop(cluster);
    report
}

async fn measure(target: &Target, env: &CapacityEnv) -> Result<GrowthReport, String> {
    seed::prepare_schema(target, env).await?;
    let dataset = seed::events(target, env).await?;
    let load_seconds = dataset.seconds.as_ref().map_or(0.0, |s| s.total);
    println!(
        "growth: {} events loaded in {load_seconds:.1} s: {} bytes",
        dataset.events, dataset.bytes.total
    );
    let database = target.database(2)?;
    let evidence = seed::evidence(&database);
    let client = seed::connect(&target.url, &target.schema, seed::SEED_DEADLINE).await?;
    // The moment at which the oldest tenth of the events has expired.
    let due_at: i64 = client
        .query_one(
            "SELECT percentile_disc($1::float8) WITHIN GROUP (ORDER BY expires_at) FROM application_events",
            &[&DUE_SHARE],
        )
        .await
        .map_err(|e| format!("the due moment: {}", pg(&e)))?
        .get(0);
    let small = clean(&evidence, 100, due_at, Some(SMALL_STEP_ROWS)).await?;
    let large = clean(&evidence, 1_000, due_at, None).await?;
    for figures in [&small, &large] {
        println!(
            "growth: cleanup in steps of {}: {} rows in {} s, {}/s",
            figures.batch, figures.deleted, figures.seconds, figures.rows_per_second
        );
    }
    let started = Instant::now();
    client
        .batch_execute("VACUUM application_events")
        .await
        .map_err(|e| format!("VACUUM: {}", pg(&e)))?;
    let vacuum_seconds = round2(started.elapsed().as_secs_f64());
    let bytes_after = seed::table_bytes(&client).await?;
    println!("growth: VACUUM in {vacuum_seconds} s");
    let per_million = |bytes: i64| (bytes as f64 * 1e6 / dataset.events as f64).round() as i64;
    Ok(GrowthReport {
        benchmark: "evidence-growth".to_owned(),
        machine: report::machine(),
        versions: report::versions(&database).await?,
        events: dataset.events,
        load_seconds,
        bytes_per_million: TableBytes {
            total: per_million(dataset.bytes.total),
            table: per_million(dataset.bytes.table),
            indexes: per_million(dataset.bytes.indexes),
        },
        bytes: dataset.bytes,
        cleanup_small_steps: small,
        cleanup_large_steps: large,
        vacuum_seconds,
        bytes_after,
        limitations: vec![
            "One cluster with shared_buffers=128MB on 2 cores shared with the harness; the fixture's events \
             are spread over 10 minutes, so the due rows are the oldest by expiry, as maintenance finds them."
                .to_owned(),
        ],
    })
}

/// Runs the library's cleanup in steps of `batch` as of `now_ms` until nothing is due, or `limit` rows.
async fn clean(
    evidence: &janitor_core::evidence::Evidence<janitor_sql::PgEvidenceStore>,
    batch: usize,
    now_ms: i64,
    limit: Option<u64>,
) -> Result<CleanupFigures, String> {
    let started = Instant::now();
    let mut deleted = 0;
    loop {
        let step = evidence
            .at(now_ms)
            .cleanup(batch)
            .await
            .map_err(|e| format!("cleanup: {e}"))?;
        deleted += step.events_deleted;
        if step.events_deleted == 0 || limit.is_some_and(|limit| deleted >= limit) {
            break;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    Ok(CleanupFigures {
        batch,
        deleted,
        seconds: round2(seconds),
        rows_per_second: (deleted as f64 / seconds.max(1e-9)).round(),
    })
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}
