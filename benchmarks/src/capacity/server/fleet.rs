//! The server processes of a run: started here (one `serve` child per worker, each holding our stdin so it
//! ends with us), or already running when Docker started them with `janitor-capacity serve-fleet`.

use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, ChildStdin, Command};

use super::{ServerStats, BASE_PORT, CONTROL_OFFSET};
use crate::capacity::run::HttpRun;
use crate::capacity::Target;
use crate::number;
use janitor_axum::serve::Driver;
use janitor_axum::testing::http1::{self, Connection};

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
    /// The first process's port ([`BASE_PORT`] in a run; tests use others).
    pub base_port: u16,
}

/// The running server processes.
#[derive(Debug)]
pub struct Fleet {
    children: Vec<(Child, ChildStdin)>,
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
            ports,
        };
        if !run.env.external_servers {
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
        for (mut child, stdin) in self.children {
            drop(stdin);
            if tokio::time::timeout(Duration::from_secs(5), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
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

fn spawn(
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

/// Entry point of `janitor-capacity serve-fleet [--workers N] [--max-in-flight N] [--pool N]`: starts the
/// server processes (`JANITOR_BENCHMARK_WORKERS` by default, each with `JANITOR_BENCHMARK_SLOTS` admission
/// slots) on the run's ports against
/// `JANITOR_BENCHMARK_DATABASE_URL` and waits; used where the
/// servers get a machine (or container) of their own.
pub fn serve_fleet(args: Vec<String>) -> Result<(), String> {
    // The same settings as the run's, so that both sides agree on the number of processes and their ports.
    let env = crate::capacity::env::CapacityEnv::from_process(crate::capacity::env::Run::Capacity)?;
    let mut settings = FleetSettings {
        workers: env.workers,
        max_in_flight: usize::try_from(env.slots).unwrap_or(8),
        pool: 2,
        base_port: BASE_PORT,
    };
    for (name, value) in crate::pairs(args)? {
        match name.as_str() {
            "workers" => settings.workers = number(&name, &value, 1, 64)?,
            "max-in-flight" => settings.max_in_flight = number(&name, &value, 1, 1_024)? as usize,
            "pool" => settings.pool = number(&name, &value, 1, 64)? as usize,
            other => return Err(format!("unknown option --{other}")),
        }
    }
    let url = env
        .database_url
        .ok_or("JANITOR_BENCHMARK_DATABASE_URL is required")?;
    let target = Target {
        url,
        schema: crate::capacity::SCHEMA.to_owned(),
    };
    let binary = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?
        .block_on(async {
            let mut children = Vec::new();
            for i in 0..settings.workers as u16 {
                children.push(spawn(
                    &binary,
                    &target,
                    BASE_PORT + i,
                    settings,
                    None,
                    false,
                )?);
            }
            println!(
                "serving on 127.0.0.1:{BASE_PORT}..{}",
                BASE_PORT + settings.workers as u16 - 1
            );
            // Any process ending ends the fleet: a partial fleet would skew every figure.
            loop {
                for (child, _) in &mut children {
                    if let Ok(Some(status)) = child.try_wait() {
                        return Err(format!("a server process ended ({status})"));
                    }
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
}
