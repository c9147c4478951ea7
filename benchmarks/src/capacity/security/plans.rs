//! The plans of the velocity reads, captured with `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` of the library's own
//! statement with the parameters a read of the SQL run sends, and checked: an index scan on the subject/action
//! index, no sequential scan and no sort anywhere, and the expected number of rows out of the top node (for the
//! hot subject: max + 1 = 1,001, where the scan stops).
//!
//! The hot read as bound must use the subject/action index: only there does the scan stop after max + 1 rows
//! whatever the share of the action. For a sparse subject, and for the generic plan (which cannot know that the
//! subject is hot), the planner may equally pick the subject/time index and filter the action: both are bounded
//! by the subject's rows in the window, so either is accepted there, and the report names the one used. The hot
//! read as bound must also be an index-only scan that fetched at most 1 % of its rows from the table.

use janitor_core::evidence::ActivityColumn;
use janitor_sql::testing::statements::recent_event_types;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_postgres::types::{Json, ToSql};

use crate::capacity::seed::pg;

/// The index the subject + action read must use.
pub const SUBJECT_ACTION_INDEX: &str = "idx_events_subject_action";

/// The subject index without the action, which a read of few rows may use as well.
pub const SUBJECT_TIME_INDEX: &str = "idx_events_subject_time";

/// The parameters of one velocity read by subject and action, in the statement's order.
#[derive(Debug, Clone)]
pub struct VelocityRead {
    /// `$1`: the subject label.
    pub subject: String,
    /// `$2`: the scope label.
    pub scope: String,
    /// `$3`: the window's start.
    pub since: i64,
    /// `$4`: now.
    pub until: i64,
    /// `$5`: the row limit (max + 1).
    pub limit: i64,
    /// `$6`: the action.
    pub action: String,
}

/// One checked property of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assertion {
    /// What was checked.
    pub what: String,
    /// Whether it held.
    pub passed: bool,
    /// What was found.
    pub found: String,
}

/// Every plan node below `plan`, itself first.
fn nodes<'a>(plan: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(plan);
    for child in plan["Plans"].as_array().into_iter().flatten() {
        nodes(child, out);
    }
}

