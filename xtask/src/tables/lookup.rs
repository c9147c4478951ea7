//! The missing-cookie lookup's tables (`lookup-current.json`): each way's latencies, and what the covering
//! indexes occupy and cost.

use std::fmt::Write as _;

use serde_json::Value;

use super::number;

/// Each way's lookup latencies, warm and cold, then the whole identifications. The covering way has rows only
/// in a report that measured it.
pub fn latencies(report: &Value) -> Result<String, String> {
    let figures = &report["figures"];
    let mut ways = vec![
        ("stored `lookup_features` (default)", figures),
        (
            "the same array computed per lookup",
            &figures["computed_design"],
        ),
        (
            "whole `signals_json` (the design before)",
            &figures["previous_design"],
        ),
    ];
    if figures.get("covering_design").is_some() {
        ways.push(("covering indexes (opt-in)", &figures["covering_design"]));
    }
    let cold = if figures["page_cache_evicted"] == true {
        "**cold**, OS page cache dropped"
    } else {
        "**cold**"
    };
    let mut table = "| what | p50 | p95 | p99 |\n|---|---|---|---|\n".to_owned();
    let mut row = |what: String, latency: &Value| -> Result<(), String> {
        let ms = |key| number(latency, key).map(|v| format!("{v} ms"));
        let _ = writeln!(
            table,
            "| {what} | {} | {} | {} |",
            ms("p50_ms")?,
            ms("p95_ms")?,
            ms("p99_ms")?
        );
        Ok(())
    };
    for (way, at) in &ways {
        row(
            format!("candidate lookup, {way}, warm"),
            &at["candidate_lookup"],
        )?;
        row(
            format!("candidate lookup, {way}, {cold}"),
            &at["cold_candidate_lookup"],
        )?;
    }
    for (way, at) in &ways {
        row(
            format!("whole identification without the cookie, {way}"),
            &at["missing_cookie_identify"],
        )?;
    }
    row(
        "a whole identification with the cookie".to_owned(),
        &figures["cookie_identify"],
    )?;
    Ok(table)
}

/// What building the covering indexes took and what they occupy, beside the table and the probe indexes.
pub fn covering_cost(report: &Value) -> Result<String, String> {
    let figures = &report["figures"];
    let cost = &figures["covering_indexes"];
    let visitors = number(figures, "visitors")? * number(figures, "observations_per_visitor")?;
    let mb = |key: &str| number(cost, key).map(|b| b / 1e6);
    let (covering, probe, table) = (
        mb("covering_index_bytes")?,
        mb("probe_index_bytes")?,
        mb("table_bytes")?,
    );
    let per_row = |megabytes: f64| megabytes * 1e6 / visitors;
    let mut out = "| what | size | per observation |\n|---|---|---|\n".to_owned();
    for (what, megabytes) in [
        ("`observations` (the table itself)", table),
        ("the six probe indexes (migration 0001)", probe),
        ("the six covering indexes", covering),
    ] {
        let _ = writeln!(
            out,
            "| {what} | {megabytes:.0} MB | {:.0} bytes |",
            per_row(megabytes)
        );
    }
    let _ = writeln!(
        out,
        "| building them (`create_covering_lookup_indexes`), then `VACUUM` | {} s, {} s | |",
        number(cost, "build_seconds")?,
        number(cost, "vacuum_seconds")?
    );
    Ok(out)
}

/// The lookup-plans report (`lookup-plans.json`): per statistics state and plan mode, the statement before
/// beside the current one, each lookup run by both in turn on the same table.
pub fn plans(report: &Value) -> Result<String, String> {
    let cells = report["cells"]
        .as_array()
        .ok_or_else(|| "the report has no cells".to_owned())?;
    let mut table =
        "| statistics | plans | statement | rows read per lookup (max) | buffers per lookup | \
                     lookups off their indexes | execution (EXPLAIN) | round trip |\n\
                     |---|---|---|---|---|---|---|---|\n"
            .to_owned();
    for cell in cells {
        let text = |key: &str| {
            cell[key]
                .as_str()
                .ok_or_else(|| format!("a cell has no {key}"))
        };
        let mode = match text("plan_cache_mode")? {
            "force_custom_plan" => "custom",
            "force_generic_plan" => "generic",
            other => other,
        };
        let _ = writeln!(
            table,
            "| {} | {mode} | {} | {} ({}) | {} | {} of {} | {} ms | {} ms |",
            text("state")?,
            text("statement")?,
            super::count(number(cell, "rows_read_mean")?),
            super::count(number(cell, "rows_read_max")?),
            super::count(number(cell, "buffers_mean")?),
            number(cell, "lookups_off_their_indexes")?,
            number(cell, "lookups")?,
            number(cell, "execution_ms_median")?,
            number(cell, "client_ms_median")?,
        );
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_covering_rows_appear_only_when_measured() {
        let latency = serde_json::json!({"p50_ms": 1.0, "p95_ms": 2.0, "p99_ms": 3.0});
        let way = serde_json::json!({"candidate_lookup": latency, "cold_candidate_lookup": latency,
            "missing_cookie_identify": latency});
        let mut figures = way.clone();
        figures["computed_design"] = way.clone();
        figures["previous_design"] = way.clone();
        figures["cookie_identify"] = latency.clone();
        let older = latencies(&serde_json::json!({ "figures": figures })).unwrap();
        assert!(!older.contains("covering"), "{older}");
        figures["covering_design"] = way;
        let newer = latencies(&serde_json::json!({ "figures": figures })).unwrap();
        assert_eq!(
            newer.matches("covering indexes (opt-in)").count(),
            3,
            "{newer}"
        );
        assert!(covering_cost(&serde_json::json!({ "figures": figures })).is_err());
        figures["visitors"] = 1000.into();
        figures["observations_per_visitor"] = 1.into();
        figures["covering_indexes"] = serde_json::json!({"covering_index_bytes": 2_400_000,
            "probe_index_bytes": 100_000, "table_bytes": 1_100_000, "build_seconds": 1.5,
            "vacuum_seconds": 0.25});
        let cost = covering_cost(&serde_json::json!({ "figures": figures })).unwrap();
        assert!(
            cost.contains("| the six covering indexes | 2 MB | 2400 bytes |"),
            "{cost}"
        );
        assert!(cost.contains("| 1.5 s, 0.25 s |"), "{cost}");
    }
}
