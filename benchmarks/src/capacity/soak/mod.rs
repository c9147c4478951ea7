//! The soak behind `cargo xtask soak --minutes N --rate R`: one server process of the quick-start stack on the
//! harness's database, an open loop at `R` requests per second for `N` minutes (four in five on known cookies,
//! one in five without a cookie, going round 10,000 browsers), and a sample every 10 seconds of the server's memory and connections, its answers
//! and the identification tables.
//!
//! - [`settings`]: the flags and the harness variables that apply;
//! - [`mix`]: the requests;
//! - [`drift`]: the memory rule;
//! - [`histogram`]: latency percentiles over the whole run in bounded memory;
//! - [`chart`] and [`report`]: what it writes, `soak-current.svg` and `soak-current.json`.
//!
//! The run fails (after writing the report) on any answer other than 200 or 503, a request the generator and
//! the server do not agree on, a load that stopped early, or resident memory more than 10 % over its
//! baseline after the warm-up.

pub mod chart;
pub mod drift;
pub mod histogram;
pub mod mix;
pub mod report;
pub mod settings;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio_postgres::Client;

use self::histogram::Histogram;
use self::mix::{Mix, COOKIELESS_BROWSERS, MAX_PER_INTERVAL, NEW_BROWSERS_FROM};
use self::report::{
    Answers, ConnectionCounts, RssRange, RunLatencies, RunLatency, SoakFixtureReport, SoakReport,
    SoakSample, SoakSettingsReport, TableSize, TableSizes, TablesReport, Totals, Verdict,
};
use self::settings::{SoakSettings, COOKIELESS_EVERY, SAMPLE_INTERVAL};
use super::report as reports;
use super::run::HttpRun;
use super::seed::{self, VisitorFixture};
use super::server::{Fleet, FleetSettings, BASE_PORT};
use super::throughput::report::ServerSettingsReport;
use super::throughput::samples::{interval, Sample, Tally};
use super::throughput::{generator, MAX_IN_FLIGHT, POOL};
use super::{cluster, Target, SCHEMA};

/// The report's file name.
pub const REPORT: &str = "soak-current.json";

/// The chart's file name, beside the report.
pub const CHART: &str = "soak-current.svg";

/// Descriptors kept free beside the connections (pool, pipes, files).
const SPARE_DESCRIPTORS: u64 = 512;

/// The tables' sizes, rows and dead row versions, in one round trip. Counting is cheap at the soak's sizes
/// (tens of milliseconds for a few hundred thousand rows) beside ten seconds of load.
const TABLE_SIZES: &str = "SELECT pg_total_relation_size('visitors'::regclass), \
     pg_total_relation_size('observations'::regclass), \
     (SELECT count(*) FROM visitors), (SELECT count(*) FROM observations), \
     COALESCE((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'visitors'::regclass), 0), \
     COALESCE((SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'observations'::regclass), 0)";

/// How one soak runs; [`Plan::for_settings`] gives the command's, a test can make a shorter one.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Minutes of load, as asked for.
    pub minutes: u64,
    /// Offered requests per second.
    pub rate: u64,
    /// Keep-alive connections of the open loop.
    pub connections: u64,
    /// One interval of the open loop and the time between samples (whole seconds).
    pub interval: Duration,
    /// Intervals of the run.
    pub intervals: u64,
    /// The one server process.
    pub fleet: FleetSettings,
    /// Where the report and the chart go.
    pub output: PathBuf,
    /// The command, for the report.
    pub command: String,
}

impl Plan {
    /// The plan of `cargo xtask soak`: 10-second intervals, one server process with the sweep's admission
    /// slots and database connections, the reports in the run's reports directory.
    pub fn for_settings(settings: &SoakSettings) -> Plan {
        Plan {
            minutes: settings.minutes,
            rate: settings.rate,
            connections: settings.connections,
            interval: SAMPLE_INTERVAL,
            intervals: settings.intervals(),
            fleet: FleetSettings {
                workers: 1,
                max_in_flight: MAX_IN_FLIGHT,
                pool: POOL,
                threads: 0,
                slot_wait: None,
                base_port: BASE_PORT,
            },
            output: reports::reports_dir(),
            command: format!(
                "cargo xtask soak --minutes {} --rate {}",
                settings.minutes, settings.rate
            ),
        }
    }

