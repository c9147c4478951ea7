//! The soak's settings: `--minutes N --rate R` from the command line, and the harness's `JANITOR_BENCHMARK_*`
//! variables where they apply (the database, keeping the fixture, known visitors, connections, external
//! servers, the output directory). Everything is checked before anything starts.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::capacity::env::{CapacityEnv, Run, SOCKETS_PER_PROCESS};
use crate::{number, pairs};

/// The shortest and longest soak, in minutes.
pub const MINUTES: (u64, u64) = (1, 1_440);

/// The lowest and highest offered rate, requests per second (the sweep's range).
pub const RATE: (u64, u64) = (1, 50_000);

/// Keep-alive connections of the open loop unless `JANITOR_BENCHMARK_CONNECTIONS` says otherwise: enough for
/// thousands of requests a second at a few milliseconds each, few enough that the soak is about the
/// identifications, not about holding sockets (the connection workload does that).
pub const DEFAULT_CONNECTIONS: u64 = 64;

/// Known visitors behind the cookies unless `JANITOR_BENCHMARK_VISITORS` says otherwise.
pub const DEFAULT_VISITORS: u64 = 5_000;

/// The time between two samples, and the length of one interval of the open loop.
pub const SAMPLE_INTERVAL: Duration = Duration::from_secs(10);

/// One request in this many is a new browser without a cookie; the others are known cookies (80/20).
pub const COOKIELESS_EVERY: u64 = 5;

/// The checked settings of one soak.
#[derive(Debug, Clone, PartialEq)]
pub struct SoakSettings {
    /// Minutes of load (1–1440).
    pub minutes: u64,
    /// Offered requests per second (1–50,000).
    pub rate: u64,
    /// Keep-alive connections of the open loop.
    pub connections: u64,
    /// The harness's settings; `visitors` is the soak's (its own default unless set).
    pub env: CapacityEnv,
}

impl SoakSettings {
    /// The seconds of load.
    pub fn run_seconds(&self) -> u64 {
        self.minutes * 60
    }

    /// How many 10-second intervals the run has.
    pub fn intervals(&self) -> u64 {
        self.run_seconds().div_ceil(SAMPLE_INTERVAL.as_secs())
    }

    /// Reads the flags and the process environment.
    pub fn from_process(args: &[String]) -> Result<SoakSettings, String> {
        let vars: BTreeMap<String, String> = std::env::vars()
            .filter(|(name, _)| name.starts_with("JANITOR_BENCHMARK_"))
            .collect();
        SoakSettings::parse(args, &vars)
    }

    /// Reads `--minutes N --rate R` (both required, each once) and the given `JANITOR_BENCHMARK_*` variables.
    pub fn parse(args: &[String], vars: &BTreeMap<String, String>) -> Result<SoakSettings, String> {
        let (minutes, rate) = flags(args)?;
        let mut env = CapacityEnv::from_vars(vars, Run::Single)?;
        let set = |name: &str| vars.get(name).is_some_and(|v| !v.is_empty());
        if !set("JANITOR_BENCHMARK_VISITORS") {
            env.visitors = DEFAULT_VISITORS;
        }
        let connections = if set("JANITOR_BENCHMARK_CONNECTIONS") {
            env.connections
        } else {
            DEFAULT_CONNECTIONS
        };
        if connections > SOCKETS_PER_PROCESS {
            return Err(format!(
                "JANITOR_BENCHMARK_CONNECTIONS: the soak's one server process holds at most \
                 {SOCKETS_PER_PROCESS} connections, got {connections}"
            ));
        }
        Ok(SoakSettings {
            minutes,
            rate,
            connections,
            env,
        })
    }
}

