//! The HTTP edge of Janitor for axum: the admission layer, the identify endpoint, private assessment for server
//! code, and the Jev evaluator client.
#![forbid(unsafe_code)]

pub mod admission;
pub mod jev;
