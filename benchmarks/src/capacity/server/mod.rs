//! The server side of the HTTP workloads: the quick-start stack (janitor-axum on the PostgreSQL store) run as
//! several processes, each on its own port with a control port beside it that reports what the process saw.
//!
//! - [`process`]: one server process (`janitor-capacity serve`).
//! - [`fleet`]: starting, asking and stopping the processes of a run.
//! - [`host`]: the fleet host (`janitor-capacity serve-fleet`), which starts a run's fleets in a container of
//!   their own.

pub mod fleet;
pub mod host;
pub mod process;

use janitor_axum::testing::http1;
use serde::{Deserialize, Serialize};

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
}