    /// Seconds of load.
    pub fn run_seconds(&self) -> u64 {
        self.intervals * self.interval.as_secs()
    }
}

/// Entry point of `janitor-capacity soak --minutes N --rate R`: the database (the disposable cluster unless
/// `JANITOR_BENCHMARK_DATABASE_URL` names one), the schema and the known visitors, the soak, the report, and
/// clean-up. Fails after writing the report when the run did not pass.
pub fn main(args: Vec<String>) -> Result<(), String> {
    let settings = SoakSettings::from_process(&args)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    // The cluster (when the run made one) is stopped and removed when it drops, after the runtime is done.
    let (url, cluster) = cluster::acquire(&settings.env)?;
    let target = Target {
        url,
        schema: SCHEMA.to_owned(),
    };
    runtime.block_on(seed::prepare_schema(&target, &settings.env))?;
    let outcome = runtime.block_on(soak(&settings, &target));
    let cleanup = if settings.env.reuse {
        Ok(())
    } else {
        runtime.block_on(seed::drop_schema(&target))
    };
    drop(cluster);
    let report = outcome?;
    cleanup?;
    if report.verdict.passed {
        Ok(())
    } else {
        Err(format!(
            "the soak failed: {}",
            report.verdict.failures.join("; ")
        ))
    }
}

async fn soak(settings: &SoakSettings, target: &Target) -> Result<SoakReport, String> {
    let scratch =
        std::env::temp_dir().join(format!("janitor-capacity-soak-{}", std::process::id()));
    std::fs::create_dir(&scratch).map_err(|e| format!("creating {}: {e}", scratch.display()))?;
    let outcome = async {
        let run = HttpRun {
            target: target.clone(),
            env: settings.env.clone(),
            cookies: scratch.join("cookies.tsv"),
            binary: std::env::current_exe().map_err(|e| format!("own path: {e}"))?,
            scratch: scratch.clone(),
        };
        let known = seed::visitors(target, &settings.env, &run.cookies).await?;
        measure(&run, &Plan::for_settings(settings), known).await
    }
    .await;
    let _ = std::fs::remove_dir_all(&scratch);
    outcome
}

/// Runs the soak of `plan` against `run`'s database, whose known visitors are seeded and in its cookie file,
/// and writes the report and the chart to `plan.output`. An error is returned only when the soak could not
/// start; once the server answers, the report is written whatever happens, and says whether it passed.
pub async fn measure(
    run: &HttpRun,
    plan: &Plan,
    known: VisitorFixture,
) -> Result<SoakReport, String> {
    let limit = reports::open_files_limit().unwrap_or(0);
    if plan.connections + SPARE_DESCRIPTORS > limit {
        return Err(format!(
            "{} connections need {} descriptors, this process may open {limit}",
            plan.connections,
            plan.connections + SPARE_DESCRIPTORS
        ));
    }
    let lines = seed::read_cookies(&run.cookies)?;
    let mix = Mix::new(
        lines
            .iter()
            .map(|l| (l.visitor.as_str(), l.payload.as_str())),
    )?;
    let versions = reports::versions(&run.target.database(1)?).await?;
    let client =
        seed::connect(&run.target.url, &run.target.schema, Duration::from_secs(60)).await?;
    let start = table_sizes(&client).await?;
    let fleet = Fleet::start(run, plan.fleet).await?;
    println!(
        "soak: {}/s for {} min on {} connections to one server process ({} known visitors)",
        plan.rate, plan.minutes, plan.connections, known.visitors
    );
    let load = load(plan, &fleet, &client, mix).await;
    fleet.stop().await;
    let end = table_sizes(&client).await.ok();
    let report = assemble(
        run,
        plan,
        known,
        versions,
        load,
        TablesReport { start, end },
    );
    std::fs::create_dir_all(&plan.output)
        .map_err(|e| format!("creating {}: {e}", plan.output.display()))?;
    let chart_path = plan.output.join(CHART);
    let marks = chart::Marks {
        run_seconds: plan.run_seconds(),
        warmup_seconds: report.memory.warmup_seconds,
        baseline_bytes: report.memory.baseline_rss_bytes,
        limit_bytes: report.memory.limit_rss_bytes,
    };
    let title = format!(
        "Soak: {}/s for {} min, one server process, {} cores shared with PostgreSQL and the generator",
        plan.rate,
        plan.minutes,
        crate::cores()
    );
    std::fs::write(&chart_path, chart::svg(&title, &report.samples, marks))
        .map_err(|e| format!("writing {}: {e}", chart_path.display()))?;
    println!("wrote {}", chart_path.display());
    let report = SoakReport {
        chart: chart_path.display().to_string(),
        ..report
    };
    crate::write_report(&plan.output.join(REPORT), &report)?;
    Ok(report)
}

