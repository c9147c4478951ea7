//! What the missing-cookie candidate lookup reads in each state of PostgreSQL's statistics, the statement
//! before (`key = value` on each key) beside the current one (the last key a range), on the same table.
//!
//! Run with:
//! `cargo run --release --manifest-path benchmarks/Cargo.toml --target-dir target --bin lookup-plans -- --out docs/benchmarks/lookup-plans.json`
//!
//! Options (all optional): `--visitors` 10,000–2,000,000 (default 200,000), two observations each, written
//! oldest first as a live table grows; `--lookups` browsers looked up per state, plan mode and statement
//! 10–1,000 (default 100); `--out` a JSON file for the results. Uses `DATABASE_URL` (default: the local
//! server) in a throwaway schema.
//!
//! States, in order: a tenth of the browsers with statistics never gathered; the same after one maintenance
//! step of the store, which gathers statistics that were never gathered; all of them with the statistics of
//! the tenth (stale); all after `ANALYZE`. In each, every browser is looked
//! up as a prepared statement under `plan_cache_mode` `force_custom_plan` and `force_generic_plan`, the two
//! statements taking turns browser by browser, with `EXPLAIN (ANALYZE, BUFFERS)`: rows read are the rows the
//! scans of `observations` returned plus those their filters removed.

use std::path::Path;

use janitor_benchmarks::{number, options_or_exit, pairs, write_report};
use janitor_core::identification::candidates::probes_for;
use janitor_core::{Retention, VisitorStore};
use janitor_sql::testing::population::{self, Seeding};
use janitor_sql::testing::statements::{
    candidate_lookup, candidate_lookup_by_equality, family_index,
};
use janitor_sql::testing::with_schemas;
use janitor_sql::{Database, PgVisitorStore};
use serde::Serialize;
use serde_json::Value;
use tokio_postgres::types::Json;

const NOW: i64 = 1_735_689_600_000;

struct Options {
    visitors: u64,
    lookups: u64,
    out: Option<String>,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        visitors: 200_000,
        lookups: 100,
        out: None,
    };
    for (name, value) in pairs(std::env::args().skip(1))? {
        match name.as_str() {
            "visitors" => o.visitors = number(&name, &value, 10_000, 2_000_000)?,
            "lookups" => o.lookups = number(&name, &value, 10, 1_000)?,
            "out" => o.out = Some(value),
            _ => return Err(format!("unknown option --{name}")),
        }
    }
    Ok(o)
}

/// One statement's lookups in one state and plan mode.
#[derive(Debug, Serialize)]
struct Cell {
    state: String,
    plan_cache_mode: &'static str,
    statement: &'static str,
    lookups: usize,
    /// Rows of `observations` read per lookup: mean, and the most any lookup read.
    rows_read_mean: f64,
    rows_read_max: u64,
    /// Shared buffers touched (hit or read) per lookup.
    buffers_mean: f64,
    /// Lookups in which some probe did not read its family's index alone (another index, a bitmap, or rows
    /// filtered out).
    lookups_off_their_indexes: usize,
    /// Server execution time per lookup, median, ms (EXPLAIN ANALYZE's own figure, with its instrumentation).
    execution_ms_median: f64,
    /// The lookup's round trip without EXPLAIN, median of each lookup's best of three, ms.
    client_ms_median: f64,
}

#[derive(Debug, Serialize)]
struct Report {
    benchmark: &'static str,
    visitors: u64,
    observations_per_visitor: u64,
    row_order: &'static str,
    postgres: String,
    cells: Vec<Cell>,
}

/// Adds to `out` the rows each scan of `observations` in `plan` read (what it returned plus what its filters
/// removed), and the index each read, `None` for any other kind of scan, depth first: probe by probe.
fn reads(plan: &Value, out: &mut Vec<(u64, Option<String>)>) {
    if plan["Relation Name"] == "observations" {
        let rows = [
            "Actual Rows",
            "Rows Removed by Filter",
            "Rows Removed by Index Recheck",
        ]
        .iter()
        .map(|k| plan[k].as_u64().unwrap_or(0))
        .sum::<u64>();
        let alone = plan["Node Type"] == "Index Scan"
            && plan["Rows Removed by Filter"].as_u64().unwrap_or(0) == 0;
        let index = plan["Index Name"].as_str().filter(|_| alone);
        out.push((rows, index.map(str::to_owned)));
    }
    for child in plan["Plans"].as_array().into_iter().flatten() {
        reads(child, out);
    }
}

fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

