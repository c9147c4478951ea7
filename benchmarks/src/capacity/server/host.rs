//! The fleet host: where the server processes get a container (or machine) of their own, `janitor-capacity
//! serve-fleet` starts each fleet the run asks for — the same processes, slots, pools and driver the run would
//! start itself — and stops it when the run lets go.
//!
//! The run asks over one loopback TCP connection per fleet, the fleet's lease:
//! 1. the host greets every connection with a line `{"cores":N}`, the cores its processes may use;
//! 2. the run sends one line, a [`FleetRequest`];
//! 3. the host starts the processes and answers `{"started":N}`, or `{"error":"…"}` and closes;
//! 4. the processes live as long as the lease: when the run closes it (or ends, or dies), the host stops them
//!    and closes its side once they are gone, so the next fleet finds its ports free.
//!
//! A connection that only reads the greeting and closes asks for the cores alone.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

use super::fleet::{spawn, stop_children, FleetSettings};
use super::{BASE_PORT, CONTROL_OFFSET};
use crate::capacity::Target;
use janitor_axum::serve::Driver;

/// How far below a fleet's first port its host listens: 30,490 for the run's fleets.
pub const HOST_OFFSET: u16 = 10;

/// How long the host waits for a request after its greeting, and the run for each answer.
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the run waits for the host to stop a fleet it let go.
const RELEASE_TIMEOUT: Duration = Duration::from_secs(30);

/// The one line a run sends to start a fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetRequest {
    /// Server processes (1–64).
    pub workers: u64,
    /// Admission slots of each (1–1,024).
    pub max_in_flight: usize,
    /// Database connections of each (1–64).
    pub pool: usize,
    /// The first process's port; the host checks that every port and control port fits.
    pub base_port: u16,
    /// `pooled` or `hyper` (`janitor_axum::serve`), or none for `axum::serve`.
    pub driver: Option<String>,
    /// Requests each process lets wait for a slot (0–4,096) and for how long (0–1,000 ms), both 0 or both
    /// above; none for the library's default.
    #[serde(default)]
    pub slot_wait: Option<(usize, u64)>,
    /// The runtime threads of each (0–64, see [`super::runtime`]; 0, one per core, when not given).
    #[serde(default)]
    pub threads: usize,
}

impl FleetRequest {
    /// The request for `settings` served with `driver`.
    pub fn new(settings: FleetSettings, driver: Option<Driver>) -> FleetRequest {
        FleetRequest {
            workers: settings.workers,
            max_in_flight: settings.max_in_flight,
            pool: settings.pool,
            base_port: settings.base_port,
            driver: driver.map(|d| d.name().to_owned()),
            slot_wait: settings.slot_wait,
            threads: settings.threads,
        }
    }

    /// The settings and driver asked for, or why they are refused.
    pub fn checked(&self) -> Result<(FleetSettings, Option<Driver>), String> {
        let within = |name: &str, value: u64, low: u64, high: u64| {
            if (low..=high).contains(&value) {
                Ok(())
            } else {
                Err(format!("{name} must be from {low} to {high}, got {value}"))
            }
        };
        within("workers", self.workers, 1, 64)?;
        within("max_in_flight", self.max_in_flight as u64, 1, 1_024)?;
        within("pool", self.pool as u64, 1, 64)?;
        within("threads", self.threads as u64, 0, super::MAX_THREADS as u64)?;
        if let Some((waiting, ms)) = self.slot_wait {
            super::check_slot_wait(waiting, ms).map_err(|e| format!("slot_wait: {e}"))?;
        }
        let last_control = u64::from(self.base_port) + self.workers - 1 + u64::from(CONTROL_OFFSET);
        if self.base_port < 1_024 || last_control > u64::from(u16::MAX) {
            return Err(format!(
                "base_port {} with {} workers leaves the ports 1024–65535",
                self.base_port, self.workers
            ));
        }
        let driver = match self.driver.as_deref() {
            None => None,
            Some("pooled") => Some(Driver::Pooled),
            Some("hyper") => Some(Driver::Hyper),
            Some(other) => return Err(format!("driver {other:?}: pooled or hyper")),
        };
        let settings = FleetSettings {
            workers: self.workers,
            max_in_flight: self.max_in_flight,
            pool: self.pool,
            threads: self.threads,
            slot_wait: self.slot_wait,
            base_port: self.base_port,
        };
        Ok((settings, driver))
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct Greeting {
    cores: usize,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Answer {
    Started(u64),
    Error(String),
}

/// The address of the host of fleets whose first port is `base_port`.
pub fn host_address(base_port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], base_port - HOST_OFFSET))
}