/// What the load produced, whether it ran to its end or not.
#[derive(Debug, Default)]
struct Load {
    samples: Vec<SoakSample>,
    intervals: u64,
    scheduled: u64,
    sent: u64,
    ok: u64,
    overloaded: u64,
    misses: u64,
    late: u64,
    /// Raw and corrected latency of every answer, then of the 200s.
    latency: [Histogram; 4],
    gaps: Vec<Duration>,
    wall: Duration,
    /// Intervals where the server's counts and the generator's differ.
    disagreements: Vec<String>,
    stopped: Option<String>,
}

impl Load {
    fn add(&mut self, tally: &Tally, samples: &[Sample]) {
        self.intervals += 1;
        self.scheduled += tally.scheduled;
        self.sent += tally.sent;
        self.ok += tally.ok;
        self.overloaded += tally.overloaded;
        self.misses += tally.misses;
        self.late += tally.late;
        for sample in samples {
            self.latency[0].record(sample.raw());
            self.latency[1].record(sample.corrected());
            if sample.status == 200 {
                self.latency[2].record(sample.raw());
                self.latency[3].record(sample.corrected());
            }
        }
    }
}

/// The open loop, one interval after another, with a sample after each. Never fails: a problem stops the
/// load and is kept for the verdict.
async fn load(plan: &Plan, fleet: &Fleet, client: &Client, mut mix: Mix) -> Load {
    let mut out = Load::default();
    let seconds = plan.interval.as_secs();
    let per_interval = plan.rate * seconds;
    let mut connections = match generator::open(&fleet.servers(), plan.connections as usize).await {
        Ok(connections) => connections,
        Err(problem) => {
            out.stopped = Some(format!("opening the connections: {problem}"));
            return out;
        }
    };
    match take_sample(fleet, client, 0, Duration::ZERO, None).await {
        Ok(sample) => out.samples.push(sample),
        Err(problem) => {
            out.stopped = Some(format!("sampling before the load: {problem}"));
            return out;
        }
    }
    let mut requests = mix.interval(per_interval);
    let begin = Instant::now();
    let mut last_end: Option<Instant> = None;
    for k in 0..plan.intervals {
        let at = (k + 1) * seconds;
        // The next interval's requests are built while this one runs.
        let next = (k + 1 < plan.intervals).then(|| {
            let mut mix = mix.clone();
            tokio::task::spawn_blocking(move || {
                let requests = mix.interval(per_interval);
                (mix, requests)
            })
        });
        let started = Instant::now();
        if let Some(end) = last_end {
            out.gaps.push(started - end);
        }
        let result =
            generator::open_loop(connections, requests.clone(), plan.rate, plan.interval).await;
        last_end = Some(Instant::now());
        out.wall = begin.elapsed();
        let (tally, failed) = match result {
            Ok((back, samples)) => {
                connections = back;
                let tally = Tally::of(&samples, per_interval, Some(interval(plan.rate)));
                out.add(&tally, &samples);
                (Some(tally), None)
            }
            Err(problem) => {
                connections = Vec::new();
                (
                    None,
                    Some(format!(
                        "the load stopped in the interval ending at {at} s: {problem}"
                    )),
                )
            }
        };
        let before = out.samples.last().map(|s| s.answers).unwrap_or_default();
        match take_sample(fleet, client, at, begin.elapsed(), tally.as_ref()).await {
            Ok(sample) => {
                if let Some(tally) = &tally {
                    if let Some(problem) = disagreement(before, sample.answers, tally, at) {
                        out.disagreements.push(problem);
                    }
                }
                progress(plan, &sample);
                out.samples.push(sample);
            }
            Err(problem) => {
                out.stopped =
                    Some(failed.unwrap_or_else(|| format!("sampling at {at} s: {problem}")));
                break;
            }
        }
        if failed.is_some() {
            out.stopped = failed;
            break;
        }
        if let Some(next) = next {
            match next.await {
                Ok((advanced, built)) => {
                    mix = advanced;
                    requests = built;
                }
                Err(e) => {
                    out.stopped = Some(format!("building the requests: {e}"));
                    break;
                }
            }
        }
    }
    drop(connections);
    out
}

