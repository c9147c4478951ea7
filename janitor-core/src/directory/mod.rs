//! The identity directory: verified people and agents, the keys the application verified for them, and the
//! delegations that let an agent act for a person.
//!
//! - A **subject** is an account, labelled as evidence labels it (`sub_` + 64 hex, see
//!   [`LabelKey::subject`](crate::LabelKey::subject)), of kind person or agent; the kind never changes.
//! - A **verified key** (an email address, an external account, a public key) is stored only as a label of
//!   its normalized value. A key belongs to at most one subject. [`Directory::find_subject`] is a
//!   lookup, never an authentication, and nothing ever merges two subjects because they share a key, an
//!   email domain or a fingerprint.
//! - A **delegation** grants one actor the right to act for one principal, for one audience and 1–32 scopes,
//!   for at most 30 days. [`Directory::assess`] reads one grant: delegation is one hop.
//! - **Erasure**: [`Directory::remove_key`], [`delete_subject`](Directory::delete_subject) and
//!   [`forget_user`](Directory::forget_user), which also reaches the subject's evidence.
//!
//! Storage is the [`DirectoryStore`] trait: [`MemoryDirectoryStore`] here, `PgDirectoryStore` in `janitor-sql`,
//! both held to the behaviour suite in `testing::directory_store` (feature `testing`).
//! [docs/identity.md](https://github.com/janitor-rust/janitor/blob/main/docs/identity.md)
//! gives every limit and JSON shape.

mod assess;
mod delegation;
mod error;
mod key;
mod memory;
mod service;
mod store;

pub use crate::evidence::{SubjectId, SubjectKind};
pub use assess::{
    ActorAttribution, AssessmentContext, Attribution, DelegationAttribution,
    InvalidDelegationReason, SubjectAttribution,
};
pub use delegation::{
    Delegation, DelegationId, DelegationInput, DELEGATION_ID_BYTES, DELEGATION_PREFIX,
    MAX_AUDIENCE_CHARS, MAX_DELEGATION_LIFETIME_MS, MAX_SCOPES, MAX_SCOPE_CHARS,
};
pub use error::DirectoryError;
pub use key::{
    KeyInput, KeyRecord, KeyType, KEY_DIGEST_VERSION, MAX_EMAIL_CHARS, MAX_ISSUER_CHARS,
    MAX_KEY_VALUE_CHARS,
};
pub use memory::MemoryDirectoryStore;
pub(crate) use service::account_subject;
pub use service::{canonical_account, Directory, MAX_ACCOUNT_ID_CHARS};
pub use store::{store_cleanup_batch, DirectoryStore, KeyWrite, SubjectRecord};
