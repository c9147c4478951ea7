//! What the test files share: running a scenario on both stores, a real server and a wire-level client, the
//! local Jev provider, and the headless browser. Each test file uses its own subset.
#![allow(dead_code, unused_imports, unused_macros)]

pub mod browser;
// The wire-level client is the repository's unpublished janitor-test-support's.
#[cfg(feature = "repository-tests")]
pub mod load;
#[cfg(feature = "jev")]
pub mod provider;
pub mod stores;
#[cfg(feature = "repository-tests")]
pub mod wire;

use janitor_axum::config::JanitorConfigBuilder;
use janitor_axum::JanitorConfig;

/// The secret every test handle uses.
pub const SECRET: &str = "7c1e9a24f0b35d86e2a4c7f190b3d5e8";

/// A production configuration with the test secret in `namespace`.
pub fn config(namespace: &str) -> JanitorConfigBuilder {
    JanitorConfig::builder().secret(SECRET).namespace(namespace)
}
