//! janitor-sql's integration tests, one binary: each module was a test file of its own, and `common` is what
//! the tests that break connections on purpose share. `cargo test -p janitor-sql --test integration plans::`
//! runs one module's tests.
//!
//! The self dev-dependency that turns `testing` on is left out of the published crate, where the modules that
//! need it build with `--features testing` only; other features gate the modules that need them. The modules
//! that run the repository's unpublished janitor-test-support (a cluster of their own, PgBouncer) need
//! `repository-tests`, which only the repository's own build turns on.
//!
//! The tests share one process: none installs a global metrics recorder or tracing subscriber (a test that reads
//! them sets its thread's own) or sets an environment variable.

#[cfg(feature = "testing")]
mod common;

#[cfg(feature = "testing")]
mod budget;
#[cfg(feature = "testing")]
mod connect_errors;
#[cfg(feature = "testing")]
mod directory;
#[cfg(feature = "testing")]
mod engine;
#[cfg(feature = "testing")]
mod erasure_race;
#[cfg(feature = "testing")]
mod evidence;
#[cfg(feature = "testing")]
mod evidence_plans;
#[cfg(feature = "testing")]
mod lookup_plans;
#[cfg(feature = "testing")]
mod lookup_read;
#[cfg(all(feature = "testing", feature = "metrics"))]
mod metrics;
#[cfg(feature = "testing")]
mod migrations;
#[cfg(feature = "testing")]
mod not_migrated;
#[cfg(feature = "repository-tests")]
mod pgbouncer;
#[cfg(feature = "testing")]
mod plans;
#[cfg(feature = "testing")]
mod quota;
#[cfg(feature = "repository-tests")]
mod replica;
#[cfg(feature = "testing")]
mod store_suites;
#[cfg(all(feature = "repository-tests", feature = "tls"))]
mod tls;
#[cfg(feature = "testing")]
mod unavailable;
mod url_refusals;
