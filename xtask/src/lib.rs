//! Development commands of Janitor for Rust, as a library so that the test suite runs them too.
#![forbid(unsafe_code)]

// Examples on the repository's pages, compiled and run with the doc tests. They live here, outside the
// published crates, because a published crate cannot include a file from outside its own folder.
#[cfg(doctest)]
#[doc = include_str!("../../docs/identity.md")]
struct IdentityGuide;

pub mod accuracy;
pub mod automation;
pub mod capacity;
pub mod cargo;
pub mod conformance;
pub mod docker;
pub mod guide;
pub mod newest;
pub mod provision;
pub mod scratch;
pub mod stuffing;
pub mod tables;
pub mod test;
