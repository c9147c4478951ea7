//! The identify rate beside the database's own limit for the same statements: a closed loop of identify
//! requests with every database connection of the fleet busy — as the real client sends them (a new behaviour
//! summary on every visit), and with the seeded payload re-sent unchanged — and pgbench replaying the statements
//! at the same concurrency — the current design's after a helper round trip, the previous design's the same
//! way, and the current statement alone — in rotating rounds so that changes in the machine's load fall on all
//! five alike.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::generator::{self, Requests};
use super::pgbench::{self, Design, PgbenchReport, Pick, Replay, Visitor};
use super::samples::{round1, Sample, Tally, TallyReport};
use crate::capacity::run::HttpRun;
use crate::capacity::server::FleetSettings;
use crate::capacity::{cpu, Target};

/// Rounds of each side.
pub const ROUNDS: usize = 3;

/// What the two sides measured.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The closed-loop identify figures.
    pub identify: IdentifyLimit,
    /// pgbench's figures on the current design's statements.
    pub database: PgbenchReport,
    /// pgbench's figures on the previous design's statements.
    pub database_previous: PgbenchReport,
    /// pgbench's figures on the current statement alone: its own limit.
    pub database_alone: PgbenchReport,
    /// Identify successes per second over all rounds.
    pub identify_per_second: f64,
    /// The same with the seeded payload re-sent unchanged.
    pub identical_per_second: f64,
}

/// The closed-loop identify maximum, as the report gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdentifyLimit {
    /// How the loop ran.
    pub what: String,
    /// Connections: one per admission slot of the fleet.
    pub connections: usize,
    /// Database connections of the fleet.
    pub database_connections: usize,
    /// Rounds of each side.
    pub rounds: usize,
    /// Seconds of each round.
    pub seconds_per_round: u64,
    /// Every round's requests together (rates over the rounds' whole time).
    pub result: TallyReport,
    /// Each round beside pgbench's.
    pub per_round: Vec<LimitRound>,
    /// CPU per operation of each side over every round (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<LimitCpu>,
}

/// Where each side's CPU went, per operation: what decides how many operations the shared cores allow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitCpu {
    /// How it was read.
    pub what: String,
    /// Each side, in the order of [`SIDE_NAMES`].
    pub sides: Vec<SideCpu>,
}

/// One side's CPU per operation (an identification or a pgbench transaction), in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideCpu {
    /// The side.
    pub side: String,
    /// Operations over every round.
    pub operations: u64,
    /// Operations per second over every round.
    pub per_second: f64,
    /// The database cluster's CPU per operation (absent when the cluster is not on this machine).
    pub database_ms: Option<f64>,
    /// The server processes' CPU per operation (identify sides, when the servers are this run's children).
    pub servers_ms: Option<f64>,
    /// The client's CPU per operation: the load generator's for identify, pgbench's for pgbench.
    pub client_ms: f64,
}

/// The sides, in the order they are measured and reported.
pub const SIDE_NAMES: [&str; SIDES] = [
    "identify, as janitor.js sends",
    "identify, the seeded payload re-sent unchanged",
    "pgbench, current statement after a helper round trip",
    "pgbench, previous two statements after a helper round trip",
    "pgbench, current statement alone",
];

fn cpu_per_operation(
    spent: &[Vec<cpu::Spent>; SIDES],
    operations: [u64; SIDES],
    seconds: u64,
) -> Option<LimitCpu> {
    let mut sides = Vec::with_capacity(SIDES);
    for (i, name) in SIDE_NAMES.iter().enumerate() {
        let total = cpu::Spent::total(&spent[i])?;
        let per = |d: std::time::Duration| {
            (d.as_secs_f64() * 1e3 / operations[i].max(1) as f64 * 1e4).round() / 1e4
        };
        let identify = i < 2;
        sides.push(SideCpu {
            side: (*name).to_owned(),
            operations: operations[i],
            per_second: round1(operations[i] as f64 / seconds.max(1) as f64),
            database_ms: total.database.map(per),
            servers_ms: total.servers.filter(|_| identify).map(per),
            client_ms: per(if identify {
                total.harness
            } else {
                total.harness_children
            }),
        });
    }
    Some(LimitCpu {
        what: "user and system CPU time from /proc over each side's rounds (10 ms ticks), divided by the \
               side's operations: the database cluster (postmaster, its sessions, and those it reaped), the \
               server processes, and the client (this harness's own time while the generator ran; the \
               reaped pgbench's while pgbench ran). The cores are shared, so a side's rate is bounded by the \
               sum of its parts' CPU per operation"
            .to_owned(),
        sides,
    })
}

