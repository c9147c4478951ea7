//! Login-labelled learning on PostgreSQL: `learning_sessions`, in the table of `migrations/0009_learning.sql`
//! (the Janitor 0.7 layout, shared with instances in other languages).
//!
//! Round trips: each call is one statement, except cleanup (two: the retired rows, then each subject's
//! surplus). Confirming a session creates the subject's row, labels or disputes, and prunes the subject's
//! surplus in one statement.

use std::collections::HashSet;

use janitor_core::evidence::SubjectId;
use janitor_core::learning::{
    example_buckets, Confirmation, ExamplePool, LearningReport, LearningSession, LearningStore,
    Prediction, PredictionStatus, SessionId,
};
use janitor_core::{Observation, StoreError};
use tokio_postgres::types::Json;
use tokio_postgres::Row;

use crate::database::Database;
use crate::error::unreadable;
use crate::params::Param;

pub(crate) mod statements;

/// Learning sessions in PostgreSQL. Cheap to clone; clones share the pool. Run
/// [`migrate`](crate::migrate()) once before use.
#[derive(Debug, Clone)]
pub struct PgLearningStore {
    database: Database,
}

impl PgLearningStore {
    /// A store over `database`.
    pub fn new(database: Database) -> Self {
        PgLearningStore { database }
    }

    /// The database handle.
    pub fn database(&self) -> &Database {
        &self.database
    }

    /// Runs `sql` with a session's nine columns as `$1`–`$9` (the numbering `INSERT_SESSION` and
    /// `UPDATE_SESSION` share), then `extra`.
    async fn write(
        &self,
        sql: &str,
        s: &LearningSession,
        extra: &[&dyn Param],
    ) -> Result<u64, StoreError> {
        let mut connection = self.database.connection().await?;
        let id = s.id.as_str();
        let observation = Json(&s.observation);
        let status = s.prediction.status.as_str();
        let predicted = s.prediction.subject_id.as_ref().map(SubjectId::as_str);
        let mut params: Vec<&dyn Param> = vec![
            &id,
            &s.scope,
            &s.started_at,
            &s.expires_at,
            &s.observed_at,
            &observation,
            &status,
            &predicted,
            &s.prediction.score,
        ];
        params.extend_from_slice(extra);
        connection.execute(sql, &params).await
    }
}

fn subject(row: &Row, column: usize) -> Result<Option<SubjectId>, StoreError> {
    let text: Option<&str> = row
        .try_get(column)
        .map_err(|e| unreadable("a subject id", e))?;
    text.map(|t| {
        SubjectId::parse(t).ok_or_else(|| unreadable("a subject id", "not a subject label"))
    })
    .transpose()
}

/// Decodes the columns of `statements::columns!` starting at `at`.
fn session(row: &Row, at: usize) -> Result<LearningSession, StoreError> {
    let read = |e: tokio_postgres::Error| unreadable("a learning session", e);
    let id: &str = row.try_get(at).map_err(read)?;
    let status: &str = row.try_get(at + 9).map_err(read)?;
    let disputed: i32 = row.try_get(at + 8).map_err(read)?;
    let Json(observation) = row.try_get::<_, Json<Observation>>(at + 5).map_err(read)?;
    Ok(LearningSession {
        id: SessionId::parse(id).ok_or_else(|| unreadable("a learning session id", id))?,
        scope: row.try_get(at + 1).map_err(read)?,
        started_at: row.try_get(at + 2).map_err(read)?,
        expires_at: row.try_get(at + 3).map_err(read)?,
        observed_at: row.try_get(at + 4).map_err(read)?,
        observation,
        subject_id: subject(row, at + 6)?,
        verified_at: row.try_get(at + 7).map_err(read)?,
        disputed: disputed != 0,
        prediction: Prediction {
            status: PredictionStatus::parse(status)
                .ok_or_else(|| unreadable("a prediction status", status))?,
            subject_id: subject(row, at + 10)?,
            score: row.try_get(at + 11).map_err(read)?,
        },
    })
}

fn reports(rows: &[Row], at: usize) -> Result<Vec<LearningReport>, StoreError> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.extend(session(row, at)?.report());
    }
    Ok(out)
}

impl LearningStore for PgLearningStore {
    async fn insert_session(&self, s: &LearningSession) -> Result<(), StoreError> {
        self.write(statements::INSERT_SESSION, s, &[]).await?;
        Ok(())
    }

