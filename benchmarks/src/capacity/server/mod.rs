//! The server side of the HTTP workloads: the quick-start stack (janitor-axum on the PostgreSQL store) run as
//! several processes, each on its own port with a control port beside it that reports what the process saw.
//!
//! - [`process`]: one server process (`janitor-capacity serve`).
//! - [`fleet`]: starting, asking and stopping the processes of a run.
//! - [`answer_times`]: how long a process took to answer identify requests, in buckets.
//! - [`host`]: the fleet host (`janitor-capacity serve-fleet`), which starts a run's fleets in a container of
//!   their own.

pub mod answer_times;
pub mod fleet;
pub mod host;
pub mod process;

use janitor_test_support::http1;
use serde::{Deserialize, Serialize};

pub use answer_times::AnswerTimes;
pub use fleet::{Fleet, FleetSettings};
pub use host::serve_fleet;
pub use process::main;

/// The first server port; process `i` serves on `BASE_PORT + i` and reports on `BASE_PORT + CONTROL_OFFSET + i`.
/// Below the kernel's ephemeral range (32768–60999), so no client socket on the machine can hold it already.
pub const BASE_PORT: u16 = 30_500;

/// Distance from a server port to its control port.
pub const CONTROL_OFFSET: u16 = 100;

/// The identify endpoint (the library's default path).
pub const ENDPOINT: &str = "/api/visitor";

/// Checks a slot wait (requests that may wait, and for how long in ms) as the library checks it: each bound
/// in its range, both 0 or both above. The error is the library's, naming its field.
pub fn check_slot_wait(waiting: usize, ms: u64) -> Result<(usize, u64), String> {
    janitor_axum::admission::AdmissionConfig::builder()
        .max_waiting_requests(waiting)
        .slot_wait_ms(ms)
        .build()
        .map(|_| (waiting, ms))
        .map_err(|e| e.to_string())
}

/// The most runtime threads a server process may be given.
pub const MAX_THREADS: usize = 64;

/// The Tokio runtime of a server process with `threads` threads: 1 is a current-thread runtime (the one thread
/// accepts, serves and drives the database connections, so a request and its statement never wake another
/// thread), 0 a multi-thread runtime with one worker per core, more a multi-thread runtime with that many.
pub fn runtime(threads: usize) -> tokio::runtime::Builder {
    match threads {
        1 => tokio::runtime::Builder::new_current_thread(),
        0 => tokio::runtime::Builder::new_multi_thread(),
        n => {
            let mut builder = tokio::runtime::Builder::new_multi_thread();
            builder.worker_threads(n);
            builder
        }
    }
}

/// How a report names [`runtime`]`(threads)`.
pub fn runtime_name(threads: usize) -> String {
    match threads {
        1 => "current_thread".to_owned(),
        0 => "multi_thread, one worker per core".to_owned(),
        n => format!("multi_thread, {n} workers"),
    }
}

/// The cookie-path identify request of a known visitor: its cookie and its payload, as bytes.
pub fn identify_request(visitor: &str, payload: &str) -> Vec<u8> {
    http1::post_json(ENDPOINT, &format!("__visitor={visitor}"), payload)
}

/// Ends this process when its standard input closes: the parent that started it with a pipe there (a run, a
/// test) holds the other end, so when the parent ends, killed or not, so does this process. Needs a tokio
/// runtime.
pub fn exit_with_parent() {
    tokio::spawn(async {
        let mut sink = [0u8; 256];
        let mut stdin = tokio::io::stdin();
        // Whatever arrives is dropped; only the end of the stream counts.
        while tokio::io::AsyncReadExt::read(&mut stdin, &mut sink)
            .await
            .is_ok_and(|n| n > 0)
        {}
        std::process::exit(0);
    });
}

/// Behaviour summaries per known visitor in a request list: consecutive requests of one visitor carry different
/// ones, as a browser's do.
pub const BEHAVIOR_VARIANTS: u64 = 4;

/// The payload janitor.js sends on visit `visit` of a browser whose signals are the payload `payload`: the same
/// signals, and a behaviour summary of its own (the page's age and event counts, which change on almost every
/// page load).
pub fn with_client_behavior(payload: &str, visit: u64) -> Result<String, String> {
    let mut value: serde_json::Value =
        serde_json::from_str(payload).map_err(|e| format!("a cookie payload: {e}"))?;
    let object = value
        .as_object_mut()
        .ok_or("a cookie payload is not a JSON object")?;
    object.insert(
        "behavior".to_owned(),
        serde_json::json!({
            "pageAgeMs": 800 + visit * 1_733 % 60_000,
            "mouseMoveCount": visit * 7 % 300,
            "pointerDownCount": visit % 5,
            "keyDownCount": visit * 3 % 40,
            "scrollCount": visit % 11,
            "visibilityChangeCount": visit % 2,
        }),
    );
    Ok(value.to_string())
}

