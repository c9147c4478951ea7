//! The Jev evaluator: an HTTP client for the provider protocol, behind the shared inference budget.
//!
//! The state, questions and answer format come from [`janitor_core::jev`]; this module only sends them. Plain
//! HTTP only: this build has no TLS client, so an `https://` endpoint is refused when the configuration is
//! built; reach a TLS provider through a local proxy.
//!
//! ```no_run
//! use janitor_axum::jev::{JevConfig, JevEvaluator};
//! use janitor_core::protection::budget::{
//!     BudgetConfig, BudgetedEvaluator, BudgetedEvaluatorConfig, InferenceBudget, MemoryBudgetStore,
//! };
//! use janitor_core::{Engine, EngineConfig, LabelKey, MemoryVisitorStore, Retention};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let jev = JevEvaluator::new(
//!     JevConfig::builder()
//!         .endpoint("http://127.0.0.1:8080/v1/systemone")
//!         .api_key("provider-key")
//!         .timeout_ms(1200)
//!         .build()?,
//! );
//! let key = LabelKey::new(&"s".repeat(32), "shop")?;
//! let budget = InferenceBudget::new(MemoryBudgetStore::new(), BudgetConfig::default(), &key);
//! let options = BudgetedEvaluatorConfig::builder().timeout_ms(1200).build()?;
//! let engine = Engine::new(MemoryVisitorStore::new(Retention::default()), EngineConfig::default())
//!     .with_evaluator(BudgetedEvaluator::new(jev, budget, options));
//! # let _ = engine;
//! # Ok(())
//! # }
//! ```

mod client;
mod config;

pub use client::JevEvaluator;
pub use config::{
    JevConfig, JevConfigBuilder, JevConfigError, API_KEY_BYTES, MODEL_BYTES, TIMEOUT_MS,
};
