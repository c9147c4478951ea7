//! The admission layer's own cost: the same trivial route with it (`GET /admitted`, 1,024 slots, never full)
//! and without it (`GET /plain`), closed loop on the same connections, in alternating rounds so that drift of
//! the machine (other processes, frequency) falls on both alike.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::generator::{closed_loop, open, Requests};
use super::limits::ratio;
use super::samples::{round1, Latency, Sample, Tally};
use crate::ms;
use janitor_test_support::http1;

/// The trivial route without the admission layer.
pub const PLAIN: &str = "/plain";

/// The same route behind an admission layer.
pub const ADMITTED: &str = "/admitted";

/// The comparison as the report gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverheadReport {
    /// Connections of the loops.
    pub connections: usize,
    /// Rounds, each running both routes.
    pub rounds: usize,
    /// Seconds of each route in each round.
    pub seconds_per_round_and_route: f64,
    /// The route without the admission layer.
    pub plain: RouteReport,
    /// The route behind it.
    pub admitted: RouteReport,
    /// Each round's rates.
    pub rounds_detail: Vec<OverheadRound>,
    /// Admitted ÷ plain answers per second.
    pub throughput_ratio_admitted_to_plain: Option<f64>,
    /// Admitted ÷ plain median latency.
    pub p50_ratio_admitted_to_plain: Option<f64>,
    /// Admitted ÷ plain 95th percentile latency.
    pub p95_ratio_admitted_to_plain: Option<f64>,
}

/// One route over every round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteReport {
    /// The route.
    pub path: String,
    /// Requests answered.
    pub requests: u64,
    /// Answered 200.
    pub status_200: u64,
    /// Answered 503.
    pub status_503: u64,
    /// Answers per second over its rounds' time.
    pub requests_per_second: f64,
    /// Median latency.
    pub p50_ms: Option<f64>,
    /// 95th percentile latency.
    pub p95_ms: Option<f64>,
    /// 99th percentile latency.
    pub p99_ms: Option<f64>,
}

/// One round's rates of both routes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverheadRound {
    /// The round, from 1.
    pub round: usize,
    /// `GET /plain` answers per second.
    pub plain_per_second: f64,
    /// `GET /admitted` answers per second.
    pub admitted_per_second: f64,
}

/// Runs `rounds` rounds of `duration` per route on `connections` connections and compares the two.
pub async fn measure(
    servers: &[SocketAddr],
    connections: usize,
    rounds: usize,
    duration: Duration,
) -> Result<OverheadReport, String> {
    let mut pool = open(servers, connections).await?;
    let mut all: [Vec<Sample>; 2] = [Vec::new(), Vec::new()];
    let mut per_round = Vec::new();
    for round in 0..rounds {
        // Alternate which route goes first, so neither always runs on a warmer machine.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        let mut rates = [0.0; 2];
        for route in order {
            let path = [PLAIN, ADMITTED][route];
            let requests: Requests = Arc::new(vec![http1::get(path)]);
            let (back, samples) = closed_loop(pool, requests, duration).await?;
            pool = back;
            rates[route] = Tally::of(&samples, samples.len() as u64, None).answers_per_second();
            all[route].extend(samples);
        }
        per_round.push(OverheadRound {
            round: round + 1,
            plain_per_second: round1(rates[0]),
            admitted_per_second: round1(rates[1]),
        });
    }
    let [plain, admitted] = all.map(|samples| {
        // Rounds are back to back, so the route's rate is its answers over its rounds' total time.
        let tally = Tally::of(&samples, samples.len() as u64, None);
        let rate = samples.len() as f64 / (duration.as_secs_f64() * rounds as f64);
        (tally, rate)
    });
    let route = |path: &str, (tally, rate): &(Tally, f64)| {
        let latency = tally.all_raw;
        RouteReport {
            path: path.to_owned(),
            requests: tally.sent,
            status_200: tally.ok,
            status_503: tally.overloaded,
            requests_per_second: round1(*rate),
            p50_ms: latency.map(|l| ms(l.summary.median)),
            p95_ms: latency.map(|l| ms(l.summary.p95)),
            p99_ms: latency.map(|l| ms(l.summary.p99)),
        }
    };
    // A ratio of latencies, where both routes have some.
    let latency_ratio = |which: fn(&Latency) -> Duration| {
        let of = |t: &Tally| t.all_raw.map(|l| which(&l).as_secs_f64());
        ratio(of(&admitted.0)?, of(&plain.0)?)
    };
    Ok(OverheadReport {
        connections,
        rounds,
        seconds_per_round_and_route: duration.as_secs_f64(),
        plain: route(PLAIN, &plain),
        admitted: route(ADMITTED, &admitted),
        rounds_detail: per_round,
        throughput_ratio_admitted_to_plain: ratio(admitted.1, plain.1),
        p50_ratio_admitted_to_plain: latency_ratio(|l| l.summary.median),
        p95_ratio_admitted_to_plain: latency_ratio(|l| l.summary.p95),
    })
}