/// The cookie-path requests of `known` (visitor id, signals payload) as the real client sends them:
/// [`BEHAVIOR_VARIANTS`] per visitor, every visitor once before any repeats, so that a load cycling through
/// them never sends one visitor the same behaviour twice in a row.
pub fn client_requests<'a>(
    known: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
) -> Result<Vec<Vec<u8>>, String> {
    let mut requests = Vec::new();
    for visit in 0..BEHAVIOR_VARIANTS {
        for (visitor, payload) in known.clone() {
            requests.push(identify_request(
                visitor,
                &with_client_behavior(payload, visit)?,
            ));
        }
    }
    Ok(requests)
}

/// The secret every server process of a run shares, as instances of one deployment do.
pub const SECRET: &str = "capacity-run-secret-capacity-run-secret-0123456789abcdef";

/// What one server process counted since it started (`peak_open` since the last reset).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerStats {
    /// The process id.
    pub pid: u32,
    /// The port it serves on.
    pub port: u16,
    /// Connections open now.
    pub open: u64,
    /// Most connections open at once since the last reset.
    pub peak_open: u64,
    /// Connections accepted in all.
    pub accepted: u64,
    /// `GET /ready` answers (warm-ups, not identity work).
    pub ready: u64,
    /// Identify requests answered 200.
    pub completed: u64,
    /// Identify requests refused with 503 (admission full, or the store unavailable).
    pub overloads: u64,
    /// Identify requests answered with any other status.
    pub failures: u64,
    /// Resident memory of the process in bytes.
    pub rss_bytes: u64,
    /// How long the identify requests answered 200 took in the process's app.
    #[serde(default, skip_serializing_if = "AnswerTimes::is_empty")]
    pub completed_times: AnswerTimes,
    /// How long the identify requests refused with 503 took in the process's app (their wait for a slot).
    #[serde(default, skip_serializing_if = "AnswerTimes::is_empty")]
    pub overload_times: AnswerTimes,
}

#[cfg(test)]
mod tests {
    use super::*;
    use janitor_core::VisitorPayload;
    use janitor_sql::testing::population;
    use tokio::runtime::RuntimeFlavor;

    #[test]
    fn the_threads_setting_picks_the_runtime_it_names() {
        for (threads, flavor, workers, name) in [
            (1, RuntimeFlavor::CurrentThread, Some(1), "current_thread"),
            (
                3,
                RuntimeFlavor::MultiThread,
                Some(3),
                "multi_thread, 3 workers",
            ),
            (
                0,
                RuntimeFlavor::MultiThread,
                None,
                "multi_thread, one worker per core",
            ),
        ] {
            let runtime = runtime(threads).enable_all().build().unwrap();
            assert_eq!(runtime.handle().runtime_flavor(), flavor, "{threads}");
            if let Some(workers) = workers {
                assert_eq!(runtime.metrics().num_workers(), workers, "{threads}");
            }
            assert_eq!(runtime_name(threads), name);
        }
    }

    #[test]
    fn client_payloads_keep_the_signals_and_vary_the_behaviour() {
        let seeded = population::payload_json(3).to_string();
        let parse = |text: &str| {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            VisitorPayload::from_value(&value).expect("a valid payload")
        };
        let visits: Vec<VisitorPayload> = (0..BEHAVIOR_VARIANTS)
            .map(|visit| parse(&with_client_behavior(&seeded, visit).unwrap()))
            .collect();
        for (visit, payload) in visits.iter().enumerate() {
            assert_eq!(payload.signals, parse(&seeded).signals, "visit {visit}");
            assert!(payload.behavior.is_some(), "visit {visit}");
        }
        for pair in visits.windows(2) {
            assert_ne!(pair[0].behavior, pair[1].behavior);
        }
        assert!(with_client_behavior("[]", 0).is_err());
    }

    #[test]
    fn client_requests_take_every_visitor_before_a_repeat() {
        let known = [("vis_a", "{\"signals\":{}}"), ("vis_b", "{\"signals\":{}}")];
        let requests = client_requests(known.iter().copied()).unwrap();
        assert_eq!(requests.len() as u64, 2 * BEHAVIOR_VARIANTS);
        let visitor = |r: &[u8]| String::from_utf8_lossy(r).contains("__visitor=vis_a");
        let order: Vec<bool> = requests.iter().map(|r| visitor(r)).collect();
        assert_eq!(&order[..4], [true, false, true, false]);
        assert_ne!(
            requests[0], requests[2],
            "the same visitor, another behaviour"
        );
    }
}