fn progress(plan: &Plan, sample: &SoakSample) {
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let latency = sample
        .interval
        .as_ref()
        .and_then(|t| t.latency.all.raw)
        .map(|l| {
            format!(
                ", p50 {:.2} ms, p99 {:.2} ms",
                l.percentiles.p50_ms, l.percentiles.p99_ms
            )
        })
        .unwrap_or_default();
    println!(
        "soak: {:>5} s of {}: {} × 200, {} × 503, {} other{latency}; RSS {:.1} MiB, {} open; \
         visitors {:.1} MiB, observations {:.1} MiB",
        sample.at_seconds,
        plan.run_seconds(),
        sample.answers.status_200,
        sample.answers.status_503,
        sample.answers.other,
        mib(sample.rss_bytes),
        sample.connections.open,
        mib(sample.tables.visitors.total_bytes),
        mib(sample.tables.observations.total_bytes)
    );
}

/// The server's answers in an interval against the generator's, when they differ.
fn disagreement(before: Answers, after: Answers, tally: &Tally, at: u64) -> Option<String> {
    let served = (
        after.status_200.saturating_sub(before.status_200),
        after.status_503.saturating_sub(before.status_503),
    );
    (served != (tally.ok, tally.overloaded)).then(|| {
        format!(
            "in the interval ending at {at} s the server answered {} × 200 and {} × 503, the generator saw \
             {} and {}",
            served.0, served.1, tally.ok, tally.overloaded
        )
    })
}

/// The server's counts (resetting its peak of open connections) and the tables.
async fn take_sample(
    fleet: &Fleet,
    client: &Client,
    at: u64,
    elapsed: Duration,
    tally: Option<&Tally>,
) -> Result<SoakSample, String> {
    let stats = fleet.stats(true).await?;
    let server = stats.first().ok_or("no server process")?;
    let tables = table_sizes(client).await?;
    Ok(SoakSample {
        at_seconds: at,
        elapsed_seconds: (elapsed.as_secs_f64() * 100.0).round() / 100.0,
        rss_bytes: server.rss_bytes,
        connections: ConnectionCounts {
            open: server.open,
            peak_open: server.peak_open,
            accepted: server.accepted,
        },
        answers: Answers {
            status_200: server.completed,
            status_503: server.overloads,
            other: server.failures,
        },
        tables,
        interval: tally.map(Tally::report),
    })
}

async fn table_sizes(client: &Client) -> Result<TableSizes, String> {
    let row = client
        .query_one(TABLE_SIZES, &[])
        .await
        .map_err(|e| format!("table sizes: {}", seed::pg(&e)))?;
    let get = |i: usize| row.get::<_, i64>(i).max(0) as u64;
    Ok(TableSizes {
        visitors: TableSize {
            total_bytes: get(0),
            rows: get(2),
            dead_rows: get(4),
        },
        observations: TableSize {
            total_bytes: get(1),
            rows: get(3),
            dead_rows: get(5),
        },
    })
}

/// Why the run failed, if it did.
pub fn verdict(
    last: Option<Answers>,
    stopped: Option<String>,
    disagreements: &[String],
    memory: &drift::DriftReport,
) -> Verdict {
    let mut failures = Vec::new();
    if let Some(other) = last.map(|a| a.other).filter(|&n| n > 0) {
        failures.push(format!("{other} identify answers were neither 200 nor 503"));
    }
    if let Some(stopped) = &stopped {
        failures.push(format!("the load stopped before its end: {stopped}"));
    }
    failures.extend(disagreements.iter().cloned());
    if memory.within_limit == Some(false) {
        let mib = |b: Option<u64>| b.unwrap_or(0) as f64 / (1024.0 * 1024.0);
        failures.push(format!(
            "the server's resident memory rose to {:.1} MiB, {:.2} % over its baseline of {:.1} MiB at {} s \
             (first above the {} % limit at {} s)",
            mib(memory.max_rss_bytes_after),
            memory.drift_percent.unwrap_or(0.0),
            mib(memory.baseline_rss_bytes),
            memory.baseline_at_seconds.unwrap_or(0),
            memory.limit_percent,
            memory.first_exceeded_at_seconds.unwrap_or(0)
        ));
    }
    Verdict {
        passed: failures.is_empty(),
        failures,
        stopped_early: stopped,
    }
}

