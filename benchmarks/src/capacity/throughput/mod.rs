//! The rate sweep and the limits measured beside it, in one run:
//!
//! - [`generator`]: an open-loop generator on 10,000 keep-alive connections (each request scheduled on the
//!   clock and sent even when late), a burst on every connection, closed loops;
//! - [`samples`]: per-request timings and the counts, rates and latencies (raw and corrected for coordinated
//!   omission) of a point;
//! - [`search`]: the highest rate with no 503 and a success p95 within 10 ms;
//! - [`limits`] and [`pgbench`]: the closed-loop identify maximum beside the database's limit for the same
//!   statements at the same concurrency;
//! - [`overhead`]: the admission layer's cost on a trivial route;
//! - [`chart`]: the SVG chart;
//! - [`report`]: the report's types.
//!
//! Everything runs on one machine: generator, server processes and PostgreSQL share its cores, which the
//! report states next to every figure.

pub mod chart;
pub mod generator;
pub mod limits;
pub mod overhead;
pub mod pgbench;
pub mod report;
pub mod samples;
pub mod search;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use self::generator::Requests;
use self::limits::Limits;
use self::report::{
    Baseline, FixtureReport, IdentifyToDatabase, RatePoint, ServerSettingsReport, ServersReport,
    SweepReport, SweepSettingsReport, ThroughputReport,
};
use self::samples::{interval, Sample, Tally, TallyReport};
use super::report as reports;
use super::run::HttpRun;
use super::seed;
use super::server::host::host_cores;
use super::server::{
    client_requests, identify_request, Fleet, FleetSettings, ServerStats, BASE_PORT,
    BEHAVIOR_VARIANTS,
};
use janitor_test_support::http1::{self, Connection};

/// Connections of the sweep, as in the reference.
pub const CONNECTIONS: usize = 10_000;

/// Admission slots of each server process unless `JANITOR_BENCHMARK_SLOTS` says otherwise, as in the
/// reference.
pub const MAX_IN_FLIGHT: usize = 8;

/// Database connections of each server process. With a process per core this keeps a few statements in
/// flight per core, and the most processes ([`MAX_WORKERS`]) stay within PostgreSQL's 40 connections.
pub const POOL: usize = 4;

/// The most server processes the sweep starts (one per core, at most this many).
pub const MAX_WORKERS: u64 = 8;

/// Longest run of the generator-alone baseline.
const BASELINE_TIME: Duration = Duration::from_secs(3);

/// Connections of the admission-overhead loops.
pub const OVERHEAD_CONNECTIONS: usize = 64;

/// Rounds of the admission-overhead loops (each runs both routes).
pub const OVERHEAD_ROUNDS: usize = 3;

/// Seconds of each route in each round of the admission-overhead loops.
pub const OVERHEAD_SECONDS: u64 = 3;

/// Rest between points, so one point's leftovers (PostgreSQL's background writes) fall less on the next.
const PAUSE: Duration = Duration::from_millis(500);

/// Descriptors kept free beside the connections (pool, pipes, files).
const SPARE_DESCRIPTORS: u64 = 512;

/// The report's file name.
pub const REPORT: &str = "throughput-current.json";

/// The chart's file name, beside the report.
pub const CHART: &str = "throughput-current.svg";

/// How a sweep runs; [`SweepSettings::for_run`] gives the real run's, tests make smaller ones.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSettings {
    /// The server processes.
    pub fleet: FleetSettings,
    /// Keep-alive connections the generator holds.
    pub connections: usize,
    /// Offered rates, requests per second, in the order run.
    pub rates: Vec<u64>,
    /// Time per rate.
    pub rate_time: Duration,
    /// Search for the highest clean rate.
    pub search: bool,
    /// Time of each of a search probe's consecutive windows.
    pub window_time: Duration,
    /// Seconds of the pgbench run and of the closed-loop identify maximum it is compared with.
    pub limit_seconds: u64,
    /// Connections, rounds and time per round and route of the admission-overhead loops.
    pub overhead: (usize, usize, Duration),
    /// Where the report and the chart go.
    pub output: PathBuf,
}

