//! Learning from later logins: short anonymous sessions that a later verified login labels, so that an
//! application can study whether past visits predict later logins. Optional, and off by default.
//!
//! Learning never authenticates, never merges visitors, never changes matching or risk and adds nothing to the
//! browser's answer. Its flow is tied to the `__visitor_learning` cookie alone, never to the visitor id: a
//! visitor id restored by similarity never labels a session, and losing the cookie ends the flow.
//!
//! - [`Learning::observe`] handles one request: an anonymous visit keeps one latest snapshot per session
//!   (aggregate behaviour included; no page sequence, URL history or raw input events); a verified
//!   self-person login ([`Login::VerifiedSelf`]) labels it and clears the cookie; any other login ends the
//!   flow unlabelled; a request without consent deletes its row and clears the cookie.
//! - In shadow mode a [`Predictor`] guesses the subject from at most 100 recent verified examples; its
//!   answer is recorded and compared later, and changes nothing else.
//! - [`Learning::reports`], [`delete_session`](Learning::delete_session), [`cleanup`](Learning::cleanup) and
//!   [`forget_subject`](Learning::forget_subject) export, erase and retire.
//!
//! Storage is the [`LearningStore`] trait: [`MemoryLearningStore`] here, `PgLearningStore` in `janitor-sql`,
//! both held to the behaviour suite in `testing::learning_store` (feature `testing`).
//! [docs/learning.md](https://github.com/janitor-rust/janitor/blob/main/docs/learning.md)
//! gives every option and the table.

pub mod config;
mod error;
mod memory;
mod predictor;
mod service;
mod session;
mod store;

pub use config::{CollectionPolicy, LearningConfig, LearningConfigBuilder, LearningMode};
pub use error::LearningError;
pub(crate) use memory::erase_subject_sessions;
pub use memory::MemoryLearningStore;
pub use predictor::{NoPredictor, PredictionInput, Predictor, PredictorAnswer, PredictorError};
pub use service::{Learning, LearningCookie, LearningVisit, Login, LEARNING_SCOPE_TEXT};
pub use session::{
    LearningExample, LearningReport, LearningSession, Prediction, PredictionStatus, SessionId,
    SESSION_ID_BYTES, SESSION_PREFIX,
};
pub use store::{example_buckets, Confirmation, ExamplePool, LearningStore};
