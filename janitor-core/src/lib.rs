#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod candidates;
pub mod config;
pub mod decision;
pub mod engine;
pub mod evaluator;
pub mod evidence;
pub mod jev;
pub mod label;
pub mod observation;
pub mod payload;
pub mod protection;
pub mod similarity;
pub mod store;
pub mod visitor;

pub use config::{ConfigError, EngineConfig, Retention};
pub use engine::{Engine, Identification, IdentifyError, Identity, Risk, RiskStatus};
pub use evaluator::{Evaluation, EvaluationInput, Evaluator, EvaluatorError, NoEvaluator};
pub use label::{EvidenceKey, LabelError, LabelKey, ProtectionKey};
pub use observation::Observation;
pub use payload::{PayloadError, VisitorPayload};
pub use store::{MemoryVisitorStore, StoreError, VisitorStore};
pub use visitor::{visitor_from_cookies, VisitorId};
