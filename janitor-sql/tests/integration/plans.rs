//! The read and write statements use their indexes: `EXPLAIN (FORMAT JSON)` over 60,000 seeded observations,
//! with the plan PostgreSQL picks for the given values and with the generic plan a prepared statement may
//! switch to after a few executions.

use std::collections::BTreeSet;

use janitor_core::identification::candidates::probes_for;
use janitor_core::Retention;
use janitor_sql::testing::statements::{
    candidate_lookup, candidate_lookup_reading, family_index, statement,
};
use janitor_sql::testing::{population, with_schemas};
use janitor_sql::{LookupRead, COVERING_LOOKUP_INDEXES};
use serde_json::Value;
use tokio_postgres::types::{Json, ToSql};

const NOW: i64 = 1_735_689_600_000;
const VISITORS: u64 = 30_000;

/// Every plan node, depth first.
fn nodes(plan: &Value, out: &mut Vec<Value>) {
    out.push(plan.clone());
    for child in plan["Plans"].as_array().into_iter().flatten() {
        nodes(child, out);
    }
}

/// The prune statement of `janitor_save_observation`, as the migration has it, with its arguments as
/// parameters: `$1` visitor, `$2` cutoff, `$3` rows kept.
fn function_prune() -> String {
    let migration = janitor_sql::migrate::MIGRATIONS
        .iter()
        .find(|m| m.version == 5)
        .expect("the function's migration");
    let start = migration
        .sql
        .find("DELETE FROM observations")
        .expect("a prune");
    let end = start + migration.sql[start..].find(';').expect("its end");
    migration.sql[start..end]
        .replace("p_visitor", "$1")
        .replace("p_cutoff", "$2")
        .replace("p_keep", "$3")
}

struct Plan {
    /// (node type, index name) of every node reading `observations`.
    reads: Vec<(String, Option<String>)>,
    text: String,
}

