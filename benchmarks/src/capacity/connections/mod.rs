//! The connection workload (capacity.md §3), run on the pooled driver of `janitor_axum::serve` and then on
//! hyper's, each figure of both side by side in the report: hundreds of thousands of live HTTP/1.1 keep-alive connections
//! on the server fleet, opened in steps, then a steady trickle of identifications, a burst of one
//! identification on every socket at once, and a recovery check.
//!
//! The run starts the server fleet and enough `janitor-capacity load` processes that none holds more than
//! 18,000 sockets (each from its own 127.0.0.x source address), drives them stage by stage, and after every
//! step makes both sides count the live sockets: the load processes' count and the servers' must agree
//! exactly. Any status other than 200 or 503, any socket the server closed, any socket error or any
//! disagreement fails the run; the report is written either way, with `"passed": false` and the reason when it
//! failed.
//!
//! - `loads`: starting and asking the load processes.
//! - `stages`: the ramp, steady, burst and recovery stages.
//! - `figures`: per-process figures of a stage.
//! - [`report`]: the report's types.

pub mod chart;
mod figures;
mod loads;
pub mod report;
mod stages;

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use janitor_axum::admission::{MAX_WAITING_REQUESTS, SLOT_WAIT_MS};
use janitor_axum::serve::Driver;

use super::env::SOCKETS_PER_PROCESS;
use super::load::{self, Reply};
use super::report::{self as reports, Versions};
use super::run::HttpRun;
use super::server::{self, Fleet, FleetSettings};
use loads::Loads;
use report::{
    ConnectionSettings, ConnectionsReport, ConnectionsSummary, DriverFigures, Kernel, Stages, Step,
};

/// Admission slots of each server process (the reference's 8).
pub const MAX_IN_FLIGHT: usize = 8;

/// Identify requests per second of the steady stage.
pub const STEADY_RATE: u64 = 100;

/// Sequential requests of the recovery stage, on the run's first sockets.
pub const RECOVERY_REQUESTS: u64 = 100;

/// The report's file name in `docs/benchmarks/`.
pub const REPORT: &str = "connections-current.json";

/// Where a run puts its processes and its report; tests use their own so that they never meet a real run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// Port of the first server process (the others follow).
    pub base_port: u16,
    /// Source address of the first load process (the others follow).
    pub first_source: Ipv4Addr,
    /// Where the report is written.
    pub report: PathBuf,
}

impl Plan {
    /// The plan of `cargo xtask benchmark-connections`: the fleet's ports, sources from 127.0.0.10, and the
    /// report in `docs/benchmarks/`.
    pub fn standard() -> Plan {
        Plan {
            base_port: server::BASE_PORT,
            first_source: Ipv4Addr::new(127, 0, 0, 10),
            report: reports::reports_dir().join(REPORT),
        }
    }
}

/// How the run's sockets are spread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Layout {
    connections: u64,
    workers: u64,
    loads: u64,
    pool: usize,
}

impl Layout {
    fn of(run: &HttpRun) -> Layout {
        let workers = run.env.workers;
        Layout {
            connections: run.env.connections,
            workers,
            loads: run.env.connections.div_ceil(SOCKETS_PER_PROCESS),
            // PostgreSQL allows 40 connections in all and the run holds a few of them.
            pool: if workers <= 16 { 2 } else { 1 },
        }
    }
}

/// The report of the run on hyper's driver, beside `connections-current.json` (the pooled driver's).
pub const HYPER_REPORT: &str = "connections-hyper.json";

/// How long a run waits for connection tracking to forget the sockets of the run before it.
const CONNTRACK_SETTLE: Duration = Duration::from_secs(180);

/// Runs the connection stages twice, on the pooled driver (`connections-current.json`) and then on hyper's
/// (`connections-hyper.json`), and adds both drivers' figures side by side to the first report.
pub async fn run(run: &HttpRun) -> Result<ConnectionsReport, String> {
    let pooled_plan = Plan::standard();
    let hyper_plan = Plan {
        report: pooled_plan.report.with_file_name(HYPER_REPORT),
        ..pooled_plan.clone()
    };
    let pooled = run_on(run, &pooled_plan, Driver::Pooled).await?;
    settle_conntrack(Layout::of(run).connections).await;
    let hyper = run_on(run, &hyper_plan, Driver::Hyper).await?;
    let mut report = pooled.0.clone();
    report.drivers = vec![
        DriverFigures::of(&pooled.0, pooled.1.as_ref().err()),
        DriverFigures::of(&hyper.0, hyper.1.as_ref().err()),
    ];
    crate::write_report(&pooled_plan.report, &report)?;
    pooled.1.and(hyper.1).map(|()| report)
}

/// Runs the connection stages on the pooled driver with the ports, sources and report file of `plan`,
/// writes the report (also when the run fails) and returns it; a failed run returns the reason.
pub async fn run_with(run: &HttpRun, plan: &Plan) -> Result<ConnectionsReport, String> {
    let (report, outcome) = run_on(run, plan, Driver::Pooled).await?;
    outcome.map(|()| report)
}

