//! [`Learning`]: the server-side service that collects, labels and exports learning sessions.

use super::config::{
    LearningConfig, LearningMode, MAX_CONFIRMED_PER_SUBJECT, MAX_EXAMPLES, REPORT_LIMIT,
};
use super::error::LearningError;
use super::predictor::{NoPredictor, PredictionInput, Predictor};
use super::session::{LearningReport, LearningSession, Prediction, PredictionStatus, SessionId};
use super::store::LearningStore;
use crate::clock::Clock;
use crate::directory::{ActorAttribution, Attribution, DelegationAttribution, SubjectAttribution};
use crate::error::StoreError;
use crate::evidence::{SubjectId, SubjectKind};
use crate::identification::observation::Observation;
use crate::label::LabelKey;

/// The fixed text whose label is a deployment's learning scope.
pub const LEARNING_SCOPE_TEXT: &str = "janitor-learning-scope-v1";

/// Who is signed in on a request, as far as learning cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    /// Nobody: the request is an anonymous visit.
    Anonymous,
    /// A verified person acting as themselves, with no delegation: the only login that labels a session.
    VerifiedSelf(SubjectId),
    /// Someone else is signed in (an agent, a delegated actor, an actor the directory does not know): the flow
    /// ends without a label.
    Other,
}

impl Login {
    /// The login an [`Attribution`] describes: a verified subject whose actor is the same person, with no
    /// delegation, is [`Login::VerifiedSelf`]; every other attribution is [`Login::Other`].
    pub fn from_attribution(attribution: &Attribution) -> Login {
        match (
            &attribution.subject,
            &attribution.actor,
            &attribution.delegation,
        ) {
            (
                SubjectAttribution::Verified { id },
                ActorAttribution::Known {
                    id: actor,
                    kind: SubjectKind::Person,
                },
                DelegationAttribution::None,
            ) if actor == id => Login::VerifiedSelf(id.clone()),
            _ => Login::Other,
        }
    }
}

/// One request as learning sees it.
#[derive(Debug, Clone, Copy)]
pub struct LearningVisit<'a> {
    /// The `__visitor_learning` cookie's value, if the request carried exactly one (any text).
    pub cookie: Option<&'a str>,
    /// The request's learning consent, as the application's context gives it.
    pub consent: Option<bool>,
    /// Who is signed in.
    pub login: &'a Login,
    /// The normalized snapshot of this request.
    pub observation: &'a Observation,
}

/// What the response must do with the `__visitor_learning` cookie.
#[derive(Debug, Clone, PartialEq)]
pub enum LearningCookie {
    /// Set it to this session for the whole seconds left of its fixed lifetime.
    Set {
        /// The session (the cookie's value).
        id: SessionId,
        /// `Max-Age`: whole seconds until the session ends.
        max_age_secs: u64,
        /// The shadow guess recorded for this snapshot (server-side only; never sent to the browser).
        prediction: Prediction,
    },
    /// Clear it (`Max-Age=0`).
    Clear,
}

/// Login-labelled learning over a [`LearningStore`]. Cheap to clone when the store is.
#[derive(Debug, Clone)]
pub struct Learning<S, P = NoPredictor> {
    store: S,
    config: LearningConfig,
    scope: String,
    predictor: Option<P>,
    clock: Clock,
}

impl<S: LearningStore, P: Predictor> Learning<S, P> {
    /// The service of `config`, scoped by `key`. Shadow mode requires a predictor and collect mode refuses one.
    pub fn new(
        store: S,
        key: &LabelKey,
        config: LearningConfig,
        predictor: Option<P>,
    ) -> Result<Self, LearningError> {
        match (config.mode(), predictor.is_some()) {
            (LearningMode::Shadow, false) => {
                return Err(LearningError::Mode("shadow learning requires a predictor"))
            }
            (LearningMode::Collect, true) => {
                return Err(LearningError::Mode("collect mode runs no predictor"))
            }
            _ => {}
        }
        Ok(Learning {
            store,
            config,
            scope: key.subject(LEARNING_SCOPE_TEXT),
            predictor,
            clock: Clock::system(),
        })
    }

    /// The same service reading the time from `clock` (a manual one in tests and simulations).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The clock this service reads the time from.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Sets this service's manual clock to `ms` and answers the service, for tests that name each call's time
    /// (feature `testing`). Panics on the system's clock, which cannot be set.
    #[cfg(feature = "testing")]
    pub fn at(&self, ms: i64) -> &Self {
        self.clock.pin(ms);
        self
    }

    /// The options.
    pub fn config(&self) -> &LearningConfig {
        &self.config
    }

