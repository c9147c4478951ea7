//! The missing-cookie lookup at scale: `JANITOR_BENCHMARK_LOOKUP_VISITORS` browsers of the library's test
//! population (one observation each) in a schema of their own, then, one after the other, the indexed candidate
//! lookup alone, a whole missing-cookie identification of a returning browser, and a cookie identification.
//!
//! The lookup and the missing-cookie identification are measured for every way the store can read candidate
//! rows ([`LookupRead`]): the stored compact features (the default), the same computed at each lookup, and the
//! whole `signals_json` of the design before. The ways take turns sample by sample, in a rotating order, so
//! that they share the machine's state and their ratios come from one run.
//!
//! Within a sample the ways look up the same browser one after the other, so all but the first find its
//! index and heap pages warm. Each sample therefore also times a **cold** lookup per way: a browser that no
//! other measurement of the run touches (while the population has enough of them), looked up before anything
//! else of that sample. Both figures are reported.

use std::time::{Duration, Instant};

use janitor_core::identification::candidates::probes_for;
use janitor_core::{Engine, EngineConfig, Retention, VisitorStore};
use janitor_sql::testing::population;
use janitor_sql::{LookupRead, PgVisitorStore};
use serde::{Deserialize, Serialize};

use super::covering::{build_covering, insert_rates, without_index_only_scans, CoveringCost};
use super::{connect, drop_named, guarded, now_ms, pg, schema_exists, SEED_DEADLINE};
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
    /// The same lookup of browsers nothing else in the run touched (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_candidate_lookup: Option<Timed>,
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
    /// Whether the operating system's page cache was dropped before each sample's cold lookups
    /// (`JANITOR_BENCHMARK_LOOKUP_EVICT`). Written only when true, so a report without it (every report
    /// before the setting existed, too) was timed on whatever the page cache held.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub page_cache_evicted: bool,
    /// How the figures above read candidate rows (the store's default).
    pub lookup_read: String,
    /// Missing-cookie identifications per second of one sequential client, the default way.
    pub missing_cookie_per_second: f64,
    /// This process's CPU time per missing-cookie identification in ms, the default way (absent in older
    /// reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_cookie_cpu_ms: Option<f64>,
    /// The same measurements with the whole `signals_json` read, as before the compact rows.
    pub previous_design: DesignFigures,
    /// The same measurements with the compact features computed by each lookup instead of stored.
    pub computed_design: DesignFigures,
    /// Missing-cookie identifications per second, the default way over the previous design, to two decimals.
    pub throughput_ratio_to_previous: f64,
    /// The previous design's candidate lookup p95 over the default way's, to two decimals.
    pub lookup_p95_speedup: f64,
    /// Seconds that adding the `lookup_features` column (migration 0006) took on the seeded table, after the
    /// measurements: the rewrite an existing installation's migration does, to two decimals.
    pub add_column_seconds: f64,
    /// The same measurements through the opt-in covering indexes (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covering_design: Option<DesignFigures>,
    /// What the covering indexes cost on the seeded table (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covering_indexes: Option<CoveringCost>,
    /// The default way's cold lookup p95 over the covering way's, to two decimals (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covering_cold_p95_speedup: Option<f64>,
}

/// The migration that adds `lookup_features`, whose cost on a big table is measured.
const FEATURES_MIGRATION: &str = "0006_lookup_features.sql";

/// Drops `lookup_features` (which only marks it dropped) and adds it again with the migration's own SQL,
/// which rewrites the seeded table and its indexes as the migration of an existing installation does.
async fn add_column_seconds(lookup: &Target) -> Result<f64, String> {
    let migration = janitor_sql::migrate::MIGRATIONS
        .iter()
        .find(|m| m.name == FEATURES_MIGRATION)
        .ok_or_else(|| format!("no migration {FEATURES_MIGRATION}"))?;
    let client = connect(&lookup.url, &lookup.schema, SEED_DEADLINE).await?;
    client
        .batch_execute("ALTER TABLE observations DROP COLUMN lookup_features")
        .await
        .map_err(|e| format!("dropping lookup_features: {}", pg(&e)))?;
    let started = Instant::now();
    client
        .batch_execute(migration.sql)
        .await
        .map_err(|e| format!("adding lookup_features again: {}", pg(&e)))?;
    Ok((started.elapsed().as_secs_f64() * 100.0).round() / 100.0)
}

