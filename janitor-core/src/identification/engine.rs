//! The engine: one identification over a [`VisitorStore`] and an optional [`Evaluator`].

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Serialize, Serializer};

use crate::clock::Clock;
use crate::error::StoreError;
use crate::identification::candidates::{
    probes_for, rank_lookup_rows, CANDIDATE_FLOOR, CANDIDATE_LIMIT,
};
use crate::identification::config::{EngineConfig, HISTORY_LIMIT, RESTORE_THRESHOLD};
use crate::identification::decision::{blend, score_candidate, ScoredCandidate};
use crate::identification::evaluator::{Evaluation, EvaluationInput, Evaluator, NoEvaluator};
use crate::identification::network::NetworkDigest;
use crate::identification::observation::Observation;
use crate::identification::payload::{ExtendedSignals, VisitorPayload};
use crate::identification::similarity::{compare, Comparison};
use crate::identification::store::{ReturningHistory, ReturningVisit, VisitWrite, VisitorStore};
use crate::js::js_f64;
use crate::visitor::VisitorId;

/// Evidence cap a returning visitor's snapshot needs before a cookie may teach the history a new observation.
const LEARNING_CAP: f64 = RESTORE_THRESHOLD.default;

/// Whether risk was evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RiskStatus {
    /// No evaluator is configured (deterministic-only mode).
    Disabled,
    /// An evaluator is configured but gave no valid answer (timeout, error, malformed, refused).
    Unavailable,
    /// The risk values come from the evaluator.
    Evaluated,
}

impl RiskStatus {
    /// The name the answer carries: `disabled`, `unavailable` or `evaluated`.
    pub fn as_str(&self) -> &'static str {
        match self {
            RiskStatus::Disabled => "disabled",
            RiskStatus::Unavailable => "unavailable",
            RiskStatus::Evaluated => "evaluated",
        }
    }
}

/// Risk scores in [0, 1]; zeros unless evaluated. Risk never changes identity.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Risk {
    /// Probability of browser automation.
    #[serde(serialize_with = "js_f64")]
    pub automation: f64,
    /// Probability of manipulated signals.
    #[serde(serialize_with = "js_f64")]
    pub suspicious: f64,
}

/// The closest known browser and its deterministic similarity.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BrowserMatch {
    /// The matched visitor.
    #[serde(serialize_with = "as_str")]
    pub visitor_id: VisitorId,
    /// Its best deterministic similarity.
    #[serde(serialize_with = "js_f64")]
    pub score: f64,
}

/// The full result of one identification. Send to the browser only with client scores exposed; server code
/// always gets it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// The visitor's id (restored, carried by the cookie, or minted).
    #[serde(serialize_with = "as_str")]
    pub visitor_id: VisitorId,
    /// 1 on the cookie path, the restore confidence when restored, 0 for a new id.
    #[serde(serialize_with = "js_f64")]
    pub confidence: f64,
    /// Whether the id was known before this request.
    pub is_returning: bool,
    /// Risk scores.
    pub risk: Risk,
    /// Whether the risk scores were evaluated.
    pub risk_status: RiskStatus,
    /// The closest known browser, when one qualified.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub browser_match: Option<BrowserMatch>,
}

fn as_str<S: Serializer>(id: &VisitorId, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(id.as_str())
}

/// Which way an identification went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentifyPath {
    /// A valid cookie with retained history.
    Cookie,
    /// No usable cookie: candidate search.
    Cookieless,
}

/// What one identification did, for metrics and tests. Holds no raw signal.
#[derive(Debug, Clone, PartialEq)]
pub struct IdentifyMetrics {
    /// Cookie or cookieless.
    pub path: IdentifyPath,
    /// Candidates that survived lookup ranking.
    pub candidate_count: usize,
    /// The best candidate came only from crowded probes.
    pub lookup_saturated: bool,
    /// Best deterministic similarity found.
    pub deterministic_score: f64,
    /// The evaluator gave a valid answer that was used.
    pub evaluator_used: bool,
    /// The observation was saved to the history.
    pub observation_saved: bool,
}

/// An identity with its metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct Identification {
    /// The result.
    pub identity: Identity,
    /// How it was reached.
    pub metrics: IdentifyMetrics,
    /// The request's payload as the engine normalised it (with the network and extended signals it was
    /// given), so that what else reads the request (learning) does not normalise it again.
    pub observation: Observation,
}