/// One round of each side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitRound {
    /// Identify successes per second.
    pub identify_per_second: f64,
    /// pgbench transactions per second on the current design's statements.
    pub pgbench_tps: f64,
    /// The first ÷ the second.
    pub ratio: Option<f64>,
    /// pgbench transactions per second on the previous design's statements.
    pub pgbench_previous_tps: f64,
    /// The current design's pgbench tps ÷ the previous design's.
    pub design_ratio: Option<f64>,
    /// pgbench transactions per second on the current statement alone (absent in older reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pgbench_alone_tps: Option<f64>,
    /// Identify successes per second ÷ the statement alone's tps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio_alone: Option<f64>,
    /// Identify successes per second with the seeded payload re-sent unchanged (absent in older reports, whose
    /// identify requests were all of that kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identical_per_second: Option<f64>,
    /// Identify as the real client sends it ÷ the identical payload's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_to_identical: Option<f64>,
}

/// Runs [`ROUNDS`] rounds of `seconds / ROUNDS` (at least 1 s) per side: identify on one connection per
/// admission slot of `fleet`, spread over `servers`, and pgbench on as many connections as the fleet's pools
/// hold, in the run's schema.
pub async fn measure(
    run: &HttpRun,
    (servers, server_pids): (&[SocketAddr], Vec<u64>),
    fleet: FleetSettings,
    seconds: u64,
    visitors: &[Visitor],
    requests: [Requests; 2],
) -> Result<Limits, String> {
    let slots = fleet.workers as usize * fleet.max_in_flight;
    let database_connections = fleet.workers as usize * fleet.pool;
    let target = &run.target;
    let round_seconds = (seconds / ROUNDS as u64).max(1);
    let replay = |design, pick| {
        Replay::new(
            (design, pick),
            visitors.len(),
            database_connections,
            round_seconds,
            &run.scratch,
        )
    };
    let replays = [
        replay(Design::Refreshing, Pick::RoundTrip).await?,
        replay(Design::Previous, Pick::RoundTrip).await?,
        replay(Design::Refreshing, Pick::InStatement).await?,
    ];
    pgbench::create_helper(target, visitors).await?;
    let meter = cpu::Meter::new(cpu::postmaster_of(target).await, server_pids);
    let outcome = rounds(
        target,
        (servers, &meter),
        slots,
        round_seconds,
        &replays,
        requests,
    )
    .await;
    let dropped = pgbench::drop_helper(target).await;
    let (
        samples,
        [identify_rounds, identical_rounds],
        [database_rounds, previous_rounds, alone_rounds],
        spent,
    ) = outcome?;
    dropped?;

    let run_time = Duration::from_secs(round_seconds * ROUNDS as u64);
    let tally = Tally::of(&samples, samples.len() as u64, None);
    let identify_per_second = tally.ok as f64 / run_time.as_secs_f64();
    let identical_per_second = identical_rounds.iter().sum::<f64>() / ROUNDS as f64;
    let database = replays[0].report(target, &database_rounds);
    let database_previous = replays[1].report(target, &previous_rounds);
    let database_alone = replays[2].report(target, &alone_rounds);
    let per_round = per_round(
        [&identify_rounds, &identical_rounds],
        [&database_rounds, &previous_rounds, &alone_rounds],
    );
    let operations = {
        let identified =
            |rounds: &[f64]| (rounds.iter().sum::<f64>() * round_seconds as f64).round();
        let transactions =
            |rounds: &[pgbench::Round]| rounds.iter().map(|r| r.output.transactions).sum::<u64>();
        [
            identified(&identify_rounds) as u64,
            identified(&identical_rounds) as u64,
            transactions(&database_rounds),
            transactions(&previous_rounds),
            transactions(&alone_rounds),
        ]
    };
    let cpu = cpu_per_operation(&spent, operations, ROUNDS as u64 * round_seconds);
    let mut result = tally.report();
    result.completed_per_second = round1(identify_per_second);
    result.overloads_per_second = round1(tally.overloaded as f64 / run_time.as_secs_f64());
    Ok(Limits {
        identify: IdentifyLimit {
            what: "closed loop of identify requests on one connection per admission slot of the fleet, \
                 spread evenly, so no request waits for a slot and the database sees the fleet's whole pool; \
                 each request as janitor.js sends it (the seeded signals, a new behaviour summary on every \
                 visit); per_round also gives the same loop with the seeded payload re-sent unchanged"
                .to_owned(),
            connections: slots,
            database_connections,
            rounds: ROUNDS,
            seconds_per_round: round_seconds,
            result,
            per_round,
            cpu,
        },
        database,
        database_previous,
        database_alone,
        identify_per_second,
        identical_per_second,
    })
}

