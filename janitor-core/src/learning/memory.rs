//! Learning sessions in process memory: the quick-start store, and the reference the PostgreSQL store is
//! tested against.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use super::session::{LearningReport, LearningSession, SessionId};
use super::store::{example_buckets, Confirmation, ExamplePool, LearningStore};
use crate::error::StoreError;
use crate::evidence::SubjectId;
use crate::identification::observation::Observation;

/// Learning sessions in memory. Cheap to clone; clones share the rows.
#[derive(Debug, Clone, Default)]
pub struct MemoryLearningStore {
    sessions: Arc<Mutex<HashMap<SessionId, LearningSession>>>,
}

impl MemoryLearningStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn rows(&self) -> MutexGuard<'_, HashMap<SessionId, LearningSession>> {
        // A panic elsewhere cannot leave a half-written row: every change below is one map operation.
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Deletes every session labelled with, or predicted for, `subject`; returns how many.
pub(crate) fn erase_subject_sessions(
    rows: &mut HashMap<SessionId, LearningSession>,
    subject: &SubjectId,
) -> u64 {
    let before = rows.len();
    rows.retain(|_, s| {
        s.subject_id.as_ref() != Some(subject) && s.prediction.subject_id.as_ref() != Some(subject)
    });
    (before - rows.len()) as u64
}

fn usable(session: &LearningSession, scope: &str, cutoff: i64) -> bool {
    session.scope == scope
        && !session.disputed
        && session.subject_id.is_some()
        && session.verified_at.is_some_and(|v| v >= cutoff)
        && session.observed_at >= cutoff
}

/// One bounded retrieval of examples (see [`example_buckets`]).
enum Bucket<'a> {
    Language(&'a str),
    Timezone(&'a str),
}

impl Bucket<'_> {
    fn holds(&self, session: &LearningSession) -> bool {
        let (language, timezone) = example_buckets(&session.observation);
        match self {
            Bucket::Language(l) => language == Some(*l),
            Bucket::Timezone(t) => timezone == Some(*t),
        }
    }
}

/// Newest verification first, then the id descending: the order of every listing.
fn newest_first(rows: &mut [&LearningSession]) {
    rows.sort_by(|a, b| b.verified_at.cmp(&a.verified_at).then(b.id.cmp(&a.id)));
}

/// Deletes `subject`'s confirmed sessions of `scope` beyond the `keep` newest; returns how many.
fn prune(
    rows: &mut HashMap<SessionId, LearningSession>,
    scope: &str,
    subject: &SubjectId,
    keep: usize,
) -> u64 {
    let mut confirmed: Vec<&LearningSession> = rows
        .values()
        .filter(|s| s.scope == scope && s.subject_id.as_ref() == Some(subject))
        .collect();
    newest_first(&mut confirmed);
    let surplus: Vec<SessionId> = confirmed.iter().skip(keep).map(|s| s.id.clone()).collect();
    for id in &surplus {
        rows.remove(id);
    }
    surplus.len() as u64
}

impl LearningStore for MemoryLearningStore {
    async fn insert_session(&self, session: &LearningSession) -> Result<(), StoreError> {
        let mut rows = self.rows();
        if rows.contains_key(&session.id) {
            return Err(StoreError::Data(
                "a learning session with this id exists".into(),
            ));
        }
        rows.insert(session.id.clone(), session.clone());
        Ok(())
    }

    async fn session(
        &self,
        scope: &str,
        id: &SessionId,
    ) -> Result<Option<LearningSession>, StoreError> {
        Ok(self.rows().get(id).filter(|s| s.scope == scope).cloned())
    }

    async fn update_session(
        &self,
        session: &LearningSession,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut rows = self.rows();
        let Some(stored) = rows.get_mut(&session.id) else {
            return Ok(false);
        };
        let open = stored.scope == session.scope
            && stored.started_at == session.started_at
            && stored.expires_at == session.expires_at
            && stored.expires_at > now_ms
            && stored.subject_id.is_none()
            && !stored.disputed;
        if open {
            stored.observation = session.observation.clone();
            stored.observed_at = session.observed_at;
            stored.prediction = session.prediction.clone();
        }
        Ok(open)
    }