/// The measurements of one way of reading candidate rows, taken in the same run as the default's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DesignFigures {
    /// The way: `stored-features`, `computed-features` or `signals-json`.
    pub lookup_read: String,
    /// The store's indexed candidate lookup alone.
    pub candidate_lookup: Timed,
    /// The same lookup of browsers nothing else in the run touched (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_candidate_lookup: Option<Timed>,
    /// A whole identification of a known browser without its cookie.
    pub missing_cookie_identify: Timed,
    /// Missing-cookie identifications per second of one sequential client, to one decimal.
    pub missing_cookie_per_second: f64,
    /// This process's CPU time per missing-cookie identification in ms, to three decimals: the engine, the
    /// driver's encoding and decoding and the runtime, without HTTP (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing_cookie_cpu_ms: Option<f64>,
}

/// The ways measured, the default first.
const DESIGNS: [LookupRead; 4] = [
    LookupRead::StoredFeatures,
    LookupRead::ComputedFeatures,
    LookupRead::SignalsJson,
    LookupRead::CoveringIndexes,
];

fn design_name(read: LookupRead) -> &'static str {
    match read {
        LookupRead::StoredFeatures => "stored-features",
        LookupRead::ComputedFeatures => "computed-features",
        LookupRead::SignalsJson => "signals-json",
        LookupRead::CoveringIndexes => "covering-indexes",
    }
}

/// The latencies of one way.
#[derive(Default)]
struct Samples {
    lookups: Vec<Duration>,
    cold: Vec<Duration>,
    missing: Vec<Duration>,
    /// This process's CPU time over the way's batch of missing-cookie identifications, and their count.
    cpu: Option<(Duration, u64)>,
}

