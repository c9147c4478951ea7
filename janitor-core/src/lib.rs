#![doc = include_str!("lib.md")]
#![forbid(unsafe_code)]

// The README is what crates.io shows: plain Markdown, no rustdoc links or hidden lines. Its example is compiled
// here so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod automation;
pub mod clock;
pub mod config;
pub mod directory;
pub mod erasure;
mod error;
pub mod evidence;
pub mod identification;
mod js;
pub mod label;
pub mod learning;
pub mod protection;
pub mod stores;
#[cfg(feature = "testing")]
pub mod testing;
pub mod throttle;
pub mod visitor;

pub use clock::Clock;
pub use config::{ConfigError, Limit};
pub use error::StoreError;
pub use identification::config::{EngineConfig, Retention};
pub use identification::engine::{
    now_ms, Engine, Identification, IdentifyError, IdentifyRequest, Identity, Risk, RiskStatus,
};
pub use identification::evaluator::{
    Evaluation, EvaluationInput, Evaluator, EvaluatorError, NoEvaluator,
};
pub use identification::observation::Observation;
pub use identification::payload::{PayloadError, VisitorPayload};
pub use identification::policy::MatchingPolicy;
pub use identification::store::{
    MemoryVisitorStore, VisitorStore, DEFAULT_MAX_BYTES, DEFAULT_MAX_VISITORS,
};
pub use label::{EvidenceKey, LabelError, LabelKey, ProtectionKey};
pub use stores::{ErasedStores, KeyCheck, MemoryStores, Stores, StoresKind};
pub use visitor::{visitor_from_cookies, VisitorId};
