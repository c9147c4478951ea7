//! The resource limits of the Docker run, read from `docker/compose.yaml` (their one source) and fitted to this
//! machine.
//!
//! The compose file keeps the reference's split: PostgreSQL 2 CPUs, the servers 4, the client 2. Docker
//! refuses a `--cpus` above the host's cores, so on a smaller host every service keeps its share of the
//! whole: `cpus × host cores ÷ (sum of the services' cpus)`, to Docker's 0.01 (on 2 cores: 0.5, 1 and 0.5).
//! Memory limits stay as written. An open-file limit above what this process may raise itself to is lowered
//! to that ceiling, since a container cannot get more than the engine's own hard limit.

use std::path::Path;

use serde_json::Value;

/// What one service may use.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// CPUs, after fitting to the host.
    pub cpus: f64,
    /// CPUs in the compose file.
    pub reference_cpus: f64,
    /// Whether `cpus` applies (see [`Plan::without_cpu_limits`]).
    pub cpu_limited: bool,
    /// `mem_limit`.
    pub memory: String,
    /// `memswap_limit`: equal to the memory, so no swap beyond it.
    pub memory_swap: String,
    /// `shm_size`, when set.
    pub shm_size: Option<String>,
    /// `sysctls`, as `name=value`.
    pub sysctls: Vec<String>,
    /// The open-file limit, soft and hard, when set.
    pub open_files: Option<u64>,
}

impl Limits {
    /// The `docker run` flags of these limits.
    pub fn flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if self.cpu_limited {
            flags.push(format!("--cpus={:.2}", self.cpus));
        }
        flags.push(format!("--memory={}", self.memory));
        flags.push(format!("--memory-swap={}", self.memory_swap));
        if let Some(shm) = &self.shm_size {
            flags.push(format!("--shm-size={shm}"));
        }
        for sysctl in &self.sysctls {
            flags.push(format!("--sysctl={sysctl}"));
        }
        if let Some(n) = self.open_files {
            flags.push(format!("--ulimit=nofile={n}:{n}"));
        }
        flags
    }
}

/// Everything the Docker run takes from the compose file.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The database's limits.
    pub postgres: Limits,
    /// The fleet host's limits.
    pub server: Limits,
    /// The client's limits (the harness's own run: seeding, SQL, load processes, pgbench).
    pub client: Limits,
    /// The database server's `-c name=value` flags, from the postgres service's command.
    pub postgres_settings: Vec<String>,
    /// The client's settings passed from the caller's environment, by name.
    pub passed: Vec<String>,
    /// The host's cores the CPUs were fitted to.
    pub host_cores: usize,
}

impl Plan {
    /// The same plan with no CPU limit on any container: each may use every core of the host.
    pub fn without_cpu_limits(mut self) -> Plan {
        for limits in [&mut self.postgres, &mut self.server, &mut self.client] {
            limits.cpu_limited = false;
        }
        self
    }
}

/// Reads the compose file, YAML in its JSON subset with full-line `#` comments (see its header).
pub fn compose_file(root: &Path) -> Result<Value, String> {
    let path = root.join(crate::capacity::COMPOSE_FILE);
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let json: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect();
    serde_json::from_str(&json)
        .map_err(|e| format!("{} is not JSON-subset YAML: {e}", path.display()))
}

