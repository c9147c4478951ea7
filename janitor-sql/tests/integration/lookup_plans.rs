//! The candidate lookup reads what its decision needs, whatever PostgreSQL's statistics hold: each probe one
//! bounded range of its family's index, at most `ROWS_PER_PROBE + 1` rows, with statistics fresh or kept from a
//! table a tenth the size, in custom and generic plans; statistics never gathered are gathered by the store's
//! maintenance (and its migration), and the expiry index is never read.
//!
//! The observations are written oldest first, as a live table grows, so that `seen_at` follows the table's
//! pages: that is what made a backward scan of the expiry index look cheap to the planner (the plan test of
//! `plans.rs` seeds browser after browser and could not see it). Plans are those of a prepared statement
//! (`PREPARE` … `EXPLAIN EXECUTE`), the way the pool runs the lookup.

use janitor_core::identification::candidates::{probes_for, ROWS_PER_PROBE};
use janitor_core::Retention;
use janitor_core::VisitorStore;
use janitor_sql::testing::population::{self, Seeding};
use janitor_sql::testing::statements::{
    candidate_lookup, candidate_lookup_by_equality, family_index,
};
use janitor_sql::testing::{admin_client, database_url, with_schemas, SCHEMA_PREFIX};
use janitor_sql::{Database, DatabaseConfig, PgVisitorStore};
use serde_json::Value;
use tokio_postgres::types::{Json, ToSql};

use crate::common::Captured;

const NOW: i64 = 1_735_689_600_000;
/// Browsers of the first state; the table then grows tenfold.
const FIRST: u64 = 10_000;
const GROWN: u64 = 100_000;
/// Browsers looked up in each state: common and rare devices of the population.
const LOOKED_UP: [u64; 8] = [3, 42, 77, 512, 1_001, 2_024, 5_555, 9_999];

/// Every plan node reading `observations`, depth first.
fn reads<'a>(plan: &'a Value, out: &mut Vec<&'a Value>) {
    if plan["Relation Name"] == "observations" {
        out.push(plan);
    }
    for child in plan["Plans"].as_array().into_iter().flatten() {
        reads(child, out);
    }
}

/// A SQL literal of `text`.
fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

async fn seed(database: &Database, browsers: std::ops::RangeInclusive<u64>) {
    population::seed_with(database, &Seeding::oldest_first(browsers, NOW)).await;
}

/// What a state's lookups must show.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// Each probe an index scan of its family's index, reading at most `ROWS_PER_PROBE + 1` rows.
    ProbesAlone,
    /// A table of 20,000 rows: PostgreSQL expects one row of each narrow probe, and may read a sibling
    /// index's bucket (a few hundred rows) and sort it. Never the expiry index, and at most
    /// [`SMALL_TABLE_ROWS`] rows a lookup, where the population's crowded buckets hold thousands.
    SmallTable,
}

const SMALL_TABLE_ROWS: u64 = 1_000;

/// Every index any node of `plan` reads.
fn indexes<'a>(plan: &'a Value, out: &mut Vec<&'a str>) {
    out.extend(plan["Index Name"].as_str());
    for child in plan["Plans"].as_array().into_iter().flatten() {
        indexes(child, out);
    }
}

/// Looks every browser of [`LOOKED_UP`] up as a prepared statement under each plan cache mode and checks
/// `expect`. Returns the most rows any lookup read.
async fn check(database: &Database, state: &str, expect: Expect) -> u64 {
    let client = database.pool().get().await.unwrap();
    let cutoff = Retention::default().cutoff(NOW);
    let mut most = 0;
    for mode in ["force_custom_plan", "force_generic_plan"] {
        for n in LOOKED_UP {
            let probes = probes_for(&population::observation(n));
            assert_eq!(probes.len(), 6, "browser {n} has every key");
            let sql = candidate_lookup(&probes).unwrap();
            let mut arguments = vec![cutoff.to_string()];
            arguments.extend(
                probes
                    .iter()
                    .flat_map(|p| p.keys.iter().map(|k| literal(k))),
            );
            client
                .batch_execute(&format!(
                    "SET plan_cache_mode = {mode}; DEALLOCATE ALL; PREPARE lookup AS {sql}"
                ))
                .await
                .unwrap();
            let row = client
                .query_one(
                    &format!(
                        "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE lookup({})",
                        arguments.join(", ")
                    ),
                    &[],
                )
                .await
                .unwrap();
            let Json(document): Json<Value> = row.get(0);
            let plan = &document[0]["Plan"];
            let text = serde_json::to_string_pretty(&document).unwrap();
            let where_ = format!("{state}, {mode}, browser {n}");
            let mut used = Vec::new();
            indexes(plan, &mut used);
            assert!(
                !used.contains(&"idx_observation_seen"),
                "{where_}: the expiry index\n{text}"
            );
            let mut nodes = Vec::new();
            reads(plan, &mut nodes);
            let read = |node: &Value| {
                [
                    "Actual Rows",
                    "Rows Removed by Filter",
                    "Rows Removed by Index Recheck",
                ]
                .iter()
                .map(|k| node[k].as_u64().unwrap_or(0))
                .sum::<u64>()
            };
            let total = nodes.iter().map(|node| read(node)).sum::<u64>();
            if expect == Expect::ProbesAlone {
                let expected: Vec<&str> = probes.iter().map(|p| family_index(p.family)).collect();
                assert_eq!(used, expected, "{where_}: each probe its index\n{text}");
                for node in &nodes {
                    assert_eq!(node["Node Type"], "Index Scan", "{where_}\n{text}");
                    assert!(
                        read(node) <= ROWS_PER_PROBE as u64 + 1,
                        "{where_}: a probe read {} rows\n{text}",
                        read(node)
                    );
                }
            } else {
                assert!(
                    total <= SMALL_TABLE_ROWS,
                    "{where_}: {total} rows read\n{text}"
                );
            }
            most = most.max(total);
        }
    }
    client.batch_execute("DEALLOCATE ALL").await.unwrap();
    most
}