/// Waits (a while at most) until connection tracking has room for `connections` more entries.
async fn settle_conntrack(connections: u64) {
    let started = std::time::Instant::now();
    while started.elapsed() < CONNTRACK_SETTLE {
        let kernel = kernel();
        match (kernel.nf_conntrack_max, kernel.nf_conntrack_count_before) {
            (Some(max), Some(count)) if count + connections > max => {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            _ => return,
        }
    }
}

/// Runs the stages with the servers on `driver`: the report, written (also when the run failed), and the
/// run's outcome; `Err` only when the report could not be written or the run could not start.
async fn run_on(
    run: &HttpRun,
    plan: &Plan,
    driver: Driver,
) -> Result<(ConnectionsReport, Result<(), String>), String> {
    let layout = Layout::of(run);
    let kernel = kernel();
    refuse_what_cannot_fit(&layout, &kernel)?;
    let versions = {
        let database = run.target.database(1)?;
        reports::versions(&database).await?
    };
    let settings = ConnectionSettings {
        connections: layout.connections,
        workers: layout.workers,
        load_processes: layout.loads,
        sources: (0..layout.loads)
            .map(|i| loads::source(plan.first_source, i).map(|s| s.to_string()))
            .collect::<Result<Vec<_>, _>>()?,
        ports: (0..layout.workers)
            .map(|i| u64::from(plan.base_port) + i)
            .collect(),
        max_in_flight: MAX_IN_FLIGHT,
        // The fleet is started with the library's default wait.
        max_waiting_requests: Some(MAX_WAITING_REQUESTS.default),
        slot_wait_ms: Some(SLOT_WAIT_MS.default),
        pool: layout.pool,
        connects_in_flight_per_load_process: load::CONCURRENCY,
        steady_rate: STEADY_RATE,
        steady_seconds: run.env.steady_seconds,
        recovery_requests: RECOVERY_REQUESTS,
        kernel,
    };
    let mut record = Record::new(layout, settings);
    println!(
        "connections: {} sockets over {} server processes ({} driver) and {} load processes",
        layout.connections,
        layout.workers,
        driver.name(),
        layout.loads
    );
    let outcome = processes(run, plan, layout, driver, &mut record).await;
    let mut report = record.report(versions, outcome.as_ref().err());
    report.driver = driver.name().to_owned();
    let written = match plan.report.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => {
            std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))
        }
        _ => Ok(()),
    }
    .and_then(|()| crate::write_report(&plan.report, &report))
    .and_then(|()| {
        // The memory chart beside the report: connections-current.svg.
        let chart = chart::svg(&report.steps);
        let path = plan.report.with_extension("svg");
        std::fs::write(&path, chart).map_err(|e| format!("writing {}: {e}", path.display()))
    });
    match (outcome, written) {
        (outcome, Ok(())) => Ok((report, outcome)),
        (Err(failure), Err(unwritten)) => Err(format!("{failure} (and the report: {unwritten})")),
        (Ok(()), Err(unwritten)) => Err(unwritten),
    }
}

/// Starts the servers and load processes, drives the stages and stops every process whatever happened.
async fn processes(
    run: &HttpRun,
    plan: &Plan,
    layout: Layout,
    driver: Driver,
    record: &mut Record,
) -> Result<(), String> {
    let settings = FleetSettings {
        workers: layout.workers,
        max_in_flight: MAX_IN_FLIGHT,
        pool: layout.pool,
        threads: 0,
        slot_wait: None,
        base_port: plan.base_port,
    };
    let fleet = Fleet::start_on(run, settings, Some(driver)).await?;
    let started = Loads::start(
        &run.binary,
        &run.cookies,
        &fleet.servers(),
        layout.loads,
        plan.first_source,
    )
    .await;
    let mut loads = match started {
        Ok(loads) => loads,
        Err(e) => {
            fleet.stop().await;
            return Err(e);
        }
    };
    let outcome = stages::drive(&fleet, &mut loads, run.env.steady_seconds, record).await;
    loads.stop().await;
    fleet.stop().await;
    outcome
}

/// What the run has seen so far, enough to write a report at any point.
struct Record {
    layout: Layout,
    settings: ConnectionSettings,
    steps: Vec<Step>,
    stages: Stages,
    summary: ConnectionsSummary,
    /// The latest reply of each load process (counters are totals, so the latest says everything).
    latest: Vec<Reply>,
}

impl Record {
    fn new(layout: Layout, settings: ConnectionSettings) -> Record {
        Record {
            layout,
            settings,
            steps: Vec::new(),
            stages: Stages::default(),
            summary: ConnectionsSummary::default(),
            latest: vec![Reply::default(); layout.loads as usize],
        }
    }

    fn saw(&mut self, index: usize, reply: &Reply) {
        if let Some(slot) = self.latest.get_mut(index) {
            *slot = reply.clone();
        }
    }

