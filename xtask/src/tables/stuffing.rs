//! The tables of docs/signin-defence.md, from the sign-in defence benchmark's reports.

use std::fmt::Write as _;

use serde_json::Value;

use super::{count, number};

fn rows(report: &Value) -> Result<&Vec<Value>, String> {
    report["rows"]
        .as_array()
        .ok_or_else(|| "the report has no rows".to_owned())
}

fn text<'a>(row: &'a Value, key: &str) -> Result<&'a str, String> {
    row[key]
        .as_str()
        .ok_or_else(|| format!("a row has no {key}"))
}

fn percent(row: &Value, key: &str) -> Result<String, String> {
    Ok(format!("{:.2}%", number(row, key)? * 100.0))
}

/// Every scenario with the defences off and on: what the attacker got, what the owners paid.
pub fn scenarios(report: &Value) -> Result<String, String> {
    let mut table = "| scenario | defences | accounts compromised | attempts checked / sent | owners' sign-ins \
                     refused | challenged | delayed | owners locked out of their own browser |\n\
                     |---|---|---|---|---|---|---|---|\n"
        .to_owned();
    for row in rows(report)? {
        let defence = text(row, "defence")?;
        if !matches!(defence, "off" | "on") {
            continue;
        }
        let locked = format!(
            "{} (of {})",
            count(number(row, "owners.locked_out")?),
            count(number(row, "owners.targeted_returning")?)
        );
        let _ = writeln!(
            table,
            "| {} | {defence} | {} | {} / {} | {} | {} | {} | {locked} |",
            text(row, "scenario")?,
            count(number(row, "attacker.compromised")?),
            count(number(row, "attacker.checked")?),
            count(number(row, "attacker.attempts")?),
            percent(row, "owners_refused_share")?,
            percent(row, "owners_challenged_share")?,
            percent(row, "owners_delayed_share")?,
        );
    }
    Ok(table)
}

/// The network counter alone, on GCRA and on fixed windows, against the one-network attacker.
pub fn algorithms(report: &Value) -> Result<String, String> {
    let mut table =
        "| network counter | requests sent | passwords checked | most requests past the quotas \
                     in any 60 s | in any 5 s |\n|---|---|---|---|---|\n"
            .to_owned();
    for row in rows(report)? {
        let name = match text(row, "defence")? {
            "network_quota_only_gcra" => "GCRA",
            "network_quota_only_fixed_window" => "fixed window",
            _ => continue,
        };
        let _ = writeln!(
            table,
            "| {name} | {} | {} | {} | {} |",
            count(number(row, "attacker.attempts")?),
            count(number(row, "attacker.checked")?),
            count(number(row, "attacker.peak_per_minute")?),
            count(number(row, "attacker.peak_per_5s")?),
        );
    }
    Ok(table)
}

/// The same run on both stores, and the statements each request cost on PostgreSQL.
pub fn stores(report: &Value) -> Result<String, String> {
    let mut table = "| scenario | defences | compromised, memory / PostgreSQL | checked, memory / PostgreSQL \
                     | owners challenged, memory / PostgreSQL | statements per owner request | per attacker \
                     request |\n|---|---|---|---|---|---|---|\n"
        .to_owned();
    let all = rows(report)?;
    for row in all.iter().filter(|r| r["store"] == "memory") {
        let (scenario, defence) = (text(row, "scenario")?, text(row, "defence")?);
        if !matches!(defence, "off" | "on") {
            continue;
        }
        let pg = all
            .iter()
            .find(|r| {
                r["store"] == "postgres" && r["scenario"] == scenario && r["defence"] == defence
            })
            .ok_or_else(|| format!("no PostgreSQL row for {scenario} {defence}"))?;
        let pair = |key: &str| -> Result<String, String> {
            Ok(format!(
                "{} / {}",
                count(number(row, key)?),
                count(number(pg, key)?)
            ))
        };
        let _ = writeln!(
            table,
            "| {scenario} | {defence} | {} | {} | {} / {} | {:.2} | {:.2} |",
            pair("attacker.compromised")?,
            pair("attacker.checked")?,
            percent(row, "owners_challenged_share")?,
            percent(pg, "owners_challenged_share")?,
            number(pg, "owner_statements_per_request")?,
            number(pg, "attacker_statements_per_request")?,
        );
    }
    Ok(table)
}

/// The targets as the run checked them.
pub fn targets(report: &Value) -> Result<String, String> {
    let mut table = "| target | measured | met |\n|---|---|---|\n".to_owned();
    let targets = report["targets"]
        .as_array()
        .ok_or("the report has no targets")?;
    for target in targets {
        let met = if target["met"].as_bool() == Some(true) {
            "yes"
        } else {
            "**no**"
        };
        let _ = writeln!(
            table,
            "| {} | {} | {met} |",
            text(target, "target")?,
            text(target, "measured")?
        );
    }
    Ok(table)
}