/// One identification's input ([`Engine::identify_request`]): `IdentifyRequest::new(&payload, now_ms)` and the
/// `with_*` methods for what else is known of the request. Fields may be added, so it is built that way.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct IdentifyRequest<'a> {
    /// The validated payload.
    pub payload: &'a VisitorPayload,
    /// The id from the request's single `__visitor` cookie, if any.
    pub cookie: Option<&'a VisitorId>,
    /// The digest of the network the request came from, when the application enables it
    /// ([`network`](crate::identification::network)); `None` leaves every decision as without it.
    pub network: Option<NetworkDigest>,
    /// The request's extended client signals, when the application enables them ([`ExtendedSignals`]);
    /// `None` leaves every decision as without them.
    pub extended: Option<ExtendedSignals>,
    /// The time of the request, epoch milliseconds.
    pub now_ms: i64,
}

impl<'a> IdentifyRequest<'a> {
    /// A request with `payload` at `now_ms` (epoch milliseconds), with no cookie and nothing else known.
    pub fn new(payload: &'a VisitorPayload, now_ms: i64) -> Self {
        IdentifyRequest {
            payload,
            cookie: None,
            network: None,
            extended: None,
            now_ms,
        }
    }

    /// The id from the request's single `__visitor` cookie.
    pub fn with_cookie(mut self, cookie: Option<&'a VisitorId>) -> Self {
        self.cookie = cookie;
        self
    }

    /// The digest of the network the request came from.
    pub fn with_network(mut self, network: Option<NetworkDigest>) -> Self {
        self.network = network;
        self
    }

    /// The request's extended client signals; an empty set counts as none.
    pub fn with_extended(mut self, extended: Option<ExtendedSignals>) -> Self {
        self.extended = extended.filter(|e| !e.is_empty());
        self
    }
}

/// Why an identification failed. Evaluator failures never fail it; storage failures do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentifyError {
    /// The store failed.
    #[error(transparent)]
    Storage(#[from] StoreError),
}

/// Runs identifications. Cheap to share behind an `Arc`; holds no per-request state.
#[derive(Debug)]
pub struct Engine<S, E = NoEvaluator> {
    store: S,
    evaluator: Option<E>,
    config: EngineConfig,
    clock: Clock,
}

impl<S: VisitorStore> Engine<S, NoEvaluator> {
    /// An engine in deterministic-only mode (`riskStatus: "disabled"`).
    pub fn new(store: S, config: EngineConfig) -> Self {
        Engine {
            store,
            evaluator: None,
            config,
            clock: Clock::system(),
        }
    }
}

impl<S: VisitorStore, E: Evaluator> Engine<S, E> {
    /// The same engine with an evaluator.
    pub fn with_evaluator<E2: Evaluator>(self, evaluator: E2) -> Engine<S, E2> {
        Engine {
            store: self.store,
            evaluator: Some(evaluator),
            config: self.config,
            clock: self.clock,
        }
    }

    /// The same engine with an evaluator, or in deterministic-only mode when `evaluator` is `None` (for code that
    /// decides at run time).
    pub fn with_optional_evaluator<E2: Evaluator>(self, evaluator: Option<E2>) -> Engine<S, E2> {
        Engine {
            store: self.store,
            evaluator,
            config: self.config,
            clock: self.clock,
        }
    }

    /// The same engine reading the time of [`identify`](Self::identify) from `clock` (a manual one in tests and
    /// simulations).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The clock [`identify`](Self::identify) reads the time from.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Identifies a validated payload; `cookie` is the id from the request's single `__visitor` cookie, if any
    /// (see [`visitor_from_cookies`](crate::visitor::visitor_from_cookies)).
    pub async fn identify(
        &self,
        payload: &VisitorPayload,
        cookie: Option<&VisitorId>,
    ) -> Result<Identification, IdentifyError> {
        self.identify_at(payload, cookie, self.clock.now_ms()).await
    }

    /// [`identify`](Self::identify) at a given time (epoch milliseconds), whatever the engine's clock says.
    pub async fn identify_at(
        &self,
        payload: &VisitorPayload,
        cookie: Option<&VisitorId>,
        now_ms: i64,
    ) -> Result<Identification, IdentifyError> {
        self.identify_request(IdentifyRequest::new(payload, now_ms).with_cookie(cookie))
            .await
    }

