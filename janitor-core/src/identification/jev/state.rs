//! The compact state a provider sees, and the request that carries it.
//!
//! Field order and number format follow JavaScript's `JSON.stringify` of the reference's state, so the body
//! is the same bytes whichever implementation sends it.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

use super::answer::{read_batch, read_evaluation, AnswerError};
use super::questions::QuestionSet;
use super::{MAX_BATCH_CANDIDATES, MAX_REQUEST_BYTES};
use crate::identification::config::HISTORY_LIMIT;
use crate::identification::evaluator::{Evaluation, EvaluationInput};
use crate::identification::observation::Observation;
use crate::identification::similarity::{compare, Features};
use crate::js::{js_f64, js_number_string};

/// A request that is not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The encoded body is over the limit.
    #[error("the request body is {bytes} bytes, over the {MAX_REQUEST_BYTES}-byte limit")]
    TooLarge {
        /// The encoded size.
        bytes: usize,
    },
    /// A batch holds no candidate, or more than the protocol allows.
    #[error("a batch holds from 1 to {MAX_BATCH_CANDIDATES} candidates, got {count}")]
    CandidateCount {
        /// Candidates given.
        count: usize,
    },
    /// The candidates of a batch are not compared with the same current observation.
    #[error("every candidate of a batch must share one current observation")]
    MixedCurrent,
    /// The body could not be encoded.
    #[error("the request could not be encoded: {0}")]
    Encoding(String),
}

/// A number written as JavaScript writes it (`2`, not `2.0`).
struct JsNumber(f64);

impl Serialize for JsNumber {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        js_f64(&self.0, serializer)
    }
}

/// Writes `value` under `key` unless it is absent, as `JSON.stringify` drops `undefined`.
fn entry<M: SerializeMap, T: Serialize + ?Sized>(
    map: &mut M,
    key: &str,
    value: Option<&T>,
) -> Result<(), M::Error> {
    match value {
        Some(v) => map.serialize_entry(key, v),
        None => Ok(()),
    }
}

/// One observation as the provider sees it: identity and risk signals only. The user agent is left out (as
/// are IP address, visitor ID and cookies, which an observation never holds); the screen becomes `"WxH"`;
/// hardware, automation and graphics are flattened.
#[derive(Debug, Clone, Copy)]
pub struct CompactObservation<'a>(pub &'a Observation);

impl Serialize for CompactObservation<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let o = self.0;
        let screen = o.screen.as_ref();
        let hardware = o.hardware.as_ref();
        let graphics = o.graphics.as_ref();
        let number = |v: Option<f64>| v.map(JsNumber);
        let mut map = serializer.serialize_map(None)?;
        entry(&mut map, "platform", o.platform.as_ref())?;
        entry(&mut map, "browser", o.browser.as_ref())?;
        entry(&mut map, "timezone", o.timezone.as_ref())?;
        entry(&mut map, "languages", o.languages.as_ref())?;
        let size = screen.and_then(|s| Some((s.width?, s.height?)));
        let size = size.map(|(w, h)| format!("{}x{}", js_number_string(w), js_number_string(h)));
        entry(&mut map, "screen", size.as_ref())?;
        entry(
            &mut map,
            "colorDepth",
            number(screen.and_then(|s| s.color_depth)).as_ref(),
        )?;
        entry(
            &mut map,
            "pixelRatio",
            number(screen.and_then(|s| s.pixel_ratio)).as_ref(),
        )?;
        entry(&mut map, "viewport", o.viewport.as_ref())?;
        entry(
            &mut map,
            "hardwareConcurrency",
            number(hardware.and_then(|h| h.hardware_concurrency)).as_ref(),
        )?;
        entry(
            &mut map,
            "deviceMemory",
            number(hardware.and_then(|h| h.device_memory)).as_ref(),
        )?;
        entry(
            &mut map,
            "maxTouchPoints",
            number(hardware.and_then(|h| h.max_touch_points)).as_ref(),
        )?;
        entry(
            &mut map,
            "webdriver",
            o.automation.as_ref().and_then(|a| a.webdriver.as_ref()),
        )?;
        entry(
            &mut map,
            "webglVendor",
            graphics.and_then(|g| g.webgl_vendor.as_ref()),
        )?;
        entry(
            &mut map,
            "webglRenderer",
            graphics.and_then(|g| g.webgl_renderer.as_ref()),
        )?;
        entry(&mut map, "behavior", o.behavior.as_ref())?;
        map.end()
    }
}

/// One history snapshot's feature comparison with the current observation, numbers written as JavaScript
/// writes them.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence(pub Features);

impl Serialize for Evidence {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let f = &self.0;
        let mut map = serializer.serialize_map(None)?;
        entry(&mut map, "samePlatform", f.same_platform.as_ref())?;
        entry(&mut map, "sameBrowser", f.same_browser.as_ref())?;
        entry(&mut map, "sameTimezone", f.same_timezone.as_ref())?;
        entry(&mut map, "sameLanguages", f.same_languages.as_ref())?;
        entry(
            &mut map,
            "screenSimilarity",
            f.screen_similarity.map(JsNumber).as_ref(),
        )?;
        entry(
            &mut map,
            "viewportSimilarity",
            f.viewport_similarity.map(JsNumber).as_ref(),
        )?;
        entry(
            &mut map,
            "sameHardwareConcurrency",
            f.same_hardware_concurrency.as_ref(),
        )?;
        entry(&mut map, "sameDeviceMemory", f.same_device_memory.as_ref())?;
        entry(
            &mut map,
            "sameTouchCapabilities",
            f.same_touch_capabilities.as_ref(),
        )?;
        entry(&mut map, "sameWebglVendor", f.same_webgl_vendor.as_ref())?;
        entry(
            &mut map,
            "sameWebglRenderer",
            f.same_webgl_renderer.as_ref(),
        )?;
        entry(&mut map, "webdriverDetected", f.webdriver_detected.as_ref())?;
        map.end()
    }
}

