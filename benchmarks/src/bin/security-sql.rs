//! The security SQL workloads on PostgreSQL through the library's real APIs, closed loop at several
//! concurrencies over a small pool: event recording, velocity reads of a sparse and of a hot subject, and
//! request quota claims (shared and exhausted).
//!
//! Run with:
//! `cargo run --release -p janitor-benchmarks --bin security-sql`
//!
//! Options: `--events` seeded 10,000–3,000,000 (default 1,000,000; half for one hot subject), `--subjects`
//! sparse subjects 1,000–1,000,000 (default 100,000), `--ops` operations per point 100–100,000 (default 1,000;
//! the hot velocity read runs a quarter of it), `--pool` connections 1–64 (default 8),
//! `--shards` of the global quota 1–128 (default 32), `--concurrency` a comma-separated list of 1–1,024
//! (default `1,16,64,256`), `--out` a JSON file. Uses `DATABASE_URL` (default: the local server) in a throwaway
//! schema.

use std::sync::Arc;

use janitor_benchmarks::closed_loop::{self, Point};
use janitor_benchmarks::{cores, number, options_or_exit, pairs, write_report};
use std::sync::atomic::{AtomicU64, Ordering};

use janitor_benchmarks::evidence_seed::{self, HOT_ACCOUNT};
use janitor_core::evidence::{
    Action, ActivityKey, EventInput, EventType, Evidence, EvidenceConfig, VelocityQuery,
};
use janitor_core::label::LabelKey;
use janitor_core::protection::quota::{Admission, AdmissionContext, QuotaConfig, RequestQuotas};
use janitor_sql::testing::with_schemas;
use janitor_sql::{Database, PgEvidenceStore, PgQuotaStore};
use serde_json::json;

const NOW: i64 = 1_735_689_600_000;

#[derive(Debug, Clone)]
struct Options {
    events: u64,
    subjects: u64,
    ops: u64,
    pool: u64,
    shards: u64,
    concurrency: Vec<u64>,
    out: Option<String>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        events: 1_000_000,
        subjects: 100_000,
        ops: 1_000,
        pool: 8,
        shards: 32,
        concurrency: vec![1, 16, 64, 256],
        out: None,
    };
    for (name, value) in pairs(std::env::args().skip(1))? {
        match name.as_str() {
            "events" => o.events = number(&name, &value, 10_000, 3_000_000)?,
            "subjects" => o.subjects = number(&name, &value, 1_000, 1_000_000)?,
            "ops" => o.ops = number(&name, &value, 100, 100_000)?,
            "pool" => o.pool = number(&name, &value, 1, 64)?,
            "shards" => o.shards = number(&name, &value, 1, 128)?,
            "concurrency" => {
                o.concurrency = value
                    .split(',')
                    .map(|c| number(&name, c.trim(), 1, 1_024))
                    .collect::<Result<_, _>>()?;
            }
            "out" => o.out = Some(value),
            other => return Err(format!("unknown option --{other}")),
        }
    }
    Ok(o)
}

fn key() -> LabelKey {
    LabelKey::new(&"b".repeat(64), "benchmark").expect("valid key")
}

fn print(point: &Point) {
    println!(
        "{:<24} c={:<4} {:>8.0} ops/s   p50 {:>7.2} ms   p95 {:>7.2} ms   p99 {:>7.2} ms   failed {}",
        point.name,
        point.concurrency,
        point.per_second,
        point.latency.median.as_secs_f64() * 1e3,
        point.latency.p95.as_secs_f64() * 1e3,
        point.latency.p99.as_secs_f64() * 1e3,
        point.failed
    );
}

type PgEvidence = Evidence<PgEvidenceStore>;

async fn evidence_points(
    evidence: &Arc<PgEvidence>,
    o: &Options,
    concurrency: u64,
    serial: &Arc<AtomicU64>,
) -> Vec<Point> {
    let subjects = o.subjects;
    // Events through the real API: validation, labels, digest, one statement.
    let (e, n) = (evidence.clone(), serial.clone());
    let insert = closed_loop::run("event-insert", concurrency, o.ops, move |i| {
        let (evidence, serial) = (e.clone(), n.clone());
        async move {
            let id = format!("bench-event-{}", serial.fetch_add(1, Ordering::Relaxed));
            let subject = evidence.subject_id(&evidence_seed::sparse_account(i * 7_919 % subjects));
            let Ok(event) = EventInput::builder(&id, EventType::LoginAttempt)
                .action(Action::SignIn)
                .subject(subject)
                .build()
            else {
                return false;
            };
            matches!(evidence.record(&event, NOW).await, Ok(r) if r.recorded)
        }
    })
    .await;

    let e = evidence.clone();
    let sparse = closed_loop::run("velocity-sparse", concurrency, o.ops, move |i| {
        let evidence = e.clone();
        async move {
            let subject =
                evidence.subject_id(&evidence_seed::sparse_account(i * 104_729 % subjects));
            let query = VelocityQuery::new(ActivityKey::Subject(subject));
            matches!(evidence.velocity(&query, NOW).await, Ok(s) if !s.saturated && s.total > 0)
        }
    })
    .await;

    let e = evidence.clone();
    let hot_subject = evidence.subject_id(HOT_ACCOUNT);
    let hot = closed_loop::run(
        "velocity-hot",
        concurrency,
        (o.ops / 4).max(concurrency),
        move |_| {
            let (evidence, subject) = (e.clone(), hot_subject.clone());
            async move {
                let query = VelocityQuery::new(ActivityKey::Subject(subject));
                matches!(evidence.velocity(&query, NOW).await, Ok(s) if s.saturated)
            }
        },
    )
    .await;
    vec![insert, sparse, hot]
}

