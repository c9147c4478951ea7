//! janitor-core's integration tests, one binary: each module was a test file of its own, and `budget_support` is
//! what the budget modules share. `cargo test -p janitor-core --test integration engine::` runs one module's tests.
//!
//! The self dev-dependency that turns `testing` on is left out of the published crate, where the modules that
//! need it build with `--features testing` only.

#[cfg(feature = "testing")]
mod budget_support;

#[cfg(feature = "testing")]
mod budget;
#[cfg(feature = "testing")]
mod budget_driver;
#[cfg(feature = "testing")]
mod budget_finish;
#[cfg(feature = "testing")]
mod engine;
mod evidence;
#[cfg(feature = "testing")]
mod memory_store;
mod payload_bounds;
mod payload_hostile;
#[cfg(feature = "testing")]
mod policy;
#[cfg(feature = "testing")]
mod quota;
#[cfg(feature = "testing")]
mod store_suites;
