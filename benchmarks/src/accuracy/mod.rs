//! The accuracy benchmark: how well identification recognises returning browsers that lost their cookie.
//!
//! A visit log from the population generator (`benchmarks/accuracy/`) is replayed in time order through the
//! engine on the in-memory store, with each visit's own time, under a matching policy and a cookie scenario.
//! An id belongs to the device it was minted for; a restore is correct when the restored id is this device's.
//! `cargo xtask benchmark-accuracy LOG` runs it; docs/accuracy.md gives the results.

pub mod log;
pub mod replay;
pub mod report;

pub use replay::{replay, Scenario, SignalSet};
pub use report::{Figures, Report};
