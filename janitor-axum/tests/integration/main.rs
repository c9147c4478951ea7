//! janitor-axum's integration tests, one binary: each module was a test file of its own, and `common` is what
//! they share. `cargo test -p janitor-axum --test integration serve::` runs one module's tests.
//!
//! The self dev-dependency that turns `testing` on is left out of the published crate, where the modules that
//! need it build with `--features testing` only; other features gate the modules that need them. The modules
//! that run the repository's unpublished janitor-test-support (the wire-level client of `common::wire`, a
//! cluster of their own, nginx under a process tie) need `repository-tests`, which only the repository's own
//! build turns on.
//!
//! The tests share one process: none installs a global metrics recorder or tracing subscriber (a test that reads
//! them sets its thread's own) or sets an environment variable, and a warning the library gives once per process
//! is brought about by one module only (`proxy` checks one).

#[cfg(feature = "testing")]
mod common;
/// The sign-in example's routes, compiled here as they are, for `browser`, `login` and `nginx`.
#[cfg(feature = "testing")]
#[path = "../../examples/login/app.rs"]
#[allow(dead_code)]
mod login_example;

#[cfg(feature = "repository-tests")]
mod admission;
#[cfg(feature = "repository-tests")]
mod admission_release;
#[cfg(feature = "testing")]
mod browser;
#[cfg(feature = "testing")]
mod directory;
#[cfg(feature = "testing")]
mod erasure;
#[cfg(all(feature = "metrics", feature = "jev", feature = "serve"))]
mod examples_config;
#[cfg(feature = "repository-tests")]
mod extended;
#[cfg(all(feature = "repository-tests", feature = "postgres", feature = "serve"))]
mod failover;
#[cfg(all(feature = "repository-tests", feature = "postgres", feature = "serve"))]
mod faults;
#[cfg(all(feature = "repository-tests", feature = "serve"))]
mod hostile_http;
#[cfg(feature = "testing")]
mod identify;
#[cfg(feature = "repository-tests")]
mod identify_overload;
#[cfg(feature = "testing")]
mod identity;
#[cfg(all(feature = "testing", feature = "jev"))]
mod jev;
#[cfg(all(feature = "testing", feature = "jev"))]
mod jev_engine;
#[cfg(all(feature = "testing", feature = "postgres"))]
mod key_check;
#[cfg(feature = "testing")]
mod learning;
#[cfg(feature = "repository-tests")]
mod login;
#[cfg(feature = "testing")]
mod maintenance;
#[cfg(feature = "repository-tests")]
mod memory_flood;
#[cfg(feature = "repository-tests")]
mod network;
#[cfg(feature = "repository-tests")]
mod nginx;
#[cfg(feature = "repository-tests")]
mod proxy;
#[cfg(feature = "testing")]
mod script;
#[cfg(all(feature = "repository-tests", feature = "serve"))]
mod serve;
#[cfg(all(feature = "repository-tests", feature = "serve"))]
mod serve_http1;
// Runs this binary again as the server it sends SIGTERM to.
#[cfg(all(unix, feature = "serve"))]
mod shutdown;
#[cfg(feature = "repository-tests")]
mod slow_bodies;
#[cfg(all(feature = "repository-tests", feature = "serve"))]
mod slow_readers;
#[cfg(all(
    feature = "testing",
    feature = "metrics",
    feature = "jev",
    feature = "postgres"
))]
mod telemetry;
