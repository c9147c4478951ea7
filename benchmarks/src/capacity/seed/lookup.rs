//! The missing-cookie lookup at scale: `JANITOR_BENCHMARK_LOOKUP_VISITORS` browsers of the library's test
//! population (one observation each) in a schema of their own, then, one after the other, the indexed candidate
//! lookup alone, a whole missing-cookie identification of a returning browser, and a cookie identification.

use std::time::{Duration, Instant};

use janitor_core::identification::candidates::probes_for;
use janitor_core::{Engine, EngineConfig, Retention, VisitorStore};
use janitor_sql::testing::population;
use janitor_sql::PgVisitorStore;
use serde::{Deserialize, Serialize};

use super::{connect, drop_named, guarded, now_ms, schema_exists};
use crate::capacity::env::CapacityEnv;
use crate::capacity::Target;
use crate::{Percentiles, Summary};

/// The schema of the lookup test beside the run's schema `run_schema` (`janitor_capacity_lookup` beside
/// `janitor_capacity`).
pub fn lookup_schema(run_schema: &str) -> String {
    format!("{run_schema}_lookup")
}

/// Observations seeded per browser (the reference's 2,000,000 × 1).
const OBSERVATIONS_PER_VISITOR: u64 = 1;

/// What the lookup test measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LookupFigures {
    /// Browsers seeded.
    pub visitors: u64,
    /// Observations seeded per browser.
    pub observations_per_visitor: u64,
    /// Seconds the seeding took, to two decimals.
    pub seed_seconds: f64,
    /// Samples of each measurement.
    pub samples: u64,
    /// The store's indexed candidate lookup alone.
    pub candidate_lookup: Timed,
    /// A whole identification of a known browser without its cookie.
    pub missing_cookie_identify: Timed,
    /// A whole identification with the browser's cookie.
    pub cookie_identify: Timed,
    /// Candidate rows a lookup read, on average, to two decimals.
    pub candidate_rows_per_lookup: f64,
    /// Browsers identified as themselves without their cookie.
    pub restored_without_cookie: u64,
    /// Browsers identified as themselves with their cookie.
    pub kept_with_cookie: u64,
}

/// The latency of one measurement, named.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timed {
    /// What was measured.
    pub what: String,
    /// How many times.
    pub samples: usize,
    /// Its latency; absent without samples.
    #[serde(flatten)]
    pub latency: Option<Percentiles>,
}

/// Runs the lookup test when `env.lookup_visitors` is not 0.
pub async fn run(target: &Target, env: &CapacityEnv) -> Result<Option<LookupFigures>, String> {
    if env.lookup_visitors == 0 {
        return Ok(None);
    }
    let schema = lookup_schema(&target.schema);
    let admin = connect(&target.url, "public", Duration::from_secs(60)).await?;
    if schema_exists(&admin, &schema).await? {
        return Err(format!(
            "schema {schema} already exists in this database, so it is not this run's to fill or remove; \
             drop it (`DROP SCHEMA {schema} CASCADE`) if it is a leftover of an earlier run"
        ));
    }
    let lookup = Target {
        url: target.url.clone(),
        schema: schema.clone(),
    };
    let outcome = measure(&lookup, env).await;
    let dropped = drop_named(&lookup.url, &schema).await;
    let report = outcome?;
    dropped?;
    Ok(Some(report))
}

/// Browser of sample `i`: spread over the population without repeating one until all were used.
fn browser(i: u64, visitors: u64) -> u64 {
    (i.wrapping_mul(2_654_435_761) % visitors) + 1
}

fn summary(name: &str, latencies: &mut [Duration]) -> Timed {
    let max = latencies.iter().copied().max().unwrap_or_default();
    let summary = Summary::of(latencies);
    Timed {
        what: name.to_owned(),
        samples: summary.map_or(0, |s| s.samples),
        latency: summary.map(|s| Percentiles::of(&s, max)),
    }
}

async fn measure(lookup: &Target, env: &CapacityEnv) -> Result<LookupFigures, String> {
    let database = lookup.database(2)?;
    database
        .migrate()
        .await
        .map_err(|e| format!("migrating schema {}: {e}", lookup.schema))?;
    let started = Instant::now();
    let (db, visitors, now) = (database.clone(), env.lookup_visitors, now_ms());
    guarded("seeding the lookup population", async move {
        population::seed(&db, visitors, OBSERVATIONS_PER_VISITOR, now).await
    })
    .await?;
    let seed_seconds = started.elapsed().as_secs_f64();
    println!(
        "lookup: {visitors} visitors seeded in {seed_seconds:.1} s in schema {}",
        lookup.schema
    );
    let engine = Engine::new(
        PgVisitorStore::new(database.clone(), Retention::default()),
        EngineConfig::default(),
    );
    let identify = |n: u64, cookie: bool| {
        let engine = &engine;
        async move {
            let payload = population::payload(n);
            let visitor = population::visitor(n);
            engine
                .identify_at(&payload, cookie.then_some(&visitor), now_ms())
                .await
                .map(|found| found.identity.visitor_id == visitor)
                .map_err(|e| format!("identification of browser {n}: {e}"))
        }
    };
    // Warm-up: every statement prepared, the upper index pages in memory.
    for i in 0..100 {
        let n = browser(env.samples + i, visitors);
        identify(n, true).await?;
        identify(n, false).await?;
    }
    let (mut lookups, mut missing, mut cookies) = (Vec::new(), Vec::new(), Vec::new());
    let (mut candidates, mut restored, mut kept) = (0u64, 0u64, 0u64);
    for i in 0..env.samples {
        let n = browser(i, visitors);
        let probes = probes_for(&population::observation(n));
        let began = Instant::now();
        let rows = engine
            .store()
            .find_candidate_rows(&probes, now_ms())
            .await
            .map_err(|e| format!("candidate lookup of browser {n}: {e}"))?;
        lookups.push(began.elapsed());
        candidates += rows.len() as u64;

        let began = Instant::now();
        restored += u64::from(identify(n, false).await?);
        missing.push(began.elapsed());

        let began = Instant::now();
        kept += u64::from(identify(n, true).await?);
        cookies.push(began.elapsed());
    }
    let samples = env.samples;
    let report = LookupFigures {
        visitors,
        observations_per_visitor: OBSERVATIONS_PER_VISITOR,
        seed_seconds: (seed_seconds * 100.0).round() / 100.0,
        samples,
        candidate_lookup: summary("the store's indexed candidate lookup alone", &mut lookups),
        missing_cookie_identify: summary(
            "a whole identification of a known browser without its cookie",
            &mut missing,
        ),
        cookie_identify: summary(
            "a whole identification with the browser's cookie",
            &mut cookies,
        ),
        candidate_rows_per_lookup: (candidates as f64 / samples as f64 * 100.0).round() / 100.0,
        restored_without_cookie: restored,
        kept_with_cookie: kept,
    };
    let p95 = |t: &Timed| t.latency.map_or(0.0, |l| l.p95_ms);
    println!(
        "lookup: candidate lookup p95 {} ms, missing-cookie identify p95 {} ms, cookie identify p95 {} ms; \
         {restored}/{samples} restored without their cookie",
        p95(&report.candidate_lookup),
        p95(&report.missing_cookie_identify),
        p95(&report.cookie_identify)
    );
    Ok(report)
}