impl SweepSettings {
    /// The settings of a real run: [`CONNECTIONS`] connections, the run's rates and seconds, one server
    /// process per core of the servers (`server_cores`: this machine's, or the fleet host's; at most
    /// [`MAX_WORKERS`]) with the run's slots ([`MAX_IN_FLIGHT`] unless set) and [`POOL`] database connections
    /// each, and reports in the run's reports directory.
    pub fn for_run(run: &HttpRun, server_cores: usize) -> SweepSettings {
        SweepSettings {
            fleet: FleetSettings {
                workers: (server_cores as u64).clamp(1, MAX_WORKERS),
                max_in_flight: usize::try_from(run.env.slots).unwrap_or(MAX_IN_FLIGHT),
                pool: POOL,
                threads: run.env.server_threads,
                slot_wait: run.env.slot_wait,
                base_port: BASE_PORT,
            },
            connections: CONNECTIONS,
            rates: run.env.rates.clone(),
            rate_time: Duration::from_secs(run.env.rate_seconds),
            search: run.env.search,
            window_time: Duration::from_secs(run.env.rate_seconds.min(search::WINDOW_SECONDS)),
            limit_seconds: run.env.rate_seconds,
            overhead: (
                OVERHEAD_CONNECTIONS,
                OVERHEAD_ROUNDS,
                Duration::from_secs(OVERHEAD_SECONDS),
            ),
            output: reports::reports_dir(),
        }
    }
}

/// Runs the sweep and writes `docs/benchmarks/throughput-current.json` and its chart.
pub async fn run(run: &HttpRun) -> Result<ThroughputReport, String> {
    let server_cores = if run.env.external_servers {
        host_cores(BASE_PORT).await?
    } else {
        crate::cores()
    };
    measure(run, &SweepSettings::for_run(run, server_cores)).await
}

/// Runs the sweep with explicit settings (tests use their own ports, sizes and output directory) and writes
/// the report and the chart to `settings.output`.
pub async fn measure(run: &HttpRun, settings: &SweepSettings) -> Result<ThroughputReport, String> {
    let limit = reports::open_files_limit().unwrap_or(0);
    if (settings.connections as u64) + SPARE_DESCRIPTORS > limit {
        return Err(format!(
            "{} connections need {} descriptors, this process may open {limit}",
            settings.connections,
            settings.connections as u64 + SPARE_DESCRIPTORS
        ));
    }
    let fixture = Fixture::read(&run.cookies)?;
    let fleet = Fleet::start(run, settings.fleet).await?;
    let outcome = sweep(run, settings, &fixture, &fleet).await;
    let stats = fleet.stats(false).await;
    fleet.stop().await;
    let sweep = outcome?;
    let stats = stats?;
    let servers = ServersReport {
        rss_bytes_total: stats.iter().map(|s| s.rss_bytes).sum(),
        processes: stats,
    };
    let chart_points = chart_points(&sweep.points);
    let title = format!(
        "Identify: {} connections, {} server processes, {} cores shared with PostgreSQL and the generator",
        settings.connections,
        settings.fleet.workers,
        crate::cores()
    );
    std::fs::create_dir_all(&settings.output)
        .map_err(|e| format!("creating {}: {e}", settings.output.display()))?;
    let chart_path = settings.output.join(CHART);
    std::fs::write(&chart_path, chart::svg(&title, &chart_points))
        .map_err(|e| format!("writing {}: {e}", chart_path.display()))?;
    println!("wrote {}", chart_path.display());
    let report = ThroughputReport {
        sweep,
        servers,
        chart: chart_path.display().to_string(),
    };
    crate::write_report(&settings.output.join(REPORT), &report)?;
    Ok(report)
}