    /// Identifies one request with everything known of it: [`identify_at`](Self::identify_at) with the
    /// network the request came from and its extended client signals, which are stored with the observation and
    /// read by the precise policy.
    pub async fn identify_request(
        &self,
        request: IdentifyRequest<'_>,
    ) -> Result<Identification, IdentifyError> {
        let IdentifyRequest {
            payload,
            cookie,
            network,
            extended,
            now_ms,
        } = request;
        let mut current = Observation::normalize(&payload.signals, payload.behavior.as_ref());
        current.network = network;
        current.extended = extended;
        if let Some(visitor) = cookie {
            // An identical newest observation would teach the history exactly when `current` itself is
            // learnable, so the store may refresh it in the same call as the read.
            let visit = ReturningVisit {
                visitor,
                observation: &current,
                refresh: learnable(&compare(&current, &current)),
                limit: HISTORY_LIMIT,
                now_ms,
            };
            let found = self.store.returning_visit(visit).await?;
            // A cookie counts only while its visitor still has retained observations.
            if !found.history.is_empty() {
                return self.returning(visitor, found, current, now_ms).await;
            }
        }
        // Boxed: the cookieless future is kilobytes, and a cookie visit would carry (and move) it unused.
        Box::pin(self.cookieless(current, now_ms)).await
    }

    /// Records a visit of a visitor that exists: `false` when it no longer does. An erasure that deleted the
    /// visitor after this identification read it leaves the write naming a row that is gone (a foreign-key
    /// violation on PostgreSQL, an unknown visitor in memory: a data error); the visitor then has no
    /// observation left, which tells that race from any other data error, which stays one.
    async fn record_known(&self, write: VisitWrite<'_>) -> Result<bool, StoreError> {
        match self.store.record_visit(write).await {
            Ok(()) => Ok(true),
            Err(StoreError::Data(reason)) => {
                let left = self
                    .store
                    .recent_observations(write.visitor, 1, write.now_ms)
                    .await?;
                if left.is_empty() {
                    Ok(false)
                } else {
                    Err(StoreError::Data(reason))
                }
            }
            Err(other) => Err(other),
        }
    }

    fn initial_status(&self) -> RiskStatus {
        if self.evaluator.is_some() {
            RiskStatus::Unavailable
        } else {
            RiskStatus::Disabled
        }
    }

    async fn evaluate_one(&self, input: EvaluationInput<'_>) -> Option<Evaluation> {
        let evaluator = self.evaluator.as_ref()?;
        evaluator
            .evaluate(input)
            .await
            .ok()
            .filter(Evaluation::is_valid)
    }

    async fn returning(
        &self,
        visitor: &VisitorId,
        found: ReturningHistory,
        current: Observation,
        now_ms: i64,
    ) -> Result<Identification, IdentifyError> {
        let history = &found.history[..];
        let comparisons: Vec<_> = history
            .iter()
            .map(|previous| compare(previous, &current))
            .collect();
        let score = comparisons
            .iter()
            .map(|c| c.score)
            .fold(f64::NEG_INFINITY, f64::max);
        // A copied cookie must not teach the history a different or sparsely described device.
        let learn = comparisons.iter().any(learnable);
        debug_assert!(
            learn || !found.recorded,
            "a recorded visit is a learned one"
        );
        let evaluation = self
            .evaluate_one(EvaluationInput {
                history,
                current: &current,
                deterministic_similarity: score,
            })
            .await;
        if !found.recorded {
            let write = VisitWrite {
                visitor,
                create: false,
                observation: learn.then_some(&current),
                now_ms,
            };
            if !self.record_known(write).await? {
                // Erased since its history was read: the cookie now names no visitor.
                return Box::pin(self.cookieless(current, now_ms)).await;
            }
        }
        let (risk, risk_status) = risk_of(evaluation, self.initial_status());
        Ok(Identification {
            identity: Identity {
                visitor_id: visitor.clone(),
                confidence: 1.0,
                is_returning: true,
                risk,
                risk_status,
                browser_match: Some(BrowserMatch {
                    visitor_id: visitor.clone(),
                    score,
                }),
            },
            metrics: IdentifyMetrics {
                path: IdentifyPath::Cookie,
                candidate_count: 0,
                lookup_saturated: false,
                deterministic_score: score,
                evaluator_used: evaluation.is_some(),
                observation_saved: learn,
            },
            observation: current,
        })
    }

