//! The identity directory on PostgreSQL: `identity_subjects` (shared with evidence), `identity_keys` and
//! `identity_delegations`, in the tables of migrations 0003 and 0008 (shared with Janitor instances in other
//! languages). Every operation is one statement, so every change is atomic; a refused key claim reads the
//! subject once more to say why.

use janitor_core::directory::{
    store_cleanup_batch, Delegation, DelegationId, DirectoryStore, KeyRecord, KeyWrite,
    SubjectRecord,
};
use janitor_core::evidence::EvidenceStore;
use janitor_core::evidence::{SubjectId, SubjectKind};
use janitor_core::StoreError;
use tokio_postgres::types::Json;
use tokio_postgres::Row;

use crate::database::Database;
use crate::error::{erased_meanwhile, unreadable};
use crate::params::Param;
use crate::PgEvidenceStore;

pub(crate) mod statements;

/// The identity directory in PostgreSQL. Cheap to clone; clones share the pool. Run
/// [`migrate`](crate::migrate()) once before use.
#[derive(Debug, Clone)]
pub struct PgDirectoryStore {
    database: Database,
}

impl PgDirectoryStore {
    /// A store over `database`.
    pub fn new(database: Database) -> Self {
        PgDirectoryStore { database }
    }

    /// The database handle.
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// The evidence store over the same database, which owns `identity_subjects`' statements.
    fn subjects(&self) -> PgEvidenceStore {
        PgEvidenceStore::new(self.database.clone())
    }
}

fn record<T: serde::de::DeserializeOwned>(row: &Row, what: &str) -> Result<T, StoreError> {
    row.try_get::<_, Json<T>>(0)
        .map(|Json(value)| value)
        .map_err(|e| unreadable(what, e))
}

impl DirectoryStore for PgDirectoryStore {
    /// The subject rows are evidence's: the same statement creates or refreshes them.
    async fn put_subject(
        &self,
        subject: &SubjectId,
        kind: SubjectKind,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        self.subjects().put_subject(subject, kind, now_ms).await
    }

    async fn subject(&self, subject: &SubjectId) -> Result<Option<SubjectRecord>, StoreError> {
        let mut connection = self.database.connection().await?;
        let rows = connection
            .query(statements::SUBJECT, &[&subject.as_str()])
            .await?;
        rows.first()
            .map(|row| record(row, "a subject record"))
            .transpose()
    }

    /// Evidence's statement: keys, delegations, events, links and learning rows go by cascade.
    async fn delete_subject(&self, subject: &SubjectId) -> Result<bool, StoreError> {
        self.subjects().delete_subject(subject).await
    }

    async fn put_key(&self, key: &KeyRecord) -> Result<KeyWrite, StoreError> {
        let mut connection = self.database.connection().await?;
        let subject = key.subject_id.as_str();
        let params: [&dyn Param; 3] = [&key.digest, &subject, &Json(key)];
        let mut rows = connection.query(statements::PUT_KEY, &params).await;
        if erased_meanwhile(&rows) {
            rows = connection.query(statements::PUT_KEY, &params).await;
        }
        if !rows?.is_empty() {
            return Ok(KeyWrite::Stored);
        }
        let missing = connection
            .query(statements::SUBJECT, &[&subject])
            .await?
            .is_empty();
        Ok(if missing {
            KeyWrite::NoSubject
        } else {
            KeyWrite::Claimed
        })
    }

    async fn key_owner(&self, digest: &str) -> Result<Option<SubjectId>, StoreError> {
        let mut connection = self.database.connection().await?;
        let rows = connection.query(statements::KEY_OWNER, &[&digest]).await?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let id: &str = row.try_get(0).map_err(|e| unreadable("a key owner", e))?;
        SubjectId::parse(id)
            .map(Some)
            .ok_or_else(|| unreadable("a key owner", "not a subject id"))
    }

    async fn remove_key(&self, subject: &SubjectId, digest: &str) -> Result<bool, StoreError> {
        let mut connection = self.database.connection().await?;
        let deleted = connection
            .execute(statements::REMOVE_KEY, &[&digest, &subject.as_str()])
            .await?;
        Ok(deleted > 0)
    }

    async fn put_delegation(&self, delegation: &Delegation) -> Result<bool, StoreError> {
        let mut connection = self.database.connection().await?;
        let params: [&dyn Param; 5] = [
            &delegation.id.as_str(),
            &delegation.principal_id.as_str(),
            &delegation.actor_id.as_str(),
            &delegation.expires_at,
            &Json(delegation),
        ];
        let mut rows = connection.query(statements::PUT_DELEGATION, &params).await;
        if erased_meanwhile(&rows) {
            rows = connection.query(statements::PUT_DELEGATION, &params).await;
        }
        Ok(!rows?.is_empty())
    }

    async fn delegation(&self, id: &DelegationId) -> Result<Option<Delegation>, StoreError> {
        let mut connection = self.database.connection().await?;
        let rows = connection
            .query(statements::DELEGATION, &[&id.as_str()])
            .await?;
        rows.first()
            .map(|row| record(row, "a delegation"))
            .transpose()
    }

    async fn revoke_delegation(&self, id: &DelegationId, now_ms: i64) -> Result<bool, StoreError> {
        let mut connection = self.database.connection().await?;
        let changed = connection
            .execute(statements::REVOKE_DELEGATION, &[&id.as_str(), &now_ms])
            .await?;
        Ok(changed > 0)
    }

    async fn cleanup(&self, batch: usize, now_ms: i64) -> Result<u64, StoreError> {
        let mut connection = self.database.connection().await?;
        let batch = store_cleanup_batch(batch) as i64;
        connection
            .execute(statements::CLEANUP, &[&now_ms, &batch])
            .await
    }
}