/// The known-cookie fixture: the identify requests of its visitors, as the real client sends them and with the
/// seeded payload unchanged, and what pgbench binds for each.
struct Fixture {
    /// Each visitor's requests as the real client sends them, behaviour changing from one to the next.
    requests: Requests,
    /// Each visitor's seeded payload, unchanged from one request to the next.
    identical: Requests,
    visitors: Vec<pgbench::Visitor>,
}

impl Fixture {
    fn read(path: &Path) -> Result<Fixture, String> {
        let lines = seed::read_cookies(path)?;
        // What janitor.js sends: the seeded signals with a new behaviour summary on every visit.
        let requests = client_requests(
            lines
                .iter()
                .map(|l| (l.visitor.as_str(), l.payload.as_str())),
        )?;
        let identical = lines
            .iter()
            .map(|line| identify_request(&line.visitor, &line.payload))
            .collect();
        let visitors = lines
            .iter()
            .map(pgbench::Visitor::of_cookie)
            .collect::<Result<_, _>>()?;
        Ok(Fixture {
            requests: Arc::new(requests),
            identical: Arc::new(identical),
            visitors,
        })
    }
}

async fn sweep(
    run: &HttpRun,
    settings: &SweepSettings,
    fixture: &Fixture,
    fleet: &Fleet,
) -> Result<SweepReport, String> {
    let servers = fleet.servers();
    let versions = reports::versions(&run.target.database(1)?).await?;
    println!(
        "throughput: opening {} connections to {} server processes",
        settings.connections,
        servers.len()
    );
    let mut connections = generator::open(&servers, settings.connections).await?;

    let mut points = Vec::new();
    for &rate in &settings.rates {
        let (back, point, _) =
            open_loop_point(fleet, connections, fixture, rate, settings.rate_time).await?;
        connections = back;
        points.push(point);
    }
    let (back, generator_baseline) = baseline(connections, settings).await?;
    connections = back;
    let search = if settings.search {
        let (back, search) = search::run(fleet, connections, fixture, settings.window_time).await?;
        connections = back;
        Some(search)
    } else {
        None
    };

    let burst = burst(fleet, connections, fixture).await?;

    tokio::time::sleep(PAUSE).await;
    let limits = limits::measure(
        run,
        (&servers, fleet.pids()),
        settings.fleet,
        settings.limit_seconds,
        &fixture.visitors,
        [fixture.requests.clone(), fixture.identical.clone()],
    )
    .await?;

    let (overhead_connections, rounds, round_time) = settings.overhead;
    tokio::time::sleep(PAUSE).await;
    let admission_overhead =
        overhead::measure(&servers, overhead_connections, rounds, round_time).await?;

    let mut identify_to_database = identify_to_database(&limits, &points);
    identify_to_database.search_to_closed_loop = search
        .as_ref()
        .and_then(|s| s.best_rate)
        .and_then(|best| limits::ratio(best as f64, limits.identify_per_second));
    Ok(SweepReport {
        workload: "throughput".to_owned(),
        machine: reports::machine(),
        versions,
        settings: settings_report(run, settings),
        fixture: FixtureReport {
            visitors: fixture.visitors.len(),
            schema: run.target.schema.clone(),
            requests: format!(
                "POST /api/visitor with the visitor's own __visitor cookie and its seeded signals with a new \
                 behaviour summary on every visit, as janitor.js sends them (the cookie path: one history read \
                 that refreshes the newest observation of the same signals and touches the visitor at most once \
                 a minute); request n uses visitor n mod visitors, with behaviour variant n div visitors mod \
                 {BEHAVIOR_VARIANTS}; the limits' identical-payload side re-sends the seeded payload unchanged"
            ),
        },
        points,
        generator_baseline,
        burst,
        search,
        identify_limit: limits.identify,
        design_ratio: limits::ratio(limits.database.tps, limits.database_previous.tps),
        pgbench: limits.database,
        pgbench_previous: limits.database_previous,
        pgbench_alone: Some(limits.database_alone),
        identify_to_database,
        admission_overhead,
        limitations: limitations(settings, run.env.external_servers),
    })
}