async fn explain(
    client: &deadpool_postgres::Object,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Plan {
    let row = client
        .query_one(&format!("EXPLAIN (FORMAT JSON) {sql}"), params)
        .await
        .unwrap_or_else(|e| panic!("EXPLAIN failed: {e}\n{sql}"));
    let Json(document): Json<Value> = row.get(0);
    let mut all = Vec::new();
    nodes(&document[0]["Plan"], &mut all);
    let reads = all
        .iter()
        // A ModifyTable node names the table it writes; only the nodes that read it matter here.
        .filter(|n| n["Relation Name"] == "observations" && n["Node Type"] != "ModifyTable")
        .map(|n| {
            (
                n["Node Type"].as_str().unwrap_or_default().to_owned(),
                n["Index Name"].as_str().map(str::to_owned),
            )
        })
        .collect();
    Plan {
        reads,
        text: serde_json::to_string_pretty(&document).unwrap(),
    }
}

/// No sequential scan on `observations`, and every read of it is an index scan named in `indexes`.
fn assert_indexed(plan: &Plan, what: &str, indexes: &[&str]) {
    assert!(
        !plan.reads.is_empty(),
        "{what}: observations not read?\n{}",
        plan.text
    );
    for (node, index) in &plan.reads {
        assert!(
            matches!(node.as_str(), "Index Scan" | "Index Only Scan"),
            "{what}: {node} on observations\n{}",
            plan.text
        );
        let index = index.as_deref().unwrap_or_default();
        assert!(
            indexes.contains(&index),
            "{what}: unexpected index {index}\n{}",
            plan.text
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_history_and_writes_are_index_scans() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        population::seed(&database, VISITORS, 2, NOW).await;
        let client = database.pool().get().await.unwrap();
        let count: i64 = client
            .query_one("SELECT count(*) FROM observations", &[])
            .await
            .unwrap()
            .get(0);
        assert!(count >= 50_000, "{count} observations seeded");

        let cutoff = Retention::default().cutoff(NOW);
        let current = population::observation(42);
        let probes = probes_for(&current);
        assert_eq!(probes.len(), 6, "the population has every key");
        let lookup = candidate_lookup(&probes).unwrap();
        let mut lookup_params: Vec<&(dyn ToSql + Sync)> = vec![&cutoff];
        for probe in &probes {
            lookup_params.extend(probe.keys.iter().map(|k| k as &(dyn ToSql + Sync)));
        }
        let expected: BTreeSet<&str> = probes.iter().map(|p| family_index(p.family)).collect();
        let visitor = population::visitor(42);
        let visitor_id = visitor.as_str();
        let batch: Vec<String> = (40..50)
            .map(|n| population::visitor(n).as_str().to_owned())
            .collect();
        let keep = 10_i64;
        let limit = 5_i64;

        for mode in ["auto", "force_generic_plan"] {
            client
                .batch_execute(&format!("SET plan_cache_mode = {mode}"))
                .await
                .unwrap();
            let plan = explain(&client, &lookup, &lookup_params).await;
            let used: Vec<&str> = plan
                .reads
                .iter()
                .filter_map(|(_, i)| i.as_deref())
                .collect();
            assert_indexed(
                &plan,
                "lookup",
                &expected.iter().copied().collect::<Vec<_>>(),
            );
            assert_eq!(
                used.len(),
                6,
                "one index read per probe ({mode})\n{}",
                plan.text
            );
            assert_eq!(
                used.iter().copied().collect::<BTreeSet<_>>(),
                expected,
                "each probe uses its family's index ({mode})"
            );

            let plan = explain(
                &client,
                statement("visitors.history"),
                &[&visitor_id, &cutoff, &limit],
            )
            .await;
            assert_indexed(&plan, "history", &["idx_observation_visitor_seen"]);
            let now = NOW;
            let refresh = true;
            let observation = Json(&current);
            let interval = janitor_core::identification::store::REFRESH_INTERVAL_MS;
            let plan = explain(
                &client,
                statement("visitors.returning_visit"),
                &[
                    &visitor_id,
                    &now,
                    &cutoff,
                    &limit,
                    &refresh,
                    &observation,
                    &interval,
                    &None::<&str>,
                    &None::<Json<serde_json::Value>>,
                ],
            )
            .await;
            // The history by its index, the refresh by the primary key: no scan, whatever the table holds.
            assert_indexed(
                &plan,
                "returning visit",
                &["idx_observation_visitor_seen", "observations_pkey"],
            );
            let plan = explain(
                &client,
                statement("visitors.history_batch"),
                &[&batch, &cutoff, &limit],
            )
            .await;
            assert_indexed(&plan, "history batch", &["idx_observation_visitor_seen"]);

            // The save runs in a function (migration 0005); its prune is the statement that reads an index.
            let plan = explain(&client, &function_prune(), &[&visitor_id, &cutoff, &keep]).await;
            assert_indexed(&plan, "save's prune", &["idx_observation_visitor_seen"]);
            let plan = explain(&client, statement("visitors.expire"), &[&cutoff, &100_i64]).await;
            assert_indexed(
                &plan,
                "expire",
                &["idx_observation_seen", "observations_pkey"],
            );
        }
    })
    .await;
}

/// With the opt-in covering indexes built and the table vacuumed, each probe of
/// [`LookupRead::CoveringIndexes`] is an index-only scan of its family's covering index that visits no heap
/// page, whichever plan the server picks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_covering_lookup_reads_its_indexes_alone() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        population::seed(&database, VISITORS, 2, NOW).await;
        let all: Vec<&str> = COVERING_LOOKUP_INDEXES.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            database.missing_covering_lookup_indexes().await.unwrap(),
            all
        );
        database.create_covering_lookup_indexes().await.unwrap();
        assert!(database
            .missing_covering_lookup_indexes()
            .await
            .unwrap()
            .is_empty());
        // A second call finds them built and changes nothing.
        database.create_covering_lookup_indexes().await.unwrap();
        let client = database.pool().get().await.unwrap();
        client.batch_execute("VACUUM observations").await.unwrap();

        let cutoff = Retention::default().cutoff(NOW);
        let probes = probes_for(&population::observation(42));
        assert_eq!(probes.len(), 6, "the population has every key");
        let lookup = candidate_lookup_reading(&probes, LookupRead::CoveringIndexes).unwrap();
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&cutoff];
        for probe in &probes {
            params.extend(probe.keys.iter().map(|k| k as &(dyn ToSql + Sync)));
        }
        for mode in ["auto", "force_generic_plan"] {
            client
                .batch_execute(&format!("SET plan_cache_mode = {mode}"))
                .await
                .unwrap();
            let row = client
                .query_one(&format!("EXPLAIN (ANALYZE, FORMAT JSON) {lookup}"), &params)
                .await
                .unwrap();
            let Json(document): Json<Value> = row.get(0);
            let mut all_nodes = Vec::new();
            nodes(&document[0]["Plan"], &mut all_nodes);
            let reads: Vec<&Value> = all_nodes
                .iter()
                .filter(|n| n["Relation Name"] == "observations")
                .collect();
            let used: Vec<&str> = reads
                .iter()
                .filter_map(|n| n["Index Name"].as_str())
                .collect();
            let text = serde_json::to_string_pretty(&document).unwrap();
            assert_eq!(
                used, all,
                "each probe reads its family's covering index ({mode})\n{text}"
            );
            for read in reads {
                assert_eq!(read["Node Type"], "Index Only Scan", "({mode})\n{text}");
                assert_eq!(read["Heap Fetches"], 0, "({mode})\n{text}");
            }
        }
    })
    .await;
}
