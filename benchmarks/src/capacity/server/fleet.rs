//! The server processes of a run: started here (one `serve` child per worker, each holding our stdin so it
//! ends with us), or, when the servers have a container of their own, started there by the fleet host
//! (`janitor-capacity serve-fleet`, [`super::host`]) for as long as the run holds the fleet's lease.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, ChildStdin, Command};

use super::host::Lease;
use super::{ServerStats, CONTROL_OFFSET};
use crate::capacity::run::HttpRun;
use crate::capacity::Target;
use janitor_axum::serve::Driver;
use janitor_test_support::http1::{self, Connection};

/// How long the processes get to start answering their control ports.
const START_DEADLINE: Duration = Duration::from_secs(60);

/// How the processes of a fleet are set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetSettings {
    /// Server processes.
    pub workers: u64,
    /// Admission slots of each process (the reference: 8).
    pub max_in_flight: usize,
    /// Database connections of each process.
    pub pool: usize,
    /// The runtime threads of each process (see [`super::runtime`]).
    pub threads: usize,
    /// Requests each process lets wait for a slot, and how long (ms); the library's default when `None`.
    pub slot_wait: Option<(usize, u64)>,
    /// The first process's port ([`super::BASE_PORT`] in a run; tests use others).
    pub base_port: u16,
}

/// The running server processes.
#[derive(Debug)]
pub struct Fleet {
    children: Vec<(Child, ChildStdin)>,
    lease: Option<Lease>,
    ports: Vec<u16>,
}

impl Fleet {
    /// Starts the fleet for `run` (or finds it, when the run's servers are external) and waits until every
    /// process answers on its control port.
    pub async fn start(run: &HttpRun, settings: FleetSettings) -> Result<Fleet, String> {
        Fleet::start_on(run, settings, None).await
    }

    /// [`start`](Self::start), each process serving with `driver` (`janitor_axum::serve`) instead of
    /// `axum::serve` when one is given.
    pub async fn start_on(
        run: &HttpRun,
        settings: FleetSettings,
        driver: Option<Driver>,
    ) -> Result<Fleet, String> {
        let ports: Vec<u16> = (0..settings.workers as u16)
            .map(|i| settings.base_port + i)
            .collect();
        let mut fleet = Fleet {
            children: Vec::new(),
            lease: None,
            ports,
        };
        if run.env.external_servers {
            fleet.lease = Some(Lease::take(settings, driver).await?);
        } else {
            for &port in &fleet.ports {
                let child = spawn(&run.binary, &run.target, port, settings, driver, true)?;
                fleet.children.push(child);
            }
        }
        fleet.wait_ready().await?;
        Ok(fleet)
    }

    /// The addresses the processes serve on.
    pub fn servers(&self) -> Vec<SocketAddr> {
        self.ports
            .iter()
            .map(|&p| SocketAddr::from(([127, 0, 0, 1], p)))
            .collect()
    }

    /// The process ids of the servers this run started (none when the servers are external).
    pub fn pids(&self) -> Vec<u64> {
        self.children
            .iter()
            .filter_map(|(child, _)| child.id().map(u64::from))
            .collect()
    }

    /// What every process counted so far; `reset_peak` starts a new peak of open connections afterwards.
    pub async fn stats(&self, reset_peak: bool) -> Result<Vec<ServerStats>, String> {
        let mut all = Vec::with_capacity(self.ports.len());
        for &port in &self.ports {
            all.push(ask(port, reset_peak).await?);
        }
        Ok(all)
    }

    /// Stops the processes this run started (their stdin closes; a kill follows if they linger).
    pub async fn stop(self) {
        stop_children(self.children).await;
        if let Some(lease) = self.lease {
            if let Err(problem) = lease.release().await {
                eprintln!("{problem}");
            }
        }
    }

    async fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        for (i, &port) in self.ports.clone().iter().enumerate() {
            // A started process must be the one answering: another process on the port means ours could not
            // bind it.
            let expected = self.children.get(i).and_then(|(child, _)| child.id());
            loop {
                match ask(port, false).await {
                    Ok(stats) if expected.is_none_or(|pid| pid == stats.pid) => break,
                    Ok(stats) => {
                        return Err(format!(
                            "port {port} is served by another process (pid {})",
                            stats.pid
                        ))
                    }
                    Err(_) => {}
                }
                for (child, _) in &mut self.children {
                    if let Ok(Some(status)) = child.try_wait() {
                        return Err(format!("a server process ended while starting ({status})"));
                    }
                }
                if started.elapsed() > START_DEADLINE {
                    return Err(format!(
                        "the server on port {port} did not answer within {} s",
                        START_DEADLINE.as_secs()
                    ));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
        Ok(())
    }
}

/// Ends `children`: their stdin closes, and a kill follows for any still running 5 s later.
pub(super) async fn stop_children(children: Vec<(Child, ChildStdin)>) {
    for (mut child, stdin) in children {
        drop(stdin);
        if tokio::time::timeout(Duration::from_secs(5), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
}

/// Starts one `serve` process on `port`.
pub(super) fn spawn(
    binary: &std::path::Path,
    target: &Target,
    port: u16,
    settings: FleetSettings,
    driver: Option<Driver>,
    watch_stdin: bool,
) -> Result<(Child, ChildStdin), String> {
    let mut command = Command::new(binary);
    command.arg("serve");
    if let Some(driver) = driver {
        command.args(["--driver", driver.name()]);
    }
    let mut child = command
        .args(["--port", &port.to_string()])
        .args(["--url", &target.url])
        .args(["--schema", &target.schema])
        .args(["--max-in-flight", &settings.max_in_flight.to_string()])
        .args(["--pool", &settings.pool.to_string()])
        .args(["--threads", &settings.threads.to_string()])
        .args(settings.slot_wait.iter().flat_map(|(waiting, ms)| {
            [
                "--max-waiting".to_owned(),
                waiting.to_string(),
                "--slot-wait-ms".to_owned(),
                ms.to_string(),
            ]
        }))
        .args(["--watch-stdin", if watch_stdin { "1" } else { "0" }])
        .stdin(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("starting a server process: {e}"))?;
    let stdin = child.stdin.take().expect("stdin was piped");
    Ok((child, stdin))
}

async fn ask(port: u16, reset_peak: bool) -> Result<ServerStats, String> {
    let control = SocketAddr::from(([127, 0, 0, 1], port + CONTROL_OFFSET));
    let failed = |e: String| format!("asking the server on port {port}: {e}");
    let mut connection = Connection::connect(control, None)
        .await
        .map_err(|e| failed(e.to_string()))?;
    let path = if reset_peak {
        "/stats?reset_peak=1"
    } else {
        "/stats"
    };
    let response = connection
        .send(&http1::get(path))
        .await
        .map_err(|e| failed(e.to_string()))?;
    if response.status != 200 {
        return Err(failed(format!("status {}", response.status)));
    }
    serde_json::from_slice(connection.body()).map_err(|e| failed(e.to_string()))
}
