//! What the verdict costs: the identify requests the browsers sent, replayed in process through a handle with
//! the verdict on and one with it off, alternating (on, off, off, on, ...), on one thread whose CPU time is read
//! from the kernel; and the bytes the client's automation part adds to a page.

use std::io::Write as _;

use axum::body::Body;
use axum::extract::Request;
use serde::Serialize;

use super::server::{janitor, Captured};

/// The cost figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Cost {
    /// Distinct identify requests the browsers sent, replayed in turn.
    pub requests: usize,
    /// Identifications per handle per round.
    pub identifications_per_round: usize,
    /// Rounds (each replays every request through both handles).
    pub rounds: usize,
    /// Median CPU microseconds per identification, verdict on.
    pub cpu_us_on: f64,
    /// Median CPU microseconds per identification, verdict off.
    pub cpu_us_off: f64,
    /// Median over rounds of (on − off) per identification, microseconds.
    pub cpu_us_added: f64,
    /// `janitor-automation.js` as served, bytes.
    pub client_part_bytes: usize,
    /// The same, gzip level 9, bytes.
    pub client_part_gzip_bytes: usize,
}

/// This thread's CPU time in nanoseconds (the first field of /proc/thread-self/schedstat).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

/// Identifications per handle per round: the kernel adds a thread's CPU time up at scheduler ticks (every few
/// milliseconds), so a round runs long enough for a tick's error to stay small.
const PER_ROUND: usize = 5_000;

/// CPU nanoseconds one fresh handle spends identifying the requests, over and over, [`PER_ROUND`] times.
async fn replay(requests: &[Captured], verdict: bool) -> u64 {
    let handle = janitor(verdict);
    let started = thread_cpu_ns();
    for captured in requests.iter().cycle().take(PER_ROUND) {
        let mut request = Request::new(Body::from(captured.body.clone()));
        *request.method_mut() = axum::http::Method::POST;
        *request.uri_mut() = super::server::ENDPOINT.parse().expect("a path");
        *request.headers_mut() = captured.headers.clone();
        let assessment = handle.assess(request).await;
        std::hint::black_box(assessment.identity);
    }
    thread_cpu_ns() - started
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return 0.0;
    }
    let m = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (m * 1000.0).round() / 1000.0
}

/// Replays `requests` for `rounds` rounds. Must run on a current-thread runtime, so that the thread's CPU time
/// is the identifications'.
pub async fn measure(requests: &[Captured], rounds: usize) -> Cost {
    if requests.is_empty() {
        return Cost::default();
    }
    let n = PER_ROUND as f64;
    let (mut on, mut off, mut added) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..rounds {
        // A B B A: neither side always runs first on a warm cache.
        let (a, b) = if round % 2 == 0 {
            let a = replay(requests, true).await;
            (a, replay(requests, false).await)
        } else {
            let b = replay(requests, false).await;
            (replay(requests, true).await, b)
        };
        on.push(a as f64 / n / 1000.0);
        off.push(b as f64 / n / 1000.0);
        added.push((a as f64 - b as f64) / n / 1000.0);
    }
    let part = janitor_axum::script::AUTOMATION_SCRIPT;
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gzip.write_all(part.as_bytes()).expect("in memory");
    Cost {
        requests: requests.len(),
        identifications_per_round: PER_ROUND,
        rounds,
        cpu_us_on: median(on),
        cpu_us_off: median(off),
        cpu_us_added: median(added),
        client_part_bytes: part.len(),
        client_part_gzip_bytes: gzip.finish().expect("in memory").len(),
    }
}