fn run_latency(histogram: &Histogram) -> Option<RunLatency> {
    histogram.percentiles().map(|percentiles| RunLatency {
        samples: histogram.len(),
        percentiles,
    })
}

fn assemble(
    run: &HttpRun,
    plan: &Plan,
    known: VisitorFixture,
    versions: reports::Versions,
    load: Load,
    tables: TablesReport,
) -> SoakReport {
    let rss: Vec<(u64, u64)> = load
        .samples
        .iter()
        .map(|s| (s.at_seconds, s.rss_bytes))
        .collect();
    let memory = drift::evaluate(&rss, plan.run_seconds());
    let last = load.samples.last();
    let verdict = verdict(
        last.map(|s| s.answers),
        load.stopped.clone(),
        &load.disagreements,
        &memory,
    );
    let ms = crate::ms;
    let totals = Totals {
        intervals: load.intervals,
        scheduled: load.scheduled,
        sent: load.sent,
        status_200: load.ok,
        status_503: load.overloaded,
        schedule_misses: load.misses,
        sent_over_1ms_late: load.late,
        server_answers: last.map(|s| s.answers).unwrap_or_default(),
        wall_seconds: (load.wall.as_secs_f64() * 100.0).round() / 100.0,
        answered_per_second: if load.wall.is_zero() {
            0.0
        } else {
            (load.sent as f64 / load.wall.as_secs_f64() * 10.0).round() / 10.0
        },
        between_intervals_ms: ms(load.gaps.iter().sum()),
        longest_gap_ms: ms(load.gaps.iter().max().copied().unwrap_or_default()),
        latency_all: RunLatencies {
            raw: run_latency(&load.latency[0]),
            corrected: run_latency(&load.latency[1]),
        },
        latency_successes: RunLatencies {
            raw: run_latency(&load.latency[2]),
            corrected: run_latency(&load.latency[3]),
        },
        rss_bytes: RssRange {
            first: load.samples.first().map_or(0, |s| s.rss_bytes),
            last: last.map_or(0, |s| s.rss_bytes),
            max: load.samples.iter().map(|s| s.rss_bytes).max().unwrap_or(0),
        },
        peak_open_connections: load
            .samples
            .iter()
            .map(|s| s.connections.peak_open)
            .max()
            .unwrap_or(0),
        accepted_connections: last.map_or(0, |s| s.connections.accepted),
    };
    let per_interval = plan.rate * plan.interval.as_secs();
    let env = &run.env;
    SoakReport {
        workload: "soak".to_owned(),
        command: plan.command.clone(),
        environment: environment(std::env::vars()),
        machine: reports::machine(),
        versions,
        settings: SoakSettingsReport {
            minutes: plan.minutes,
            rate: plan.rate,
            sample_seconds: plan.interval.as_secs(),
            connections: plan.connections,
            cookie_percent: 100 - 100 / COOKIELESS_EVERY,
            server: ServerSettingsReport {
                processes: plan.fleet.workers,
                external: env.external_servers,
                admission_slots_each: plan.fleet.max_in_flight,
                admission_waiting_each: None,
                admission_slot_wait_ms: None,
                runtime: Some(crate::capacity::server::runtime_name(plan.fleet.threads)),
                database_connections_each: plan.fleet.pool,
                database_connections: plan.fleet.workers as usize * plan.fleet.pool,
                base_port: plan.fleet.base_port,
            },
            database: match env.database_url {
                Some(_) => "the loopback PostgreSQL JANITOR_BENCHMARK_DATABASE_URL names".to_owned(),
                None => format!(
                    "the disposable cluster on 127.0.0.1:{} ({}; durability on)",
                    cluster::PORT,
                    cluster::SETTINGS
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            },
            reuse: env.reuse,
            generator: format!(
                "the sweep's open loop in the harness process, one interval of {} s after another: request n \
                 of an interval is due n·1000/rate ms after its start and goes out on the longest-idle \
                 connection, late when none is idle, never skipped. Between intervals the generator awaits \
                 the interval's last answers and the sample is taken (between_intervals_ms). Raw latency \
                 runs from the actual send, corrected latency from the due time.",
                plan.interval.as_secs()
            ),
            answer_deadline_seconds: generator::ANSWER_DEADLINE.as_secs(),
        },
        fixture: SoakFixtureReport {
            known,
            schema: run.target.schema.clone(),
            requests: format!(
                "POST /api/visitor; {} in {COOKIELESS_EVERY} with a known visitor's __visitor cookie and the \
                 payload of its seeded observation (the cookie path, going round the known visitors), one in \
                 {COOKIELESS_EVERY} without a cookie, the payload of one of {COOKIELESS_BROWSERS} browsers of \
                 the test population beyond the fixture, going round (the first round new browsers, later \
                 rounds returns without a cookie)",
                COOKIELESS_EVERY - 1
            ),
            new_browsers_from: NEW_BROWSERS_FROM,
            distinct_requests_per_interval: per_interval.min(MAX_PER_INTERVAL),
        },
        samples: load.samples,
        totals,
        tables,
        memory,
        verdict,
        chart: String::new(),
        limitations: limitations(plan, per_interval),
    }
}

/// The `JANITOR_BENCHMARK_*` variables among `vars`, a database URL given only as `(set)`.
fn environment(vars: impl Iterator<Item = (String, String)>) -> BTreeMap<String, String> {
    vars.filter(|(name, value)| name.starts_with("JANITOR_BENCHMARK_") && !value.is_empty())
        .map(|(name, value)| {
            let value = if name.ends_with("_URL") {
                "(set)".to_owned()
            } else {
                value
            };
            (name, value)
        })
        .collect()
}

fn limitations(plan: &Plan, per_interval: u64) -> Vec<String> {
    let mut limitations = vec![
        format!(
            "One machine of {} cores runs the generator, the server process and PostgreSQL, and other work \
             may share it: latency and 503s include their contention for the cores.",
            crate::cores()
        ),
        "The server's memory is its resident set from /proc: kernel socket buffers and PostgreSQL's memory are \
         not in it, and memory the allocator keeps after a free still counts."
            .to_owned(),
        "Every identification adds an observation to its visitor's history, which keeps the newest 10 (the \
         library's default): the known visitors' histories fill up in the first minutes and are pruned from \
         then on (each prune leaves a dead row version until vacuum). The cookieless browsers go round a fixed \
         set, so once each has been created and its history has filled, the tables stop growing: the steady \
         state a soak needs to tell a leak from a growing workload. The server runs no background \
         maintenance, so nothing expires during the run."
            .to_owned(),
        "Rows are counted exactly at every sample (a scan of both tables every 10 s, part of the database's \
         load); dead row versions come from PostgreSQL's statistics, which trail the writes by a second or so."
            .to_owned(),
        "Connections are on loopback and kept alive for the whole run: no network latency, no TLS, no \
         connection churn."
            .to_owned(),
    ];
    if per_interval > MAX_PER_INTERVAL {
        limitations.push(format!(
            "At {}/s an interval holds {per_interval} requests, more than the {MAX_PER_INTERVAL} built for it: \
             they repeat within the interval, so a new browser is sent more than once (later times without \
             its cookie, as a returning browser that lost it).",
            plan.rate
        ));
    }
    limitations
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::report::Versions;

    fn tally(ok: u64, overloaded: u64) -> Tally {
        let samples: Vec<Sample> = (0..ok + overloaded)
            .map(|i| Sample {
                scheduled: Duration::from_millis(i),
                sent: Duration::from_millis(i),
                done: Duration::from_millis(i + 2),
                status: if i < ok { 200 } else { 503 },
            })
            .collect();
        Tally::of(&samples, ok + overloaded, Some(interval(1_000)))
    }

    fn sample(at: u64, rss: u64, ok: u64, other: u64, interval: Option<&Tally>) -> SoakSample {
        SoakSample {
            at_seconds: at,
            elapsed_seconds: at as f64 + 0.01,
            rss_bytes: rss,
            connections: ConnectionCounts {
                open: 64,
                peak_open: 64,
                accepted: 64,
            },
            answers: Answers {
                status_200: ok,
                status_503: 1,
                other,
            },
            tables: TableSizes::default(),
            interval: interval.map(Tally::report),
        }
    }

    #[test]
    fn the_verdict_names_every_failure() {
        let level = drift::evaluate(&[(0, 100), (60, 100), (70, 105)], 120);
        let passed = verdict(Some(Answers::default()), None, &[], &level);
        assert!(passed.passed && passed.failures.is_empty() && passed.stopped_early.is_none());
        // A 503 is an answer; any other status fails.
        let answers = Answers {
            status_200: 10,
            status_503: 5,
            other: 2,
        };
        let failed = verdict(Some(answers), None, &[], &level);
        assert!(!failed.passed);
        assert_eq!(
            failed.failures,
            ["2 identify answers were neither 200 nor 503"]
        );
        let leak = drift::evaluate(&[(0, 100), (60, 100), (70, 111 * 1024 * 1024)], 120);
        let failed = verdict(
            Some(Answers::default()),
            Some("socket error".to_owned()),
            &["counts differ".to_owned()],
            &leak,
        );
        assert_eq!(failed.failures.len(), 3, "{:?}", failed.failures);
        assert!(failed.failures[0].contains("stopped before its end: socket error"));
        assert_eq!(failed.failures[1], "counts differ");
        assert!(failed.failures[2].contains("first above the 10 % limit at 70 s"));
        assert_eq!(failed.stopped_early.as_deref(), Some("socket error"));
    }

    #[test]
    fn the_server_and_the_generator_must_agree() {
        let before = Answers {
            status_200: 100,
            status_503: 3,
            other: 0,
        };
        let after = Answers {
            status_200: 108,
            status_503: 5,
            other: 0,
        };
        assert_eq!(disagreement(before, after, &tally(8, 2), 20), None);
        let problem = disagreement(before, after, &tally(7, 2), 20).unwrap();
        assert!(
            problem.contains("ending at 20 s the server answered 8 × 200"),
            "{problem}"
        );
    }

    #[test]
    fn only_the_harness_variables_are_kept_and_urls_are_not_written() {
        let vars = [
            ("JANITOR_BENCHMARK_OUT", "/tmp/x"),
            (
                "JANITOR_BENCHMARK_DATABASE_URL",
                "postgres://user:secret@127.0.0.1/db",
            ),
            ("JANITOR_BENCHMARK_REUSE", ""),
            ("DATABASE_URL", "postgres://elsewhere"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()));
        let kept = environment(vars.into_iter());
        assert_eq!(kept.len(), 2);
        assert_eq!(kept["JANITOR_BENCHMARK_OUT"], "/tmp/x");
        assert_eq!(kept["JANITOR_BENCHMARK_DATABASE_URL"], "(set)");
    }

    /// A report of a short run as `measure` assembles it: two intervals, then a stop.
    fn example() -> SoakReport {
        let settings = SoakSettings::parse(
            &["--minutes", "2", "--rate", "10"].map(str::to_owned),
            &BTreeMap::new(),
        )
        .unwrap();
        let run = HttpRun {
            target: Target {
                url: "postgres://postgres@127.0.0.1:30434/postgres".to_owned(),
                schema: SCHEMA.to_owned(),
            },
            env: settings.env.clone(),
            cookies: PathBuf::from("/nonexistent/cookies.tsv"),
            binary: PathBuf::from("/nonexistent/janitor-capacity"),
            scratch: PathBuf::from("/nonexistent"),
        };
        let plan = Plan {
            output: PathBuf::from("/nonexistent/out"),
            ..Plan::for_settings(&settings)
        };
        let (first, second) = (tally(99, 1), tally(100, 0));
        let mut load = Load {
            samples: vec![
                sample(0, 20 << 20, 0, 0, None),
                sample(10, 21 << 20, 99, 0, Some(&first)),
                sample(20, 21 << 20, 199, 0, Some(&second)),
            ],
            gaps: vec![Duration::from_millis(23)],
            wall: Duration::from_millis(20_023),
            stopped: Some(
                "the load stopped in the interval ending at 30 s: socket error".to_owned(),
            ),
            ..Load::default()
        };
        load.add(&first, &[]);
        load.add(&second, &[]);
        load.latency[0].record(Duration::from_micros(1_500));
        let known = VisitorFixture {
            visitors: 5_000,
            observations_per_visitor: 1,
            seconds: 0.8,
            reused: false,
        };
        let versions = Versions {
            janitor: "0.1.0".to_owned(),
            postgresql: "15.10".to_owned(),
            build: "release".to_owned(),
        };
        let tables = TablesReport {
            start: TableSizes::default(),
            end: None,
        };
        assemble(&run, &plan, known, versions, load, tables)
    }

    #[test]
    fn the_report_serializes_every_part_and_reads_back() {
        let report = example();
        let j = serde_json::to_value(&report).unwrap();
        assert_eq!(j["workload"], "soak");
        assert_eq!(j["command"], "cargo xtask soak --minutes 2 --rate 10");
        assert_eq!(j["settings"]["connections"], 64);
        assert_eq!(j["settings"]["cookie_percent"], 80);
        assert_eq!(j["settings"]["server"]["processes"], 1);
        assert_eq!(j["fixture"]["known"]["visitors"], 5_000);
        assert_eq!(j["fixture"]["distinct_requests_per_interval"], 100);
        // The sample before the load has no interval; the others carry the generator's tally.
        assert_eq!(j["samples"].as_array().unwrap().len(), 3);
        assert_eq!(j["samples"][0]["interval"], serde_json::Value::Null);
        assert_eq!(j["samples"][1]["interval"]["status_503"], 1);
        assert_eq!(j["samples"][2]["answers"]["status_200"], 199);
        assert_eq!(j["samples"][1]["tables"]["observations"]["dead_rows"], 0);
        assert_eq!(j["totals"]["intervals"], 2);
        assert_eq!(
            (
                j["totals"]["status_200"].as_u64(),
                j["totals"]["sent"].as_u64()
            ),
            (Some(199), Some(200))
        );
        assert_eq!(j["totals"]["between_intervals_ms"], 23.0);
        assert_eq!(j["totals"]["answered_per_second"], 10.0);
        assert_eq!(j["totals"]["latency_all"]["raw"]["p99_ms"], 1.5);
        assert_eq!(j["totals"]["latency_all"]["raw"]["samples"], 1);
        assert_eq!(
            j["totals"]["latency_successes"]["raw"],
            serde_json::Value::Null
        );
        assert_eq!(j["totals"]["rss_bytes"]["max"], 21 << 20);
        assert_eq!(j["tables"]["end"], serde_json::Value::Null);
        // Stopped at 20 s of a 2-minute run: the warm-up (60 s) never ended.
        assert_eq!(j["memory"]["warmup_seconds"], 60);
        assert_eq!(j["memory"]["within_limit"], serde_json::Value::Null);
        assert!(j["memory"]["rule"].as_str().unwrap().contains("Why:"));
        assert_eq!(j["verdict"]["passed"], false);
        assert!(j["verdict"]["stopped_early"]
            .as_str()
            .unwrap()
            .contains("socket error"));
        assert!(j["machine"]["cores"].as_u64().unwrap() >= 1);
        let back: SoakReport = serde_json::from_value(j.clone()).unwrap();
        assert_eq!(back, report);
        assert_eq!(serde_json::to_value(&back).unwrap(), j);
    }

    #[test]
    fn the_committed_report_reads_back_unchanged_and_its_verdict_follows_from_its_samples() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../docs/benchmarks")
            .join(REPORT);
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let committed: serde_json::Value = serde_json::from_str(&text).unwrap();
        let report: SoakReport = serde_json::from_value(committed.clone())
            .unwrap_or_else(|e| panic!("{REPORT} does not read as its report type: {e}"));
        assert_eq!(serde_json::to_value(&report).unwrap(), committed);
        let rss: Vec<(u64, u64)> = report
            .samples
            .iter()
            .map(|s| (s.at_seconds, s.rss_bytes))
            .collect();
        let run_seconds = report.settings.minutes * 60;
        assert_eq!(drift::evaluate(&rss, run_seconds), report.memory);
        let last = report.samples.last().map(|s| s.answers);
        let again = verdict(
            last,
            report.verdict.stopped_early.clone(),
            &[],
            &report.memory,
        );
        assert_eq!(again.passed, report.verdict.passed);
        let marks = chart::Marks {
            run_seconds,
            warmup_seconds: report.memory.warmup_seconds,
            baseline_bytes: report.memory.baseline_rss_bytes,
            limit_bytes: report.memory.limit_rss_bytes,
        };
        let svg = chart::svg("committed", &report.samples, marks);
        assert_eq!(svg.matches("<polyline").count(), 5);
    }
}
