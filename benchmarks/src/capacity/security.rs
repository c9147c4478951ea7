//! The security SQL workload (capacity.md §2): evidence and quota operations through the library's real APIs,
//! closed loop at concurrency 1, 16, 64 and 256 over a pool of 8 connections, the shared inference budget in
//! front of a mocked evaluator, a device-association read, and the velocity plans — captured and asserted.

mod admission;
mod devices;
mod plans;
mod points;
pub mod statements;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use janitor_sql::Database;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_postgres::Client;

use super::env::CapacityEnv;
use super::report::{self, Machine, Versions};
use super::seed::{self, now_ms, pg, sparse_sign_ins, Dataset, SPARSE_SUBJECTS};
use super::Target;
use crate::closed_loop::{Gauge, Point, PointReport};
use crate::ms;

pub use admission::AdmissionReport;
pub use plans::{
    check as check_plan, check_index_only, Assertion, VelocityRead, SUBJECT_ACTION_INDEX,
    SUBJECT_TIME_INDEX,
};
pub use statements::StatementsReport;

/// Connections of the run's pool, as in the reference.
pub const POOL: usize = 8;

/// Tasks of the closed-loop points.
pub const CONCURRENCY: [u64; 4] = [1, 16, 64, 256];

/// The report of the SQL run, `security-<label>.json` (`security-<label>.failed.json` when it failed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecurityReport {
    /// `security`.
    pub benchmark: String,
    /// The run's label.
    pub label: String,
    /// The machine.
    pub machine: Machine,
    /// The versions.
    pub versions: Versions,
    /// The server settings that bound the figures, as `SHOW` gives them.
    pub database_settings: BTreeMap<String, String>,
    /// Connections of the run's pool.
    pub pool: usize,
    /// Shards of the global quota.
    pub shards: u32,
    /// Operations per point.
    pub samples: u64,
    /// The event fixture.
    pub dataset: Dataset,
    /// What the figures cannot show.
    pub limitations: Vec<String>,
    /// The velocity plans and their assertions.
    pub plans: Plans,
    /// Every closed-loop point; absent when the plans failed first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<Vec<PointReport>>,
    /// The event insert and the velocity reads under pgbench, our statements and the reference's, beside the
    /// library's rate at every concurrency; absent when the plans failed first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statements: Option<StatementsReport>,
    /// The evaluator admission point; absent when the plans failed first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluator_admission: Option<AdmissionReport>,
    /// Whether every assertion held and nothing failed.
    pub passed: bool,
    /// Why the run failed; absent when it passed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// The captured velocity plans: `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` documents as PostgreSQL gives them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plans {
    /// The library's statement.
    pub statement: String,
    /// The hot subject's read as bound.
    pub hot: Value,
    /// The hot subject's read as the generic plan.
    pub hot_generic: Value,
    /// A sparse subject's read.
    pub sparse: Value,
    /// The account of that sparse subject.
    pub sparse_subject: String,
    /// What was checked of the three plans.
    pub assertions: Vec<Assertion>,
}

/// Runs the SQL points and writes `docs/benchmarks/security-<label>.json`.
pub async fn run(
    target: &Target,
    env: &CapacityEnv,
    dataset: &Dataset,
) -> Result<SecurityReport, String> {
    run_in(target, env, dataset, &report::reports_dir()).await
}

/// The same, writing the report into `dir`. A run that fails (a plan assertion, a failed operation, the budget
/// exceeded) writes `security-<label>.failed.json` instead and returns the reasons.
pub async fn run_in(
    target: &Target,
    env: &CapacityEnv,
    dataset: &Dataset,
    dir: &Path,
) -> Result<SecurityReport, String> {
    let database = target.database(POOL)?;
    let server =
        Arc::new(seed::connect(&target.url, &target.schema, Duration::from_secs(120)).await?);
    let workload = points::Workload {
        database: database.clone(),
        evidence: Arc::new(seed::evidence(&database)),
        grouped: Arc::new(seed::grouped_evidence(&database)),
        events: env.events,
        fixture_now: dataset.fixture_now_ms,
        shards: env.shards,
        samples: env.samples,
        run_tag: now_ms(),
        serial: Arc::new(AtomicU64::new(0)),
        gauges: gauges(&database, server.clone()),
    };
    let machine = report::machine();
    let versions = report::versions(&database).await?;
    let database_settings = settings(&server).await?;
    let name = format!("security-{}", env.label);

    // Warm-up: every pooled connection opens and prepares its statements before anything is measured.
    workload.points(POOL as u64, 25 * POOL as u64).await?;

    let plans = capture_plans(&server, &workload).await?;
    let failed_assertions: Vec<String> = plans
        .assertions
        .iter()
        .filter(|a| !a.passed)
        .map(|a| format!("{} (found: {})", a.what, a.found))
        .collect();
    let mut report = SecurityReport {
        benchmark: "security".to_owned(),
        label: env.label.clone(),
        machine,
        versions,
        database_settings,
        pool: POOL,
        shards: env.shards,
        samples: env.samples,
        dataset: dataset.clone(),
        limitations: limitations(),
        plans,
        points: None,
        statements: None,
        evaluator_admission: None,
        passed: false,
        problems: Vec::new(),
    };
    if !failed_assertions.is_empty() {
        return fail(dir, &name, report, failed_assertions);
    }

    let (all, statements) = closed_loops(target, &workload).await?;
    let admission = admission::run(&workload).await?;
    print(&admission.point);
    println!(
        "{:<31} budget max_concurrent {}, peak seen by the evaluator {}, admitted {}",
        "", admission.max_concurrent, admission.peak_concurrent, admission.admitted
    );
    let devices = devices::run(&workload).await?;
    print(&devices);

    let mut problems = problems(&all, &admission, &devices);
    problems.extend(statements.comparisons.iter().flat_map(|c| {
        [
            ("ours", &c.pgbench_ours),
            ("the reference's", &c.pgbench_reference),
        ]
        .into_iter()
        .filter(|(_, p)| p.failed > 0 || p.transactions == 0)
        .map(move |(side, p)| {
            format!(
                "pgbench on {side} {} statements at concurrency {}: {} failed of {} transactions",
                c.workload, c.concurrency, p.failed, p.transactions
            )
        })
    }));
    let mut all = all;
    all.push(devices);
    report.points = Some(all.iter().map(Point::report).collect());
    report.statements = Some(statements);
    report.evaluator_admission = Some(admission.report());
    if !problems.is_empty() {
        return fail(dir, &name, report, problems);
    }
    report.passed = true;
    report::write_in(dir, &format!("{name}.json"), &report)?;
    Ok(report)
}