/// A fleet started by a host; it runs until [`release`](Lease::release) (or until this drops).
#[derive(Debug)]
pub struct Lease {
    stream: BufReader<TcpStream>,
}

impl Lease {
    /// Asks the host of `settings.base_port` for the fleet, served with `driver`; returns once the host has
    /// started the processes (they still have to answer their control ports).
    pub async fn take(settings: FleetSettings, driver: Option<Driver>) -> Result<Lease, String> {
        let address = host_address(settings.base_port);
        let failed = |e: String| format!("the fleet host on {address}: {e}");
        let (mut stream, _) = greeted(address).await.map_err(failed)?;
        if !send(&mut stream, &FleetRequest::new(settings, driver)).await {
            return Err(failed("the request could not be sent".to_owned()));
        }
        // Starting 64 processes takes well under the exchange timeout.
        match read_line::<Answer>(&mut stream).await.map_err(failed)? {
            Answer::Started(_) => Ok(Lease { stream }),
            Answer::Error(problem) => Err(failed(problem)),
        }
    }

    /// Lets the fleet go and waits until the host has stopped its processes.
    pub async fn release(mut self) -> Result<(), String> {
        let _ = self.stream.get_mut().shutdown().await;
        let mut rest = Vec::new();
        match tokio::time::timeout(RELEASE_TIMEOUT, self.stream.read_to_end(&mut rest)).await {
            Ok(_) => Ok(()),
            Err(_) => Err(format!(
                "the fleet host did not stop the fleet within {} s",
                RELEASE_TIMEOUT.as_secs()
            )),
        }
    }
}

/// The cores the host of fleets starting at `base_port` gives its processes.
pub async fn host_cores(base_port: u16) -> Result<usize, String> {
    let address = host_address(base_port);
    let (_, cores) = greeted(address)
        .await
        .map_err(|e| format!("the fleet host on {address}: {e}"))?;
    Ok(cores)
}

async fn greeted(address: SocketAddr) -> Result<(BufReader<TcpStream>, usize), String> {
    let stream = TcpStream::connect(address)
        .await
        .map_err(|e| format!("connecting: {e}"))?;
    let mut stream = BufReader::new(stream);
    let greeting: Greeting = read_line(&mut stream).await?;
    Ok((stream, greeting.cores))
}

async fn read_line<T: serde::de::DeserializeOwned>(
    stream: &mut BufReader<TcpStream>,
) -> Result<T, String> {
    let mut line = String::new();
    // A line longer than this is no message of the protocol.
    let mut limited = (&mut *stream).take(4_096);
    match tokio::time::timeout(EXCHANGE_TIMEOUT, limited.read_line(&mut line)).await {
        Err(_) => Err(format!("no answer within {} s", EXCHANGE_TIMEOUT.as_secs())),
        Ok(Err(e)) => Err(e.to_string()),
        Ok(Ok(0)) => Err("closed without a message".to_owned()),
        Ok(Ok(_)) => serde_json::from_str(&line).map_err(|e| format!("{e}: {:?}", line.trim())),
    }
}

