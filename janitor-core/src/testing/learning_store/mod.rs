//! The behaviour every [`LearningStore`] must show, run through [`Learning`] as the endpoint uses it:
//! [`learning_store_tests!`](crate::learning_store_tests) runs each case as its own test. The factory must
//! return an empty store.

mod flows;
mod shadow;

pub use flows::*;
pub use shadow::*;

use crate::Clock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::Fresh;
pub use super::{label_key, T0};
use crate::evidence::SubjectId;
use crate::identification::observation::Observation;
use crate::learning::*;
use crate::LabelKey;

const MINUTE: i64 = 60_000;

/// A snapshot of a browser with this first language and timezone.
pub fn snapshot(language: &str, timezone: &str) -> Observation {
    Observation {
        platform: Some("macos".into()),
        browser: Some("chrome".into()),
        languages: Some(vec![language.into()]),
        timezone: Some(timezone.into()),
        ..Observation::default()
    }
}

/// The subject of fixture account `n`.
pub fn subject(n: u32) -> SubjectId {
    SubjectId::parse(&label_key("suite").subject(&format!("account-{n}"))).expect("a label")
}

fn collecting(policy: CollectionPolicy) -> LearningConfig {
    LearningConfig::builder()
        .enabled(true)
        .collection(policy)
        .build()
        .expect("valid")
}

fn collector<S: LearningStore>(store: S, policy: CollectionPolicy) -> Learning<S> {
    Learning::new(store, &label_key("suite"), collecting(policy), None)
        .expect("collect mode")
        .with_clock(Clock::manual(0))
}

/// What a scripted predictor answers.
#[derive(Debug, Clone)]
pub enum Script {
    /// This answer.
    Answer(Option<SubjectId>, Option<f64>),
    /// This error.
    Fail(PredictorError),
}

/// A predictor that answers from a script and counts its calls and the examples it was given.
#[derive(Debug, Clone)]
pub struct Scripted {
    script: Script,
    calls: Arc<AtomicUsize>,
    most_examples: Arc<AtomicUsize>,
}

impl Scripted {
    /// A predictor answering `script`.
    pub fn new(script: Script) -> Self {
        Scripted {
            script,
            calls: Arc::default(),
            most_examples: Arc::default(),
        }
    }

    /// Calls so far.
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }

    /// The most examples one call received.
    pub fn most_examples(&self) -> usize {
        self.most_examples.load(Ordering::SeqCst)
    }
}

impl Predictor for Scripted {
    async fn predict(&self, input: PredictionInput<'_>) -> Result<PredictorAnswer, PredictorError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.most_examples
            .fetch_max(input.examples.len(), Ordering::SeqCst);
        match &self.script {
            Script::Answer(subject_id, score) => Ok(PredictorAnswer {
                subject_id: subject_id.clone(),
                score: *score,
            }),
            Script::Fail(error) => Err(error.clone()),
        }
    }
}

fn shadow<S: LearningStore>(store: S, predictor: Scripted) -> Learning<S, Scripted> {
    let config = LearningConfig::builder()
        .enabled(true)
        .mode(LearningMode::Shadow)
        .collection(CollectionPolicy::Application)
        .build()
        .expect("valid");
    Learning::new(store, &label_key("suite"), config, Some(predictor))
        .expect("shadow mode")
        .with_clock(Clock::manual(0))
}

/// One request: the cookie, the consent, the login and the snapshot.
async fn visit<S: LearningStore, P: Predictor>(
    learning: &Learning<S, P>,
    cookie: Option<&SessionId>,
    consent: Option<bool>,
    login: &Login,
    observation: &Observation,
    now_ms: i64,
) -> Option<LearningCookie> {
    let visit = LearningVisit {
        cookie: cookie.map(SessionId::as_str),
        consent,
        login,
        observation,
    };
    learning.at(now_ms).observe(visit).await.expect("observe")
}

/// The id of a cookie that is set, failing on any other outcome.
fn set(cookie: Option<LearningCookie>) -> (SessionId, u64, Prediction) {
    match cookie {
        Some(LearningCookie::Set {
            id,
            max_age_secs,
            prediction,
        }) => (id, max_age_secs, prediction),
        other => panic!("expected the cookie to be set, got {other:?}"),
    }
}

/// Starts an anonymous flow and labels it with `subject` at `at` (consented).
async fn labelled_flow<S: LearningStore, P: Predictor>(
    learning: &Learning<S, P>,
    observation: &Observation,
    subject: &SubjectId,
    at: i64,
) -> SessionId {
    let (id, _, _) = set(visit(
        learning,
        None,
        Some(true),
        &Login::Anonymous,
        observation,
        at,
    )
    .await);
    let login = Login::VerifiedSelf(subject.clone());
    let answer = visit(learning, Some(&id), Some(true), &login, observation, at + 1).await;
    assert_eq!(answer, Some(LearningCookie::Clear));
    id
}

fn key(namespace: &str) -> LabelKey {
    label_key(namespace)
}

/// One `#[tokio::test]` per case of the [`LearningStore`] suite ([`crate::testing`] shows the forms).
///
/// ```ignore
/// janitor_core::learning_store_tests!(fresh: |()| async { MemoryLearningStore::new() });
/// ```
#[macro_export]
macro_rules! learning_store_tests {
    ($($setup:tt)+) => {
        $crate::__store_suite!(
            learning_store [
            consent_decides_collection,
            sessions_have_a_fixed_lifetime,
            one_latest_snapshot_per_session,
            a_verified_self_login_labels,
            other_logins_never_label,
            no_cookie_no_label,
            conflicting_confirmations_dispute,
            twenty_confirmed_sessions_per_subject,
            report_limits,
            cleanup_retires_flows,
            erasure_by_session_and_subject,
            scopes_stay_apart,
            shadow_abstains_without_examples,
            shadow_records_a_valid_guess,
            shadow_failures_change_nothing,
            ]
            $($setup)+
        );
    };
}