/// One request on every connection at once, the servers' counts checked against the generator's. The
/// connections are closed afterwards: the workloads after it open their own.
async fn burst(
    fleet: &Fleet,
    connections: Vec<Connection>,
    fixture: &Fixture,
) -> Result<TallyReport, String> {
    tokio::time::sleep(PAUSE).await;
    let before = totals(&fleet.stats(false).await?);
    let (back, samples) = generator::burst(connections, fixture.requests.clone()).await?;
    let tally = Tally::of(&samples, back.len() as u64, None);
    let after = totals(&fleet.stats(false).await?);
    check_server_counts(&tally, before, after, "the burst")?;
    println!(
        "throughput: burst of {}: {} answered 200, {} answered 503 in {:.0} ms",
        tally.scheduled,
        tally.ok,
        tally.overloaded,
        tally.elapsed.as_secs_f64() * 1000.0
    );
    Ok(tally.report())
}

/// The generator alone: the highest rate on a trivial route, so the report can tell the generator's own
/// misses and lateness from the ones identify work causes.
async fn baseline(
    connections: Vec<Connection>,
    settings: &SweepSettings,
) -> Result<(Vec<Connection>, Baseline), String> {
    let top = settings.rates.iter().copied().max().unwrap_or(1);
    let time = settings.rate_time.min(BASELINE_TIME);
    tokio::time::sleep(PAUSE).await;
    let plain: Requests = Arc::new(vec![http1::get(overhead::PLAIN)]);
    let (back, samples) = generator::open_loop(connections, plain, top, time).await?;
    let scheduled = (u128::from(top) * time.as_millis() / 1_000) as u64;
    let baseline = Baseline {
        tally: Tally::of(&samples, scheduled, Some(interval(top))).report(),
        what: "the generator at the highest sweep rate on GET /plain (no identify work, no database): the \
             misses and lateness it and the shared cores cause on their own"
            .to_owned(),
        offered_rate: top,
        seconds: time.as_secs_f64(),
    };
    Ok((back, baseline))
}

fn settings_report(run: &HttpRun, settings: &SweepSettings) -> SweepSettingsReport {
    // What the processes run with: the run's wait, or the library's default.
    let (waiting, wait_ms) = settings.fleet.slot_wait.unwrap_or_else(|| {
        let default = janitor_axum::admission::AdmissionConfig::default();
        (
            default.max_waiting_requests(),
            default.slot_wait().as_millis() as u64,
        )
    });
    SweepSettingsReport {
        servers: ServerSettingsReport {
            processes: settings.fleet.workers,
            external: run.env.external_servers,
            admission_slots_each: settings.fleet.max_in_flight,
            admission_waiting_each: Some(waiting),
            admission_slot_wait_ms: Some(wait_ms),
            runtime: Some(crate::capacity::server::runtime_name(settings.fleet.threads)),
            database_connections_each: settings.fleet.pool,
            database_connections: settings.fleet.workers as usize * settings.fleet.pool,
            base_port: settings.fleet.base_port,
        },
        connections: settings.connections,
        rates: settings.rates.clone(),
        seconds_per_rate: settings.rate_time.as_secs_f64(),
        search: settings.search,
        limit_seconds: settings.limit_seconds,
        generator: "open loop in the harness process: request n is due n·1000/rate ms after the start \
             (a thread sleeping to the due time), goes out on the longest-idle connection, late when none \
             is idle, never skipped; a schedule miss is a send more than one interval late. Raw latency \
             runs from the actual send, corrected latency from the due time."
            .to_owned(),
        answer_deadline_seconds: generator::ANSWER_DEADLINE.as_secs(),
    }
}

