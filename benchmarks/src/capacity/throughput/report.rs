//! The report of the rate sweep, `throughput-current.json`.

use serde::{Deserialize, Serialize};

use super::limits::IdentifyLimit;
use super::overhead::OverheadReport;
use super::pgbench::PgbenchReport;
use super::samples::TallyReport;
use crate::capacity::report::{Machine, Versions};
use crate::capacity::server::ServerStats;

/// The whole report: what the sweep measured, and what the servers counted once it was over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputReport {
    /// What the sweep measured.
    #[serde(flatten)]
    pub sweep: SweepReport,
    /// The server processes at the end.
    pub servers: ServersReport,
    /// Where the chart was written.
    pub chart: String,
}

/// What the sweep measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// `throughput`.
    pub workload: String,
    /// The machine.
    pub machine: Machine,
    /// The versions.
    pub versions: Versions,
    /// How the sweep ran.
    pub settings: SweepSettingsReport,
    /// The known-cookie fixture.
    pub fixture: FixtureReport,
    /// One point per offered rate, in the order run.
    pub points: Vec<RatePoint>,
    /// The generator alone at the highest rate.
    pub generator_baseline: Baseline,
    /// One request on every connection at once.
    pub burst: TallyReport,
    /// The search for the highest clean rate (`null` when not asked for).
    pub search: Option<SearchReport>,
    /// The closed-loop identify maximum.
    pub identify_limit: IdentifyLimit,
    /// The database's limit for the same statements.
    pub pgbench: PgbenchReport,
    /// The database's limit for the previous design's statements, in the same rounds.
    pub pgbench_previous: PgbenchReport,
    /// The current statement's own limit, its visitor resolved inside it, in the same rounds (absent in older
    /// reports, whose pgbench figure carried a helper round trip in every transaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgbench_alone: Option<PgbenchReport>,
    /// The current design's statements against the previous design's on pgbench: tps ÷ tps.
    pub design_ratio: Option<f64>,
    /// Identify beside the database.
    pub identify_to_database: IdentifyToDatabase,
    /// The admission layer's own cost.
    pub admission_overhead: OverheadReport,
    /// What the figures cannot show.
    pub limitations: Vec<String>,
}

/// How the sweep ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSettingsReport {
    /// The server processes.
    pub servers: ServerSettingsReport,
    /// Keep-alive connections of the generator.
    pub connections: usize,
    /// Offered rates, requests per second.
    pub rates: Vec<u64>,
    /// Seconds of each rate.
    pub seconds_per_rate: f64,
    /// Whether the search ran.
    pub search: bool,
    /// Seconds of the pgbench run and of the identify maximum.
    pub limit_seconds: u64,
    /// How the generator schedules and measures.
    pub generator: String,
    /// How long a request may wait for its answer.
    pub answer_deadline_seconds: u64,
}

/// The server processes of the sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSettingsReport {
    /// Processes.
    pub processes: u64,
    /// Started outside the run.
    pub external: bool,
    /// Admission slots of each.
    pub admission_slots_each: usize,
    /// Requests each let wait for a slot, and for how long at most, ms (absent in older reports, whose
    /// servers refused at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_waiting_each: Option<usize>,
    /// The slot wait's bound, ms (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_slot_wait_ms: Option<u64>,
    /// Each process's Tokio runtime: `current_thread`, or `multi_thread` with its workers (absent in older
    /// reports, whose processes ran `multi_thread` with one worker per core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// Database connections of each.
    pub database_connections_each: usize,
    /// Database connections of all.
    pub database_connections: usize,
    /// The first process's port.
    pub base_port: u16,
}

/// The known-cookie fixture of the sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FixtureReport {
    /// Known visitors.
    pub visitors: usize,
    /// The run's schema.
    pub schema: String,
    /// What each request is.
    pub requests: String,
}

/// One open-loop point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RatePoint {
    /// What its requests added up to.
    #[serde(flatten)]
    pub tally: TallyReport,
    /// Offered rate, requests per second.
    pub offered_rate: u64,
    /// Seconds it ran.
    pub seconds: f64,
    /// Whether it meets the search's criterion (in every window, for a search probe).
    pub passes_search: bool,
    /// A search probe's consecutive windows, each judged on its own (empty for a sweep point).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub windows: Vec<RatePoint>,
}

/// The generator alone at the highest sweep rate on a trivial route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// What its requests added up to.
    #[serde(flatten)]
    pub tally: TallyReport,
    /// What it shows.
    pub what: String,
    /// Offered rate, requests per second.
    pub offered_rate: u64,
    /// Seconds it ran.
    pub seconds: f64,
}

/// The search for the highest clean rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchReport {
    /// What a passing probe must meet.
    pub criterion: String,
    /// Seconds of each probe.
    pub seconds_per_probe: f64,
    /// Consecutive windows each probe is judged by (absent in older reports, whose probes were one window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows_per_probe: Option<u32>,
    /// The highest passing rate, if any.
    pub best_rate: Option<u64>,
    /// Every probe, in the order run.
    pub probes: Vec<RatePoint>,
}

/// Identify successes per second beside pgbench's transactions per second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentifyToDatabase {
    /// The closed-loop identify maximum ÷ pgbench's tps (helper round trip included).
    pub closed_loop_ratio: Option<f64>,
    /// The search's sustained zero-503 rate ÷ the closed-loop identify maximum: how much of what the fleet
    /// can do admission lets through without a 503 (absent when the run did not search, and in older
    /// reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search_to_closed_loop: Option<f64>,
    /// The closed-loop identify maximum ÷ the statement alone's tps: the honest one (absent in older
    /// reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closed_loop_ratio_alone: Option<f64>,
    /// The closed loop as the real client sends (a new behaviour summary on every visit) ÷ the same loop with
    /// the seeded payload re-sent unchanged, in the same rounds (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_to_identical_ratio: Option<f64>,
    /// The best clean sweep point's successes per second ÷ pgbench's tps.
    pub best_clean_sweep_ratio: Option<f64>,
    /// That point's offered rate.
    pub best_clean_sweep_rate: Option<u64>,
    /// How the ratios are made and read.
    pub basis: String,
}

/// The server processes once the sweep was over.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServersReport {
    /// Their resident memory, summed.
    pub rss_bytes_total: u64,
    /// What each counted.
    pub processes: Vec<ServerStats>,
}
