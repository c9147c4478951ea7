//! Identification on PostgreSQL: latency, round trips and throughput of the cookie path and the cookieless path
//! over a seeded population.
//!
//! Run with:
//! `cargo run --release --manifest-path benchmarks/Cargo.toml --target-dir target --bin identify-postgres -- --visitors 100000`
//!
//! Options (all optional): `--visitors` 1–2,000,000 (default 100,000), `--per-visitor` observations each 1–10
//! (default 2), `--samples` sequential identifications per path 10–100,000 (default 2,000), `--concurrency`
//! tasks of the throughput phase 1–256 (default 16), `--seconds` per throughput phase 1–600 (default 5),
//! `--out` a JSON file for the results, `--pool-mode-rounds` 0–20 (default 0) alternating rounds of the cookie
//! path through a session-mode and a transaction-mode pool on the same data, `--erased-rounds` 0–20 (default 0)
//! alternating rounds of the cookie path through an engine that knows its store's type and through one whose
//! store is type-erased as an application's handle holds it. Uses `DATABASE_URL` (default: the
//! local server) in a throwaway schema.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use janitor_benchmarks::{cores, number, options_or_exit, pairs, write_report, Summary};
use janitor_core::identification::engine::IdentifyPath;
use janitor_core::{
    Engine, EngineConfig, Evaluator, NoEvaluator, Retention, VisitorId, VisitorPayload,
    VisitorStore,
};
use janitor_sql::testing::{population, with_schemas};
use janitor_sql::PgVisitorStore;
use serde::{Deserialize, Serialize};

const NOW: i64 = 1_735_689_600_000;

#[derive(Debug, Clone)]
struct Options {
    visitors: u64,
    per_visitor: u64,
    samples: u64,
    concurrency: u64,
    seconds: u64,
    out: Option<String>,
    /// Rounds of the cookie path in each pool mode, alternating, on the same data (0: none).
    pool_mode_rounds: u64,
    /// Rounds of the cookie path through an engine that knows its store's type and through one whose store
    /// is type-erased as the application's handle holds it, alternating, on the same data (0: none).
    erased_rounds: u64,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        visitors: 100_000,
        per_visitor: 2,
        samples: 2_000,
        concurrency: 16,
        seconds: 5,
        out: None,
        pool_mode_rounds: 0,
        erased_rounds: 0,
    };
    for (name, value) in pairs(std::env::args().skip(1))? {
        match name.as_str() {
            "visitors" => o.visitors = number(&name, &value, 1, 2_000_000)?,
            "per-visitor" => o.per_visitor = number(&name, &value, 1, 10)?,
            "samples" => o.samples = number(&name, &value, 10, 100_000)?,
            "concurrency" => o.concurrency = number(&name, &value, 1, 256)?,
            "seconds" => o.seconds = number(&name, &value, 1, 600)?,
            "out" => o.out = Some(value),
            "pool-mode-rounds" => o.pool_mode_rounds = number(&name, &value, 0, 20)?,
            "erased-rounds" => o.erased_rounds = number(&name, &value, 0, 20)?,
            other => return Err(format!("unknown option --{other}")),
        }
    }
    Ok(o)
}

type PgEngine = Engine<PgVisitorStore>;

/// The report `--out` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Report {
    /// `identify-postgres`.
    benchmark: String,
    visitors: u64,
    observations_per_visitor: u64,
    cores: usize,
    /// One sequential phase per kind of request.
    sequential: Vec<Sequential>,
    /// One throughput phase per kind of request.
    throughput: Vec<Throughput>,
    /// Statements the pool prepared in all.
    statements_prepared: u64,
    /// The cookie path in session and transaction pool mode, side by side (`--pool-mode-rounds`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pool_modes: Vec<PoolModeRound>,
    /// The cookie path with the store's type known and erased, side by side (`--erased-rounds`; `mode` is
    /// `known` or `erased`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    erased: Vec<PoolModeRound>,
}

/// One round of the cookie path in one pool mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PoolModeRound {
    round: u64,
    mode: String,
    sequential_median_us: f64,
    per_second: f64,
    throughput_median_us: f64,
}