/// The library's points at every concurrency, each concurrency followed by pgbench on our statements and the
/// reference's (in a helper table's schema addition that is dropped afterwards, whatever happened).
async fn closed_loops(
    target: &Target,
    workload: &points::Workload,
) -> Result<(Vec<Point>, StatementsReport), String> {
    let scratch = std::env::temp_dir().join(format!("janitor-security-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("creating {}: {e}", scratch.display()))?;
    statements::create_helper(target, workload).await?;
    let outcome = async {
        let replay = statements::Replay::new(workload, &scratch).await?;
        let (mut all, mut comparisons) = (Vec::new(), Vec::new());
        for (i, concurrency) in CONCURRENCY.into_iter().enumerate() {
            let points = workload.points(concurrency, workload.samples).await?;
            points.iter().for_each(print);
            comparisons.extend(
                replay
                    .compare(target, concurrency, &points, i % 2 == 1)
                    .await?,
            );
            all.extend(points);
        }
        Ok::<_, String>((all, replay.report(comparisons)))
    }
    .await;
    let dropped = statements::drop_helper(target).await;
    let _ = std::fs::remove_dir_all(&scratch);
    let outcome = outcome?;
    dropped.map(|()| outcome)
}

/// What failed the run: any point with a failed operation, and the budget letting too many calls through.
fn problems(points: &[Point], admission: &admission::Admission, devices: &Point) -> Vec<String> {
    let mut problems: Vec<String> = points
        .iter()
        .chain([&admission.point, devices])
        .filter(|p| p.failed > 0)
        .map(|p| {
            format!(
                "{} at concurrency {}: {} of {} failed ({:?}; first error: {})",
                p.name,
                p.concurrency,
                p.failed,
                p.requests,
                p.outcomes,
                p.first_error.as_deref().unwrap_or("none")
            )
        })
        .collect();
    if admission.peak_concurrent > admission.max_concurrent {
        problems.push(format!(
            "the inference budget let {} evaluator calls run at once; its max_concurrent is {}",
            admission.peak_concurrent, admission.max_concurrent
        ));
    }
    problems
}

/// Writes the report of a failed run under a name of its own (never the published one) and returns the reasons.
fn fail(
    dir: &Path,
    name: &str,
    mut report: SecurityReport,
    problems: Vec<String>,
) -> Result<SecurityReport, String> {
    let reasons = problems.join("; ");
    report.passed = false;
    report.problems = problems;
    let written = report::write_in(dir, &format!("{name}.failed.json"), &report)
        .map(|p| format!("details in {}", p.display()))
        .unwrap_or_else(|e| format!("and the report could not be written: {e}"));
    Err(format!("the security run failed: {reasons}; {written}"))
}

fn print(point: &Point) {
    println!(
        "{:<31} c={:<4} {:>8.0} ops/s  p50 {:>7.2}  p95 {:>7.2}  p99 {:>7.2}  max {:>7.2} ms  failed {}  \
         waiting≤{} connections≤{}  {:?}",
        point.name,
        point.concurrency,
        point.per_second,
        ms(point.latency.median),
        ms(point.latency.p95),
        ms(point.latency.p99),
        ms(point.max),
        point.failed,
        point.peaks.get("pool_waiting_peak").copied().unwrap_or(0),
        point.peaks.get("db_connections_peak").copied().unwrap_or(0),
        point.outcomes
    );
}

/// Pool waiters, read every millisecond, and the database's client connections (other than the sampler's
/// own), read every 10 ms from a connection outside the pool.
fn gauges(database: &Database, server: Arc<Client>) -> Vec<Gauge> {
    let pool = database.pool().clone();
    vec![
        Gauge {
            name: "pool_waiting_peak",
            every: Duration::from_millis(1),
            read: Arc::new(move || {
                let waiting = pool.status().waiting as u64;
                Box::pin(async move { Some(waiting) })
            }),
        },
        Gauge {
            name: "db_connections_peak",
            every: Duration::from_millis(10),
            read: Arc::new(move || {
                let server = server.clone();
                Box::pin(async move {
                    let row = server
                        .query_one(
                            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                             AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
                            &[],
                        )
                        .await
                        .ok()?;
                    u64::try_from(row.get::<_, i64>(0)).ok()
                })
            }),
        },
    ]
}

async fn settings(server: &Client) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for name in [
        "shared_buffers",
        "max_connections",
        "work_mem",
        "synchronous_commit",
    ] {
        let value: String = server
            .query_one(&format!("SHOW {name}"), &[])
            .await
            .map_err(|e| format!("SHOW {name}: {}", pg(&e)))?
            .get(0);
        out.insert(name.to_owned(), value);
    }
    Ok(out)
}

/// The plans of the hot read (as bound, and as the generic plan a prepared statement may switch to) and of a
/// sparse read, with their assertions.
async fn capture_plans(server: &Client, workload: &points::Workload) -> Result<Plans, String> {
    let evidence = &workload.evidence;
    let window = points::sign_ins(evidence.subject_id(seed::HOT_ACCOUNT)).window();
    let limit = i64::from(evidence.config().activity_rows());
    let read = |subject: String| VelocityRead {
        subject,
        scope: evidence.scope().to_owned(),
        since: workload.fixture_now - window,
        until: workload.fixture_now,
        limit,
        action: "sign-in".to_owned(),
    };
    let hot = read(evidence.subject_id(seed::HOT_ACCOUNT).as_str().to_owned());
    // A sparse subject with sign-ins in the fixture (subject 1,000, as the reference, or the next one with some).
    let n = (1_000..SPARSE_SUBJECTS)
        .chain(0..1_000)
        .find(|&n| sparse_sign_ins(n, workload.events) > 0)
        .ok_or("no sparse subject has a sign-in in the fixture")?;
    let sparse = read(seed::sparse_subject(evidence, n).as_str().to_owned());
    let sparse_rows = u64::from(sparse_sign_ins(n, workload.events));

    let hot_plan = plans::explain(server, &hot).await?;
    let hot_generic = plans::explain_generic(server, &hot).await?;
    let sparse_plan = plans::explain(server, &sparse).await?;
    let rows = limit as u64;
    let either = [SUBJECT_ACTION_INDEX, SUBJECT_TIME_INDEX];
    let mut assertions = check_plan("hot", &hot_plan, &[SUBJECT_ACTION_INDEX], rows);
    // Rows on pages written since the fixture's VACUUM are fetched; 1 % of the rows bounds them strictly (a
    // plain index scan fetches every one).
    assertions.push(check_index_only("hot", &hot_plan, rows / 100));
    assertions.extend(check_plan(
        "hot (generic plan)",
        &hot_generic,
        &either,
        rows,
    ));
    assertions.extend(check_plan("sparse", &sparse_plan, &either, sparse_rows));
    Ok(Plans {
        statement: janitor_sql::testing::statements::recent_event_types(
            janitor_core::evidence::ActivityColumn::Subject,
            true,
        )
        .to_owned(),
        hot: hot_plan,
        hot_generic,
        sparse: sparse_plan,
        sparse_subject: format!("account-{n}"),
        assertions,
    })
}

fn limitations() -> Vec<String> {
    let cores = crate::cores();
    vec![
        format!(
            "One machine with {cores} cores runs the client (this harness) and PostgreSQL together: every \
             figure includes their contention. The reference gave PostgreSQL 2 CPUs and its client 2 more."
        ),
        "Closed-loop load from one process over a pool of 8 connections on loopback: a measure of the library \
         and its SQL, not a production throughput figure."
            .to_owned(),
        "Velocity reads are asked as of the fixture's clock (when its load finished), so a reused fixture \
         reads the same rows as a fresh one; every write uses the real clock."
            .to_owned(),
        "Hot reads saturate by design at 1,000 counted events: their counts are lower bounds."
            .to_owned(),
        "Fixture rows are made by the library (Evidence::event_record: labelled ids, digests, expiry) but \
         stored by COPY with the indexes built afterwards; one fixture event and every measured write go \
         through the API."
            .to_owned(),
        "The evaluator is a mock that answers after 5 ms: admission by the shared budget is measured, not \
         inference."
            .to_owned(),
        "db_connections_peak counts every client connection to the database except the sampler's own."
            .to_owned(),
    ]
}