    fn report(mut self, versions: Versions, failure: Option<&String>) -> ConnectionsReport {
        let total = |f: fn(&Reply) -> u64| self.latest.iter().map(f).sum::<u64>();
        self.summary.unexpected_closes = total(|r| r.counters.closes);
        self.summary.socket_errors = total(|r| r.counters.errors);
        ConnectionsReport {
            workload: "connections".to_owned(),
            machine: reports::machine(),
            versions,
            settings: self.settings,
            steps: self.steps,
            stages: self.stages,
            summary: self.summary,
            driver: String::new(),
            drivers: Vec::new(),
            passed: failure.is_none(),
            failure: failure.cloned(),
            limitations: limitations(&self.layout),
        }
    }
}

fn limitations(layout: &Layout) -> Vec<String> {
    vec![
        format!(
            "One machine with {} cores runs the {} load processes, the {} server processes and PostgreSQL \
             together: they compete for the same cores, so times (ramp, burst) are those of a shared machine.",
            crate::cores(),
            layout.loads,
            layout.workers
        ),
        "Loopback only: no network, no TLS, no proxy; each socket costs both a client and a server socket in \
         the same kernel."
            .to_owned(),
        "Server memory is resident memory (VmRSS) of the server processes summed; kernel socket buffers are \
         not in it, and bytes per connection is the growth from before the ramp to after it divided by the \
         connections."
            .to_owned(),
        "Each process may hold at most 20,000 descriptors, so the sockets are spread over several server and \
         load processes, each load process on a 127.0.0.x source address of its own whose ports it picks \
         itself."
            .to_owned(),
        "The burst is one request per socket written as fast as each load process can; the servers admit 8 at \
         a time per process and refuse the rest with 503, which is the behaviour measured."
            .to_owned(),
    ]
}

/// The kernel settings that bound the run, read from /proc (null where unreadable).
fn kernel() -> Kernel {
    let read = |path: &str| {
        std::fs::read_to_string(format!("/proc/sys/{path}"))
            .ok()
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    let number = |path: &str| read(path).and_then(|v| v.parse::<u64>().ok());
    Kernel {
        somaxconn: number("net/core/somaxconn"),
        tcp_max_syn_backlog: number("net/ipv4/tcp_max_syn_backlog"),
        ip_local_port_range: read("net/ipv4/ip_local_port_range"),
        nf_conntrack_max: number("net/netfilter/nf_conntrack_max"),
        nf_conntrack_count_before: number("net/netfilter/nf_conntrack_count"),
        open_files_limit: reports::open_files_limit(),
    }
}

/// Refuses a run the machine cannot hold, before anything starts; the kernel's settings are not changed.
fn refuse_what_cannot_fit(layout: &Layout, kernel: &Kernel) -> Result<(), String> {
    let per_load = layout.connections.div_ceil(layout.loads);
    let per_server = layout.connections.div_ceil(layout.workers);
    if let (Some(max), Some(count)) = (kernel.nf_conntrack_max, kernel.nf_conntrack_count_before) {
        if layout.connections + count > max {
            return Err(format!(
                "connection tracking cannot hold the run: {count} entries are in use and {} connections \
                 need as many more, over nf_conntrack_max {max}. Wait for old entries to expire (see \
                 /proc/sys/net/netfilter/nf_conntrack_count) or lower JANITOR_BENCHMARK_CONNECTIONS",
                layout.connections
            ));
        }
    }
    if let Some(limit) = kernel.open_files_limit {
        // Headroom for the pool, pipes, the runtime and the control port.
        let needed = per_load.max(per_server) + 200;
        if needed > limit {
            return Err(format!(
                "a process would need about {needed} descriptors but may open {limit} (ulimit -n)"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(connections: u64, workers: u64) -> Layout {
        Layout {
            connections,
            workers,
            loads: connections.div_ceil(SOCKETS_PER_PROCESS),
            pool: 2,
        }
    }

    fn machine(conntrack: u64, files: u64) -> Kernel {
        Kernel {
            nf_conntrack_max: Some(262_144),
            nf_conntrack_count_before: Some(conntrack),
            open_files_limit: Some(files),
            ..Kernel::default()
        }
    }

    #[test]
    fn runs_the_machine_cannot_hold_are_refused_with_the_reason() {
        assert!(refuse_what_cannot_fit(&layout(200_000, 12), &machine(1_000, 20_000)).is_ok());
        let full = refuse_what_cannot_fit(&layout(200_000, 12), &machine(70_000, 20_000));
        assert!(full.unwrap_err().contains("nf_conntrack_max 262144"));
        let few = refuse_what_cannot_fit(&layout(200_000, 12), &machine(0, 10_000));
        assert!(few.unwrap_err().contains("ulimit -n"));
        // Unreadable settings are not a reason to refuse.
        assert!(refuse_what_cannot_fit(&layout(1_000, 1), &Kernel::default()).is_ok());
    }

    #[test]
    fn the_standard_plan_is_the_fleets() {
        let plan = Plan::standard();
        assert_eq!(plan.base_port, server::BASE_PORT);
        assert!(plan
            .report
            .ends_with("docs/benchmarks/connections-current.json"));
        assert_eq!(layout(200_000, 12).loads, 12);
        assert_eq!(layout(1_000, 2).loads, 1);
    }
}