/// Entry point of `janitor-capacity serve-fleet [--port N] [--schema NAME] [--watch-stdin 1]`: hosts the
/// fleets of a run against `JANITOR_BENCHMARK_DATABASE_URL`, one at a time, on 127.0.0.1:`N` (30,490 unless
/// told), until it is stopped, or, with `--watch-stdin 1`, until its standard input closes (its parent ended).
pub fn serve_fleet(args: Vec<String>) -> Result<(), String> {
    let env = crate::capacity::env::CapacityEnv::from_process(crate::capacity::env::Run::Capacity)?;
    let mut port = BASE_PORT - HOST_OFFSET;
    let mut schema = crate::capacity::SCHEMA.to_owned();
    let mut watch_stdin = false;
    for (name, value) in crate::pairs(args)? {
        match name.as_str() {
            "port" => port = crate::number(&name, &value, 1_024, 65_535)? as u16,
            "schema" => schema = value,
            "watch-stdin" => watch_stdin = crate::number(&name, &value, 0, 1)? == 1,
            other => return Err(format!("unknown option --{other}")),
        }
    }
    let url = env
        .database_url
        .ok_or("JANITOR_BENCHMARK_DATABASE_URL is required")?;
    let target = Target { url, schema };
    let binary = std::env::current_exe().map_err(|e| format!("own path: {e}"))?;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?
        .block_on(async {
            if watch_stdin {
                super::exit_with_parent();
            }
            let address = SocketAddr::from(([127, 0, 0, 1], port));
            let listener = TcpListener::bind(address)
                .await
                .map_err(|e| format!("listening on {}", super::process::refused(port, &e)))?;
            println!("hosting fleets on {address}");
            loop {
                let (stream, _) = listener
                    .accept()
                    .await
                    .map_err(|e| format!("accepting on {address}: {e}"))?;
                // One fleet at a time: the next run's request waits in the backlog until this one is gone.
                host(stream, &binary, &target).await;
            }
        })
}

/// Serves one lease: greeting, request, the fleet for as long as the run holds the connection.
async fn host(stream: TcpStream, binary: &std::path::Path, target: &Target) {
    let mut stream = BufReader::new(stream);
    let greeting = Greeting {
        cores: crate::cores(),
    };
    if !send(&mut stream, &greeting).await {
        return;
    }
    let request = match read_line::<FleetRequest>(&mut stream).await {
        Ok(request) => request,
        // A connection that closes after the greeting only asked for the cores.
        Err(problem) if problem.starts_with("closed") => return,
        Err(problem) => return answer(&mut stream, Answer::Error(problem)).await,
    };
    let (settings, driver) = match request.checked() {
        Ok(checked) => checked,
        Err(problem) => return answer(&mut stream, Answer::Error(problem)).await,
    };
    let mut children = Vec::new();
    for i in 0..settings.workers as u16 {
        match spawn(
            binary,
            target,
            settings.base_port + i,
            settings,
            driver,
            true,
        ) {
            Ok(child) => children.push(child),
            Err(problem) => {
                stop_children(children).await;
                return answer(&mut stream, Answer::Error(problem)).await;
            }
        }
    }
    println!(
        "fleet of {} on 127.0.0.1:{} ({:?} driver, {} slots, pool {})",
        settings.workers,
        settings.base_port,
        driver.map_or("axum", |d| d.name()),
        settings.max_in_flight,
        settings.pool
    );
    answer(&mut stream, Answer::Started(settings.workers)).await;
    // Anything the run sends now, or its end of the connection, lets the fleet go; a process that ends on its
    // own ends the lease too, and the run's next question to the fleet fails.
    let mut byte = [0u8; 1];
    loop {
        tokio::select! {
            _ = stream.read(&mut byte) => break,
            _ = tokio::time::sleep(Duration::from_millis(500)) => {
                let ended = children.iter_mut().any(|(child, _)| matches!(child.try_wait(), Ok(Some(_))));
                if ended {
                    eprintln!("a server process ended on its own; stopping the fleet");
                    break;
                }
            }
        }
    }
    stop_children(children).await;
    let _ = stream.get_mut().shutdown().await;
}

async fn answer(stream: &mut BufReader<TcpStream>, answer: Answer) {
    send(stream, &answer).await;
}

