//! The lookup replica's table (`replica-current.json`): each round, the primary alone or the lookup on the
//! standby, with throughput and each cluster's CPU per identification.

use std::fmt::Write as _;

use serde_json::Value;

use super::{count, number};

/// One row per round in the order run, then the ratios of the replica's rounds to the primary's.
pub fn rounds(report: &Value) -> Result<String, String> {
    let rounds = report["rounds"]
        .as_array()
        .ok_or("the report has no rounds")?;
    let mut table =
        "| round | where the lookup reads | identifications/s | primary CPU per identification \
                     | standby CPU per identification |\n|---|---|---|---|---|\n"
            .to_owned();
    for (i, round) in rounds.iter().enumerate() {
        let place = if round["with_replica"] == true {
            "the standby"
        } else {
            "the primary"
        };
        let _ = writeln!(
            table,
            "| {} | {place} | {} | {} ms | {} ms |",
            i + 1,
            count(number(round, "per_second")?),
            number(round, "primary_cpu_ms")?,
            number(round, "standby_cpu_ms")?
        );
    }
    let _ = writeln!(
        table,
        "| standby ÷ primary | | **{}** | **{}** | |",
        number(report, "throughput_ratio")?,
        number(report, "primary_cpu_ratio")?
    );
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_and_the_ratios() {
        let report = serde_json::json!({
            "rounds": [
                {"with_replica": false, "per_second": 505.3, "primary_cpu_ms": 2.336, "standby_cpu_ms": 0.193},
                {"with_replica": true, "per_second": 1471.9, "primary_cpu_ms": 0.787, "standby_cpu_ms": 1.932}
            ],
            "throughput_ratio": 0.96, "primary_cpu_ratio": 0.35
        });
        let table = rounds(&report).unwrap();
        assert!(
            table.contains("| 1 | the primary | 505 | 2.336 ms | 0.193 ms |"),
            "{table}"
        );
        assert!(
            table.contains("| 2 | the standby | 1,472 | 0.787 ms | 1.932 ms |"),
            "{table}"
        );
        assert!(
            table.contains("| standby ÷ primary | | **0.96** | **0.35** | |"),
            "{table}"
        );
        assert!(rounds(&serde_json::json!({})).is_err());
    }
}