/// Identify successes per second beside pgbench's tps: the closed loop's, and the best sweep point's that had
/// no 503 and sent every request.
fn identify_to_database(limits: &Limits, points: &[RatePoint]) -> IdentifyToDatabase {
    let best_clean = points
        .iter()
        .filter(|p| p.tally.status_503 == 0 && p.tally.sent == p.tally.scheduled)
        .max_by_key(|p| p.offered_rate);
    let ratio = |x: f64| limits::ratio(x, limits.database.tps);
    IdentifyToDatabase {
        closed_loop_ratio: ratio(limits.identify_per_second),
        search_to_closed_loop: None,
        closed_loop_ratio_alone: limits::ratio(limits.identify_per_second, limits.database_alone.tps),
        real_to_identical_ratio: limits::ratio(limits.identify_per_second, limits.identical_per_second),
        best_clean_sweep_ratio: best_clean.and_then(|p| ratio(p.tally.completed_per_second)),
        best_clean_sweep_rate: best_clean.map(|p| p.offered_rate),
        basis: "identify successes per second ÷ pgbench transactions per second, both with the \
             database seeing the fleet's pool size in connections, measured in alternating rounds. \
             The closed-loop ratio is the main one: the sweep's rates are chosen in advance, so its \
             best clean rate is a lower bound. pgbench's transactions carry a helper round trip that \
             picks the visitor (see its statement averages), so its tps understates the statement's own \
             limit; closed_loop_ratio_alone divides by the statement alone, which resolves its visitor \
             itself in the same round trip, and is the one to quote. pgbench's client also takes a share \
             of the same cores."
            .to_owned(),
    }
}

/// One open-loop point with the servers' counts checked against the generator's.
async fn open_loop_point(
    fleet: &Fleet,
    connections: Vec<Connection>,
    fixture: &Fixture,
    rate: u64,
    time: Duration,
) -> Result<(Vec<Connection>, RatePoint, Vec<Sample>), String> {
    tokio::time::sleep(PAUSE).await;
    let before = totals(&fleet.stats(false).await?);
    let scheduled = (u128::from(rate) * time.as_millis() / 1_000) as u64;
    let (back, samples) =
        generator::open_loop(connections, fixture.requests.clone(), rate, time).await?;
    let tally = Tally::of(&samples, scheduled, Some(interval(rate)));
    let after = totals(&fleet.stats(false).await?);
    check_server_counts(&tally, before, after, &format!("the point at {rate}/s"))?;
    let point = RatePoint {
        tally: tally.report(),
        offered_rate: rate,
        seconds: time.as_secs_f64(),
        passes_search: search::passes(
            tally.sent == tally.scheduled,
            tally.overloaded,
            tally.ok_corrected.map(|l| l.summary.p95),
        ),
        windows: Vec::new(),
    };
    println!(
        "throughput: {rate}/s for {:.0} s: {} sent, {} ok, {} 503, {} misses, {:.0} ok/s",
        time.as_secs_f64(),
        tally.sent,
        tally.ok,
        tally.overloaded,
        tally.misses,
        tally.ok_per_second()
    );
    Ok((back, point, samples))
}

/// Identify 200s and 503s the servers counted, summed.
fn totals(stats: &[ServerStats]) -> (u64, u64) {
    stats
        .iter()
        .fold((0, 0), |(c, o), s| (c + s.completed, o + s.overloads))
}

/// Both sides must agree on what was answered: a difference means a lost or foreign request.
fn check_server_counts(
    tally: &Tally,
    before: (u64, u64),
    after: (u64, u64),
    what: &str,
) -> Result<(), String> {
    let served = (after.0 - before.0, after.1 - before.1);
    if served != (tally.ok, tally.overloaded) {
        return Err(format!(
            "{what}: the servers answered {} × 200 and {} × 503, the generator saw {} and {}",
            served.0, served.1, tally.ok, tally.overloaded
        ));
    }
    Ok(())
}

