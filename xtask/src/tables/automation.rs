//! The tables of docs/automation.md, from the automation benchmark's report.

use std::fmt::Write as _;

use serde_json::Value;

use super::{count, number};

fn tools(report: &Value) -> Result<&Vec<Value>, String> {
    report["tools"]
        .as_array()
        .ok_or_else(|| "the report has no tools".to_owned())
}

fn text<'a>(row: &'a Value, key: &str) -> Result<&'a str, String> {
    row[key]
        .as_str()
        .ok_or_else(|| format!("a tool has no {key}"))
}

/// What each class of tool is held to.
fn target(class: &str) -> &'static str {
    match class {
        "plain" | "evasive" => "automated ≥ 99%",
        "stealth" => "suspected or automated ≥ 90%",
        _ => "automated 0, suspected ≤ 1%",
    }
}

/// Tool × verdict on the sign-in form, the same runs without the two form checks, and the page-load verdict.
pub fn confusion(report: &Value) -> Result<String, String> {
    let mut table =
        "| tool | side | runs (completed) | human | suspected | automated | automated without \
                     the form checks | automated on page load | target | met |\n\
                     |---|---|---|---|---|---|---|---|---|---|\n"
            .to_owned();
    for row in tools(report)? {
        let class = text(row, "class")?;
        let _ = writeln!(
            table,
            "| {} | {class} | {} ({}) | {} | {} | {} | {} | {} | {} | {} |",
            text(row, "tool")?,
            count(number(row, "runs")?),
            count(number(row, "completed")?),
            count(number(row, "signin.human")?),
            count(number(row, "signin.suspected")?),
            count(number(row, "signin.automated")?),
            count(number(row, "signin_without_form_checks.automated")?),
            count(number(row, "identify.automated")?),
            target(class),
            if row["met"] == true { "yes" } else { "**no**" },
        );
    }
    Ok(table)
}

/// How often each reason fired on each tool's sign-in form.
pub fn reasons(report: &Value) -> Result<String, String> {
    let mut table = "| tool | reasons that fired (runs) |\n|---|---|\n".to_owned();
    for row in tools(report)? {
        let reasons = row["reasons"]
            .as_object()
            .ok_or_else(|| "a tool has no reasons".to_owned())?;
        let mut fired: Vec<(&String, f64)> = reasons
            .iter()
            .map(|(name, n)| (name, n.as_f64().unwrap_or(0.0)))
            .collect();
        fired.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
        let list: Vec<String> = fired
            .iter()
            .map(|(name, n)| format!("`{name}` {}", count(*n)))
            .collect();
        let list = if list.is_empty() {
            "none".to_owned()
        } else {
            list.join(", ")
        };
        let _ = writeln!(table, "| {} | {list} |", text(row, "tool")?);
    }
    Ok(table)
}

/// CPU per identification with the verdict on and off, and the client part's size.
pub fn cost(report: &Value) -> Result<String, String> {
    let cost = &report["cost"];
    let mut table = "| CPU per identification, verdict on | verdict off | added (median of rounds) | \
                     identifications per side | client part | gzipped |\n|---|---|---|---|---|---|\n"
        .to_owned();
    let _ = writeln!(
        table,
        "| {:.1} µs | {:.1} µs | {:.2} µs ({:.4} ms) | {} × {} rounds | {} B | {} B |",
        number(cost, "cpu_us_on")?,
        number(cost, "cpu_us_off")?,
        number(cost, "cpu_us_added")?,
        number(cost, "cpu_us_added")? / 1000.0,
        count(number(cost, "identifications_per_round")?),
        count(number(cost, "rounds")?),
        count(number(cost, "client_part_bytes")?),
        count(number(cost, "client_part_gzip_bytes")?),
    );
    Ok(table)
}
