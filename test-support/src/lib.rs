//! What this repository's tests and benchmarks run beside the library, kept out of the published crates: a
//! disposable PostgreSQL cluster of a test's own ([`cluster`]), a PgBouncer in front of a server (`pgbouncer`,
//! with the feature of that name), server processes that end with the test process ([`tied`]), loopback ports
//! ([`ports`]), a TCP relay that can silence a server ([`relay`]) and a wire-level HTTP/1.1 client ([`http1`],
//! also the benchmarks' load generator).
//!
//! The library's own fixtures stay with it: `janitor_core::testing` (the behaviour suites every store must pass)
//! and `janitor_sql::testing` (a throwaway schema per test, the seeded population, the stores' statements).

pub mod cluster;
pub mod http1;
#[cfg(feature = "pgbouncer")]
pub mod pgbouncer;
pub mod ports;
pub mod relay;
pub mod tied;
