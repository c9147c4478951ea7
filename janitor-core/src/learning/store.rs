//! The learning store: where `learning_sessions` rows live.
//!
//! One trait, implemented in memory here ([`MemoryLearningStore`](super::MemoryLearningStore)) and on
//! PostgreSQL in `janitor-sql`, with the behaviour written down once as `testing::learning_store` (feature
//! `testing`). Every call names the scope, so deployments sharing a database never see each other's rows.

use std::future::Future;

use super::session::{LearningExample, LearningReport, LearningSession, SessionId};
use crate::error::StoreError;
use crate::evidence::SubjectId;
use crate::identification::observation::Observation;

/// What confirming a session did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// The session carries this subject now (or already did).
    Labelled,
    /// It carried another subject: it is disputed now (or already was) and excluded from every use.
    Disputed,
    /// No unexpired session with that id in the scope: nothing changed.
    Missing,
}

/// Examples for one prediction, with whether the bounded retrieval was cut off.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExamplePool {
    /// At most [`MAX_EXAMPLES`](super::config::MAX_EXAMPLES), newest verification first.
    pub examples: Vec<LearningExample>,
    /// A bucket held more rows than were read, or the buckets together held more than the limit: a predictor
    /// would see a biased sample, so the service abstains.
    pub saturated: bool,
}

/// The buckets a prediction's examples are drawn from: verified rows sharing the current snapshot's first
/// language, and those sharing its timezone. An index serves each (`idx_learning_scope_language`,
/// `idx_learning_scope_timezone`), so retrieval never scans the application's people.
pub fn example_buckets(current: &Observation) -> (Option<&str>, Option<&str>) {
    let language = current
        .languages
        .as_ref()
        .and_then(|l| l.first())
        .map(String::as_str)
        .filter(|l| !l.is_empty());
    let timezone = current.timezone.as_deref().filter(|t| !t.is_empty());
    (language, timezone)
}

/// Storage of learning sessions. All times are epoch milliseconds passed in by the caller.
pub trait LearningStore: Send + Sync {
    /// Stores a new session.
    fn insert_session(
        &self,
        session: &LearningSession,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// One session of `scope`, whatever its state.
    fn session(
        &self,
        scope: &str,
        id: &SessionId,
    ) -> impl Future<Output = Result<Option<LearningSession>, StoreError>> + Send;

    /// Replaces the snapshot, its time and its prediction, only while the stored row has the same start and end,
    /// is unexpired at `now_ms`, unlabelled and undisputed (a label is never overwritten by later
    /// measurements). Returns whether it did.
    fn update_session(
        &self,
        session: &LearningSession,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Labels an unexpired session with `subject` (creating the subject's row, kind person, when missing) and
    /// keeps the subject's `keep` newest confirmed sessions of `scope` (`verified_at DESC, id DESC`), all in one
    /// atomic step. A session labelled with another subject becomes disputed instead; the first verification
    /// time is kept.
    fn confirm_session(
        &self,
        scope: &str,
        id: &SessionId,
        subject: &SubjectId,
        keep: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<Confirmation, StoreError>> + Send;

    /// Deletes one session; returns whether it existed.
    fn delete_session(
        &self,
        scope: &str,
        id: &SessionId,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Verified, undisputed sessions of `scope` with `verified_at` and `observed_at` at or after `cutoff`, in
    /// the [`example_buckets`] of `current`: at most `limit + 1` rows per bucket, merged by id, newest
    /// verification first (`verified_at DESC, id DESC`), at most `limit`. Saturated when a bucket returned more
    /// than `limit` rows or the merge held more than `limit`. No bucket, no examples.
    fn examples(
        &self,
        scope: &str,
        current: &Observation,
        cutoff: i64,
        limit: usize,
    ) -> impl Future<Output = Result<ExamplePool, StoreError>> + Send;

    /// Verified, undisputed sessions of `scope` with `verified_at` and `observed_at` at or after `cutoff`,
    /// newest first (`verified_at DESC, id DESC`), at most `limit` (clamped to 1–100).
    fn reports(
        &self,
        scope: &str,
        cutoff: i64,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<LearningReport>, StoreError>> + Send;

    /// Deletes the sessions of `scope` observed before `cutoff`, the disputed ones, the unlabelled ones ended at
    /// `now_ms`, and each subject's confirmed sessions beyond its `keep` newest. Returns how many went.
    fn cleanup(
        &self,
        scope: &str,
        cutoff: i64,
        keep: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Deletes every session labelled with, or predicted for, `subject`, in every scope; returns how many. (On
    /// PostgreSQL, deleting the subject's row does the same by cascade.)
    fn delete_subject_sessions(
        &self,
        subject: &SubjectId,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;
}
