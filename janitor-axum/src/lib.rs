#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

pub mod admission;
mod config;
mod identify;
mod identity;
mod janitor;
#[cfg(feature = "jev")]
pub mod jev;
mod maintenance;
mod refusal;
mod script;
#[cfg(feature = "serve")]
pub mod serve;
mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;

pub use config::{
    known_env_variables, unknown_env_variables, warn_unknown_env, UnknownEnvVariable,
};
pub use config::{
    AdmissionConfig, AdmissionSettings, CookieConfig, CookieConfigBuilder, CookieSettings,
    EndpointConfig, EndpointConfigBuilder, EndpointSettings, Environment, EvidenceSettings,
    JanitorConfig, JanitorConfigBuilder, JanitorConfigError, JanitorSettings, OriginConfig,
    OriginConfigBuilder, OriginError, OriginSettings, ProxyRange, ProxyRangeError, PublicOrigin,
    QuotaSettings, COOKIE_MAX_AGE_DAYS, ENDPOINT_PATH, MAX_BODY_BYTES, MAX_ORIGIN_ENTRIES,
    REQUEST_TIMEOUT_MS, SCRIPT_PATH,
};
pub use identify::learning::{LearningContext, LEARNING_COOKIE_NAME};
pub use identify::VisitorContext;
pub use identity::{Identified, IdentityLayer, IdentityService, VisitorIdentity, PAYLOAD_FIELD};
pub use janitor::{Assessment, CleanupError, Janitor, KeyCheckError, Maintenance};
pub use janitor_core::{KeyCheck, MemoryStores, Stores};
#[cfg(feature = "postgres")]
pub use janitor_sql::PgStores;
#[cfg(feature = "jev")]
pub use jev::JevBehindBudget;
pub use maintenance::{
    MaintenanceSchedule, MaintenanceTask, MAINTENANCE_EVERY_MS, MAINTENANCE_STEPS,
};
pub use refusal::{security_headers, Refusal};
pub use script::{client_script_etag, CLIENT_SCRIPT};
