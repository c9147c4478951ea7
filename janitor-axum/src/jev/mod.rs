//! The Jev evaluator: an HTTP client for the provider protocol, behind the shared inference budget.
//!
//! The state, questions and answer format come from [`janitor_core::identification::jev`]; this module only sends
//! them. The provider is reached over `https://`, through rustls with the process's crypto provider (ring unless
//! the application installs another), its certificate checked against the system's CA store, or only against the
//! CAs given to [`JevConfigBuilder::root_certificates_pem`] or
//! [`root_certificates_file`](JevConfigBuilder::root_certificates_file). Plain `http://` is accepted only for
//! a loopback host (`127.0.0.0/8`, `::1`, `localhost`), such as a sidecar on the same machine, and refused for
//! any other when the configuration is built.
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
//!         .endpoint("https://jev.example/v1/systemone")
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
mod settings;
mod tls;

use janitor_core::config::ConfigError;
use janitor_core::protection::budget::{
    BudgetConfig, BudgetedEvaluator, BudgetedEvaluatorConfig, InferenceBudget,
};
use janitor_core::Stores;

pub use client::JevEvaluator;
pub use config::{
    JevConfig, JevConfigBuilder, JevConfigError, API_KEY_BYTES, MODEL_BYTES, TIMEOUT_MS,
};
pub use settings::{BudgetSettings, JevSettings};

use crate::handle::JanitorBuilder;

/// The evaluator [`JanitorBuilder::jev`] gives the handle: the Jev provider behind the shared inference budget.
pub type JevBehindBudget<B> = BudgetedEvaluator<JevEvaluator, B>;

impl JanitorBuilder {
    /// The handle asks a Jev provider for risk (and, on the cookieless path, for same-visitor judgements),
    /// through the shared inference budget of its stores. Every refusal or failure falls back to deterministic
    /// matching with `riskStatus: "unavailable"`.
    ///
    /// The budget's lease is sized by the provider's own timeout, so a slow call keeps its slot until it gives
    /// up; a timeout the budget cannot lease for is refused here rather than replaced.
    pub fn jev(self, jev: JevConfig, budget: BudgetConfig) -> Result<Self, ConfigError> {
        let evaluator_config = BudgetedEvaluatorConfig::builder()
            .timeout_ms(jev.timeout_ms())
            .build()?;
        let shared = InferenceBudget::new(self.stores().budget(), budget, &self.config().key);
        let evaluator = BudgetedEvaluator::new(JevEvaluator::new(jev), shared, evaluator_config);
        Ok(self.evaluator(evaluator))
    }
}
