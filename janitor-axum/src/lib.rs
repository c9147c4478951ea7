#![doc = include_str!("lib.md")]
#![forbid(unsafe_code)]

// The README is what crates.io shows: plain Markdown, no rustdoc links or hidden lines. Its example is compiled
// here so that it stays true.
#[cfg(all(doctest, feature = "serve"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod admission;
#[cfg(all(feature = "postgres", feature = "serve"))]
#[doc = include_str!("guide.md")]
pub mod guide {}
mod config;
mod dyn_janitor;
mod identify;
mod identity;
mod janitor;
#[cfg(feature = "jev")]
pub mod jev;
mod maintenance;
mod origin;
mod refusal;
mod script;
#[cfg(feature = "serve")]
pub mod serve;
mod telemetry;

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
pub use dyn_janitor::DynJanitor;
pub use identify::learning::{LearningContext, LEARNING_COOKIE_NAME};
pub use identify::VisitorContext;
pub use identity::{
    ClearVisitorCookie, ContextFn, Identified, IdentityLayer, IdentityService,
    MissingIdentityLayer, VisitorField, VisitorIdentity, PAYLOAD_FIELD,
};
pub use janitor::{Assessment, CleanupError, Janitor, KeyCheckError, Maintenance};
pub use janitor_core::{KeyCheck, MemoryStores, Stores};
#[cfg(feature = "postgres")]
pub use janitor_sql::PgStores;

// What an application uses of the other two crates, so that `janitor-axum` is its one dependency.
pub use janitor_core::config::EnvSource;
pub use janitor_core::erasure::{AccountErasure, ErasureError};
pub use janitor_core::evidence::{
    Action, ActivityKey, ActivitySummary, EventInput, EventType, Recorded, SubjectId, VelocityQuery,
};
pub use janitor_core::protection::quota::QuotaConfig;
pub use janitor_core::{
    directory, evidence, identification, learning, protection, Evaluator, Identity, MatchingPolicy,
    NoEvaluator, RiskStatus, StoreError, VisitorId, VisitorPayload,
};
/// The PostgreSQL stores (`janitor-sql`): the pool, its configuration, the migrations.
#[cfg(feature = "postgres")]
pub use janitor_sql as postgres;
#[cfg(feature = "postgres")]
pub use janitor_sql::{migrate, Database, DatabaseConfig, MigrationReport, SetupError};
#[cfg(feature = "jev")]
pub use jev::JevBehindBudget;
pub use maintenance::{
    MaintenanceSchedule, MaintenanceTask, MAINTENANCE_EVERY_MS, MAINTENANCE_STEPS,
};
pub use origin::{OriginLayer, OriginService};
pub use refusal::{security_headers, Refusal, RouteRefusal};
pub use script::{client_script_etag, CLIENT_SCRIPT};
