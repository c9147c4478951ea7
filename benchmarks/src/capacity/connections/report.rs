//! The report of the connection workload, `connections-current.json`, written whether the run passed or not:
//! a stage that was not reached is absent, and so is a summary figure that was not measured.

use serde::{Deserialize, Serialize};

use crate::capacity::load::Counters;
use crate::capacity::report::{Machine, Versions};
use crate::capacity::server::answer_times::AnswerSummary;
use crate::capacity::server::{AnswerTimes, ServerStats};

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionsReport {
    /// `connections`.
    pub workload: String,
    /// The machine.
    pub machine: Machine,
    /// The versions.
    pub versions: Versions,
    /// How the run was laid out.
    pub settings: ConnectionSettings,
    /// Both sides' counts and memory after each step of the ramp.
    pub steps: Vec<Step>,
    /// The stages reached.
    pub stages: Stages,
    /// The figures the run is judged by.
    pub summary: ConnectionsSummary,
    /// The driver of `janitor_axum::serve` the servers ran on (`pooled` or `hyper`; empty in reports from
    /// before the choice, which were on `axum::serve`).
    #[serde(default)]
    pub driver: String,
    /// Each driver's figures side by side, when the run measured both.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drivers: Vec<DriverFigures>,
    /// Whether every stage passed.
    pub passed: bool,
    /// Why the run failed (`null` when it passed).
    pub failure: Option<String>,
    /// What the figures cannot show.
    pub limitations: Vec<String>,
}

/// How the run's sockets and processes were laid out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionSettings {
    /// Live connections at the end of the ramp.
    pub connections: u64,
    /// Server processes.
    pub workers: u64,
    /// Load processes.
    pub load_processes: u64,
    /// The source address of each load process.
    pub sources: Vec<String>,
    /// The port of each server process.
    pub ports: Vec<u64>,
    /// Admission slots of each server process.
    pub max_in_flight: usize,
    /// Requests each server process lets wait for a slot (absent in reports from before the wait).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_waiting_requests: Option<usize>,
    /// Longest such a wait, in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot_wait_ms: Option<u64>,
    /// Database connections of each server process.
    pub pool: usize,
    /// Connects in flight at once per load process.
    pub connects_in_flight_per_load_process: usize,
    /// Identify requests per second of the steady stage.
    pub steady_rate: u64,
    /// Seconds of the steady stage.
    pub steady_seconds: u64,
    /// Sequential requests of the recovery stage.
    pub recovery_requests: u64,
    /// The kernel settings that bound the run.
    pub kernel: Kernel,
}

/// Kernel settings from /proc (`null` where unreadable).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kernel {
    /// `net.core.somaxconn`.
    pub somaxconn: Option<u64>,
    /// `net.ipv4.tcp_max_syn_backlog`.
    pub tcp_max_syn_backlog: Option<u64>,
    /// `net.ipv4.ip_local_port_range`.
    pub ip_local_port_range: Option<String>,
    /// `net.netfilter.nf_conntrack_max`.
    pub nf_conntrack_max: Option<u64>,
    /// `net.netfilter.nf_conntrack_count` before the run.
    pub nf_conntrack_count_before: Option<u64>,
    /// The soft limit on open descriptors of a process.
    pub open_files_limit: Option<u64>,
}

/// One step of the ramp, once both sides agreed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Connections the step opened up to.
    pub connections: u64,
    /// Sockets the load processes hold.
    pub client_open: u64,
    /// Sockets the servers count open.
    pub server_open: u64,
    /// Resident memory of the server processes, summed.
    pub server_rss_bytes: u64,
    /// Resident memory of the load processes, summed.
    pub client_rss_bytes: u64,
    /// Seconds of this step.
    pub step_seconds: f64,
    /// Seconds since the ramp began.
    pub ramp_seconds: f64,
}

/// The stages reached, in the order run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stages {
    /// Opening the sockets in steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Ramp>,
    /// The steady trickle of identifications.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<Steady>,
    /// One identification on every socket at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<Burst>,
    /// Sequential identifications afterwards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<StageFigures>,
}

/// The ramp's figures and its steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ramp {
    /// What both sides counted.
    #[serde(flatten)]
    pub figures: StageFigures,
    /// The steps, as in the report's `steps`.
    pub steps: Vec<Step>,
}

/// The steady stage's figures and its schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Steady {
    /// What both sides counted.
    #[serde(flatten)]
    pub figures: StageFigures,
    /// Identify requests per second.
    pub rate: u64,
    /// Identify requests in all.
    pub requests: u64,
}

/// The burst's figures and each load process's time for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Burst {
    /// What both sides counted.
    #[serde(flatten)]
    pub figures: StageFigures,
    /// Seconds each load process took for its share.
    pub process_seconds: Vec<f64>,
}

/// What both sides counted during a stage: counters as differences, open sockets and memory at its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageFigures {
    /// Seconds the stage took.
    pub seconds: f64,
    /// The processes' figures summed.
    pub totals: StageTotals,
    /// How long the servers' apps took to answer the stage's identify requests, all processes together
    /// (absent when the stage sent none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_answer_times: Option<ServerAnswerTimes>,
    /// Each server process's counters (`peak_open` is the stage's own).
    pub servers: Vec<ServerStats>,
    /// Each load process's counters.
    pub loads: Vec<LoadFigures>,
}

/// How long the server processes' apps took to answer identify requests over a stage, from the request as the
/// app received it to the answer ([`answer_times`](crate::capacity::server::answer_times)): a refusal's time is
/// its wait for a slot, bounded by the slot wait, plus any time its task waited to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerAnswerTimes {
    /// The answers 200.
    pub completed: AnswerSummary,
    /// The refusals (503).
    pub overloaded: AnswerSummary,
}

