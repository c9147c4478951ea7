//! The harness's settings, read from `JANITOR_BENCHMARK_*` environment variables and checked against their
//! ranges before anything starts. A value out of range stops the run with the range in the message.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::str::FromStr;

use janitor_axum::admission::{MAX_WAITING_REQUESTS, SLOT_WAIT_MS};
use tokio_postgres::config::Host;

/// Every variable the harness reads, so that a misspelt one is refused instead of silently ignored.
pub const VARIABLES: &[&str] = &[
    "JANITOR_BENCHMARK_DATABASE_URL",
    "JANITOR_BENCHMARK_EVENTS",
    "JANITOR_BENCHMARK_SAMPLES",
    "JANITOR_BENCHMARK_SHARDS",
    "JANITOR_BENCHMARK_LABEL",
    "JANITOR_BENCHMARK_REUSE",
    "JANITOR_BENCHMARK_CONNECTIONS",
    "JANITOR_BENCHMARK_RATES",
    "JANITOR_BENCHMARK_WORKERS",
    "JANITOR_BENCHMARK_RATE_SECONDS",
    "JANITOR_BENCHMARK_STEADY_SECONDS",
    "JANITOR_BENCHMARK_SEARCH",
    "JANITOR_BENCHMARK_SLOTS",
    "JANITOR_BENCHMARK_SLOT_WAIT",
    "JANITOR_BENCHMARK_SERVER_THREADS",
    "JANITOR_BENCHMARK_VISITORS",
    "JANITOR_BENCHMARK_LOOKUP_VISITORS",
    "JANITOR_BENCHMARK_LOOKUP_EVICT",
    "JANITOR_BENCHMARK_EXTERNAL_SERVERS",
    "JANITOR_BENCHMARK_OUT",
];

/// The most sockets one process of the harness may hold: the machine allows 20,000 descriptors per process,
/// and the rest is headroom for the pool, pipes and files.
pub const SOCKETS_PER_PROCESS: u64 = 18_000;

/// Which run the settings are for: the SQL run alone uses one quota shard by default, the whole capacity run 32
/// (as the reference did).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Run {
    /// `benchmark-capacity`: every workload.
    Capacity,
    /// One workload on its own (`benchmark-security`, `seed`, …).
    Single,
}

/// The checked settings of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct CapacityEnv {
    /// A loopback PostgreSQL to use instead of the disposable cluster.
    pub database_url: Option<String>,
    /// Events seeded before the SQL run (10,000–3,000,000; 1,000,000).
    pub events: u64,
    /// Operations per point of the SQL run (100–10,000; 1,000).
    pub samples: u64,
    /// Shards of the global quota (1–128; 1 for a single run, 32 in the capacity run).
    pub shards: u32,
    /// Names the SQL report: `security-<label>.json` (`^[a-z0-9-]{1,40}$`; `current`).
    pub label: String,
    /// Keep the fixture (schema and cluster data) for the next run instead of removing it.
    pub reuse: bool,
    /// Live connections of the connection workload (100–250,000; 200,000).
    pub connections: u64,
    /// Offered rates of the sweep, requests per second (1–6 values of 1–50,000; 100,500,1000,2000).
    pub rates: Vec<u64>,
    /// Server processes (1–64; enough that none holds more than 18,000 sockets).
    pub workers: u64,
    /// Seconds per rate of the sweep (1–60; 15).
    pub rate_seconds: u64,
    /// Seconds of the steady phase of the connection workload (1–60; 15).
    pub steady_seconds: u64,
    /// Also search for the highest rate with zero 503s and a success p95 ≤ 10 ms.
    pub search: bool,
    /// Known visitors behind the cookies of the HTTP runs (100–100,000; 10,000).
    pub visitors: u64,
    /// Visitors of the missing-cookie lookup scale test; 0 skips it (0 or 100,000–3,000,000; 0, the reference
    /// used 2,000,000).
    pub lookup_visitors: u64,
    /// Drop the operating system's page cache before each sample's cold lookups (Linux, as root), so that
    /// "cold" also means "not in the OS cache": the lookup of a table larger than memory (0 or 1; 0).
    pub lookup_evict: bool,
    /// Admission slots of each server process of the rate sweep (1–1024; 8, as in the reference).
    pub slots: u64,
    /// The admission wait of each server process of the rate sweep, `waiting,ms` (requests that may wait for a
    /// slot, 0–4,096, and for how long, 0–1,000 ms; both 0 or both above); the library's default unless set.
    pub slot_wait: Option<(usize, u64)>,
    /// The Tokio runtime threads of each server process of the rate sweep (0–64; 0): 0 is a multi-thread runtime
    /// with a worker per core, 1 a current-thread runtime, more a multi-thread one with that many workers.
    pub server_threads: usize,
    /// The run's fleets are started by a fleet host (`janitor-capacity serve-fleet`, as in the Docker setup)
    /// listening 10 ports below each fleet's first port, instead of by the run itself.
    pub external_servers: bool,
}