/// `--minutes N --rate R`, in either order.
pub fn flags(args: &[String]) -> Result<(u64, u64), String> {
    let (mut minutes, mut rate) = (None, None);
    for (name, value) in pairs(args.iter().cloned())? {
        let (slot, (low, high)) = match name.as_str() {
            "minutes" => (&mut minutes, MINUTES),
            "rate" => (&mut rate, RATE),
            other => {
                return Err(format!(
                    "unknown option --{other} (the soak takes --minutes and --rate)"
                ))
            }
        };
        if slot.is_some() {
            return Err(format!("--{name} is given twice"));
        }
        *slot = Some(number(&name, &value.replace('_', ""), low, high)?);
    }
    let required = |value: Option<u64>, name: &str, (low, high): (u64, u64)| {
        value.ok_or_else(|| format!("--{name} is required (from {low} to {high})"))
    };
    Ok((
        required(minutes, "minutes", MINUTES)?,
        required(rate, "rate", RATE)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    fn parsed(text: &str, vars: &[(&str, &str)]) -> Result<SoakSettings, String> {
        let vars = vars
            .iter()
            .map(|(k, v)| (format!("JANITOR_BENCHMARK_{k}"), (*v).to_owned()))
            .collect();
        SoakSettings::parse(&args(text), &vars)
    }

    #[test]
    fn every_bound_of_the_flags_is_checked() {
        for (name, (low, high), other) in [
            ("minutes", MINUTES, "--rate 100"),
            ("rate", RATE, "--minutes 1"),
        ] {
            for ok in [low, low + 1, high - 1, high] {
                assert!(
                    flags(&args(&format!("--{name} {ok} {other}"))).is_ok(),
                    "{name}={ok}"
                );
            }
            for bad in [low - 1, high + 1] {
                let problem = flags(&args(&format!("--{name} {bad} {other}"))).unwrap_err();
                assert!(
                    problem.contains(&format!("--{name} must be from {low} to {high}, got {bad}")),
                    "{name}={bad}: {problem}"
                );
            }
        }
        assert_eq!(
            flags(&args("--rate 50_000 --minutes 1440")),
            Ok((1_440, 50_000))
        );
        assert_eq!(flags(&args("--minutes 30 --rate 300")), Ok((30, 300)));
    }

    #[test]
    fn both_flags_are_required_once_and_nothing_else() {
        for (text, expected) in [
            ("", "--minutes is required (from 1 to 1440)"),
            ("--minutes 2", "--rate is required (from 1 to 50000)"),
            ("--rate 2", "--minutes is required"),
            (
                "--minutes 2 --rate 3 --minutes 4",
                "--minutes is given twice",
            ),
            (
                "--minutes 2 --rate 3 --seconds 4",
                "unknown option --seconds",
            ),
            ("--minutes two --rate 3", "whole number"),
            ("--minutes -1 --rate 3", "whole number"),
            ("--minutes", "needs a value"),
            ("minutes 2", "expected --option"),
        ] {
            let problem = flags(&args(text)).unwrap_err();
            assert!(problem.contains(expected), "{text:?}: {problem}");
        }
    }

    #[test]
    fn the_harness_environment_applies_with_the_soaks_own_defaults() {
        let s = parsed("--minutes 30 --rate 300", &[]).unwrap();
        assert_eq!(
            (s.minutes, s.rate, s.run_seconds(), s.intervals()),
            (30, 300, 1_800, 180)
        );
        assert_eq!(
            (s.connections, s.env.visitors),
            (DEFAULT_CONNECTIONS, DEFAULT_VISITORS)
        );
        assert_eq!((s.env.database_url.as_deref(), s.env.reuse), (None, false));
        let s = parsed(
            "--minutes 1 --rate 1",
            &[
                ("CONNECTIONS", "18000"),
                ("VISITORS", "100"),
                ("REUSE", "1"),
            ],
        )
        .unwrap();
        assert_eq!(
            (s.connections, s.env.visitors, s.env.reuse),
            (18_000, 100, true)
        );
        let problem = parsed("--minutes 1 --rate 1", &[("CONNECTIONS", "18001")]).unwrap_err();
        assert!(problem.contains("at most 18000 connections"), "{problem}");
        // The harness's own ranges and names still hold.
        assert!(parsed("--minutes 1 --rate 1", &[("CONNECTIONS", "99")])
            .unwrap_err()
            .contains("from 100 to 250000"));
        assert!(parsed("--minutes 1 --rate 1", &[("VISITORS", "100001")]).is_err());
        assert!(parsed("--minutes 1 --rate 1", &[("SOAK_MINUTES", "3")])
            .unwrap_err()
            .contains("not a setting"));
        assert!(parsed(
            "--minutes 1 --rate 1",
            &[("DATABASE_URL", "postgres://postgres@10.0.0.5/postgres")]
        )
        .is_err());
        assert_eq!(parsed("--minutes 1 --rate 1", &[]).unwrap().intervals(), 6);
    }
}