    async fn cookieless(
        &self,
        current: Observation,
        now_ms: i64,
    ) -> Result<Identification, IdentifyError> {
        let probes = probes_for(&current);
        let rows = if probes.is_empty() {
            Vec::new()
        } else {
            self.store.find_candidate_rows(&probes, now_ms).await?
        };
        let candidates = rank_lookup_rows(&rows, &current, CANDIDATE_LIMIT);
        let candidate_count = candidates.len();
        let mut histories = if candidates.is_empty() {
            HashMap::new()
        } else {
            let ids: Vec<VisitorId> = candidates.iter().map(|c| c.visitor_id.clone()).collect();
            self.store
                .recent_observations_batch(&ids, HISTORY_LIMIT, now_ms)
                .await?
        };
        let mut scored: Vec<ScoredCandidate> = candidates
            .into_iter()
            .filter_map(|c| {
                let history = histories.remove(&c.visitor_id).unwrap_or_default();
                score_candidate(c, history, &current)
            })
            .collect();

        let mut evaluation = None;
        if let Some(evaluator) = &self.evaluator {
            if scored.is_empty() {
                // A first visit still gets a risk opinion, with no history to invent identity from.
                let input = EvaluationInput {
                    history: &[],
                    current: &current,
                    deterministic_similarity: 0.0,
                };
                evaluation = self.evaluate_one(input).await;
            } else {
                let inputs: Vec<EvaluationInput<'_>> = scored
                    .iter()
                    .map(|c| EvaluationInput {
                        history: &c.history,
                        current: &current,
                        deterministic_similarity: c.score,
                    })
                    .collect();
                // The batch is used only whole: one valid answer per candidate.
                let answers = evaluator
                    .evaluate_batch(&inputs)
                    .await
                    .ok()
                    .filter(|answers| {
                        answers.len() == inputs.len() && answers.iter().all(Evaluation::is_valid)
                    });
                for (candidate, answer) in scored.iter_mut().zip(answers.into_iter().flatten()) {
                    blend(candidate, answer);
                }
            }
        }

        let decision =
            self.config
                .policy()
                .decide(&mut scored, &current, self.config.restore_threshold());
        let best = scored.first();
        if let Some(best) = best {
            evaluation = best.evaluation;
        }
        let mut browser_match = best.map(|b| BrowserMatch {
            visitor_id: b.candidate.visitor_id.clone(),
            score: b.score,
        });
        let mut restored = best
            .filter(|_| decision.restore)
            .map(|b| (b.candidate.visitor_id.clone(), b.confidence));
        if let Some((id, _)) = &restored {
            let write = VisitWrite {
                visitor: id,
                create: false,
                observation: Some(&current),
                now_ms,
            };
            if !self.record_known(write).await? {
                // Erased since it was read: answered as after the erasure, with nothing restored.
                restored = None;
                browser_match = None;
            }
        }
        let is_returning = restored.is_some();
        let (visitor, confidence) = match restored {
            Some(restored) => restored,
            None => {
                let minted = VisitorId::generate();
                let write = VisitWrite {
                    visitor: &minted,
                    create: true,
                    observation: Some(&current),
                    now_ms,
                };
                self.store.record_visit(write).await?;
                (minted, 0.0)
            }
        };
        let (risk, risk_status) = risk_of(evaluation, self.initial_status());
        Ok(Identification {
            identity: Identity {
                visitor_id: visitor,
                confidence,
                is_returning,
                risk,
                risk_status,
                browser_match,
            },
            metrics: IdentifyMetrics {
                path: IdentifyPath::Cookieless,
                candidate_count,
                lookup_saturated: best.is_some_and(|b| b.candidate.saturated),
                deterministic_score: best.map_or(0.0, |b| b.score),
                evaluator_used: evaluation.is_some(),
                observation_saved: true,
            },
            observation: current,
        })
    }
}

/// Whether a stored snapshot compared this way lets a cookie teach the history the visit's observation.
fn learnable(c: &Comparison) -> bool {
    !c.contradiction && c.score >= CANDIDATE_FLOOR && c.cap >= LEARNING_CAP
}

fn risk_of(evaluation: Option<Evaluation>, otherwise: RiskStatus) -> (Risk, RiskStatus) {
    match evaluation {
        Some(e) => (
            Risk {
                automation: e.automation,
                suspicious: e.suspicious,
            },
            RiskStatus::Evaluated,
        ),
        None => (Risk::default(), otherwise),
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