impl CapacityEnv {
    /// Reads the process environment.
    pub fn from_process(run: Run) -> Result<CapacityEnv, String> {
        let vars: BTreeMap<String, String> = std::env::vars()
            .filter(|(name, _)| name.starts_with("JANITOR_BENCHMARK_"))
            .collect();
        CapacityEnv::from_vars(&vars, run)
    }

    /// Reads the given variables (only `JANITOR_BENCHMARK_*` ones are looked at).
    pub fn from_vars(vars: &BTreeMap<String, String>, run: Run) -> Result<CapacityEnv, String> {
        for name in vars.keys() {
            if name.starts_with("JANITOR_BENCHMARK_") && !VARIABLES.contains(&name.as_str()) {
                return Err(format!(
                    "{name} is not a setting of the capacity harness (known: {})",
                    VARIABLES.join(", ")
                ));
            }
        }
        let get = |name: &str| vars.get(name).map(String::as_str).filter(|v| !v.is_empty());
        let number = |name: &str, default: u64, low: u64, high: u64| match get(name) {
            None => Ok(default),
            Some(value) => whole(name, value, low, high),
        };
        let database_url = get("JANITOR_BENCHMARK_DATABASE_URL")
            .map(loopback_url)
            .transpose()?;
        let connections = number("JANITOR_BENCHMARK_CONNECTIONS", 200_000, 100, 250_000)?;
        let needed = connections.div_ceil(SOCKETS_PER_PROCESS);
        let workers = number("JANITOR_BENCHMARK_WORKERS", needed, 1, 64)?;
        if workers < needed {
            return Err(format!(
                "JANITOR_BENCHMARK_WORKERS={workers} would put more than {SOCKETS_PER_PROCESS} of \
                 {connections} connections on one process; use at least {needed}"
            ));
        }
        let rates = match get("JANITOR_BENCHMARK_RATES") {
            None => vec![100, 500, 1_000, 2_000],
            Some(list) => rates(list)?,
        };
        let lookup_visitors = number("JANITOR_BENCHMARK_LOOKUP_VISITORS", 0, 0, 3_000_000)?;
        if (1..100_000).contains(&lookup_visitors) {
            return Err(format!(
                "JANITOR_BENCHMARK_LOOKUP_VISITORS must be 0 (skip) or from 100000 to 3000000, got \
                 {lookup_visitors}"
            ));
        }
        let label = get("JANITOR_BENCHMARK_LABEL")
            .unwrap_or("current")
            .to_owned();
        if label.is_empty()
            || label.len() > 40
            || !label
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(format!(
                "JANITOR_BENCHMARK_LABEL must match ^[a-z0-9-]{{1,40}}$, got {label:?}"
            ));
        }
        let default_shards = match run {
            Run::Capacity => 32,
            Run::Single => 1,
        };
        Ok(CapacityEnv {
            database_url,
            events: number("JANITOR_BENCHMARK_EVENTS", 1_000_000, 10_000, 3_000_000)?,
            samples: number("JANITOR_BENCHMARK_SAMPLES", 1_000, 100, 10_000)?,
            shards: number("JANITOR_BENCHMARK_SHARDS", default_shards, 1, 128)? as u32,
            label,
            reuse: flag("JANITOR_BENCHMARK_REUSE", get("JANITOR_BENCHMARK_REUSE"))?,
            connections,
            rates,
            workers,
            rate_seconds: number("JANITOR_BENCHMARK_RATE_SECONDS", 15, 1, 60)?,
            steady_seconds: number("JANITOR_BENCHMARK_STEADY_SECONDS", 15, 1, 60)?,
            search: flag("JANITOR_BENCHMARK_SEARCH", get("JANITOR_BENCHMARK_SEARCH"))?,
            visitors: number("JANITOR_BENCHMARK_VISITORS", 10_000, 100, 100_000)?,
            lookup_visitors,
            lookup_evict: flag(
                "JANITOR_BENCHMARK_LOOKUP_EVICT",
                get("JANITOR_BENCHMARK_LOOKUP_EVICT"),
            )?,
            slots: number("JANITOR_BENCHMARK_SLOTS", 8, 1, 1024)?,
            slot_wait: get("JANITOR_BENCHMARK_SLOT_WAIT")
                .map(slot_wait)
                .transpose()?,
            server_threads: number(
                "JANITOR_BENCHMARK_SERVER_THREADS",
                0,
                0,
                super::server::MAX_THREADS as u64,
            )? as usize,
            external_servers: flag(
                "JANITOR_BENCHMARK_EXTERNAL_SERVERS",
                get("JANITOR_BENCHMARK_EXTERNAL_SERVERS"),
            )?,
        })
    }
}