async fn quota_points(database: &Database, o: &Options, concurrency: u64) -> Vec<Point> {
    let shards = o.shards as u32;
    // A quota that never runs out within the run: every claim is admitted and counted.
    let roomy = QuotaConfig::builder()
        .global(1_000_000)
        .shards(shards)
        .window_ms(3_600_000)
        .build()
        .expect("valid quota");
    let shared = Arc::new(RequestQuotas::new(
        PgQuotaStore::new(database.clone()),
        key(),
        roomy,
    ));
    let point = closed_loop::run("shared-global-quota", concurrency, o.ops, move |_| {
        let quotas = shared.clone();
        async move {
            matches!(
                quotas.admit(&AdmissionContext::anonymous(), NOW + 1).await,
                Ok(Admission::Allowed)
            )
        }
    })
    .await;

    // A quota of one per shard, used up first: every claim is refused (and reads its reset time).
    let tight = QuotaConfig::builder()
        .global(shards)
        .shards(shards)
        .window_ms(3_600_000)
        .build()
        .expect("valid quota");
    let exhausted = Arc::new(RequestQuotas::new(
        PgQuotaStore::new(database.clone()),
        key(),
        tight,
    ));
    for _ in 0..shards {
        exhausted
            .admit(&AdmissionContext::anonymous(), NOW + 1)
            .await
            .expect("exhausting the quota");
    }
    let denied = closed_loop::run("exhausted-global-quota", concurrency, o.ops, move |_| {
        let quotas = exhausted.clone();
        async move {
            matches!(
                quotas.admit(&AdmissionContext::anonymous(), NOW + 2).await,
                Ok(Admission::Limited { .. })
            )
        }
    })
    .await;
    vec![point, denied]
}

#[tokio::main]
async fn main() {
    let o = options_or_exit("security-sql", options());
    with_schemas(move |schemas| async move {
        let pool = o.pool as usize;
        // Waits for a connection grow with concurrency over a small pool: allow them, they are measured.
        let database = schemas
            .fresh_with(|b| b.max_connections(pool).wait_timeout_ms(60_000))
            .await;
        let evidence = Arc::new(Evidence::new(
            PgEvidenceStore::new(database.clone()),
            key(),
            EvidenceConfig::default(),
        ));
        let started = std::time::Instant::now();
        let bytes =
            evidence_seed::seed(&database, &key(), evidence.scope(), o.events, o.subjects, NOW).await;
        println!(
            "seeded {} events over {} subjects in {:.1} s; application_events with indexes: {} bytes",
            o.events,
            o.subjects + 1,
            started.elapsed().as_secs_f64(),
            bytes
        );
        let serial = Arc::new(AtomicU64::new(0));
        // Warm-up: every pooled connection opens and prepares its statements before anything is measured.
        let warm = Options {
            ops: 100 * o.pool,
            ..o.clone()
        };
        evidence_points(&evidence, &warm, o.pool, &serial).await;
        quota_points(&database, &warm, o.pool).await;
        let mut points = Vec::new();
        for &concurrency in &o.concurrency {
            let mut batch = evidence_points(&evidence, &o, concurrency, &serial).await;
            batch.extend(quota_points(&database, &o, concurrency).await);
            for point in batch {
                print(&point);
                points.push(point);
            }
        }
        let report = json!({
            "benchmark": "security-sql",
            "cores": cores(),
            "pool": o.pool,
            "events": o.events,
            "subjects": o.subjects + 1,
            "application_events_bytes": bytes,
            "shards": o.shards,
            "points": points.iter().map(Point::to_json).collect::<Vec<_>>(),
        });
        write_report(o.out.as_deref(), &report);
    })
    .await;
}
