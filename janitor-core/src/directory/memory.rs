//! The in-memory directory store: the embedded default and the reference for other stores.
//!
//! Subject rows are the evidence store's own (one table in PostgreSQL, `identity_subjects`): a store made
//! with [`MemoryDirectoryStore::with_evidence`] shares them, so a subject that events created exists here, and
//! deleting a subject here removes its events and device links too, as PostgreSQL's cascade does. Keys and
//! delegations sit behind one mutex of their own, always taken before the evidence store's.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::delegation::{Delegation, DelegationId};
use super::key::KeyRecord;
use super::store::{store_cleanup_batch, DirectoryStore, KeyWrite, SubjectRecord};
use crate::error::StoreError;
use crate::evidence::{MemoryEvidenceStore, SubjectId, SubjectKind};

/// A thread-safe directory store held in process memory. Clones share the same directory.
#[derive(Debug, Clone, Default)]
pub struct MemoryDirectoryStore {
    inner: Arc<Mutex<Inner>>,
    evidence: MemoryEvidenceStore,
}

/// Keys and delegations behind the lock. [`MemoryStores`](crate::MemoryStores) holds it, with every other
/// store's lock, while it erases an account.
#[derive(Debug, Default)]
pub(crate) struct Inner {
    keys: HashMap<String, KeyRecord>,
    delegations: HashMap<String, Delegation>,
    /// `(expires_at, id)`, for cleanup.
    by_expiry: BTreeSet<(i64, String)>,
}

impl MemoryDirectoryStore {
    /// An empty store with subject rows of its own.
    pub fn new() -> Self {
        MemoryDirectoryStore::default()
    }

    /// An empty store over the subject rows of `evidence`.
    pub fn with_evidence(evidence: MemoryEvidenceStore) -> Self {
        MemoryDirectoryStore {
            inner: Arc::default(),
            evidence,
        }
    }

    /// Verified keys held (for tests and metrics).
    pub fn key_count(&self) -> usize {
        self.lock().keys.len()
    }

    /// Delegations held (for tests and metrics).
    pub fn delegation_count(&self) -> usize {
        self.lock().delegations.len()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        // No call panics while holding the lock with the maps half-updated.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn exists(&self, subject: &SubjectId) -> bool {
        self.evidence.subject_row(subject).is_some()
    }
}

impl Inner {
    /// Deletes `subject`'s keys and every delegation naming it (as principal or actor); returns how many of
    /// each.
    pub(crate) fn erase_subject(&mut self, subject: &SubjectId) -> (u64, u64) {
        let keys = self.keys.len();
        self.keys.retain(|_, key| key.subject_id != *subject);
        let grants: Vec<String> = self
            .delegations
            .values()
            .filter(|g| g.principal_id == *subject || g.actor_id == *subject)
            .map(|g| g.id.as_str().to_owned())
            .collect();
        for id in &grants {
            self.remove_delegation(id);
        }
        ((keys - self.keys.len()) as u64, grants.len() as u64)
    }

    fn remove_delegation(&mut self, id: &str) -> bool {
        match self.delegations.remove(id) {
            Some(grant) => {
                self.by_expiry.remove(&(grant.expires_at, id.to_owned()));
                true
            }
            None => false,
        }
    }
}

impl DirectoryStore for MemoryDirectoryStore {
    async fn put_subject(
        &self,
        subject: &SubjectId,
        kind: SubjectKind,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let _directory = self.lock();
        Ok(self.evidence.put_subject_row(subject, kind, now_ms))
    }

    async fn subject(&self, subject: &SubjectId) -> Result<Option<SubjectRecord>, StoreError> {
        Ok(self
            .evidence
            .subject_row(subject)
            .map(|(kind, updated_at)| SubjectRecord {
                id: subject.clone(),
                kind,
                updated_at,
            }))
    }

    async fn delete_subject(&self, subject: &SubjectId) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        if !self.evidence.delete_subject_row(subject) {
            return Ok(false);
        }
        inner.erase_subject(subject);
        Ok(true)
    }

    async fn put_key(&self, key: &KeyRecord) -> Result<KeyWrite, StoreError> {
        let mut inner = self.lock();
        if !self.exists(&key.subject_id) {
            return Ok(KeyWrite::NoSubject);
        }
        match inner.keys.get(&key.digest) {
            Some(stored) if stored.subject_id != key.subject_id => Ok(KeyWrite::Claimed),
            _ => {
                inner.keys.insert(key.digest.clone(), key.clone());
                Ok(KeyWrite::Stored)
            }
        }
    }

    async fn key_owner(&self, digest: &str) -> Result<Option<SubjectId>, StoreError> {
        Ok(self.lock().keys.get(digest).map(|k| k.subject_id.clone()))
    }

    async fn remove_key(&self, subject: &SubjectId, digest: &str) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let owned = inner
            .keys
            .get(digest)
            .is_some_and(|k| k.subject_id == *subject);
        if owned {
            inner.keys.remove(digest);
        }
        Ok(owned)
    }

    async fn put_delegation(&self, delegation: &Delegation) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let id = delegation.id.as_str();
        if inner.delegations.contains_key(id)
            || !self.exists(&delegation.principal_id)
            || !self.exists(&delegation.actor_id)
        {
            return Ok(false);
        }
        inner
            .by_expiry
            .insert((delegation.expires_at, id.to_owned()));
        inner.delegations.insert(id.to_owned(), delegation.clone());
        Ok(true)
    }

    async fn delegation(&self, id: &DelegationId) -> Result<Option<Delegation>, StoreError> {
        Ok(self.lock().delegations.get(id.as_str()).cloned())
    }

    async fn revoke_delegation(&self, id: &DelegationId, now_ms: i64) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        match inner.delegations.get_mut(id.as_str()) {
            Some(grant) if grant.revoked_at.is_none() => {
                grant.revoked_at = Some(now_ms);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn cleanup(&self, batch: usize, now_ms: i64) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let due: Vec<String> = inner
            .by_expiry
            .iter()
            .take_while(|(expires_at, _)| *expires_at <= now_ms)
            .take(store_cleanup_batch(batch))
            .map(|(_, id)| id.clone())
            .collect();
        Ok(due.iter().filter(|id| inner.remove_delegation(id)).count() as u64)
    }
}