fn whole(name: &str, value: &str, low: u64, high: u64) -> Result<u64, String> {
    let n: u64 = value.trim().replace('_', "").parse().map_err(|_| {
        format!("{name} must be a whole number from {low} to {high}, got {value:?}")
    })?;
    if (low..=high).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{name} must be from {low} to {high}, got {n}"))
    }
}

fn flag(name: &str, value: Option<&str>) -> Result<bool, String> {
    match value {
        None | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(format!("{name} must be 0 or 1, got {other:?}")),
    }
}

fn slot_wait(value: &str) -> Result<(usize, u64), String> {
    const NAME: &str = "JANITOR_BENCHMARK_SLOT_WAIT";
    let Some((waiting, ms)) = value.split_once(',') else {
        return Err(format!("{NAME} must be `waiting,ms`, got {value:?}"));
    };
    // The library's ranges, then its rule that the two go together.
    let most = *MAX_WAITING_REQUESTS.range().end() as u64;
    let waiting = whole(NAME, waiting, 0, most)? as usize;
    let ms = whole(NAME, ms, 0, *SLOT_WAIT_MS.range().end())?;
    super::server::check_slot_wait(waiting, ms).map_err(|e| format!("{NAME}: {e}"))
}

fn rates(list: &str) -> Result<Vec<u64>, String> {
    const NAME: &str = "JANITOR_BENCHMARK_RATES";
    let rates = list
        .split(',')
        .map(|rate| whole(NAME, rate, 1, 50_000))
        .collect::<Result<Vec<_>, _>>()?;
    if rates.len() > 6 {
        return Err(format!("{NAME} holds at most 6 rates, got {}", rates.len()));
    }
    Ok(rates)
}

