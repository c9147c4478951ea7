//! The directory store: subjects, their verified keys and delegations between them.
//!
//! One trait, implemented in memory here ([`MemoryDirectoryStore`](super::MemoryDirectoryStore)) and on
//! PostgreSQL in `janitor-sql`, with the behaviour written down once as `testing::directory_store` (feature
//! `testing`). Stores receive finished records and labels: [`Directory`](super::Directory)
//! computes every label before a store sees it, so no store ever handles a raw account id or key value.

use std::future::Future;

use serde::{Deserialize, Serialize};

use super::delegation::{Delegation, DelegationId};
use super::key::KeyRecord;
use crate::error::StoreError;
use crate::evidence::{SubjectId, SubjectKind};

/// A stored subject: `{"id","kind","updatedAt"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubjectRecord {
    /// The subject's label.
    pub id: SubjectId,
    /// Person or agent; it never changes.
    pub kind: SubjectKind,
    /// When it was last registered, epoch milliseconds.
    pub updated_at: i64,
}

/// What storing a verified key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyWrite {
    /// The key is stored for the subject (new, or its record refreshed).
    Stored,
    /// The key belongs to another subject: nothing changed.
    Claimed,
    /// The subject does not exist: nothing changed.
    NoSubject,
}

/// Storage of the identity directory. All times are epoch milliseconds passed in by the caller.
///
/// Deleting a subject deletes its keys and the delegations naming it (as principal or actor), and — where
/// the store shares subject rows with evidence — its events and device links.
pub trait DirectoryStore: Send + Sync {
    /// Creates a subject of `kind`, or refreshes its `updatedAt` when it exists with that kind. Returns false,
    /// changing nothing, when it exists with the other kind.
    fn put_subject(
        &self,
        subject: &SubjectId,
        kind: SubjectKind,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// A subject, if present.
    fn subject(
        &self,
        subject: &SubjectId,
    ) -> impl Future<Output = Result<Option<SubjectRecord>, StoreError>> + Send;

    /// Deletes a subject with everything that refers to it; returns whether it existed.
    fn delete_subject(
        &self,
        subject: &SubjectId,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Stores `key` for `key.subject_id` atomically: a key of another subject is left alone
    /// ([`KeyWrite::Claimed`]), a key of the same subject gets the new record.
    fn put_key(&self, key: &KeyRecord)
        -> impl Future<Output = Result<KeyWrite, StoreError>> + Send;

    /// The subject a key digest belongs to, if any.
    fn key_owner(
        &self,
        digest: &str,
    ) -> impl Future<Output = Result<Option<SubjectId>, StoreError>> + Send;

    /// Deletes the key `digest` if it belongs to `subject`; returns whether it did.
    fn remove_key(
        &self,
        subject: &SubjectId,
        digest: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Stores a new delegation if both its subjects exist; returns whether it was stored.
    fn put_delegation(
        &self,
        delegation: &Delegation,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// A delegation, if present (whatever its state).
    fn delegation(
        &self,
        id: &DelegationId,
    ) -> impl Future<Output = Result<Option<Delegation>, StoreError>> + Send;

    /// Sets `revokedAt` of a delegation not revoked yet; returns whether this call revoked it.
    fn revoke_delegation(
        &self,
        id: &DelegationId,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes at most `batch` delegations with `expires_at <= now_ms`, earliest first; returns how many.
    /// Stores clamp `batch` to 1–1000.
    fn cleanup(
        &self,
        batch: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
}

/// `batch` clamped to the 1–1000 a cleanup step may take.
pub fn store_cleanup_batch(batch: usize) -> usize {
    batch.clamp(1, 1000)
}