/// The state of a single evaluation: up to five snapshots, the current observation, the deterministic
/// similarity, and each snapshot's feature comparison.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IdentityState<'a> {
    /// Up to [`HISTORY_LIMIT`] snapshots, newest first.
    pub history: Vec<CompactObservation<'a>>,
    /// The observation being identified.
    pub current: CompactObservation<'a>,
    /// The similarity the engine found.
    #[serde(serialize_with = "js_f64")]
    pub deterministic_similarity: f64,
    /// One comparison per history snapshot, in the same order.
    pub evidence: Vec<Evidence>,
}

impl<'a> IdentityState<'a> {
    /// The state of `input`; snapshots past the fifth are left out.
    pub fn new(input: EvaluationInput<'a>) -> Self {
        let history = &input.history[..input.history.len().min(HISTORY_LIMIT)];
        IdentityState {
            history: history
                .iter()
                .map(|o| CompactObservation(o.as_ref()))
                .collect(),
            current: CompactObservation(input.current),
            deterministic_similarity: input.deterministic_similarity,
            evidence: history
                .iter()
                .map(|previous| Evidence(compare(previous, input.current).features))
                .collect(),
        }
    }
}

/// One candidate of a batch: its history and deterministic similarity.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CandidateState<'a> {
    /// Up to [`HISTORY_LIMIT`] snapshots, newest first.
    pub history: Vec<CompactObservation<'a>>,
    /// The similarity the engine found for this candidate.
    #[serde(serialize_with = "js_f64")]
    pub deterministic_similarity: f64,
}

/// The state of a batch: the current observation once, and every candidate.
#[derive(Debug, Clone, Serialize)]
pub struct BatchState<'a> {
    /// The observation being identified.
    pub current: CompactObservation<'a>,
    /// The candidates, in the engine's order.
    pub candidates: Vec<CandidateState<'a>>,
}

/// The state sent with a request.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum JevState<'a> {
    /// One history against the current observation.
    Identity(IdentityState<'a>),
    /// Several candidates' histories against the current observation.
    Batch(BatchState<'a>),
}

/// One provider request, `{state, questions}`: the value the conformance file's `jev` section holds.
#[derive(Debug, Clone, Serialize)]
pub struct JevRequest<'a> {
    /// What the provider judges.
    pub state: JevState<'a>,
    /// What it is asked.
    pub questions: QuestionSet,
}

/// The body actually posted: the model first, as the reference writes it.
#[derive(Serialize)]
struct Body<'r, 'a> {
    model: &'r str,
    state: &'r JevState<'a>,
    questions: &'r QuestionSet,
}

impl<'a> JevRequest<'a> {
    /// The request of a single evaluation: three questions about one history.
    pub fn single(input: EvaluationInput<'a>) -> Self {
        JevRequest {
            state: JevState::Identity(IdentityState::new(input)),
            questions: QuestionSet::single(),
        }
    }

    /// The request of a batch: one `sameVisitor` question per candidate, and `automation` and `suspicious`
    /// once. Refused for no candidate, more than [`MAX_BATCH_CANDIDATES`], or candidates compared with
    /// different current observations.
    pub fn batch(candidates: &[EvaluationInput<'a>]) -> Result<Self, RequestError> {
        let count = candidates.len();
        let Some(first) = candidates.first().filter(|_| count <= MAX_BATCH_CANDIDATES) else {
            return Err(RequestError::CandidateCount { count });
        };
        let shared = |c: &EvaluationInput<'_>| {
            std::ptr::eq(c.current, first.current) || c.current == first.current
        };
        if !candidates.iter().all(shared) {
            return Err(RequestError::MixedCurrent);
        }
        Ok(JevRequest {
            state: JevState::Batch(BatchState {
                current: CompactObservation(first.current),
                candidates: candidates
                    .iter()
                    .map(|c| CandidateState {
                        history: c
                            .history
                            .iter()
                            .take(HISTORY_LIMIT)
                            .map(|o| CompactObservation(o.as_ref()))
                            .collect(),
                        deterministic_similarity: c.deterministic_similarity,
                    })
                    .collect(),
            }),
            questions: QuestionSet::batch(count),
        })
    }

    /// How many evaluations the answer must hold: 1, or one per candidate.
    pub fn expected_answers(&self) -> usize {
        match &self.state {
            JevState::Identity(_) => 1,
            JevState::Batch(batch) => batch.candidates.len(),
        }
    }

    /// The JSON body `{model, state, questions}`, refused when over [`MAX_REQUEST_BYTES`].
    pub fn to_body(&self, model: &str) -> Result<Vec<u8>, RequestError> {
        let body = serde_json::to_vec(&Body {
            model,
            state: &self.state,
            questions: &self.questions,
        })
        .map_err(|e| RequestError::Encoding(e.to_string()))?;
        if body.len() > MAX_REQUEST_BYTES {
            return Err(RequestError::TooLarge { bytes: body.len() });
        }
        Ok(body)
    }

    /// Reads the provider's answer to this request strictly: one evaluation, or one per candidate in order.
    pub fn read_answer(&self, body: &[u8]) -> Result<Vec<Evaluation>, AnswerError> {
        match &self.state {
            JevState::Identity(_) => read_evaluation(body).map(|e| vec![e]),
            JevState::Batch(batch) => read_batch(body, batch.candidates.len()),
        }
    }
}