impl Samples {
    fn figures(mut self, read: LookupRead) -> DesignFigures {
        let total: f64 = self.missing.iter().map(Duration::as_secs_f64).sum();
        let per_second = if total > 0.0 {
            self.missing.len() as f64 / total
        } else {
            0.0
        };
        DesignFigures {
            lookup_read: design_name(read).to_owned(),
            candidate_lookup: summary(
                "the store's indexed candidate lookup alone",
                &mut self.lookups,
            ),
            cold_candidate_lookup: Some(summary(
                "the store's indexed candidate lookup alone, of a browser nothing else in the run touched",
                &mut self.cold,
            )),
            missing_cookie_identify: summary(
                "a whole identification of a known browser without its cookie",
                &mut self.missing,
            ),
            missing_cookie_per_second: (per_second * 10.0).round() / 10.0,
            missing_cookie_cpu_ms: self.cpu.filter(|&(_, n)| n > 0).map(|(cpu, n)| {
                (cpu.as_secs_f64() * 1000.0 / n as f64 * 1000.0).round() / 1000.0
            }),
        }
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        (a / b * 100.0).round() / 100.0
    } else {
        0.0
    }
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

/// Warm-up identifications before the samples.
const WARM_UP: u64 = 100;

/// The browser of way `design`'s cold lookup in sample `i`: past every sample's and warm-up's browser, so
/// nothing else of the run reads it while the population holds `samples × (1 + ways) + warm-up` browsers.
fn cold_browser(i: u64, design: usize, samples: u64, visitors: u64) -> u64 {
    browser(
        samples + WARM_UP + i * DESIGNS.len() as u64 + design as u64,
        visitors,
    )
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
    let covering = build_covering(&database, lookup).await?;
    let plain = Target {
        url: without_index_only_scans(&lookup.url),
        schema: lookup.schema.clone(),
    }
    .database(2)?;
    let sampled = sample(&database, &plain, env).await?;
    let covering = insert_rates(lookup, covering, env.rate_seconds).await?;
    let add_column_seconds = add_column_seconds(lookup).await?;
    println!("lookup: adding lookup_features to the seeded table took {add_column_seconds} s");
    let report = sampled.figures(env, seed_seconds, add_column_seconds, covering)?;
    let p95 = |t: &Timed| t.latency.map_or(0.0, |l| l.p95_ms);
    let cold = |t: &Option<Timed>| t.as_ref().map_or(0.0, p95);
    println!(
        "lookup: cold candidate lookup p95 {} ms (computed {} ms, signals_json {} ms, covering indexes {} ms)",
        cold(&report.cold_candidate_lookup),
        cold(&report.computed_design.cold_candidate_lookup),
        cold(&report.previous_design.cold_candidate_lookup),
        report
            .covering_design
            .as_ref()
            .map_or(0.0, |d| cold(&d.cold_candidate_lookup)),
    );
    println!(
        "lookup: candidate lookup p95 {} ms (computed {} ms, signals_json {} ms), missing-cookie identify p95 \
         {} ms (computed {} ms, signals_json {} ms), {}× the previous design's missing-cookie rate; cookie \
         identify p95 {} ms; {}/{} restored without their cookie",
        p95(&report.candidate_lookup),
        p95(&report.computed_design.candidate_lookup),
        p95(&report.previous_design.candidate_lookup),
        p95(&report.missing_cookie_identify),
        p95(&report.computed_design.missing_cookie_identify),
        p95(&report.previous_design.missing_cookie_identify),
        report.throughput_ratio_to_previous,
        p95(&report.cookie_identify),
        report.restored_without_cookie,
        report.samples
    );
    let cpu = |d: &DesignFigures| d.missing_cookie_cpu_ms.unwrap_or(0.0);
    println!(
        "lookup: CPU per missing-cookie identification {} ms (computed {} ms, signals_json {} ms, covering \
         indexes {} ms)",
        report.missing_cookie_cpu_ms.unwrap_or(0.0),
        cpu(&report.computed_design),
        cpu(&report.previous_design),
        report.covering_design.as_ref().map_or(0.0, cpu),
    );
    Ok(report)
}

/// How long the candidate lookup of browser `n` took on `store`.
async fn timed_lookup(store: &PgVisitorStore, n: u64) -> Result<Duration, String> {
    let probes = probes_for(&population::observation(n));
    let began = Instant::now();
    store
        .find_candidate_rows(&probes, now_ms())
        .await
        .map_err(|e| format!("candidate lookup of browser {n}: {e}"))?;
    Ok(began.elapsed())
}

/// Writes back and drops the operating system's page cache (`/proc/sys/vm/drop_caches`, page cache only),
/// so that the next table and index pages PostgreSQL does not hold in its own buffers come from the disk.
fn evict_page_cache() -> Result<(), String> {
    let synced = std::process::Command::new("sync")
        .status()
        .map_err(|e| format!("running sync: {e}"))?;
    if !synced.success() {
        return Err(format!("sync failed ({synced})"));
    }
    std::fs::write("/proc/sys/vm/drop_caches", "1").map_err(|e| {
        format!(
            "JANITOR_BENCHMARK_LOOKUP_EVICT=1 drops the page cache through /proc/sys/vm/drop_caches, \
             which needs root on the machine itself (not in a container): {e}"
        )
    })
}

/// What the samples of every way measured.
struct Sampled {
    designs: Vec<Samples>,
    cookies: Vec<Duration>,
    candidates: u64,
    restored: u64,
    kept: u64,
}

/// Identifies `env.samples` browsers of the seeded population, each way in turn (a rotating order, so no
/// way always runs first or right after another), then once with the cookie. The covering way reads through
/// `database`, the others through `plain` (no index-only scans).
async fn sample(
    database: &janitor_sql::Database,
    plain: &janitor_sql::Database,
    env: &CapacityEnv,
) -> Result<Sampled, String> {
    let visitors = env.lookup_visitors;
    let engines: Vec<_> = DESIGNS
        .iter()
        .map(|&read| {
            let pool = if read == LookupRead::CoveringIndexes {
                database
            } else {
                plain
            };
            let store = PgVisitorStore::new(pool.clone(), Retention::default());
            Engine::new(store.with_lookup_read(read), EngineConfig::default())
        })
        .collect();
    let identify = |n: u64, cookie: bool, design: usize| {
        let engine = &engines[design];
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
    // Warm-up: every statement of every way prepared, the upper index pages in memory.
    for i in 0..WARM_UP {
        let n = browser(env.samples + i, visitors);
        identify(n, true, 0).await?;
        for design in 0..DESIGNS.len() {
            identify(n, false, design).await?;
        }
    }
    let mut sampled = Sampled {
        designs: DESIGNS.iter().map(|_| Samples::default()).collect(),
        cookies: Vec::new(),
        candidates: 0,
        restored: 0,
        kept: 0,
    };
    for i in 0..env.samples {
        if env.lookup_evict {
            evict_page_cache()?;
        }
        // First the cold lookups, each of its own untouched browser, in the rotating order.
        for turn in 0..DESIGNS.len() {
            let design = (turn + i as usize) % DESIGNS.len();
            let cold = cold_browser(i, design, env.samples, visitors);
            let took = timed_lookup(engines[design].store(), cold).await?;
            sampled.designs[design].cold.push(took);
        }
        let n = browser(i, visitors);
        let probes = probes_for(&population::observation(n));
        for turn in 0..DESIGNS.len() {
            let design = (turn + i as usize) % DESIGNS.len();
            let began = Instant::now();
            let rows = engines[design]
                .store()
                .find_candidate_rows(&probes, now_ms())
                .await
                .map_err(|e| format!("candidate lookup of browser {n}: {e}"))?;
            sampled.designs[design].lookups.push(began.elapsed());

            let began = Instant::now();
            let found = identify(n, false, design).await?;
            sampled.designs[design].missing.push(began.elapsed());
            // The browser's own rows are as seeded only before this sample's first identification (each one
            // saves a row), so restoration and the row count are taken from whichever way ran first.
            if turn == 0 {
                sampled.candidates += rows.len() as u64;
                sampled.restored += u64::from(found);
            }
        }
        let began = Instant::now();
        sampled.kept += u64::from(identify(n, true, 0).await?);
        sampled.cookies.push(began.elapsed());
    }
    // CPU per identification: one batch per way, the sampled browsers again without their cookie, timed by
    // this process's CPU clock over the whole batch (its tick is 10 ms, so single calls are too short).
    for design in 0..DESIGNS.len() {
        let before = process_cpu()?;
        for i in 0..env.samples {
            identify(browser(i, visitors), false, design).await?;
        }
        let used = process_cpu()?.saturating_sub(before);
        sampled.designs[design].cpu = Some((used, env.samples));
    }
    Ok(sampled)
}

/// This process's user and system CPU time so far.
fn process_cpu() -> Result<Duration, String> {
    crate::capacity::cpu::Stat::of(u64::from(std::process::id()))
        .map(|stat| stat.own_time())
        .ok_or_else(|| "/proc/self/stat is not readable".to_owned())
}

impl Sampled {
    fn figures(
        mut self,
        env: &CapacityEnv,
        seed_seconds: f64,
        add_column_seconds: f64,
        covering_indexes: CoveringCost,
    ) -> Result<LookupFigures, String> {
        let samples = env.samples;
        let mut figures = self
            .designs
            .into_iter()
            .zip(DESIGNS)
            .map(|(taken, read)| taken.figures(read));
        let (Some(default), Some(computed), Some(previous), Some(covering)) = (
            figures.next(),
            figures.next(),
            figures.next(),
            figures.next(),
        ) else {
            return Err("a way of reading candidate rows was not measured".to_owned());
        };
        let p95 = |t: &Timed| t.latency.map_or(0.0, |l| l.p95_ms);
        let cold_p95 = |t: &Option<Timed>| t.as_ref().map_or(0.0, p95);
        Ok(LookupFigures {
            visitors: env.lookup_visitors,
            observations_per_visitor: OBSERVATIONS_PER_VISITOR,
            seed_seconds: (seed_seconds * 100.0).round() / 100.0,
            samples,
            candidate_lookup: default.candidate_lookup.clone(),
            cold_candidate_lookup: default.cold_candidate_lookup.clone(),
            missing_cookie_identify: default.missing_cookie_identify.clone(),
            cookie_identify: summary(
                "a whole identification with the browser's cookie",
                &mut self.cookies,
            ),
            candidate_rows_per_lookup: (self.candidates as f64 / samples as f64 * 100.0).round()
                / 100.0,
            restored_without_cookie: self.restored,
            page_cache_evicted: env.lookup_evict,
            kept_with_cookie: self.kept,
            lookup_read: default.lookup_read.clone(),
            missing_cookie_per_second: default.missing_cookie_per_second,
            missing_cookie_cpu_ms: default.missing_cookie_cpu_ms,
            throughput_ratio_to_previous: ratio(
                default.missing_cookie_per_second,
                previous.missing_cookie_per_second,
            ),
            lookup_p95_speedup: ratio(
                p95(&previous.candidate_lookup),
                p95(&default.candidate_lookup),
            ),
            covering_cold_p95_speedup: Some(ratio(
                cold_p95(&default.cold_candidate_lookup),
                cold_p95(&covering.cold_candidate_lookup),
            )),
            previous_design: previous,
            computed_design: computed,
            add_column_seconds,
            covering_design: Some(covering),
            covering_indexes: Some(covering_indexes),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_browsers_are_touched_by_nothing_else() {
        let (samples, visitors) = (100, 20_000);
        let touched: std::collections::HashSet<u64> = (0..samples + WARM_UP)
            .map(|i| browser(i, visitors))
            .collect();
        let mut cold = std::collections::HashSet::new();
        for i in 0..samples {
            for design in 0..DESIGNS.len() {
                let n = cold_browser(i, design, samples, visitors);
                assert!((1..=visitors).contains(&n));
                assert!(!touched.contains(&n), "browser {n} is measured warm too");
                assert!(cold.insert(n), "browser {n} is looked up cold twice");
            }
        }
    }
}
