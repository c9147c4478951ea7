#![doc = include_str!("lib.md")]
#![forbid(unsafe_code)]

// The README is what crates.io shows: plain Markdown, no rustdoc links or hidden lines. Its example is compiled
// here so that it stays true.
#[cfg(all(doctest, feature = "serve"))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod admission;
pub mod config;
#[cfg(all(feature = "postgres", feature = "serve"))]
#[doc = include_str!("guide.md")]
pub mod guide {}
mod endpoint;
pub mod handle;
#[cfg(feature = "jev")]
pub mod jev;
pub mod maintenance;
pub mod origin;
pub mod refusal;
pub mod script;
#[cfg(feature = "serve")]
pub mod serve;
mod setup;
pub mod signin;
mod telemetry;
pub mod visitor;

// The root holds what an application names to start and to serve; the rest is behind its module, one path
// per item.
pub use config::{JanitorConfig, JanitorSettings};
pub use endpoint::VisitorContext;
pub use handle::Janitor;
pub use janitor_core::{Identity, MemoryStores, VisitorId, VisitorPayload};
pub use origin::OriginLayer;
pub use refusal::Refusal;
pub use setup::{SetupError, SetupErrorKind};
pub use visitor::{IdentifiedVisitor, Visitor, VisitorLayer};

// The core's services and their types, so that `janitor-axum` is an application's one dependency.
pub use janitor_core::{
    automation, directory, erasure, evidence, identification, learning, protection,
};

/// The PostgreSQL stores (`janitor-sql`): the pool (`Database`), its configuration, the migrations and the
/// `PgStores` family.
#[cfg(feature = "postgres")]
pub use janitor_sql as postgres;
