#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod admission;
mod backend;
mod config;
pub mod identify;
mod janitor;
pub mod jev;
mod script;

pub use backend::{Backend, InMemory, Postgres};
pub use config::{
    Environment, JanitorConfig, JanitorConfigBuilder, JanitorConfigError, COOKIE_MAX_AGE_DAYS,
    ENDPOINT_PATH, MAX_BODY_BYTES, MAX_IN_FLIGHT_REQUESTS, REQUEST_TIMEOUT_MS, SCRIPT_PATH,
};
pub use identify::VisitorContext;
pub use janitor::{Assessment, CleanupError, Janitor, JevBehindBudget, Maintenance};
pub use script::{client_script_etag, CLIENT_SCRIPT};