/// A sequential phase: latency and round trips of one identification at a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Sequential {
    kind: String,
    samples: usize,
    median_us: f64,
    p95_us: f64,
    p99_us: f64,
    round_trips_per_identification: f64,
    /// Returning browsers identified as themselves without their cookie.
    restored: u64,
    /// Identifications that took the cookie path.
    cookie_paths: u64,
}

/// A throughput phase: identifications per second at a concurrency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Throughput {
    kind: String,
    concurrency: u64,
    identifications: usize,
    per_second: f64,
    median_us: f64,
    p95_us: f64,
}

/// Which request a sample sends for population browser `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A known browser with its cookie.
    Cookie,
    /// A known browser without its cookie (a cleared cookie, a private window).
    ReturningWithoutCookie,
    /// A browser never seen.
    NewBrowser,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Cookie => "cookie path",
            Kind::ReturningWithoutCookie => "cookieless, returning browser",
            Kind::NewBrowser => "cookieless, new browser",
        }
    }

    fn request(self, n: u64, visitors: u64) -> (VisitorPayload, Option<VisitorId>) {
        match self {
            Kind::Cookie => (population::payload(n), Some(population::visitor(n))),
            Kind::ReturningWithoutCookie => (population::payload(n), None),
            Kind::NewBrowser => (population::payload(visitors + n), None),
        }
    }
}

/// Spreads sample `i` over the population without repeating a browser until all were used.
fn browser(i: u64, visitors: u64) -> u64 {
    (i.wrapping_mul(2_654_435_761) % visitors) + 1
}

struct Outcome {
    latency: Duration,
    statements: u64,
    path: IdentifyPath,
    restored: bool,
}

/// An engine over any visitor store, with the database its statements are counted on.
struct Measured<S: VisitorStore, E: Evaluator> {
    engine: Engine<S, E>,
    database: janitor_sql::Database,
}

impl Measured<PgVisitorStore, NoEvaluator> {
    fn known(engine: PgEngine) -> Arc<Self> {
        let database = engine.store().database().clone();
        Arc::new(Measured { engine, database })
    }
}

async fn one<S: VisitorStore, E: Evaluator>(
    measured: &Measured<S, E>,
    kind: Kind,
    n: u64,
    visitors: u64,
    now: i64,
) -> Outcome {
    let (payload, cookie) = kind.request(n, visitors);
    let (engine, database) = (&measured.engine, &measured.database);
    let before = database.statements_executed();
    let started = Instant::now();
    let result = engine
        .identify_at(&payload, cookie.as_ref(), now)
        .await
        .unwrap_or_else(|e| panic!("identification failed: {e}"));
    let latency = started.elapsed();
    Outcome {
        latency,
        // Exact only when nothing else runs on the handle: true in the sequential phase.
        statements: database.statements_executed() - before,
        path: result.metrics.path,
        restored: kind == Kind::ReturningWithoutCookie
            && result.identity.visitor_id == population::visitor(n),
    }
}

/// Microseconds, to one decimal.
fn micros(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e7).round() / 10.0
}

async fn sequential<S: VisitorStore, E: Evaluator>(
    engine: &Measured<S, E>,
    kind: Kind,
    o: &Options,
    clock: &AtomicU64,
) -> Sequential {
    let mut latencies = Vec::with_capacity(o.samples as usize);
    let (mut statements, mut restored, mut cookie_paths) = (0, 0, 0);
    for i in 0..o.samples {
        let now = NOW + clock.fetch_add(1, Ordering::Relaxed) as i64;
        let outcome = one(engine, kind, browser(i, o.visitors), o.visitors, now).await;
        latencies.push(outcome.latency);
        statements += outcome.statements;
        restored += u64::from(outcome.restored);
        cookie_paths += u64::from(outcome.path == IdentifyPath::Cookie);
    }
    let s = Summary::of(&mut latencies).expect("samples");
    let trips = statements as f64 / o.samples as f64;
    println!(
        "{:<32} median {:>8.1} µs   p95 {:>8.1} µs   p99 {:>8.1} µs   round trips {:.2}   restored {}/{}",
        kind.name(),
        micros(s.median),
        micros(s.p95),
        micros(s.p99),
        trips,
        restored,
        o.samples
    );
    Sequential {
        kind: kind.name().to_owned(),
        samples: s.samples,
        median_us: micros(s.median),
        p95_us: micros(s.p95),
        p99_us: micros(s.p99),
        round_trips_per_identification: trips,
        restored,
        cookie_paths,
    }
}