async fn state(database: &Database, name: &str, o: &Options, cells: &mut Vec<Cell>) {
    let client = database.pool().get().await.expect("connection");
    let cutoff = Retention::default().cutoff(NOW);
    for mode in ["force_custom_plan", "force_generic_plan"] {
        // (rows, buffers, on its indexes, EXPLAIN's ms, the client's ms) per statement.
        type Sample = (u64, u64, bool, f64, f64);
        let mut samples: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
        for i in 0..o.lookups {
            // Spread over the browsers seeded in every state.
            let n = 1 + (i * 7_919) % (o.visitors / 10);
            let probes = probes_for(&population::observation(n));
            let mut arguments = vec![cutoff.to_string()];
            arguments.extend(
                probes
                    .iter()
                    .flat_map(|p| p.keys.iter().map(|k| literal(k))),
            );
            for turn in 0..2 {
                // A B B A: each statement first in every other lookup.
                let which = (turn + i as usize) % 2;
                let sql = if which == 0 {
                    candidate_lookup_by_equality(&probes)
                } else {
                    candidate_lookup(&probes)
                };
                let Some(sql) = sql else { continue };
                client
                    .batch_execute(&format!(
                        "SET plan_cache_mode = {mode}; DEALLOCATE ALL; PREPARE lookup AS {sql}"
                    ))
                    .await
                    .expect("PREPARE");
                let row = client
                    .query_one(
                        &format!(
                            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE lookup({})",
                            arguments.join(", ")
                        ),
                        &[],
                    )
                    .await
                    .expect("EXPLAIN");
                let Json(document): Json<Value> = row.get(0);
                let plan = &document[0]["Plan"];
                let mut scans = Vec::new();
                reads(plan, &mut scans);
                let rows = scans.iter().map(|(rows, _)| rows).sum::<u64>();
                let on_their_indexes = scans.len() == probes.len()
                    && scans
                        .iter()
                        .zip(&probes)
                        .all(|((_, index), p)| index.as_deref() == Some(family_index(p.family)));
                let buffers = plan["Shared Hit Blocks"].as_u64().unwrap_or(0)
                    + plan["Shared Read Blocks"].as_u64().unwrap_or(0);
                let ms = document[0]["Execution Time"].as_f64().unwrap_or(0.0);
                // The same lookup without EXPLAIN's instrumentation, as the store runs it: the client's time,
                // the best of three (the pages are warm after the first).
                let execute = format!("EXECUTE lookup({})", arguments.join(", "));
                let mut best = f64::MAX;
                for _ in 0..3 {
                    let started = std::time::Instant::now();
                    client.simple_query(&execute).await.expect("EXECUTE");
                    best = best.min(started.elapsed().as_secs_f64() * 1e3);
                }
                samples[which].push((rows, buffers, on_their_indexes, ms, best));
            }
        }
        for (which, statement) in ["before: key = value", "now: pivot range"]
            .into_iter()
            .enumerate()
        {
            let s = &samples[which];
            let count = s.len().max(1) as f64;
            let median = |pick: fn(&Sample) -> f64| {
                let mut values: Vec<f64> = s.iter().map(pick).collect();
                values.sort_by(f64::total_cmp);
                round(values.get(values.len() / 2).copied().unwrap_or(0.0))
            };
            let cell = Cell {
                state: name.to_owned(),
                plan_cache_mode: mode,
                statement,
                lookups: s.len(),
                rows_read_mean: round(s.iter().map(|x| x.0 as f64).sum::<f64>() / count),
                rows_read_max: s.iter().map(|x| x.0).max().unwrap_or(0),
                buffers_mean: round(s.iter().map(|x| x.1 as f64).sum::<f64>() / count),
                lookups_off_their_indexes: s.iter().filter(|x| !x.2).count(),
                execution_ms_median: median(|x| x.3),
                client_ms_median: median(|x| x.4),
            };
            println!(
                "{name:>32} {mode:>18} {statement:>22}: rows {:>8.1} (max {:>5}), buffers {:>7.1}, \
                 off {:>3}, {:.3} ms explained, {:.3} ms plain",
                cell.rows_read_mean,
                cell.rows_read_max,
                cell.buffers_mean,
                cell.lookups_off_their_indexes,
                cell.execution_ms_median,
                cell.client_ms_median
            );
            cells.push(cell);
        }
    }
    client
        .batch_execute("DEALLOCATE ALL")
        .await
        .expect("DEALLOCATE");
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

async fn seed(database: &Database, browsers: std::ops::RangeInclusive<u64>) {
    population::seed_with(database, &Seeding::oldest_first(browsers, NOW)).await;
}

#[tokio::main]
async fn main() {
    let o = options_or_exit("lookup-plans", options());
    with_schemas(move |schemas| async move {
        let database = schemas.fresh().await;
        let client = database.pool().get().await.expect("connection");
        let postgres: String = client
            .query_one("SHOW server_version", &[])
            .await
            .expect("version")
            .get(0);
        let tenth = o.visitors / 10;
        let mut cells = Vec::new();
        seed(&database, 1..=tenth).await;
        state(&database, "never gathered (a tenth)", &o, &mut cells).await;
        // What a store's maintenance step does to statistics never gathered.
        let store = PgVisitorStore::new(database.clone(), Retention::default());
        store.cleanup(None, 10, NOW).await.expect("cleanup");
        state(&database, "gathered by the store (a tenth)", &o, &mut cells).await;
        seed(&database, tenth + 1..=o.visitors).await;
        state(&database, "stale (gathered at a tenth)", &o, &mut cells).await;
        client.batch_execute("ANALYZE observations").await.unwrap();
        state(&database, "fresh", &o, &mut cells).await;
        let report = Report {
            benchmark: "lookup-plans",
            visitors: o.visitors,
            observations_per_visitor: 2,
            row_order: "oldest first",
            postgres,
            cells,
        };
        if let Some(path) = &o.out {
            write_report(Path::new(path), &report).unwrap_or_else(|e| panic!("{e}"));
        }
    })
    .await;
}