/// The plan for a host of `host_cores` cores whose processes may raise their open files to `open_files_ceiling`.
pub fn plan(compose: &Value, host_cores: usize, open_files_ceiling: u64) -> Result<Plan, String> {
    let service = |name: &str| {
        let s = &compose["services"][name];
        if s.is_object() {
            Ok(s)
        } else {
            Err(format!("the compose file has no service {name:?}"))
        }
    };
    let (postgres, server, client) = (service("postgres")?, service("server")?, service("client")?);
    let reference: Vec<f64> = [postgres, server, client]
        .iter()
        .map(|s| s["cpus"].as_f64().filter(|c| *c > 0.0))
        .collect::<Option<_>>()
        .ok_or("every service of the compose file needs a positive `cpus`")?;
    let total: f64 = reference.iter().sum();
    let scale = (host_cores.max(1) as f64 / total).min(1.0);
    let limits = |s: &Value, cpus: f64| -> Result<Limits, String> {
        let text = |key: &str| s[key].as_str().map(str::to_owned);
        let memory = text("mem_limit").ok_or("every service needs a `mem_limit`")?;
        Ok(Limits {
            // Docker's granularity is a hundredth of a CPU; rounding down keeps the sum within the host.
            cpus: ((cpus * scale * 100.0).floor() / 100.0).max(0.01),
            reference_cpus: cpus,
            cpu_limited: true,
            memory_swap: text("memswap_limit").unwrap_or_else(|| memory.clone()),
            memory,
            shm_size: text("shm_size"),
            sysctls: s["sysctls"]
                .as_object()
                .map(|map| {
                    map.iter()
                        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                        .collect()
                })
                .unwrap_or_default(),
            open_files: s["ulimits"]["nofile"]["hard"]
                .as_u64()
                .map(|n| n.min(open_files_ceiling)),
        })
    };
    let command: Vec<&str> = postgres["command"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let postgres_settings = command
        .windows(2)
        .filter(|pair| pair[0] == "-c")
        .map(|pair| pair[1].to_owned())
        .collect();
    let passed = client["environment"]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .filter(|entry| !entry.contains('='))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    Ok(Plan {
        postgres: limits(postgres, reference[0])?,
        server: limits(server, reference[1])?,
        client: limits(client, reference[2])?,
        postgres_settings,
        passed,
        host_cores,
    })
}

/// The hard open-file limit of this process (what it, and an engine it starts, may raise itself to).
pub fn open_files_ceiling() -> u64 {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|line| line.starts_with("Max open files"))
                .and_then(|line| line.split_whitespace().nth(4).map(str::to_owned))
        })
        .and_then(|hard| hard.parse().ok())
        .unwrap_or(1_024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(cores: usize, ceiling: u64) -> Plan {
        let root = crate::capacity::workspace_root();
        plan(&compose_file(&root).unwrap(), cores, ceiling).unwrap()
    }

    #[test]
    fn the_reference_split_is_kept_on_a_host_with_enough_cores() {
        for cores in [8, 64] {
            let plan = committed(cores, 1_048_576);
            let cpus = [plan.postgres.cpus, plan.server.cpus, plan.client.cpus];
            assert_eq!(cpus, [2.0, 4.0, 2.0], "{cores} cores");
        }
    }

    #[test]
    fn on_a_smaller_host_each_service_keeps_its_share() {
        for (cores, expected) in [
            (1, [0.25, 0.5, 0.25]),
            (2, [0.5, 1.0, 0.5]),
            (3, [0.75, 1.5, 0.75]),
            (7, [1.75, 3.5, 1.75]),
        ] {
            let plan = committed(cores, 1_048_576);
            let cpus = [plan.postgres.cpus, plan.server.cpus, plan.client.cpus];
            assert_eq!(cpus, expected, "{cores} cores");
            assert!(cpus.iter().sum::<f64>() <= cores as f64);
            assert_eq!(plan.server.reference_cpus, 4.0);
        }
    }

    #[test]
    fn memory_shm_sysctls_and_settings_come_from_the_file() {
        let plan = committed(2, 1_048_576);
        assert_eq!(
            plan.postgres.flags(),
            [
                "--cpus=0.50",
                "--memory=1g",
                "--memory-swap=1g",
                "--shm-size=256m",
                "--sysctl=net.ipv4.ip_local_port_range=1024 65535",
            ]
        );
        assert_eq!(
            plan.server.flags(),
            [
                "--cpus=1.00",
                "--memory=4g",
                "--memory-swap=4g",
                "--ulimit=nofile=262144:262144",
            ]
        );
        assert_eq!(
            plan.postgres_settings,
            ["shared_buffers=128MB", "max_connections=40"]
        );
        assert!(plan
            .passed
            .contains(&"JANITOR_BENCHMARK_CONNECTIONS".to_owned()));
        assert!(!plan.passed.iter().any(|name| name.contains('=')));
    }

    #[test]
    fn without_cpu_limits_only_the_cpus_go() {
        let plan = committed(2, 1_048_576).without_cpu_limits();
        assert_eq!(
            plan.postgres.flags(),
            [
                "--memory=1g",
                "--memory-swap=1g",
                "--shm-size=256m",
                "--sysctl=net.ipv4.ip_local_port_range=1024 65535",
            ]
        );
        assert!(!plan.client.flags().iter().any(|f| f.starts_with("--cpus")));
        assert_eq!(plan.server.flags().len(), 3);
    }

    #[test]
    fn the_open_file_limit_is_lowered_to_what_the_engine_may_give() {
        let plan = committed(2, 20_000);
        assert_eq!(plan.client.open_files, Some(20_000));
        assert_eq!(plan.postgres.open_files, None);
        assert!(open_files_ceiling() >= 1_024);
    }

    #[test]
    fn a_service_without_cpus_is_refused() {
        let mut compose = compose_file(&crate::capacity::workspace_root()).unwrap();
        compose["services"]["server"]
            .as_object_mut()
            .unwrap()
            .remove("cpus");
        assert!(plan(&compose, 2, 20_000).unwrap_err().contains("cpus"));
    }
}
