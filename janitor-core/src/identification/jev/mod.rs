//! The compact state and questions sent to a Jev provider, and the strict reading of its answers (no I/O).
//!
//! A single evaluation (a cookie visit, or a first visit with no history) posts
//!
//! ```json
//! {"model": "jev-latest",
//!  "state": {"history": [..], "current": {..}, "deterministicSimilarity": 0.94, "evidence": [..]},
//!  "questions": {"sameVisitor": {..}, "automation": {..}, "suspicious": {..}}}
//! ```
//!
//! and a batch of up to ten candidates posts `{"current", "candidates": [{"history", "deterministicSimilarity"}]}`
//! with one question `candidate0`… per candidate plus `automation` and `suspicious`, answered in one call.
//! The provider answers `{"answers": {"sameVisitor": {"type": "noul", "noul": 0.98}, ..}}`.
//!
//! The state holds normalized signals only: no user agent, IP address, visitor ID or cookie ever enters it.
//! The HTTP client that sends it lives in `janitor-axum`.
//!
//! ```
//! use janitor_core::identification::jev::JevRequest;
//! use janitor_core::{EvaluationInput, Observation};
//!
//! let current = Observation { timezone: Some("Europe/Paris".into()), ..Observation::default() };
//! let request = JevRequest::single(EvaluationInput {
//!     history: &[],
//!     current: &current,
//!     deterministic_similarity: 0.0,
//! });
//! let body = request.to_body("jev-latest")?;
//! assert!(body.starts_with(br#"{"model":"jev-latest","state":{"history":[],"current":{"timezone":"Europe/Paris"}"#));
//!
//! let answer = br#"{"answers":{"sameVisitor":{"type":"noul","noul":0.1},
//!     "automation":{"type":"noul","noul":0},"suspicious":{"type":"noul","noul":0.25}}}"#;
//! assert_eq!(request.read_answer(answer)?[0].suspicious, 0.25);
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```

mod answer;
mod questions;
mod state;
#[cfg(test)]
mod tests;

pub use answer::{noul, read_batch, read_evaluation, AnswerError};
pub use questions::{
    candidate_key, candidate_question, questions, Criteria, JevQuestions, Question, QuestionSet,
    NOUL, QUESTIONS_JSON,
};
pub use state::{
    BatchState, CandidateState, CompactObservation, Evidence, IdentityState, JevRequest, JevState,
    RequestError,
};

/// Largest request body sent, in bytes; a larger one is refused before any connection is made.
pub const MAX_REQUEST_BYTES: usize = 65_536;
/// Largest answer body read, in bytes; the read stops there and a larger answer is an error.
pub const MAX_RESPONSE_BYTES: usize = 65_536;
/// Most candidates one batch request asks about (the engine's ten-candidate limit).
pub const MAX_BATCH_CANDIDATES: usize = crate::identification::candidates::CANDIDATE_LIMIT;
/// The model alias the reference asks for unless configured otherwise.
pub const DEFAULT_MODEL: &str = "jev-latest";