/// Writes `message` as one JSON line; false when it could not be written.
async fn send(stream: &mut BufReader<TcpStream>, message: &impl Serialize) -> bool {
    let Ok(mut line) = serde_json::to_string(message) else {
        return false;
    };
    line.push('\n');
    stream.get_mut().write_all(line.as_bytes()).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> FleetRequest {
        FleetRequest {
            workers: 2,
            max_in_flight: 8,
            pool: 4,
            base_port: BASE_PORT,
            driver: Some("pooled".to_owned()),
            slot_wait: Some((128, 20)),
            threads: 1,
        }
    }

    #[test]
    fn a_request_is_checked_at_every_bound() {
        let (settings, driver) = request().checked().unwrap();
        assert_eq!((settings.workers, settings.pool), (2, 4));
        assert_eq!(driver, Some(Driver::Pooled));
        for (change, expected) in [
            (
                FleetRequest {
                    workers: 0,
                    ..request()
                },
                Some("workers must be from 1 to 64, got 0"),
            ),
            (
                FleetRequest {
                    workers: 1,
                    ..request()
                },
                None,
            ),
            (
                FleetRequest {
                    workers: 64,
                    ..request()
                },
                None,
            ),
            (
                FleetRequest {
                    workers: 65,
                    ..request()
                },
                Some("got 65"),
            ),
            (
                FleetRequest {
                    max_in_flight: 0,
                    ..request()
                },
                Some("max_in_flight"),
            ),
            (
                FleetRequest {
                    max_in_flight: 1_024,
                    ..request()
                },
                None,
            ),
            (
                FleetRequest {
                    max_in_flight: 1_025,
                    ..request()
                },
                Some("max_in_flight"),
            ),
            (
                FleetRequest {
                    pool: 0,
                    ..request()
                },
                Some("pool"),
            ),
            (
                FleetRequest {
                    slot_wait: Some((4_096, 1_000)),
                    ..request()
                },
                None,
            ),
            (
                FleetRequest {
                    slot_wait: Some((0, 0)),
                    ..request()
                },
                None,
            ),
            (
                FleetRequest {
                    slot_wait: Some((4_097, 10)),
                    ..request()
                },
                Some("slot_wait"),
            ),
            (
                FleetRequest {
                    slot_wait: Some((8, 1_001)),
                    ..request()
                },
                Some("slot_wait"),
            ),
            (
                FleetRequest {
                    slot_wait: Some((8, 0)),
                    ..request()
                },
                Some("slot_wait"),
            ),
            (
                FleetRequest {
                    pool: 64,
                    ..request()
                },
                None,
            ),
            (
                FleetRequest {
                    pool: 65,
                    ..request()
                },
                Some("pool"),
            ),
            (
                FleetRequest {
                    base_port: 1_023,
                    ..request()
                },
                Some("leaves the ports"),
            ),
            (
                FleetRequest {
                    base_port: 1_024,
                    ..request()
                },
                None,
            ),
            (
                FleetRequest {
                    base_port: 65_535 - 100 - 1,
                    ..request()
                },
                None,
            ),
            (
                FleetRequest {
                    base_port: 65_535 - 100,
                    ..request()
                },
                Some("leaves the ports"),
            ),
            (
                FleetRequest {
                    driver: None,
                    ..request()
                },
                None,
            ),
            (
                FleetRequest {
                    driver: Some("hyper".into()),
                    ..request()
                },
                None,
            ),
            (
                FleetRequest {
                    driver: Some("tokio".into()),
                    ..request()
                },
                Some("pooled or hyper"),
            ),
            (
                FleetRequest {
                    threads: 64,
                    ..request()
                },
                None,
            ),
            (
                FleetRequest {
                    threads: 65,
                    ..request()
                },
                Some("threads must be from 0 to 64, got 65"),
            ),
        ] {
            match (change.checked(), expected) {
                (Ok(_), None) => {}
                (Err(problem), Some(expected)) => assert!(problem.contains(expected), "{problem}"),
                (outcome, expected) => panic!("{change:?}: {outcome:?}, expected {expected:?}"),
            }
        }
    }

    #[test]
    fn a_request_round_trips_and_refuses_unknown_fields() {
        let line = serde_json::to_string(&request()).unwrap();
        assert_eq!(
            serde_json::from_str::<FleetRequest>(&line).unwrap(),
            request()
        );
        let extra = line.replace('}', ",\"command\":\"sh\"}");
        assert!(
            serde_json::from_str::<FleetRequest>(&extra).is_err(),
            "{extra}"
        );
    }

    #[test]
    fn the_run_s_host_sits_below_its_fleet() {
        assert_eq!(host_address(BASE_PORT).port(), 30_490);
    }
}
