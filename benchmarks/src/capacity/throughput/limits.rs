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
use crate::capacity::Target;

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
    servers: &[SocketAddr],
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
    let outcome = rounds(target, servers, slots, round_seconds, &replays, requests).await;
    let dropped = pgbench::drop_helper(target).await;
    let (
        samples,
        [identify_rounds, identical_rounds],
        [database_rounds, previous_rounds, alone_rounds],
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

/// The real client's samples, identify successes per second of each round (real, identical), and pgbench's
/// rounds of each replay.
type Rounds = (Vec<Sample>, [Vec<f64>; 2], [Vec<pgbench::Round>; SIDES - 2]);

async fn rounds(
    target: &Target,
    servers: &[SocketAddr],
    slots: usize,
    round_seconds: u64,
    replays: &[Replay; SIDES - 2],
    requests: [Requests; 2],
) -> Result<Rounds, String> {
    let mut connections = generator::open(servers, slots).await?;
    let mut samples = Vec::new();
    let mut identify: [Vec<f64>; 2] = Default::default();
    let mut database: [Vec<pgbench::Round>; SIDES - 2] = Default::default();
    for round in 0..ROUNDS {
        // Rotate which side goes first.
        for step in 0..SIDES {
            let side = (round + step) % SIDES;
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
    Ok((samples, identify, database))
}
