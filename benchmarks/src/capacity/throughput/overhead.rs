//! The admission layer's own cost: the same trivial route with it (`GET /admitted`, 1,024 slots, never full)
//! and without it (`GET /plain`), closed loop on the same connections, in alternating rounds so that drift of
//! the machine (other processes, frequency) falls on both alike.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::generator::{closed_loop, open, Requests};
use super::samples::{round1, Sample, Tally};
use crate::ms;
use janitor_axum::testing::http1;

/// The trivial route without the admission layer.
pub const PLAIN: &str = "/plain";

/// The same route behind an admission layer.
pub const ADMITTED: &str = "/admitted";

/// Runs `rounds` rounds of `duration` per route on `connections` connections and compares the two.
pub async fn measure(
    servers: &[SocketAddr],
    connections: usize,
    rounds: usize,
    duration: Duration,
) -> Result<Value, String> {
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
        per_round.push(json!({
            "round": round + 1,
            "plain_per_second": round1(rates[0]),
            "admitted_per_second": round1(rates[1]),
        }));
    }
    let [plain, admitted] = all.map(|samples| {
        // Rounds are back to back, so the route's rate is its answers over its rounds' total time.
        let tally = Tally::of(&samples, samples.len() as u64, None);
        let rate = samples.len() as f64 / (duration.as_secs_f64() * rounds as f64);
        (tally, rate)
    });
    let route = |path: &str, (tally, rate): &(Tally, f64)| {
        let latency = tally.all_raw;
        json!({
            "path": path,
            "requests": tally.sent,
            "status_200": tally.ok,
            "status_503": tally.overloaded,
            "requests_per_second": round1(*rate),
            "p50_ms": latency.map(|l| ms(l.summary.median)),
            "p95_ms": latency.map(|l| ms(l.summary.p95)),
            "p99_ms": latency.map(|l| ms(l.summary.p99)),
        })
    };
    let p = |t: &Tally, which: fn(&super::samples::Latency) -> Duration| {
        t.all_raw.map(|l| which(&l).as_secs_f64())
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some((a / b * 1000.0).round() / 1000.0),
        _ => None,
    };
    Ok(json!({
        "connections": connections,
        "rounds": rounds,
        "seconds_per_round_and_route": duration.as_secs_f64(),
        "plain": route(PLAIN, &plain),
        "admitted": route(ADMITTED, &admitted),
        "rounds_detail": per_round,
        "throughput_ratio_admitted_to_plain": ratio(Some(admitted.1), Some(plain.1)),
        "p50_ratio_admitted_to_plain": ratio(
            p(&admitted.0, |l| l.summary.median),
            p(&plain.0, |l| l.summary.median)
        ),
        "p95_ratio_admitted_to_plain": ratio(
            p(&admitted.0, |l| l.summary.p95),
            p(&plain.0, |l| l.summary.p95)
        ),
    }))
}
