//! A learning session: one anonymous browser flow, its latest snapshot, its later label and the shadow guess.

use std::fmt;

use rand::RngCore;
use serde::{Deserialize, Serialize};

use crate::evidence::SubjectId;
use crate::identification::observation::Observation;

/// Prefix of a learning session id.
pub const SESSION_PREFIX: &str = "ses_";
/// Random bytes behind a session id (48 hex digits).
pub const SESSION_ID_BYTES: usize = 24;

/// A learning session id, `^ses_[a-f0-9]{48}$`, from the operating system's CSPRNG. It is the value of the
/// `__visitor_learning` cookie and is never derived from the visitor id.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(String);

impl SessionId {
    /// A fresh random id.
    pub fn generate() -> Self {
        let mut bytes = [0u8; SESSION_ID_BYTES];
        rand::rng().fill_bytes(&mut bytes);
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        SessionId(format!("{SESSION_PREFIX}{hex}"))
    }

    /// Accepts exactly `^ses_[a-f0-9]{48}$`; anything else (a cookie somebody edited) is no session.
    pub fn parse(value: &str) -> Option<Self> {
        let hex = value.strip_prefix(SESSION_PREFIX)?;
        (hex.len() == SESSION_ID_BYTES * 2
            && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then(|| SessionId(value.to_owned()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A bearer value while the flow lives: logs get a prefix only.
        write!(f, "SessionId({}…)", &self.0[..SESSION_PREFIX.len() + 6])
    }
}

impl Serialize for SessionId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        SessionId::parse(&text)
            .ok_or_else(|| serde::de::Error::custom("a session id is ses_ and 48 hex digits"))
    }
}

/// What became of the shadow prediction for a snapshot (`learning_sessions.prediction_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PredictionStatus {
    /// Collect mode: no predictor ran.
    NotRun,
    /// The predictor named one of the examples' subjects, with a score in [0, 1].
    Suggested,
    /// No examples (the predictor was not called), a saturated retrieval, or the predictor named nobody.
    Abstained,
    /// The predictor failed, timed out or answered something invalid.
    Unavailable,
}

impl PredictionStatus {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            PredictionStatus::NotRun => "not-run",
            PredictionStatus::Suggested => "suggested",
            PredictionStatus::Abstained => "abstained",
            PredictionStatus::Unavailable => "unavailable",
        }
    }

    /// The status with this stored name.
    pub fn parse(name: &str) -> Option<Self> {
        [
            Self::NotRun,
            Self::Suggested,
            Self::Abstained,
            Self::Unavailable,
        ]
        .into_iter()
        .find(|s| s.as_str() == name)
    }
}

/// The shadow guess recorded for a snapshot. Uncalibrated, and never an identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Prediction {
    /// What happened.
    pub status: PredictionStatus,
    /// The subject guessed, when suggested.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject_id: Option<SubjectId>,
    /// Its score in [0, 1], when suggested (stored as a 4-byte `REAL`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f32>,
}

impl Prediction {
    /// A prediction with a status and no guess.
    pub fn status(status: PredictionStatus) -> Self {
        Prediction {
            status,
            subject_id: None,
            score: None,
        }
    }
}

/// One row of `learning_sessions`.
#[derive(Debug, Clone, PartialEq)]
pub struct LearningSession {
    /// The flow's id (the cookie's value).
    pub id: SessionId,
    /// The deployment's learning scope label.
    pub scope: String,
    /// When the flow started, epoch ms.
    pub started_at: i64,
    /// When it ends: `started_at` + the session lifetime, never moved.
    pub expires_at: i64,
    /// When the snapshot was taken.
    pub observed_at: i64,
    /// The latest normalized snapshot (aggregate behaviour included).
    pub observation: Observation,
    /// The subject a verified login labelled it with.
    pub subject_id: Option<SubjectId>,
    /// When the label was first confirmed.
    pub verified_at: Option<i64>,
    /// Two different subjects confirmed it: excluded everywhere, removed by cleanup.
    pub disputed: bool,
    /// The shadow guess of the latest snapshot.
    pub prediction: Prediction,
}

/// A verified, undisputed session, as a predictor receives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LearningExample {
    /// The flow.
    pub session_id: SessionId,
    /// The subject that later signed in.
    pub subject_id: SubjectId,
    /// The last anonymous snapshot before that login.
    pub observation: Observation,
    /// When it was taken.
    pub observed_at: i64,
    /// When the login labelled it.
    pub verified_at: i64,
}

/// An example with the prediction recorded for it: what [`Learning::reports`](super::Learning::reports) exports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LearningReport {
    /// The labelled example.
    #[serde(flatten)]
    pub example: LearningExample,
    /// What the shadow predictor guessed before the login.
    pub prediction: Prediction,
}

impl LearningSession {
    /// The report of a verified, undisputed session; `None` for any other.
    pub fn report(&self) -> Option<LearningReport> {
        if self.disputed {
            return None;
        }
        Some(LearningReport {
            example: LearningExample {
                session_id: self.id.clone(),
                subject_id: self.subject_id.clone()?,
                observation: self.observation.clone(),
                observed_at: self.observed_at,
                verified_at: self.verified_at?,
            },
            prediction: self.prediction.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_and_strict() {
        let a = SessionId::generate();
        assert_ne!(a, SessionId::generate());
        assert_eq!(SessionId::parse(a.as_str()), Some(a.clone()));
        assert_eq!(a.as_str().len(), 4 + 48);
        let hex = "a".repeat(48);
        assert!(SessionId::parse(&format!("ses_{hex}")).is_some());
        assert!(SessionId::parse(&format!("ses_{}", "a".repeat(47))).is_none());
        assert!(SessionId::parse(&format!("ses_{}", "a".repeat(49))).is_none());
        assert!(SessionId::parse(&format!("ses_{}", "A".repeat(48))).is_none());
        assert!(SessionId::parse(&format!("vis_{hex}")).is_none());
        assert_eq!(format!("{a:?}").len(), "SessionId(ses_123456…)".len());
    }

    #[test]
    fn statuses_round_trip() {
        for name in ["not-run", "suggested", "abstained", "unavailable"] {
            assert_eq!(PredictionStatus::parse(name).unwrap().as_str(), name);
            let json = serde_json::to_string(&PredictionStatus::parse(name).unwrap()).unwrap();
            assert_eq!(json, format!("\"{name}\""));
        }
        assert_eq!(PredictionStatus::parse("maybe"), None);
    }
}
