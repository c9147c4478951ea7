//! The opt-in covering lookup indexes on the lookup test's seeded table: how long they take to build, what they
//! occupy beside the table and the probe indexes, and what they cost each observation insert.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{connect, pg, SEED_DEADLINE};
use crate::capacity::{pgbench, Target};

/// What the covering lookup indexes cost on the seeded table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoveringCost {
    /// Seconds `Database::create_covering_lookup_indexes` took, to two decimals.
    pub build_seconds: f64,
    /// Seconds the `VACUUM` after it took (what marks the pages all-visible, as autovacuum does), two decimals.
    pub vacuum_seconds: f64,
    /// Bytes of the six covering indexes together.
    pub covering_index_bytes: i64,
    /// Bytes of the six probe indexes of migration 0001 together.
    pub probe_index_bytes: i64,
    /// Bytes of the `observations` table itself (heap only).
    pub table_bytes: i64,
    /// Observation inserts per second with the covering indexes, then without them (see [`insert_rates`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inserts: Option<InsertRates>,
}

/// Observation inserts per second on the seeded table, by pgbench: [`INSERT_CLIENTS`] connections for
/// `JANITOR_BENCHMARK_RATE_SECONDS` each, first with the covering indexes, then, once they are dropped, without.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InsertRates {
    /// Inserts per second with the covering indexes.
    pub with_covering: f64,
    /// Inserts per second without them (the same table, right after).
    pub without_covering: f64,
    /// `with_covering ÷ without_covering`, to two decimals.
    pub ratio: f64,
    /// Connections.
    pub clients: usize,
    /// Seconds of each run.
    pub seconds: u64,
}

/// Connections of each insert run.
pub const INSERT_CLIENTS: usize = 8;

/// The probe indexes of migration 0001.
const PROBE_INDEXES: [&str; 6] = [
    "idx_observation_screen_hardware",
    "idx_observation_screen_timezone",
    "idx_observation_graphics_timezone",
    "idx_observation_platform_browser",
    "idx_observation_webgl_renderer",
    "idx_observation_timezone_browser",
];

fn seconds_since(started: Instant) -> f64 {
    (started.elapsed().as_secs_f64() * 100.0).round() / 100.0
}

/// Builds the covering indexes on the seeded table, vacuums it, and measures what they occupy.
pub async fn build_covering(
    database: &janitor_sql::Database,
    lookup: &Target,
) -> Result<CoveringCost, String> {
    let started = Instant::now();
    database
        .create_covering_lookup_indexes()
        .await
        .map_err(|e| format!("building the covering lookup indexes: {e}"))?;
    let build_seconds = seconds_since(started);
    let client = connect(&lookup.url, &lookup.schema, SEED_DEADLINE).await?;
    let started = Instant::now();
    client
        .batch_execute("VACUUM observations")
        .await
        .map_err(|e| format!("vacuuming the lookup table: {}", pg(&e)))?;
    let vacuum_seconds = seconds_since(started);
    let covering: Vec<&str> = janitor_sql::COVERING_LOOKUP_INDEXES
        .iter()
        .map(|(n, _)| *n)
        .collect();
    let sizes = client
        .query_one(
            "SELECT \
               (SELECT sum(pg_relation_size(c.oid))::int8 FROM pg_class c \
                  WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY($1)), \
               (SELECT sum(pg_relation_size(c.oid))::int8 FROM pg_class c \
                  WHERE c.relnamespace = current_schema()::regnamespace AND c.relname = ANY($2)), \
               pg_relation_size('observations')::int8",
            &[&covering, &PROBE_INDEXES.as_slice()],
        )
        .await
        .map_err(|e| format!("measuring the covering indexes: {}", pg(&e)))?;
    let cost = CoveringCost {
        build_seconds,
        vacuum_seconds,
        covering_index_bytes: sizes.get(0),
        probe_index_bytes: sizes.get(1),
        table_bytes: sizes.get(2),
        inserts: None,
    };
    println!(
        "lookup: covering indexes built in {build_seconds} s (vacuum {vacuum_seconds} s): {} bytes, against {} \
         for the probe indexes and {} for the table",
        cost.covering_index_bytes, cost.probe_index_bytes, cost.table_bytes
    );
    Ok(cost)
}

/// pgbench's insert: a copy of a random seeded observation, one millisecond newer, so every insert carries
/// the seeded population's values into every index. `:n` ranges over the seeded ids (a gap would insert nothing, which the caller detects).
fn insert_script(last_id: i64) -> String {
    format!(
        "\\set n random(1, {last_id})\n\
         INSERT INTO observations (visitor_id, seen_at, platform, browser, timezone, webgl_renderer, signals_json) \
         SELECT visitor_id, seen_at + 1, platform, browser, timezone, webgl_renderer, signals_json \
         FROM observations WHERE id = :n;\n"
    )
}