impl ServerAnswerTimes {
    /// The times of `servers` (a stage's per-process figures) together; `None` when they answered nothing.
    pub fn of(servers: &[ServerStats]) -> Option<ServerAnswerTimes> {
        let (mut completed, mut overloaded) = (AnswerTimes::default(), AnswerTimes::default());
        for server in servers {
            completed.add(&server.completed_times);
            overloaded.add(&server.overload_times);
        }
        (completed.answers() + overloaded.answers() > 0).then(|| ServerAnswerTimes {
            completed: completed.summary(),
            overloaded: overloaded.summary(),
        })
    }
}

/// A stage's figures summed over the processes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageTotals {
    /// Sockets the servers count open at the end.
    pub server_open: u64,
    /// The servers' peaks of open sockets, summed.
    pub server_peak_open: u64,
    /// Identify requests the servers answered 200.
    pub completed: u64,
    /// Identify requests the servers answered 503.
    pub overloads: u64,
    /// Identify requests the servers answered otherwise.
    pub failures: u64,
    /// Resident memory of the servers at the end.
    pub server_rss_bytes: u64,
    /// Sockets the load processes hold at the end.
    pub client_open: u64,
    /// Identify requests sent.
    pub sent: u64,
    /// Answered 200.
    pub ok: u64,
    /// Answered 503.
    pub overloaded: u64,
    /// Failures the load processes met.
    pub errors: u64,
    /// Sockets the servers closed.
    pub closes: u64,
    /// Resident memory of the load processes at the end.
    pub client_rss_bytes: u64,
}

/// One load process's counters over a stage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoadFigures {
    /// Its source address.
    pub source: Option<String>,
    /// What it counted over the stage.
    #[serde(flatten)]
    pub counters: Counters,
}

/// The figures the run is judged by; each is absent until the stage that measures it ran.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionsSummary {
    /// Server memory before the ramp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_rss_before_bytes: Option<u64>,
    /// Seconds of the whole ramp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp_seconds: Option<f64>,
    /// Server memory after the ramp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_rss_after_ramp_bytes: Option<u64>,
    /// Load-process memory after the ramp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_rss_after_ramp_bytes: Option<u64>,
    /// Server memory growth over the ramp, per connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_connection: Option<f64>,
    /// Seconds of the burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_seconds: Option<f64>,
    /// Burst requests answered 200 or 503.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_answered: Option<u64>,
    /// Burst requests answered 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_successes: Option<u64>,
    /// Burst requests answered 503.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_overloads: Option<u64>,
    /// 99 % of the burst's refusals took at most this long in the servers' apps, in ms (a bucket's bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_refusal_p99_ms_at_most: Option<f64>,
    /// The same for the burst's answers 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_success_p99_ms_at_most: Option<f64>,
    /// Server memory after the burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_rss_after_burst_bytes: Option<u64>,
    /// Load-process memory after the burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_rss_after_burst_bytes: Option<u64>,
    /// Recovery requests answered 200, as `ok/requests`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<String>,
    /// Recovery requests answered 200.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_ok: Option<u64>,
    /// Sockets held at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<u64>,
    /// Both sides agreed after every stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts_agreed: Option<bool>,
    /// Sockets the servers closed, over the whole run.
    pub unexpected_closes: u64,
    /// Socket errors, over the whole run.
    pub socket_errors: u64,
}

/// One driver's figures, for the side-by-side table of a run that measured both.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriverFigures {
    /// `pooled` or `hyper`.
    pub driver: String,
    /// Whether its run passed.
    pub passed: bool,
    /// Why its run failed.
    pub failure: Option<String>,
    /// Server memory before the ramp, summed.
    pub server_rss_before_bytes: Option<u64>,
    /// Server memory after the ramp, summed.
    pub server_rss_after_ramp_bytes: Option<u64>,
    /// Server memory after the burst, summed.
    pub server_rss_after_burst_bytes: Option<u64>,
    /// Server memory growth over the ramp, per connection.
    pub bytes_per_connection: Option<f64>,
    /// Sockets held at the end.
    pub held: Option<u64>,
    /// Sockets the servers closed.
    pub unexpected_closes: u64,
    /// Socket errors.
    pub socket_errors: u64,
    /// Burst requests answered 200 or 503.
    pub burst_answered: Option<u64>,
    /// Burst requests answered 200.
    pub burst_successes: Option<u64>,
    /// Seconds of the burst.
    pub burst_seconds: Option<f64>,
    /// 99 % of the burst's refusals took at most this long in the servers' apps, in ms (absent in reports from
    /// before the servers timed their answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_refusal_p99_ms_at_most: Option<f64>,
    /// Recovery requests answered 200, as `ok/requests`.
    pub recovery: Option<String>,
}

impl DriverFigures {
    /// The figures of `report`, and its run's failure if it failed.
    pub fn of(report: &ConnectionsReport, failure: Option<&String>) -> DriverFigures {
        let s = &report.summary;
        DriverFigures {
            driver: report.driver.clone(),
            passed: failure.is_none(),
            failure: failure.cloned(),
            server_rss_before_bytes: s.server_rss_before_bytes,
            server_rss_after_ramp_bytes: s.server_rss_after_ramp_bytes,
            server_rss_after_burst_bytes: s.server_rss_after_burst_bytes,
            bytes_per_connection: s.bytes_per_connection,
            held: s.held,
            unexpected_closes: s.unexpected_closes,
            socket_errors: s.socket_errors,
            burst_answered: s.burst_answered,
            burst_successes: s.burst_successes,
            burst_seconds: s.burst_seconds,
            burst_refusal_p99_ms_at_most: s.burst_refusal_p99_ms_at_most,
            recovery: s.recovery.clone(),
        }
    }
}
