//! What tests and load generators of the HTTP edge share (feature `testing`): a wire-level HTTP/1.1 client.
//!
//! The store fixtures and suites are in `janitor_core::testing` and `janitor_sql::testing`.

pub mod http1;