    async fn confirm_session(
        &self,
        scope: &str,
        id: &SessionId,
        subject: &SubjectId,
        keep: usize,
        now_ms: i64,
    ) -> Result<Confirmation, StoreError> {
        let mut rows = self.rows();
        let Some(stored) = rows
            .get_mut(id)
            .filter(|s| s.scope == scope && s.expires_at > now_ms)
        else {
            return Ok(Confirmation::Missing);
        };
        match &stored.subject_id {
            Some(other) if other != subject => stored.disputed = true,
            None if !stored.disputed => stored.subject_id = Some(subject.clone()),
            _ => {}
        }
        stored.verified_at.get_or_insert(now_ms);
        let outcome = if stored.disputed {
            Confirmation::Disputed
        } else {
            Confirmation::Labelled
        };
        prune(&mut rows, scope, subject, keep);
        Ok(outcome)
    }

    async fn delete_session(&self, scope: &str, id: &SessionId) -> Result<bool, StoreError> {
        let mut rows = self.rows();
        if rows.get(id).is_some_and(|s| s.scope == scope) {
            rows.remove(id);
            return Ok(true);
        }
        Ok(false)
    }

    async fn examples(
        &self,
        scope: &str,
        current: &Observation,
        cutoff: i64,
        limit: usize,
    ) -> Result<ExamplePool, StoreError> {
        let rows = self.rows();
        let (language, timezone) = example_buckets(current);
        let mut saturated = false;
        let mut merged: HashSet<&SessionId> = HashSet::new();
        let buckets = [
            language.map(Bucket::Language),
            timezone.map(Bucket::Timezone),
        ];
        for bucket in buckets.into_iter().flatten() {
            let mut bucket: Vec<&LearningSession> = rows
                .values()
                .filter(|s| usable(s, scope, cutoff) && bucket.holds(s))
                .collect();
            newest_first(&mut bucket);
            saturated |= bucket.len() > limit;
            merged.extend(bucket.iter().take(limit + 1).map(|s| &s.id));
        }
        saturated |= merged.len() > limit;
        let mut chosen: Vec<&LearningSession> =
            merged.iter().filter_map(|id| rows.get(*id)).collect();
        newest_first(&mut chosen);
        let examples = chosen
            .into_iter()
            .take(limit)
            .filter_map(|s| s.report().map(|r| r.example))
            .collect();
        Ok(ExamplePool {
            examples,
            saturated,
        })
    }

    async fn reports(
        &self,
        scope: &str,
        cutoff: i64,
        limit: usize,
    ) -> Result<Vec<LearningReport>, StoreError> {
        let rows = self.rows();
        let mut usable_rows: Vec<&LearningSession> =
            rows.values().filter(|s| usable(s, scope, cutoff)).collect();
        newest_first(&mut usable_rows);
        Ok(usable_rows
            .into_iter()
            .take(limit.clamp(1, 100))
            .filter_map(LearningSession::report)
            .collect())
    }

    async fn cleanup(
        &self,
        scope: &str,
        cutoff: i64,
        keep: usize,
        now_ms: i64,
    ) -> Result<u64, StoreError> {
        let mut rows = self.rows();
        let before = rows.len();
        rows.retain(|_, s| {
            s.scope != scope
                || !(s.observed_at < cutoff
                    || s.disputed
                    || (s.subject_id.is_none() && s.expires_at <= now_ms))
        });
        let mut deleted = (before - rows.len()) as u64;
        let subjects: HashSet<SubjectId> = rows
            .values()
            .filter(|s| s.scope == scope)
            .filter_map(|s| s.subject_id.clone())
            .collect();
        for subject in &subjects {
            deleted += prune(&mut rows, scope, subject, keep);
        }
        Ok(deleted)
    }

    async fn delete_subject_sessions(&self, subject: &SubjectId) -> Result<u64, StoreError> {
        Ok(erase_subject_sessions(&mut self.rows(), subject))
    }
}
