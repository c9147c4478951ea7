//! The closed-loop limits' CPU table (`throughput-current.json`, `identify_limit.cpu`): where each side's CPU
//! went per operation, which on shared cores decides how many operations the machine allows.

use std::fmt::Write as _;

use serde_json::Value;

use super::{count, number};

/// One row per side: operations per second, then the CPU per operation of the database, the servers and the
/// client, and their sum, in microseconds.
pub fn limits_cpu(report: &Value) -> Result<String, String> {
    let sides = report["identify_limit"]["cpu"]["sides"]
        .as_array()
        .ok_or("the report has no identify_limit.cpu.sides")?;
    let mut table =
        "| side | per second | database CPU per operation | servers' CPU | client's CPU | all |\n\
                     |---|---|---|---|---|---|\n"
            .to_owned();
    for side in sides {
        let name = side["side"].as_str().ok_or("a side has no name")?;
        let part = |key: &str| side[key].as_f64().map(|ms| ms * 1_000.0);
        let (database, servers) = (part("database_ms"), part("servers_ms"));
        let client = number(side, "client_ms")? * 1_000.0;
        let cell = |us: Option<f64>| us.map_or("–".to_owned(), |us| format!("{us:.0} µs"));
        let all = database.map(|d| d + servers.unwrap_or(0.0) + client);
        let _ = writeln!(
            table,
            "| {name} | {}/s | {} | {} | {} | {} |",
            count(number(side, "per_second")?),
            cell(database),
            cell(servers),
            cell(Some(client)),
            all.map_or("–".to_owned(), |us| format!("**{us:.0} µs**"))
        );
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_side_gives_its_parts_in_microseconds_and_their_sum() {
        let report = serde_json::json!({"identify_limit": {"cpu": {"sides": [
            {"side": "identify", "operations": 60000, "per_second": 6000.0,
             "database_ms": 0.15, "servers_ms": 0.1, "client_ms": 0.03},
            {"side": "pgbench", "operations": 90000, "per_second": 9000.0,
             "database_ms": 0.17, "servers_ms": null, "client_ms": 0.02},
        ]}}});
        let table = limits_cpu(&report).unwrap();
        assert!(
            table.contains("| identify | 6,000/s | 150 µs | 100 µs | 30 µs | **280 µs** |"),
            "{table}"
        );
        assert!(
            table.contains("| pgbench | 9,000/s | 170 µs | – | 20 µs | **190 µs** |"),
            "{table}"
        );
    }

    #[test]
    fn an_unseen_database_leaves_the_sum_out() {
        let report = serde_json::json!({"identify_limit": {"cpu": {"sides": [
            {"side": "identify", "per_second": 6000.0, "database_ms": null, "servers_ms": 0.1,
             "client_ms": 0.03},
        ]}}});
        assert!(limits_cpu(&report).unwrap().ends_with("| 30 µs | – |\n"));
        assert!(limits_cpu(&serde_json::json!({})).is_err());
    }
}
