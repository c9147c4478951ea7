//! The report of the soak, `soak-current.json`, written whether the run passed or not: a run that stopped
//! early has the samples it took, `null` where a figure was not reached, and says why in its verdict.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::drift::DriftReport;
use crate::capacity::report::{Machine, Versions};
use crate::capacity::seed::VisitorFixture;
use crate::capacity::throughput::report::ServerSettingsReport;
use crate::capacity::throughput::samples::TallyReport;
use crate::Percentiles;

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakReport {
    /// `soak`.
    pub workload: String,
    /// The command that ran it.
    pub command: String,
    /// The `JANITOR_BENCHMARK_*` variables that were set (a database URL only as `(set)`).
    pub environment: BTreeMap<String, String>,
    /// The machine.
    pub machine: Machine,
    /// The versions.
    pub versions: Versions,
    /// How the soak ran.
    pub settings: SoakSettingsReport,
    /// The known visitors and the requests.
    pub fixture: SoakFixtureReport,
    /// One sample before the load and one at the end of every 10-second interval.
    pub samples: Vec<SoakSample>,
    /// What the whole run added up to.
    pub totals: Totals,
    /// The tables before and after the load.
    pub tables: TablesReport,
    /// The memory rule.
    pub memory: DriftReport,
    /// Whether the run passed, and why not.
    pub verdict: Verdict,
    /// Where the chart was written.
    pub chart: String,
    /// What the figures cannot show.
    pub limitations: Vec<String>,
}

/// How the soak ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakSettingsReport {
    /// Minutes of load.
    pub minutes: u64,
    /// Offered requests per second.
    pub rate: u64,
    /// Seconds between two samples (and length of one interval of the open loop).
    pub sample_seconds: u64,
    /// Keep-alive connections of the open loop.
    pub connections: u64,
    /// Requests that carry a known cookie, in percent; the rest are new browsers without one.
    pub cookie_percent: u64,
    /// The server process.
    pub server: ServerSettingsReport,
    /// The database: the disposable cluster, or the one `JANITOR_BENCHMARK_DATABASE_URL` named.
    pub database: String,
    /// The fixture (schema, and cluster when the run made one) is kept for the next run.
    pub reuse: bool,
    /// How the generator schedules and measures.
    pub generator: String,
    /// How long a request may wait for its answer.
    pub answer_deadline_seconds: u64,
}

/// The known visitors and the requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakFixtureReport {
    /// The known visitors as seeded.
    pub known: VisitorFixture,
    /// The run's schema.
    pub schema: String,
    /// What each request is.
    pub requests: String,
    /// The first browser of the test population used as a new browser.
    pub new_browsers_from: u64,
    /// Requests built per interval; when an interval holds more, they repeat (new browsers included).
    pub distinct_requests_per_interval: u64,
}

/// One sample: the server's memory and connections, its answers so far, the tables, and the interval that
/// ended with it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SoakSample {
    /// Seconds of load on the schedule (0 before the load; 10, 20, … at the end of each interval).
    pub at_seconds: u64,
    /// Seconds on the clock since the load started (the schedule's plus the time between intervals).
    pub elapsed_seconds: f64,
    /// The server's resident memory.
    pub rss_bytes: u64,
    /// The server's connections.
    pub connections: ConnectionCounts,
    /// The server's identify answers so far, by status.
    pub answers: Answers,
    /// The tables.
    pub tables: TableSizes,
    /// The interval that ended with this sample, as the generator saw it (`null` for the sample before the
    /// load, and for an interval the generator gave up on).
    pub interval: Option<TallyReport>,
}

/// The server's connections at a sample.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionCounts {
    /// Open now.
    pub open: u64,
    /// Most open at once since the sample before.
    pub peak_open: u64,
    /// Accepted since the server started.
    pub accepted: u64,
}

/// Identify answers by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answers {
    /// 200.
    pub status_200: u64,
    /// 503 (admission full, or the store unavailable).
    pub status_503: u64,
    /// Any other status: each one fails the run.
    pub other: u64,
}

/// The two tables of identification.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSizes {
    /// `visitors`.
    pub visitors: TableSize,
    /// `observations`.
    pub observations: TableSize,
}

/// One table: its size with indexes and TOAST, its rows, and the dead row versions vacuum has yet to remove.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableSize {
    /// `pg_total_relation_size`.
    pub total_bytes: u64,
    /// `count(*)`.
    pub rows: u64,
    /// `n_dead_tup` of `pg_stat_user_tables`, as PostgreSQL's statistics have it (they trail the writes by a
    /// second or so): row versions left by updates and deletes (a pruned observation leaves one).
    pub dead_rows: u64,
}

/// The tables before and after the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TablesReport {
    /// Before the load.
    pub start: TableSizes,
    /// After it (`null` when the database could not be asked).
    pub end: Option<TableSizes>,
}

/// Latency of a set of requests over the whole run, from a histogram (see `histogram.rs`: exact below 1 ms,
/// within 0.2 % above).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunLatency {
    /// How many.
    pub samples: u64,
    /// Their figures.
    #[serde(flatten)]
    pub percentiles: Percentiles,
}

/// Raw (from the send) and corrected (from the due time) latency over the whole run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunLatencies {
    /// From the actual send.
    pub raw: Option<RunLatency>,
    /// From the scheduled send.
    pub corrected: Option<RunLatency>,
}

/// What the whole run added up to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Intervals run to their end.
    pub intervals: u64,
    /// Requests the completed intervals' schedules held.
    pub scheduled: u64,
    /// Requests answered in them.
    pub sent: u64,
    /// Answered 200, as the generator saw them.
    pub status_200: u64,
    /// Answered 503, as the generator saw them.
    pub status_503: u64,
    /// Sent more than one interval late.
    pub schedule_misses: u64,
    /// Sent more than 1 ms late.
    pub sent_over_1ms_late: u64,
    /// The server's own count of its identify answers at the end (also those of an interval the generator
    /// gave up on).
    pub server_answers: Answers,
    /// Seconds on the clock from the start of the load to its end.
    pub wall_seconds: f64,
    /// Requests answered per second on the clock.
    pub answered_per_second: f64,
    /// Time between intervals (the last answers of one awaited, the sample taken) in all, ms.
    pub between_intervals_ms: f64,
    /// The longest such gap, ms.
    pub longest_gap_ms: f64,
    /// Latency of every answered request.
    pub latency_all: RunLatencies,
    /// Latency of the 200s.
    pub latency_successes: RunLatencies,
    /// The server's resident memory at the first and the last sample, and the most.
    pub rss_bytes: RssRange,
    /// Most connections the server had open at once.
    pub peak_open_connections: u64,
    /// Connections the server accepted in all.
    pub accepted_connections: u64,
}

/// Resident memory at the ends of the run and the most.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RssRange {
    /// Before the load.
    pub first: u64,
    /// At the last sample.
    pub last: u64,
    /// The most at any sample.
    pub max: u64,
}

/// Whether the run passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// No status other than 200 or 503, every request answered, the memory within its limit.
    pub passed: bool,
    /// Each reason it failed.
    pub failures: Vec<String>,
    /// Why the load stopped before its end (`null` when it ran to the end).
    pub stopped_early: Option<String>,
}