/// Whether PostgreSQL holds statistics of `observations`.
async fn gathered(database: &Database) -> bool {
    let client = database.pool().get().await.unwrap();
    client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_stats WHERE schemaname = current_schema() \
             AND tablename = 'observations')",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lookup_reads_its_probes_alone_whatever_the_statistics() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        seed(&database, 1..=FIRST).await;
        assert!(!gathered(&database).await, "seeded without statistics");
        // Statistics never gathered: the store's maintenance gathers them, once.
        let store = PgVisitorStore::new(database.clone(), Retention::default());
        store.cleanup(None, 10, NOW).await.unwrap();
        assert!(gathered(&database).await, "the cleanup gathered them");
        let client = database.pool().get().await.unwrap();
        let mut most = Vec::new();
        most.push(check(&database, "gathered by the store", Expect::SmallTable).await);
        seed(&database, FIRST + 1..=GROWN).await;
        // They exist, if stale: nothing is gathered again.
        store.cleanup(None, 10, NOW).await.unwrap();
        most.push(
            check(
                &database,
                "stale (a tenth of the table)",
                Expect::ProbesAlone,
            )
            .await,
        );
        client.batch_execute("ANALYZE observations").await.unwrap();
        most.push(check(&database, "fresh", Expect::ProbesAlone).await);
        // The population fills the probes: a lookup reads more than one probe's rows.
        assert!(most.iter().all(|&m| m > 101), "{most:?}");
    })
    .await;
}

/// The migration gathers the statistics of a table filled before it ran, and leaves an empty table alone; once
/// a pool has gathered or seen them, its maintenance does not look for them again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migration_gathers_missing_statistics() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        assert!(!gathered(&database).await);
        seed(&database, 1..=100).await;
        assert!(!gathered(&database).await);
        database.migrate().await.unwrap();
        assert!(gathered(&database).await);
        // The pool that gathered them does not look again; another pool's first maintenance step finds them
        // there, and its next one does not look again either.
        let other = Database::new(database.config().unwrap().clone()).unwrap();
        let mut executed = Vec::new();
        for pool in [&database, &database, &other, &other] {
            let store = PgVisitorStore::new(pool.clone(), Retention::default());
            let before = pool.statements_executed();
            store.cleanup(None, 10, NOW).await.unwrap();
            executed.push(pool.statements_executed() - before);
        }
        let quiet = executed[0];
        assert_eq!(executed, [quiet, quiet, quiet + 1, quiet], "{executed:?}");
    })
    .await;
}

/// `url` with its user and password replaced by `user` (`user:password`, URL-safe).
fn as_user(url: &str, user: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let rest = match rest.split_once('@') {
        Some((userinfo, host)) if !userinfo.contains('/') => host,
        _ => rest,
    };
    format!("{scheme}://{user}@{rest}")
}