/// Each round of every side side by side: identify (real, identical) against each replay.
fn per_round(
    [identify, identical]: [&[f64]; 2],
    [database, previous, alone]: [&[pgbench::Round]; SIDES - 2],
) -> Vec<LimitRound> {
    (0..identify.len())
        .map(|i| {
            let tps = |rounds: &[pgbench::Round]| rounds[i].output.tps;
            let (real, same) = (identify[i], identical[i]);
            LimitRound {
                identify_per_second: round1(real),
                pgbench_tps: round1(tps(database)),
                ratio: ratio(real, tps(database)),
                pgbench_previous_tps: round1(tps(previous)),
                design_ratio: ratio(tps(database), tps(previous)),
                pgbench_alone_tps: Some(round1(tps(alone))),
                ratio_alone: ratio(real, tps(alone)),
                identical_per_second: Some(round1(same)),
                real_to_identical: ratio(real, same),
            }
        })
        .collect()
}

/// `a ÷ b` to three decimals, when `b` is positive.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| (a / b * 1000.0).round() / 1000.0)
}

/// Sides of a round: identify as the real client sends it, identify with the identical payload, then each
/// replay.
const SIDES: usize = 5;

/// The real client's samples, identify successes per second of each round (real, identical), pgbench's
/// rounds of each replay, and the CPU each side's rounds spent.
type Rounds = (
    Vec<Sample>,
    [Vec<f64>; 2],
    [Vec<pgbench::Round>; SIDES - 2],
    [Vec<cpu::Spent>; SIDES],
);

async fn rounds(
    target: &Target,
    (servers, meter): (&[SocketAddr], &cpu::Meter),
    slots: usize,
    round_seconds: u64,
    replays: &[Replay; SIDES - 2],
    requests: [Requests; 2],
) -> Result<Rounds, String> {
    let mut connections = generator::open(servers, slots).await?;
    let mut samples = Vec::new();
    let mut identify: [Vec<f64>; 2] = Default::default();
    let mut database: [Vec<pgbench::Round>; SIDES - 2] = Default::default();
    let mut spent: [Vec<cpu::Spent>; SIDES] = Default::default();
    for round in 0..ROUNDS {
        // Rotate which side goes first.
        for step in 0..SIDES {
            let side = (round + step) % SIDES;
            let before = meter.read();
            if side < 2 {
                let time = Duration::from_secs(round_seconds);
                let (back, mut got) =
                    generator::closed_loop(connections, requests[side].clone(), time).await?;
                connections = back;
                let ok = got.iter().filter(|s| s.status == 200).count();
                identify[side].push(ok as f64 / time.as_secs_f64());
                if side == 0 {
                    samples.append(&mut got);
                }
            } else {
                database[side - 2].push(replays[side - 2].run(target).await?);
            }
            spent[side].push(meter.read().since(&before));
        }
        println!(
            "throughput: limits round {}: identify {:.0}/s (identical payload {:.0}/s), pgbench {:.0} tps \
             (previous design {:.0} tps, the statement alone {:.0} tps)",
            round + 1,
            identify[0][round],
            identify[1][round],
            database[0][round].output.tps,
            database[1][round].output.tps,
            database[2][round].output.tps
        );
    }
    Ok((samples, identify, database, spent))
}
