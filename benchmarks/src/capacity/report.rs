//! What every report of the harness carries: the machine, the versions, and the file it is written to.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Where the reports go: `JANITOR_BENCHMARK_OUT` when set (a smoke run keeps the committed results), else
/// `docs/benchmarks/` of the workspace the harness runs in.
pub fn reports_dir() -> PathBuf {
    std::env::var_os("JANITOR_BENCHMARK_OUT")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| PathBuf::from("docs").join("benchmarks"), PathBuf::from)
}

/// The machine a run was on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model.
    pub cpu: String,
    /// Cores this process may use.
    pub cores: usize,
    /// Memory of the machine, when /proc says.
    pub memory_bytes: Option<u64>,
    /// Kernel release.
    pub kernel: String,
    /// The soft limit on open descriptors of a process, when /proc says.
    pub open_files_limit: Option<u64>,
    /// Who shares the cores.
    pub note: String,
}

/// The versions behind a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    /// The harness's crate.
    pub janitor: String,
    /// The PostgreSQL server.
    pub postgresql: String,
    /// `debug` or `release`.
    pub build: String,
}

/// The machine the run is on: CPU model, cores, memory, kernel and the descriptor limit of a process.
pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split(':').nth(1))
        })
        .map(str::trim)
        .unwrap_or("unknown");
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let memory_bytes = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|r| r.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    Machine {
        cpu: model.to_owned(),
        cores: crate::cores(),
        memory_bytes,
        kernel: kernel.trim().to_owned(),
        open_files_limit: open_files_limit(),
        note: "client, servers and PostgreSQL share these cores".to_owned(),
    }
}

/// The soft limit on open descriptors of this process, from /proc (no unsafe call needed).
pub fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Resident memory of process `pid` in bytes, from /proc.
pub fn rss_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The versions behind a run: the harness's crate and the PostgreSQL server.
pub async fn versions(database: &janitor_sql::Database) -> Result<Versions, String> {
    let client = database
        .pool()
        .get()
        .await
        .map_err(|e| format!("asking the server's version: {e}"))?;
    let server: String = client
        .query_one("SHOW server_version", &[])
        .await
        .map_err(|e| format!("asking the server's version: {e}"))?
        .get(0);
    let build = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    Ok(Versions {
        janitor: env!("CARGO_PKG_VERSION").to_owned(),
        postgresql: server,
        build: build.to_owned(),
    })
}

/// Writes `report` as pretty JSON to `docs/benchmarks/<name>` and says where.
pub fn write(name: &str, report: &impl Serialize) -> Result<PathBuf, String> {
    write_in(&reports_dir(), name, report)
}

/// Writes `report` as pretty JSON to `<dir>/<name>`, creating `dir` if needed, and says where (tests write into
/// a directory of their own, never over committed results).
pub fn write_in(dir: &Path, name: &str, report: &impl Serialize) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let path = dir.join(name);
    crate::write_report(&path, report)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_process_from_proc() {
        let rss = rss_bytes(std::process::id()).expect("own RSS");
        assert!(rss > 1024 * 1024, "{rss}");
        assert!(open_files_limit().expect("own limit") >= 64);
        let m = machine();
        assert!(m.cores >= 1);
        assert!(m.memory_bytes.unwrap() > rss);
        assert_eq!(rss_bytes(u32::MAX), None);
    }
}