/// A role that does not own `observations` is refused `ANALYZE` with only a warning from the server: its
/// maintenance steps succeed, the first says once, at warn level and naming the table, that the statistics are
/// missing and who can gather them, none claims to have gathered them, and the next does not try again.
#[tokio::test(flavor = "current_thread")]
async fn a_role_that_may_not_analyse_says_so_once() {
    let (captured, _guard) = Captured::on_this_thread(tracing::Level::INFO);
    with_schemas(|schemas| async move {
        let owner = schemas.fresh().await;
        seed(&owner, 1..=100).await;
        let schema = owner.schema().unwrap().to_string();
        // Generated from hex digits with the test prefix: nothing to quote, and dropped below.
        let role = format!("{schema}_reader");
        // The same hex digits as its password, for a server that asks for one.
        let password = schema.trim_start_matches(SCHEMA_PREFIX);
        let admin = admin_client().await;
        admin
            .batch_execute(&format!(
                "CREATE ROLE {role} LOGIN PASSWORD '{password}'; GRANT USAGE ON SCHEMA {schema} TO {role}; \
                 GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}; \
                 GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}"
            ))
            .await
            .unwrap();
        let reader_url = as_user(&database_url(), &format!("{role}:{password}"));
        let schema_name = schema.clone();
        // Run apart, so that the role is dropped whether the checks pass or panic.
        let outcome = tokio::spawn(async move {
            let config = DatabaseConfig::builder(&reader_url)
                .schema(&schema_name)
                .build()
                .unwrap();
            let reader = Database::new(config).unwrap();
            let store = PgVisitorStore::new(reader.clone(), Retention::default());
            let mut executed = Vec::new();
            for _ in 0..2 {
                let before = reader.statements_executed();
                store.cleanup(None, 10, NOW).await.unwrap();
                executed.push(reader.statements_executed() - before);
            }
            // The look, the refused ANALYZE and the look again, then nothing.
            assert_eq!(executed[0], executed[1] + 3, "{executed:?}");
        })
        .await;
        admin
            .batch_execute(&format!("DROP OWNED BY {role}; DROP ROLE {role}"))
            .await
            .unwrap();
        if let Err(e) = outcome {
            std::panic::resume_unwind(e.into_panic());
        }
        assert!(!gathered(&owner).await, "nothing was gathered");
        let qualified = format!("{schema}.observations");
        let said: Vec<String> = captured
            .lines()
            .into_iter()
            .filter(|line| line.contains(&qualified))
            .collect();
        assert_eq!(said.len(), 1, "{said:#?}");
        assert!(said[0].contains("WARN"), "{said:#?}");
        assert!(
            said[0].contains("ANALYZE needs the table's owner"),
            "{said:#?}"
        );
    })
    .await;
}

/// The range reads the rows the equalities read: per probe the same timestamps, and the same rows but where
/// several share the 101st's timestamp, which either statement may break in any order (as the equalities'
/// plans always could).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_range_returns_what_the_equalities_return() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        seed(&database, 1..=FIRST).await;
        let client = database.pool().get().await.unwrap();
        client.batch_execute("ANALYZE observations").await.unwrap();
        let cutoff = Retention::default().cutoff(NOW);
        let mut compared = 0;
        for n in (1..=FIRST).step_by(97) {
            let probes = probes_for(&population::observation(n));
            let mut params: Vec<&(dyn ToSql + Sync)> = vec![&cutoff];
            for probe in &probes {
                params.extend(probe.keys.iter().map(|k| k as &(dyn ToSql + Sync)));
            }
            // (probe, seen_at, visitor) of each row, per statement.
            let mut read = Vec::new();
            for sql in [
                candidate_lookup(&probes).unwrap(),
                candidate_lookup_by_equality(&probes).unwrap(),
            ] {
                let rows = client.query(&sql, &params).await.unwrap();
                let mut rows: Vec<(i32, i64, String)> = rows
                    .iter()
                    .map(|r| (r.get("probe"), r.get("seen_at"), r.get("visitor_id")))
                    .collect();
                rows.sort_unstable();
                read.push(rows);
            }
            let times = |rows: &[(i32, i64, String)]| -> Vec<(i32, i64)> {
                rows.iter().map(|(p, t, _)| (*p, *t)).collect()
            };
            assert_eq!(times(&read[0]), times(&read[1]), "browser {n}");
            for probe in 0..probes.len() as i32 {
                let of = |rows: &[(i32, i64, String)]| -> Vec<(i64, String)> {
                    rows.iter()
                        .filter(|(p, _, _)| *p == probe)
                        .map(|(_, t, v)| (*t, v.clone()))
                        .collect()
                };
                let (now, before) = (of(&read[0]), of(&read[1]));
                // The oldest timestamp a full probe returned is where ties may be broken either way.
                let boundary = match now.len() > ROWS_PER_PROBE {
                    true => now.iter().map(|(t, _)| *t).min(),
                    false => None,
                };
                let above = |rows: &[(i64, String)]| -> Vec<(i64, String)> {
                    rows.iter()
                        .filter(|(t, _)| boundary.is_none_or(|b| *t > b))
                        .cloned()
                        .collect()
                };
                assert_eq!(above(&now), above(&before), "browser {n}, probe {probe}");
                compared += now.len();
            }
        }
        assert!(compared > 10_000, "{compared} rows compared");
    })
    .await;
}