    async fn session(
        &self,
        scope: &str,
        id: &SessionId,
    ) -> Result<Option<LearningSession>, StoreError> {
        let mut connection = self.database.connection().await?;
        let rows = connection
            .query(statements::SESSION, &[&scope, &id.as_str()])
            .await?;
        rows.first().map(|row| session(row, 0)).transpose()
    }

    async fn update_session(&self, s: &LearningSession, now_ms: i64) -> Result<bool, StoreError> {
        let changed = self
            .write(statements::UPDATE_SESSION, s, &[&now_ms])
            .await?;
        Ok(changed > 0)
    }

    async fn confirm_session(
        &self,
        scope: &str,
        id: &SessionId,
        subject: &SubjectId,
        keep: usize,
        now_ms: i64,
    ) -> Result<Confirmation, StoreError> {
        let mut connection = self.database.connection().await?;
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        let rows = connection
            .query(
                statements::CONFIRM_SESSION,
                &[&scope, &id.as_str(), &subject.as_str(), &now_ms, &keep],
            )
            .await?;
        let Some(row) = rows.first() else {
            return Ok(Confirmation::Missing);
        };
        let disputed: i32 = row
            .try_get(0)
            .map_err(|e| unreadable("a dispute flag", e))?;
        Ok(if disputed != 0 {
            Confirmation::Disputed
        } else {
            Confirmation::Labelled
        })
    }

    async fn delete_session(&self, scope: &str, id: &SessionId) -> Result<bool, StoreError> {
        let mut connection = self.database.connection().await?;
        let deleted = connection
            .execute(statements::DELETE_SESSION, &[&scope, &id.as_str()])
            .await?;
        Ok(deleted > 0)
    }

    async fn examples(
        &self,
        scope: &str,
        current: &Observation,
        cutoff: i64,
        limit: usize,
    ) -> Result<ExamplePool, StoreError> {
        let (language, timezone) = example_buckets(current);
        if language.is_none() && timezone.is_none() {
            return Ok(ExamplePool::default());
        }
        let mut connection = self.database.connection().await?;
        let per_bucket = i64::try_from(limit + 1).unwrap_or(i64::MAX);
        let rows = connection
            .query(
                statements::EXAMPLES,
                &[&scope, &language, &timezone, &cutoff, &per_bucket],
            )
            .await?;
        let mut per = [0usize; 2];
        let mut seen = HashSet::new();
        let mut merged = Vec::new();
        for row in &rows {
            let bucket: i32 = row.try_get(0).map_err(|e| unreadable("a bucket tag", e))?;
            per[usize::from(bucket != 0)] += 1;
            let s = session(row, 1)?;
            if seen.insert(s.id.clone()) {
                merged.extend(s.report().map(|r| r.example));
            }
        }
        let saturated = per.iter().any(|n| *n > limit) || merged.len() > limit;
        merged.sort_by(|a, b| {
            b.verified_at
                .cmp(&a.verified_at)
                .then_with(|| b.session_id.cmp(&a.session_id))
        });
        merged.truncate(limit);
        Ok(ExamplePool {
            examples: merged,
            saturated,
        })
    }

    async fn reports(
        &self,
        scope: &str,
        cutoff: i64,
        limit: usize,
    ) -> Result<Vec<LearningReport>, StoreError> {
        let mut connection = self.database.connection().await?;
        let limit = i64::try_from(limit.clamp(1, 100)).unwrap_or(100);
        let rows = connection
            .query(statements::REPORTS, &[&scope, &cutoff, &limit])
            .await?;
        reports(&rows, 0)
    }

    async fn cleanup(
        &self,
        scope: &str,
        cutoff: i64,
        keep: usize,
        now_ms: i64,
    ) -> Result<u64, StoreError> {
        let mut connection = self.database.connection().await?;
        let retired = connection
            .execute(statements::CLEANUP_RETIRED, &[&scope, &cutoff, &now_ms])
            .await?;
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        let surplus = connection
            .execute(statements::CLEANUP_SURPLUS, &[&scope, &keep])
            .await?;
        Ok(retired + surplus)
    }

    async fn delete_subject_sessions(&self, subject: &SubjectId) -> Result<u64, StoreError> {
        let mut connection = self.database.connection().await?;
        connection
            .execute(statements::DELETE_SUBJECT_SESSIONS, &[&subject.as_str()])
            .await
    }
}