/// What the chart shows of a report's points.
pub fn chart_points(points: &[RatePoint]) -> Vec<chart::ChartPoint> {
    let pair = |latency: Option<samples::LatencyReport>| {
        latency.map(|l| (l.percentiles.p50_ms, l.percentiles.p95_ms))
    };
    points
        .iter()
        .map(|p| {
            let successes = p.tally.latency.successes;
            chart::ChartPoint {
                rate: p.offered_rate,
                ok_per_second: p.tally.completed_per_second,
                overloads_per_second: p.tally.overloads_per_second,
                raw_ms: pair(successes.raw),
                corrected_ms: pair(successes.corrected),
            }
        })
        .collect()
}

fn limitations(settings: &SweepSettings, external: bool) -> Vec<String> {
    let mut limitations = vec![
        format!(
            "One machine of {} cores runs the generator, {} server processes and PostgreSQL: every figure \
             includes their contention for the cores, and the generator's own delays show as schedule \
             misses and in the corrected latency. It shows how the stack behaves when the machine is \
             saturated and how the figures compare with each other; it cannot show what a server with \
             cores of its own would sustain.",
            crate::cores(),
            settings.fleet.workers
        ),
        "The ratios (identify ÷ pgbench, admitted ÷ plain) are measured in the same run on the same \
         machine; absolute rates are not comparable with the reference's (Apple M2 Pro, servers, client \
         and PostgreSQL in separate containers with 4, 2 and 2 CPUs)."
            .to_owned(),
        "Connections are on loopback: no network latency, no packet loss.".to_owned(),
        format!(
            "The sweep's connections are {}; each request cycles through the fixture's visitors, so every \
             visitor's history is read often and stays in PostgreSQL's cache.",
            settings.connections
        ),
        "The generator needs about a tenth of a millisecond from a due time to the write (a thread's sleep, \
         then a task on the runtime); at rates above a few thousand per second one interval is shorter than \
         that, so schedule misses there count the generator's granularity as much as the servers' delays. \
         `sent_over_1ms_late` and the generator baseline (the same rate on a trivial route) separate the two."
            .to_owned(),
        format!(
            "Rates ran for {:.0} s each; a longer run would also show checkpoint and autovacuum effects.",
            settings.rate_time.as_secs_f64()
        ),
    ];
    if external {
        limitations.push(
            "The server processes ran where the fleet host runs (`janitor-capacity serve-fleet`, a \
             container of their own in the Docker run), one per core the host reported, with the slots and \
             pool above; the generator, pgbench and PostgreSQL ran elsewhere, each with its own share of the \
             cores."
                .to_owned(),
        );
    }
    limitations
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_counts_must_match_the_generator() {
        let samples = [
            samples::Sample {
                scheduled: Duration::ZERO,
                sent: Duration::ZERO,
                done: Duration::from_millis(1),
                status: 200,
            },
            samples::Sample {
                scheduled: Duration::ZERO,
                sent: Duration::ZERO,
                done: Duration::from_millis(1),
                status: 503,
            },
        ];
        let tally = Tally::of(&samples, 2, None);
        assert!(check_server_counts(&tally, (10, 5), (11, 6), "x").is_ok());
        let problem = check_server_counts(&tally, (10, 5), (12, 6), "x").unwrap_err();
        assert!(problem.contains("2 × 200"), "{problem}");
    }

    #[test]
    fn chart_points_come_from_the_report_points() {
        let t = Tally::of(
            &[samples::Sample {
                scheduled: Duration::ZERO,
                sent: Duration::from_millis(1),
                done: Duration::from_millis(3),
                status: 200,
            }],
            1,
            Some(interval(100)),
        );
        let p = RatePoint {
            tally: t.report(),
            offered_rate: 100,
            seconds: 1.0,
            passes_search: true,
            windows: Vec::new(),
        };
        let points = chart_points(&[p]);
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].rate, 100);
        assert_eq!(points[0].raw_ms, Some((2.0, 2.0)));
        assert_eq!(points[0].corrected_ms, Some((3.0, 3.0)));
        assert!(chart_points(&[]).is_empty());
    }
}