/// Checks an `EXPLAIN (ANALYZE, FORMAT JSON)` document of the read named `name`: no sequential scan, every
/// read of `application_events` an index (only) scan on one of `indexes`, no sort, and `rows` rows out of the
/// top node.
pub fn check(name: &str, document: &Value, indexes: &[&str], rows: u64) -> Vec<Assertion> {
    let top = &document[0]["Plan"];
    let mut all = Vec::new();
    if top.is_object() {
        nodes(top, &mut all);
    }
    let types = |filter: &dyn Fn(&&&Value) -> bool| -> Vec<String> {
        all.iter()
            .filter(filter)
            .map(|n| n["Node Type"].as_str().unwrap_or("?").to_owned())
            .collect()
    };
    let seq = types(&|n| n["Node Type"] == "Seq Scan");
    let sorts = types(&|n| n["Node Type"].as_str().is_some_and(|t| t.ends_with("Sort")));
    let reads: Vec<&&Value> = all
        .iter()
        .filter(|n| n["Relation Name"] == "application_events")
        .collect();
    let read_by_index = !reads.is_empty()
        && reads.iter().all(|n| {
            matches!(
                n["Node Type"].as_str(),
                Some("Index Scan" | "Index Only Scan")
            ) && n["Index Name"]
                .as_str()
                .is_some_and(|used| indexes.contains(&used))
        });
    let reads_found = if reads.is_empty() {
        "application_events is not read".to_owned()
    } else {
        reads
            .iter()
            .map(|n| {
                format!(
                    "{} on {}",
                    n["Node Type"].as_str().unwrap_or("?"),
                    n["Index Name"].as_str().unwrap_or("no index")
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let actual = top["Actual Rows"].as_u64();
    vec![
        Assertion {
            what: format!(
                "{name}: application_events read by an index scan on {}",
                indexes.join(" or ")
            ),
            passed: read_by_index,
            found: reads_found,
        },
        Assertion {
            what: format!("{name}: no sequential scan anywhere in the plan"),
            passed: !all.is_empty() && seq.is_empty(),
            found: format!("{} node(s), {} sequential scan(s)", all.len(), seq.len()),
        },
        Assertion {
            what: format!("{name}: rows come in index order, no sort"),
            passed: sorts.is_empty(),
            found: if sorts.is_empty() {
                "no sort".to_owned()
            } else {
                sorts.join(", ")
            },
        },
        Assertion {
            what: format!("{name}: the top node returns exactly {rows} rows"),
            passed: actual == Some(rows),
            found: match actual {
                Some(n) => format!(
                    "{} returned {n}",
                    top["Node Type"].as_str().unwrap_or("the top node")
                ),
                None => "no actual row count".to_owned(),
            },
        },
    ]
}

/// Checks that every read of `application_events` in the plan of the read named `name` is an index-only scan
/// that fetched at most `max_fetches` rows from the table. The velocity indexes carry the expiry and the event
/// type (migration 0007), so only rows on pages changed since the last `VACUUM` are fetched: in the SQL run,
/// the fixture's API event shares the table's last page with the warm-up's writes. A plain index scan of the
/// hot read fetches all 1,001.
pub fn check_index_only(name: &str, document: &Value, max_fetches: u64) -> Assertion {
    let mut all = Vec::new();
    let top = &document[0]["Plan"];
    if top.is_object() {
        nodes(top, &mut all);
    }
    let reads: Vec<&&Value> = all
        .iter()
        .filter(|n| n["Relation Name"] == "application_events")
        .collect();
    let passed = !reads.is_empty()
        && reads.iter().all(|n| {
            n["Node Type"] == "Index Only Scan"
                && n["Heap Fetches"].as_u64().is_some_and(|f| f <= max_fetches)
        });
    let found = if reads.is_empty() {
        "application_events is not read".to_owned()
    } else {
        reads
            .iter()
            .map(|n| {
                format!(
                    "{} with {} heap fetches",
                    n["Node Type"].as_str().unwrap_or("?"),
                    n["Heap Fetches"]
                        .as_u64()
                        .map_or("no count of".to_owned(), |f| f.to_string())
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    Assertion {
        what: format!("{name}: an index-only scan with at most {max_fetches} heap fetches"),
        passed,
        found,
    }
}

/// `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)` of the subject + action read with `read`'s values bound as the
/// pool binds them (a custom plan).
pub async fn explain(
    client: &tokio_postgres::Client,
    read: &VelocityRead,
) -> Result<Value, String> {
    let params: [&(dyn ToSql + Sync); 6] = [
        &read.subject,
        &read.scope,
        &read.since,
        &read.until,
        &read.limit,
        &read.action,
    ];
    let row = client
        .query_one(
            &format!(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {}",
                recent_event_types(ActivityColumn::Subject, true)
            ),
            &params,
        )
        .await
        .map_err(|e| format!("EXPLAIN of the velocity read: {}", pg(&e)))?;
    let Json(document): Json<Value> = row
        .try_get(0)
        .map_err(|e| format!("reading the plan: {e}"))?;
    Ok(document)
}

/// The same as the generic plan a prepared statement switches to after a few executions.
pub async fn explain_generic(
    client: &tokio_postgres::Client,
    read: &VelocityRead,
) -> Result<Value, String> {
    for text in [&read.subject, &read.scope, &read.action] {
        // Labels and action names only: letters, digits, `_` and `-`, safe as SQL literals.
        if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return Err(format!("{text:?} cannot be written as a plain literal"));
        }
    }
    client
        .batch_execute(&format!(
            "SET plan_cache_mode = force_generic_plan; \
             PREPARE capacity_velocity (text, text, bigint, bigint, bigint, text) AS \
             {}",
            recent_event_types(ActivityColumn::Subject, true)
        ))
        .await
        .map_err(|e| format!("PREPARE of the velocity read: {}", pg(&e)))?;
    let row = client
        .query_one(
            &format!(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE capacity_velocity \
                 ('{}', '{}', {}, {}, {}, '{}')",
                read.subject, read.scope, read.since, read.until, read.limit, read.action
            ),
            &[],
        )
        .await;
    let reset = client
        .batch_execute("DEALLOCATE capacity_velocity; RESET plan_cache_mode")
        .await;
    let row = row.map_err(|e| format!("EXPLAIN of the generic velocity read: {}", pg(&e)))?;
    reset.map_err(|e| format!("DEALLOCATE: {}", pg(&e)))?;
    let Json(document): Json<Value> = row
        .try_get(0)
        .map_err(|e| format!("reading the plan: {e}"))?;
    Ok(document)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn scan(node_type: &str, index: Option<&str>, rows: u64) -> Value {
        let mut node = json!({
            "Node Type": node_type,
            "Relation Name": "application_events",
            "Actual Rows": rows,
        });
        if let Some(index) = index {
            node["Index Name"] = json!(index);
        }
        node
    }

    fn limit(rows: u64, child: Value) -> Value {
        json!([{"Plan": {"Node Type": "Limit", "Actual Rows": rows, "Plans": [child]}}])
    }

    fn failed(assertions: &[Assertion]) -> Vec<&str> {
        assertions
            .iter()
            .filter(|a| !a.passed)
            .map(|a| a.what.as_str())
            .collect()
    }

    #[test]
    fn the_expected_plan_passes() {
        let plan = limit(1001, scan("Index Scan", Some(SUBJECT_ACTION_INDEX), 1001));
        let checks = check("hot", &plan, &[SUBJECT_ACTION_INDEX], 1001);
        assert_eq!(checks.len(), 4);
        assert!(failed(&checks).is_empty(), "{checks:?}");
        let only = limit(3, scan("Index Only Scan", Some(SUBJECT_ACTION_INDEX), 3));
        let checks = check("sparse", &only, &[SUBJECT_ACTION_INDEX], 3);
        assert!(failed(&checks).is_empty(), "{checks:?}");
    }

    #[test]
    fn a_sequential_scan_fails_wherever_it_is() {
        let plan = limit(1001, scan("Seq Scan", None, 1001));
        let checks = check("hot", &plan, &[SUBJECT_ACTION_INDEX], 1001);
        let failures = failed(&checks);
        assert!(
            failures.iter().any(|w| w.contains("no sequential scan")),
            "{failures:?}"
        );
        assert!(
            failures.iter().any(|w| w.contains("index scan")),
            "{failures:?}"
        );
        // Deeper down, beside a good scan, on another table.
        let mut plan = limit(1001, scan("Index Scan", Some(SUBJECT_ACTION_INDEX), 1001));
        plan[0]["Plan"]["Plans"]
            .as_array_mut()
            .unwrap()
            .push(json!({"Node Type": "Seq Scan", "Relation Name": "identity_subjects"}));
        let checks = check("hot", &plan, &[SUBJECT_ACTION_INDEX], 1001);
        let failures = failed(&checks);
        assert_eq!(failures, ["hot: no sequential scan anywhere in the plan"]);
    }

    #[test]
    fn another_index_a_bitmap_or_a_sort_fails() {
        let other = limit(
            1001,
            scan("Index Scan", Some("idx_events_subject_time"), 1001),
        );
        assert_eq!(
            failed(&check("hot", &other, &[SUBJECT_ACTION_INDEX], 1001)),
            ["hot: application_events read by an index scan on idx_events_subject_action"]
        );
        // Where either subject index is accepted, the time index passes and a third one still fails.
        let either = [SUBJECT_ACTION_INDEX, SUBJECT_TIME_INDEX];
        assert!(failed(&check("sparse", &other, &either, 1001)).is_empty());
        let actor = limit(
            1001,
            scan("Index Scan", Some("idx_events_actor_time"), 1001),
        );
        assert_eq!(failed(&check("sparse", &actor, &either, 1001)).len(), 1);
        let bitmap = limit(1001, scan("Bitmap Heap Scan", None, 1001));
        assert!(!failed(&check("hot", &bitmap, &[SUBJECT_ACTION_INDEX], 1001)).is_empty());
        let sorted = limit(
            1001,
            json!({"Node Type": "Sort", "Plans": [scan("Index Scan", Some(SUBJECT_ACTION_INDEX), 5000)]}),
        );
        assert_eq!(
            failed(&check("hot", &sorted, &[SUBJECT_ACTION_INDEX], 1001)),
            ["hot: rows come in index order, no sort"]
        );
    }

    #[test]
    fn only_an_index_only_scan_with_few_heap_fetches_passes() {
        let mut only = scan("Index Only Scan", Some(SUBJECT_ACTION_INDEX), 1001);
        for (fetches, passed) in [(0, true), (10, true), (11, false), (1001, false)] {
            only["Heap Fetches"] = json!(fetches);
            let checked = check_index_only("hot", &limit(1001, only.clone()), 10);
            assert_eq!(checked.passed, passed, "{fetches}");
            assert_eq!(
                checked.found,
                format!("Index Only Scan with {fetches} heap fetches")
            );
        }
        let plain = scan("Index Scan", Some(SUBJECT_ACTION_INDEX), 1001);
        assert!(!check_index_only("hot", &limit(1001, plain), 10).passed);
        assert!(!check_index_only("hot", &json!([]), 10).passed);
        // An index-only scan that does not say how many rows it fetched is not taken on trust.
        let silent = scan("Index Only Scan", Some(SUBJECT_ACTION_INDEX), 1001);
        assert!(!check_index_only("hot", &limit(1001, silent), 10).passed);
    }

    #[test]
    fn a_wrong_row_count_or_an_empty_document_fails() {
        let plan = limit(1000, scan("Index Scan", Some(SUBJECT_ACTION_INDEX), 1000));
        assert_eq!(
            failed(&check("hot", &plan, &[SUBJECT_ACTION_INDEX], 1001)),
            ["hot: the top node returns exactly 1001 rows"]
        );
        assert_eq!(
            failed(&check("hot", &json!([]), &[SUBJECT_ACTION_INDEX], 1001)).len(),
            3,
            "nothing read, nothing counted; only 'no sort' holds"
        );
    }
}