/// Measures observation inserts with the covering indexes, drops them, and measures again without. Each run
/// must have inserted one row per transaction, or the figure would time empty statements.
pub async fn insert_rates(
    lookup: &Target,
    mut cost: CoveringCost,
    seconds: u64,
) -> Result<CoveringCost, String> {
    let client = connect(&lookup.url, &lookup.schema, SEED_DEADLINE).await?;
    let scratch =
        std::env::temp_dir().join(format!("janitor-lookup-inserts-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("creating {}: {e}", scratch.display()))?;
    let rates = rates(&client, &scratch, lookup, seconds).await;
    // Removed however the runs ended.
    let _ = std::fs::remove_dir_all(&scratch);
    let rates = rates?;
    let ratio = if rates[1] > 0.0 {
        (rates[0] / rates[1] * 100.0).round() / 100.0
    } else {
        0.0
    };
    println!(
        "lookup: observation inserts {} /s with the covering indexes, {} /s without ({ratio})",
        rates[0], rates[1]
    );
    cost.inserts = Some(InsertRates {
        with_covering: rates[0],
        without_covering: rates[1],
        ratio,
        clients: INSERT_CLIENTS,
        seconds,
    });
    Ok(cost)
}

/// The insert rates with the covering indexes, then without (the second run drops them first).
async fn rates(
    client: &tokio_postgres::Client,
    scratch: &std::path::Path,
    lookup: &Target,
    seconds: u64,
) -> Result<Vec<f64>, String> {
    let count = || async {
        client
            .query_one("SELECT count(*), max(id) FROM observations", &[])
            .await
            .map(|row| (row.get::<_, i64>(0), row.get::<_, i64>(1)))
            .map_err(|e| format!("counting observations: {}", pg(&e)))
    };
    let (_, last_id) = count().await?;
    let script = scratch.join("insert.pgbench");
    std::fs::write(&script, insert_script(last_id))
        .map_err(|e| format!("writing the script: {e}"))?;
    let log_prefix = scratch.join("pgbench-insert");
    let args: Vec<String> = [
        "-n",
        "-M",
        "prepared",
        "-c",
        &INSERT_CLIENTS.to_string(),
        "-j",
        &INSERT_CLIENTS.min(crate::cores()).max(1).to_string(),
        "-T",
        &seconds.to_string(),
        "-l",
        &format!("--log-prefix={}", log_prefix.display()),
        "-f",
        &script.display().to_string(),
    ]
    .map(str::to_owned)
    .to_vec();
    let mut rates = Vec::new();
    for with in [true, false] {
        if !with {
            let names: Vec<&str> = janitor_sql::COVERING_LOOKUP_INDEXES
                .iter()
                .map(|(n, _)| *n)
                .collect();
            client
                .batch_execute(&format!("DROP INDEX {}", names.join(", ")))
                .await
                .map_err(|e| format!("dropping the covering indexes: {}", pg(&e)))?;
        }
        let (before, _) = count().await?;
        let round = pgbench::run(&args, lookup, &log_prefix).await;
        let round = round.map_err(|e| format!("timing observation inserts: {e}"))?;
        let (after, _) = count().await?;
        let inserted = u64::try_from(after - before).unwrap_or(0);
        if inserted != round.output.transactions {
            return Err(format!(
                "the insert run added {inserted} observations in {} transactions",
                round.output.transactions
            ));
        }
        rates.push(round.output.tps.round());
    }
    Ok(rates)
}

/// `url` with index-only scans turned off for its sessions: the pool of the ways that are not the covering
/// one, so that the covering indexes (whose keys partly equal the probe indexes') serve none of their reads
/// from the index alone and they read the heap as they do where the covering indexes do not exist.
pub fn without_index_only_scans(url: &str) -> String {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let separator = if url.contains('?') { '&' } else { '?' };
        format!("{url}{separator}options=-c%20enable_indexonlyscan%3Doff")
    } else {
        format!("{url} options='-c enable_indexonlyscan=off'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plain_pool_turns_index_only_scans_off_in_either_form() {
        assert_eq!(
            without_index_only_scans("postgres://u@h:1/db"),
            "postgres://u@h:1/db?options=-c%20enable_indexonlyscan%3Doff"
        );
        assert_eq!(
            without_index_only_scans("postgres://u@h:1/db?sslmode=disable"),
            "postgres://u@h:1/db?sslmode=disable&options=-c%20enable_indexonlyscan%3Doff"
        );
        assert_eq!(
            without_index_only_scans("host=h dbname=db"),
            "host=h dbname=db options='-c enable_indexonlyscan=off'"
        );
    }

    #[test]
    fn the_insert_copies_a_seeded_row() {
        let script = insert_script(2_000_000);
        assert!(
            script.starts_with("\\set n random(1, 2000000)\n"),
            "{script}"
        );
        assert!(script.contains("WHERE id = :n;"), "{script}");
    }
}
