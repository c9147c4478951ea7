//! Development commands of Janitor for Rust, as a library so that the test suite runs them too.
#![forbid(unsafe_code)]

pub mod accuracy;
pub mod capacity;
pub mod conformance;
pub mod docker;
pub mod provision;
pub mod test;