async fn throughput<S: VisitorStore + 'static, E: Evaluator + 'static>(
    engine: &Arc<Measured<S, E>>,
    kind: Kind,
    o: &Options,
    clock: &Arc<AtomicU64>,
) -> Throughput {
    let deadline = Instant::now() + Duration::from_secs(o.seconds);
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(o.samples));
    let tasks: Vec<_> = (0..o.concurrency)
        .map(|_| {
            let (engine, next, clock, visitors) =
                (engine.clone(), next.clone(), clock.clone(), o.visitors);
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let now = NOW + clock.fetch_add(1, Ordering::Relaxed) as i64;
                    latencies.push(
                        one(&engine, kind, browser(i, visitors), visitors, now)
                            .await
                            .latency,
                    );
                }
                latencies
            })
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("throughput task"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    let s = Summary::of(&mut latencies).expect("samples");
    let rate = s.samples as f64 / elapsed;
    println!(
        "{:<32} {:>8.0} /s with {} tasks   median {:>8.1} µs   p95 {:>8.1} µs",
        kind.name(),
        rate,
        o.concurrency,
        micros(s.median),
        micros(s.p95)
    );
    Throughput {
        kind: kind.name().to_owned(),
        concurrency: o.concurrency,
        identifications: s.samples,
        per_second: rate.round(),
        median_us: micros(s.median),
        p95_us: micros(s.p95),
    }
}

/// One round of the cookie path on `engine`: sequential, then under load.
async fn cookie_round<S: VisitorStore + 'static, E: Evaluator + 'static>(
    engine: &Arc<Measured<S, E>>,
    mode: &str,
    round: u64,
    o: &Options,
    clock: &Arc<AtomicU64>,
) -> PoolModeRound {
    let sequential = sequential(engine, Kind::Cookie, o, clock).await;
    let throughput = throughput(engine, Kind::Cookie, o, clock).await;
    PoolModeRound {
        round,
        mode: mode.to_owned(),
        sequential_median_us: sequential.median_us,
        per_second: throughput.per_second,
        throughput_median_us: throughput.median_us,
    }
}

/// The cookie path through a pool in session mode (named statements prepared once per connection, settings
/// in the startup packet) and one in transaction mode (unnamed typed statements, qualified tables, the
/// client's timeout) on the same server and data, in alternating rounds so that the machine's drift falls on
/// both.
async fn compare_pool_modes(
    session: &Arc<Measured<PgVisitorStore, NoEvaluator>>,
    database: &janitor_sql::Database,
    o: &Options,
    clock: &Arc<AtomicU64>,
) -> Vec<PoolModeRound> {
    if o.pool_mode_rounds == 0 {
        return Vec::new();
    }
    let schema = database.schema().expect("a test schema").to_string();
    let config = janitor_sql::DatabaseConfig::builder(&janitor_sql::testing::database_url())
        .schema(&schema)
        .max_connections((o.concurrency as usize).max(4))
        .pool_mode(janitor_sql::PoolMode::Transaction)
        .build()
        .expect("transaction-mode configuration");
    let transaction = Measured::known(Engine::new(
        PgVisitorStore::new(
            janitor_sql::Database::new(config).expect("pool"),
            Retention::default(),
        ),
        EngineConfig::default(),
    ));
    let mut rounds = Vec::new();
    for round in 1..=o.pool_mode_rounds {
        for (mode, engine) in [("session", session), ("transaction", &transaction)] {
            println!("pool mode {mode}, round {round}:");
            rounds.push(cookie_round(engine, mode, round, o, clock).await);
        }
    }
    rounds
}