    /// The scope label every row of this deployment carries.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Handles one request at the clock's time; `None` when the response leaves the cookie alone (learning is
    /// off, or the request is not collected and carried no cookie).
    ///
    /// - Not collected (no consent under the per-request policy, consent `false` under either): the cookie's
    ///   session is deleted and the cookie cleared.
    /// - A login: a [`Login::VerifiedSelf`] labels the cookie's unexpired session; any other login deletes it
    ///   if it is unlabelled. Either way the cookie is cleared, so measurements after the login never reach it.
    /// - Anonymous: the cookie's open session (unexpired, unlabelled, undisputed) gets this snapshot, or a new
    ///   session starts; in shadow mode the predictor's guess is recorded with it.
    pub async fn observe(
        &self,
        visit: LearningVisit<'_>,
    ) -> Result<Option<LearningCookie>, LearningError> {
        let now_ms = self.clock.now_ms();
        if !self.config.enabled() {
            return Ok(visit.cookie.map(|_| LearningCookie::Clear));
        }
        let id = visit.cookie.and_then(SessionId::parse);
        if !self.config.collection().allows(visit.consent) {
            if let Some(id) = &id {
                self.store.delete_session(&self.scope, id).await?;
            }
            return Ok(visit.cookie.map(|_| LearningCookie::Clear));
        }
        let existing = match &id {
            Some(id) => self.store.session(&self.scope, id).await?,
            None => None,
        };
        if *visit.login != Login::Anonymous {
            self.end_flow(existing, visit.login, now_ms).await?;
            return Ok(visit.cookie.map(|_| LearningCookie::Clear));
        }
        let open =
            existing.filter(|s| s.subject_id.is_none() && !s.disputed && s.expires_at > now_ms);
        let prediction = self.predict(visit.observation, now_ms).await?;
        let session = match open {
            Some(mut session) => {
                session.observation = visit.observation.clone();
                session.observed_at = now_ms;
                session.prediction = prediction;
                if !self.store.update_session(&session, now_ms).await? {
                    // Labelled or ended in between (a login on another tab): this snapshot starts over.
                    return self
                        .start(visit.observation, session.prediction, now_ms)
                        .await;
                }
                session
            }
            None => return self.start(visit.observation, prediction, now_ms).await,
        };
        Ok(Some(cookie_for(session, now_ms)))
    }

    async fn start(
        &self,
        observation: &Observation,
        prediction: Prediction,
        now_ms: i64,
    ) -> Result<Option<LearningCookie>, LearningError> {
        let session = LearningSession {
            id: SessionId::generate(),
            scope: self.scope.clone(),
            started_at: now_ms,
            expires_at: self.config.session_end(now_ms),
            observed_at: now_ms,
            observation: observation.clone(),
            subject_id: None,
            verified_at: None,
            disputed: false,
            prediction,
        };
        self.store.insert_session(&session).await?;
        Ok(Some(cookie_for(session, now_ms)))
    }

    async fn end_flow(
        &self,
        existing: Option<LearningSession>,
        login: &Login,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let Some(session) = existing else {
            return Ok(());
        };
        match login {
            Login::VerifiedSelf(subject) if session.expires_at > now_ms => {
                self.store
                    .confirm_session(
                        &self.scope,
                        &session.id,
                        subject,
                        MAX_CONFIRMED_PER_SUBJECT,
                        now_ms,
                    )
                    .await?;
            }
            _ if session.subject_id.is_none() => {
                self.store.delete_session(&self.scope, &session.id).await?;
            }
            _ => {}
        }
        Ok(())
    }

    async fn predict(&self, current: &Observation, now_ms: i64) -> Result<Prediction, StoreError> {
        let Some(predictor) = self
            .predictor
            .as_ref()
            .filter(|_| self.config.mode() == LearningMode::Shadow)
        else {
            return Ok(Prediction::status(PredictionStatus::NotRun));
        };
        let cutoff = self.config.cutoff(now_ms);
        let pool = self
            .store
            .examples(&self.scope, current, cutoff, MAX_EXAMPLES)
            .await?;
        if pool.saturated || pool.examples.is_empty() {
            return Ok(Prediction::status(PredictionStatus::Abstained));
        }
        let input = PredictionInput {
            current,
            examples: &pool.examples,
            timeout_ms: self.config.predictor_timeout_ms(),
        };
        let Ok(answer) = predictor.predict(input).await else {
            return Ok(Prediction::status(PredictionStatus::Unavailable));
        };
        let Some(subject) = answer.subject_id else {
            return Ok(Prediction::status(PredictionStatus::Abstained));
        };
        let known = pool.examples.iter().any(|e| e.subject_id == subject);
        match answer.score {
            Some(score) if known && score.is_finite() && (0.0..=1.0).contains(&score) => {
                Ok(Prediction {
                    status: PredictionStatus::Suggested,
                    subject_id: Some(subject),
                    score: Some(score as f32),
                })
            }
            _ => Ok(Prediction::status(PredictionStatus::Unavailable)),
        }
    }

    /// Recent verified, undisputed examples with their recorded predictions, newest first: `limit` 1–100.
    /// Scores are uncalibrated and never proof of identity.
    pub async fn reports(&self, limit: usize) -> Result<Vec<LearningReport>, LearningError> {
        let now_ms = self.clock.now_ms();
        let limit = REPORT_LIMIT.check(limit)?;
        Ok(self
            .store
            .reports(&self.scope, self.config.cutoff(now_ms), limit)
            .await?)
    }

    /// Deletes one flow by its id; returns whether it existed.
    pub async fn delete_session(&self, id: &str) -> Result<bool, LearningError> {
        let id = SessionId::parse(id).ok_or(LearningError::InvalidSession)?;
        Ok(self.store.delete_session(&self.scope, &id).await?)
    }

    /// Deletes expired anonymous flows, disputed flows, rows out of retention and surplus examples.
    pub async fn cleanup(&self) -> Result<u64, LearningError> {
        let now_ms = self.clock.now_ms();
        let cutoff = self.config.cutoff(now_ms);
        Ok(self
            .store
            .cleanup(&self.scope, cutoff, MAX_CONFIRMED_PER_SUBJECT, now_ms)
            .await?)
    }

    /// Deletes every session labelled with or predicted for `subject` (part of erasing a user).
    pub async fn forget_subject(&self, subject: &SubjectId) -> Result<u64, LearningError> {
        Ok(self.store.delete_subject_sessions(subject).await?)
    }
}

fn cookie_for(session: LearningSession, now_ms: i64) -> LearningCookie {
    let left = session.expires_at.saturating_sub(now_ms).max(0) / 1000;
    LearningCookie::Set {
        id: session.id,
        max_age_secs: u64::try_from(left).unwrap_or(0),
        prediction: session.prediction,
    }
}