/// Accepts a PostgreSQL URL only when every host it names is on this machine: a loopback address,
/// `localhost`, or a Unix socket directory.
fn loopback_url(url: &str) -> Result<String, String> {
    const NAME: &str = "JANITOR_BENCHMARK_DATABASE_URL";
    let config = tokio_postgres::Config::from_str(url)
        .map_err(|e| format!("{NAME} is not a PostgreSQL connection string: {e}"))?;
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        return Err(format!("{NAME} must name a loopback host"));
    }
    for host in config.get_hosts() {
        let local = match host {
            Host::Tcp(name) => {
                name == "localhost"
                    || IpAddr::from_str(name.trim_start_matches('[').trim_end_matches(']'))
                        .is_ok_and(|ip| ip.is_loopback())
            }
            Host::Unix(_) => true,
        };
        if !local {
            let name = match host {
                Host::Tcp(name) => name.as_str(),
                Host::Unix(_) => "a socket",
            };
            return Err(format!(
                "{NAME} must point at this machine (127.0.0.1, ::1, localhost or a socket), got host {name}"
            ));
        }
    }
    if let Some(addr) = config.get_hostaddrs().iter().find(|a| !a.is_loopback()) {
        return Err(format!(
            "{NAME} must point at this machine, got hostaddr {addr}"
        ));
    }
    Ok(url.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Result<CapacityEnv, String> {
        let vars = pairs
            .iter()
            .map(|(k, v)| (format!("JANITOR_BENCHMARK_{k}"), (*v).to_owned()))
            .collect();
        CapacityEnv::from_vars(&vars, Run::Capacity)
    }

    #[test]
    fn defaults_are_the_reference_run() {
        let e = env(&[]).unwrap();
        assert_eq!(
            (e.events, e.samples, e.shards, e.connections, e.workers),
            (1_000_000, 1_000, 32, 200_000, 12)
        );
        assert_eq!(e.rates, [100, 500, 1_000, 2_000]);
        assert_eq!(e.slots, 8);
        assert_eq!(
            (e.label.as_str(), e.reuse, e.search),
            ("current", false, false)
        );
        let vars = BTreeMap::new();
        assert_eq!(
            CapacityEnv::from_vars(&vars, Run::Single).unwrap().shards,
            1
        );
    }

    #[test]
    fn the_slot_wait_is_two_bounded_numbers_that_go_together() {
        assert_eq!(env(&[]).unwrap().slot_wait, None);
        for (value, expected) in [
            ("0,0", (0, 0)),
            ("1,1", (1, 1)),
            ("4096,1000", (4096, 1000)),
        ] {
            assert_eq!(
                env(&[("SLOT_WAIT", value)]).unwrap().slot_wait,
                Some(expected)
            );
        }
        for (value, says) in [
            ("4097,10", "from 0 to 4096"),
            ("8,1001", "from 0 to 1000"),
            (
                "8,0",
                "slot_wait_ms must be above 0 when max_waiting_requests is",
            ),
            (
                "0,5",
                "max_waiting_requests must be above 0 when slot_wait_ms is",
            ),
            ("8", "`waiting,ms`"),
            ("eight,5", "whole number"),
        ] {
            let message = env(&[("SLOT_WAIT", value)]).unwrap_err();
            assert!(
                message.contains("JANITOR_BENCHMARK_SLOT_WAIT") && message.contains(says),
                "{value}: {message}"
            );
        }
    }

    #[test]
    fn every_bound_is_checked() {
        for (name, low, high) in [
            ("EVENTS", 10_000, 3_000_000),
            ("SAMPLES", 100, 10_000),
            ("SHARDS", 1, 128),
            ("CONNECTIONS", 100, 250_000),
            ("RATE_SECONDS", 1, 60),
            ("STEADY_SECONDS", 1, 60),
            ("VISITORS", 100, 100_000),
            ("SLOTS", 1, 1024),
        ] {
            for ok in [low, high] {
                assert!(env(&[(name, &ok.to_string())]).is_ok(), "{name}={ok}");
            }
            for bad in [low - 1, high + 1] {
                let message = env(&[(name, &bad.to_string())]).unwrap_err();
                assert!(
                    message.contains(&format!("from {low} to {high}")),
                    "{name}={bad}: {message}"
                );
            }
        }
        assert_eq!(env(&[]).unwrap().server_threads, 0);
        for ok in [0, 64] {
            assert_eq!(
                env(&[("SERVER_THREADS", &ok.to_string())])
                    .unwrap()
                    .server_threads,
                ok
            );
        }
        assert!(env(&[("SERVER_THREADS", "65")])
            .unwrap_err()
            .contains("from 0 to 64"));
        assert!(env(&[("EVENTS", "many")])
            .unwrap_err()
            .contains("whole number"));
    }

    #[test]
    fn workers_must_keep_processes_under_the_descriptor_limit() {
        assert_eq!(env(&[("CONNECTIONS", "18000")]).unwrap().workers, 1);
        assert_eq!(env(&[("CONNECTIONS", "18001")]).unwrap().workers, 2);
        assert!(env(&[("WORKERS", "11")])
            .unwrap_err()
            .contains("at least 12"));
        assert_eq!(env(&[("WORKERS", "16")]).unwrap().workers, 16);
        assert!(env(&[("WORKERS", "65")]).is_err());
    }

    #[test]
    fn rates_labels_flags_and_lookup_scale() {
        assert_eq!(env(&[("RATES", "1,50000")]).unwrap().rates, [1, 50_000]);
        assert!(env(&[("RATES", "0")]).is_err());
        assert!(env(&[("RATES", "50001")]).is_err());
        assert!(env(&[("RATES", "1,2,3,4,5,6,7")])
            .unwrap_err()
            .contains("at most 6"));
        assert!(env(&[("RATES", "100,,200")]).is_err());
        assert!(env(&[("LABEL", &"a".repeat(40))]).is_ok());
        for bad in ["", "Upper", "with space", "a_b"] {
            if bad.is_empty() {
                continue; // an empty variable counts as unset
            }
            assert!(env(&[("LABEL", bad)]).is_err(), "{bad}");
        }
        assert!(env(&[("LABEL", &"a".repeat(41))]).is_err());
        assert!(env(&[("REUSE", "1")]).unwrap().reuse);
        assert!(env(&[("REUSE", "yes")]).is_err());
        assert_eq!(
            env(&[("LOOKUP_VISITORS", "2000000")])
                .unwrap()
                .lookup_visitors,
            2_000_000
        );
        assert!(env(&[("LOOKUP_EVICT", "1")]).unwrap().lookup_evict);
        assert!(!env(&[]).unwrap().lookup_evict);
        assert!(env(&[("LOOKUP_EVICT", "2")])
            .unwrap_err()
            .contains("JANITOR_BENCHMARK_LOOKUP_EVICT must be 0 or 1"));
        assert!(env(&[("LOOKUP_VISITORS", "99999")]).is_err());
        assert!(env(&[("LOOKUP_VISITORS", "3000001")]).is_err());
        assert!(env(&[("UNKNOWN", "1")])
            .unwrap_err()
            .contains("not a setting"));
    }

    #[test]
    fn only_loopback_databases_are_accepted() {
        for ok in [
            "postgres://postgres@127.0.0.1:30434/postgres",
            "postgres://postgres@localhost/postgres",
            "postgres://postgres@[::1]:5432/postgres",
            "host=/var/run/postgresql user=postgres",
        ] {
            assert!(env(&[("DATABASE_URL", ok)]).is_ok(), "{ok}");
        }
        for bad in [
            "postgres://postgres@10.0.0.5/postgres",
            "postgres://postgres@128.0.0.1/postgres",
            "postgres://postgres@db.example.com/postgres",
            "host=127.0.0.1,db.example.com user=postgres",
            "not a url at all ://",
        ] {
            let refused = env(&[("DATABASE_URL", bad)]).unwrap_err();
            assert!(
                refused.contains("JANITOR_BENCHMARK_DATABASE_URL"),
                "{bad}: {refused}"
            );
        }
    }
}