/// The cookie path through the engine that knows its store's type and through the engine an application's
/// handle holds (the store family's type erased, each store call's future boxed), on the same pool and data,
/// in alternating rounds so that the machine's drift falls on both.
async fn compare_erased(
    known: &Arc<Measured<PgVisitorStore, NoEvaluator>>,
    database: &janitor_sql::Database,
    o: &Options,
    clock: &Arc<AtomicU64>,
) -> Vec<PoolModeRound> {
    use janitor_core::stores::erased::ErasedEvaluator;
    use janitor_core::{ErasedStores, Stores};
    if o.erased_rounds == 0 {
        return Vec::new();
    }
    let stores = ErasedStores::new(janitor_sql::PgStores::new(database.clone()));
    let erased = Arc::new(Measured {
        engine: Engine::new(
            stores.visitors(Retention::default()),
            EngineConfig::default(),
        )
        .with_optional_evaluator(None::<Arc<dyn ErasedEvaluator>>),
        database: database.clone(),
    });
    let mut rounds = Vec::new();
    for round in 1..=o.erased_rounds {
        // A B B A: each order of the pair in every two rounds.
        let erased_first = round % 2 == 0;
        for first in [true, false] {
            rounds.push(if first == erased_first {
                println!("store type erased, round {round}:");
                cookie_round(&erased, "erased", round, o, clock).await
            } else {
                println!("store type known, round {round}:");
                cookie_round(known, "known", round, o, clock).await
            });
        }
    }
    rounds
}

#[tokio::main]
async fn main() {
    let o = options_or_exit("identify-postgres", options());
    with_schemas(move |schemas| async move {
        let pool = (o.concurrency as usize).max(4);
        let database = schemas.fresh_with(|b| b.max_connections(pool)).await;
        let started = Instant::now();
        population::seed(&database, o.visitors, o.per_visitor, NOW).await;
        println!(
            "seeded {} visitors × {} observations in {:.1} s",
            o.visitors,
            o.per_visitor,
            started.elapsed().as_secs_f64()
        );
        let engine = Measured::known(Engine::new(
            PgVisitorStore::new(database.clone(), Retention::default()),
            EngineConfig::default(),
        ));
        let clock = Arc::new(AtomicU64::new(1));
        // Warm-up: prepares every statement on the connection and brings the indexes into memory.
        for i in 0..200 {
            for kind in [Kind::Cookie, Kind::NewBrowser] {
                one(
                    &engine,
                    kind,
                    browser(o.visitors - i % o.visitors, o.visitors),
                    o.visitors,
                    NOW,
                )
                .await;
            }
        }
        let kinds = [Kind::Cookie, Kind::ReturningWithoutCookie, Kind::NewBrowser];
        let mut sequential_results = Vec::new();
        for kind in kinds {
            sequential_results.push(sequential(&engine, kind, &o, &clock).await);
        }
        let mut throughput_results = Vec::new();
        for kind in kinds {
            throughput_results.push(throughput(&engine, kind, &o, &clock).await);
        }
        let pool_modes = compare_pool_modes(&engine, &database, &o, &clock).await;
        let erased = compare_erased(&engine, &database, &o, &clock).await;
        let report = Report {
            benchmark: "identify-postgres".to_owned(),
            visitors: o.visitors,
            observations_per_visitor: o.per_visitor,
            cores: cores(),
            sequential: sequential_results,
            throughput: throughput_results,
            statements_prepared: database.statements_prepared(),
            pool_modes,
            erased,
        };
        if let Some(path) = &o.out {
            write_report(Path::new(path), &report).unwrap_or_else(|e| panic!("{e}"));
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_report_reads_back_unchanged() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/benchmarks/identify-postgres.json"
        );
        let committed: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let report: Report = serde_json::from_value(committed.clone()).unwrap();
        assert_eq!(serde_json::to_value(&report).unwrap(), committed);
    }
}
