//! Application evidence: events the application reports, velocity counts, device links and erasure.
//!
//! Evidence is what the application itself knows — a sign-in failed, a recovery was requested, this browser
//! was verified for this account — stored pseudonymously and read back as bounded counts that can feed a
//! risk decision. Server code reaches it through [`Evidence`]; no browser-facing endpoint takes evidence.
//!
//! - [`Evidence::record`] stores an event under the label of the application's own event id, so a retried
//!   call is an idempotent repeat (`recorded: false`) and a reused id with other content is refused.
//! - [`Evidence::velocity`] counts one subject's, session's or actor's recent events by type with one
//!   bounded read (at most `max_events_per_query + 1` rows, newest first). When it saturates, the counts are
//!   lower bounds.
//! - [`Evidence::link`], [`assess`](Evidence::assess), [`list`](Evidence::list) and
//!   [`revoke`](Evidence::revoke) manage device links: the application's verified statement that a browser
//!   belongs to a subject. The library never makes that association by itself, and a visitor id restored by
//!   similarity never creates or revives one.
//! - [`Evidence::delete_session`], [`delete_subject_events`](Evidence::delete_subject_events),
//!   [`delete_subject`](Evidence::delete_subject) and [`cleanup`](Evidence::cleanup) erase on request and
//!   retire by age.
//!   An account's erasure request needs [`erasure::erase_account`](crate::erasure::erase_account), which keeps
//!   evidence about other accounts.
//!
//! Privacy: the store never holds a raw account id, session id or event id — only their HMAC labels
//! (see [`label`](crate::label)): subject ids are labels of account ids, session and event ids are labelled
//! under the `evidence-v1` purposes, and a content digest makes idempotency checkable without the content.
//!
//! Storage is the [`EvidenceStore`] trait: [`MemoryEvidenceStore`] here, `PgEvidenceStore` in `janitor-sql`,
//! both held to the behaviour suite in `testing::evidence_store` (feature `testing`).

pub mod config;
mod error;
mod event;
mod ids;
mod json;
mod link;
mod memory;
mod service;
mod store;
mod velocity;

pub use config::{EvidenceConfig, EvidenceConfigBuilder};
pub use error::{EvidenceError, InputError};
pub use event::{
    Action, ApplicationEvent, EventInput, EventInputBuilder, EventType, ACTIONS, EVENT_TYPES,
};
pub use ids::{LinkId, SubjectId, LINK_PREFIX};
pub use json::{MAX_LABEL_TEXT, MAX_SAFE_INTEGER};
pub use link::{
    DeviceAssessment, DeviceLink, DeviceLinkInput, InvalidLinkReason, Revocation, RevocationInput,
    RevocationReason, Verification, VerificationInput, VerificationMethod, MAX_LINK_LIFETIME_MS,
    REVOCATION_REASONS, VERIFICATION_MAX_AGE_MS, VERIFICATION_MAX_SKEW_MS, VERIFICATION_METHODS,
};
pub use memory::MemoryEvidenceStore;
pub use service::{
    Evidence, Recorded, APPLICATION_SCOPE, DEVICE_PAYLOAD_PURPOSE, EVENT_PAYLOAD_PURPOSE,
};
pub use store::{
    EventOwner, EventWrite, EvidenceCleanup, EvidenceStore, LinkWrite, SubjectKind,
    IMPLICIT_SUBJECT_KIND,
};
pub use velocity::{
    ActivityColumn, ActivityKey, ActivityRead, ActivitySummary, EvidenceSource, VelocityQuery,
};
