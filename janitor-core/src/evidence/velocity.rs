//! Activity counts ("velocity"): how many events of each type one subject, session or actor had in a recent
//! window, read with one bounded query.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::config::{velocity_window, VELOCITY_WINDOW_MS};
use super::error::InputError;
use super::event::{subject_id, Action, EventType, ACTIONS};
use super::ids::SubjectId;
use super::json::{choice, label_text, Object};

/// Whose activity is counted.
#[derive(Clone, PartialEq, Eq)]
pub enum ActivityKey {
    /// Events that name this subject.
    Subject(SubjectId),
    /// Events of this raw session id (it is labelled before the read).
    Session(String),
    /// Events that name this actor.
    Actor(SubjectId),
}

impl std::fmt::Debug for ActivityKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ActivityKey::Subject(s) => f.debug_tuple("Subject").field(s).finish(),
            // A raw session id is a bearer secret in many applications: never print it.
            ActivityKey::Session(_) => f.write_str("Session(…)"),
            ActivityKey::Actor(a) => f.debug_tuple("Actor").field(a).finish(),
        }
    }
}

/// The column an activity read filters on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ActivityColumn {
    /// `subject_id`.
    Subject,
    /// `session_id` (a label).
    Session,
    /// `actor_id`.
    Actor,
}

const VELOCITY_KEYS: &[&str] = &["subjectId", "sessionId", "actorId", "action", "windowMs"];

/// An activity question: exactly one key, optionally one action, and a window (default 15 minutes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VelocityQuery {
    key: ActivityKey,
    action: Option<Action>,
    window_ms: i64,
}

impl VelocityQuery {
    /// Counts the activity of `key` over the default window of 900,000 ms.
    pub fn new(key: ActivityKey) -> Self {
        VelocityQuery {
            key,
            action: None,
            window_ms: VELOCITY_WINDOW_MS.default,
        }
    }

    /// Counts only events about this action.
    pub fn action(mut self, action: Action) -> Self {
        self.action = Some(action);
        self
    }

    /// The window in milliseconds, 1,000–86,400,000 (checked when the query runs).
    pub fn window_ms(mut self, window_ms: i64) -> Self {
        self.window_ms = window_ms;
        self
    }

    /// Reads `{subjectId?, sessionId?, actorId?, action?, windowMs?}` with exactly one of the three keys,
    /// refusing unknown keys and `null`s.
    pub fn from_json(value: &Value) -> Result<Self, InputError> {
        let o = Object::strict(value, "", VELOCITY_KEYS)?;
        let mut keys = Vec::with_capacity(1);
        if let Some(subject) = o.text("subjectId")? {
            keys.push(ActivityKey::Subject(subject_id("subjectId", subject)?));
        }
        if let Some(session) = o.text("sessionId")? {
            keys.push(ActivityKey::Session(label_text("sessionId", session)?));
        }
        if let Some(actor) = o.text("actorId")? {
            keys.push(ActivityKey::Actor(subject_id("actorId", actor)?));
        }
        let key = match (keys.pop(), keys.is_empty()) {
            (Some(key), true) => key,
            _ => {
                return Err(InputError::new(
                    "subjectId|sessionId|actorId",
                    "exactly one of subjectId, sessionId and actorId is required",
                ))
            }
        };
        let mut query = VelocityQuery::new(key);
        if let Some(action) = o.text("action")? {
            query = query.action(choice("action", action, Action::parse, ACTIONS)?);
        }
        if let Some(window) = o.integer("windowMs")? {
            query = query.window_ms(window);
        }
        query.validate()?;
        Ok(query)
    }

    /// Checks the window and a session key's length.
    fn validate(&self) -> Result<(), InputError> {
        velocity_window(self.window_ms)?;
        if let ActivityKey::Session(raw) = &self.key {
            label_text("sessionId", raw)?;
        }
        Ok(())
    }

    /// Whose activity.
    pub fn key(&self) -> &ActivityKey {
        &self.key
    }

    /// The action filter.
    pub fn action_filter(&self) -> Option<Action> {
        self.action
    }

    /// The window in milliseconds.
    pub fn window(&self) -> i64 {
        self.window_ms
    }
}

/// One bounded read of event types, as a store runs it: rows whose `column` equals `key` in `scope`, with
/// `since <= occurred_at <= until`, `expires_at > until` and, if given, the action; newest first
/// (`occurred_at DESC, id DESC`); at most `limit` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivityRead<'a> {
    /// Label of the application scope.
    pub scope: &'a str,
    /// Which column holds the key.
    pub column: ActivityColumn,
    /// The subject or actor id, or the session label.
    pub key: &'a str,
    /// Start of the window (inclusive).
    pub since: i64,
    /// Now: end of the window (inclusive), and the expiry cut.
    pub until: i64,
    /// Only this action, if given.
    pub action: Option<Action>,
    /// Most rows returned (at most [`MAX_ACTIVITY_ROWS`](super::config::MAX_ACTIVITY_ROWS)).
    pub limit: u32,
}

/// Where a summary comes from: always the application's own events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EvidenceSource {
    /// Reported by the application.
    #[serde(rename = "application")]
    Application,
}

/// Counts of one key's recent events, by type.
///
/// At most `max_events_per_query` events are counted. When more exist (`saturated` is true), `total` equals
/// that maximum and every count is a **lower bound**: the newest events were counted, older ones in the window
/// were not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivitySummary {
    /// Always `"application"`.
    pub source: EvidenceSource,
    /// Server time of the read, epoch milliseconds.
    pub observed_at: i64,
    /// The window read, in milliseconds.
    pub window_ms: i64,
    /// The action filter, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// Events per type; types with no event are absent.
    pub counts: BTreeMap<EventType, u32>,
    /// Events counted: `min(events found, max_events_per_query)`.
    pub total: u32,
    /// More events exist than were counted; the counts are lower bounds.
    pub saturated: bool,
}

impl ActivitySummary {
    /// Summarizes rows of a read that asked for one more row than `max` (newest first): the first `max` are
    /// counted, and a row beyond them means saturation.
    pub fn from_rows(
        rows: &[EventType],
        max: u32,
        observed_at: i64,
        window_ms: i64,
        action: Option<Action>,
    ) -> Self {
        let max_rows = usize::try_from(max).unwrap_or(usize::MAX);
        let counted = &rows[..rows.len().min(max_rows)];
        let mut counts = BTreeMap::new();
        for event_type in counted {
            *counts.entry(*event_type).or_insert(0u32) += 1;
        }
        ActivitySummary {
            source: EvidenceSource::Application,
            observed_at,
            window_ms,
            action,
            counts,
            total: u32::try_from(counted.len()).unwrap_or(u32::MAX),
            saturated: rows.len() > max_rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summary_counts_at_most_max_and_flags_saturation() {
        use EventType::*;
        let rows = [LoginFailure, LoginFailure, LoginAttempt, LoginFailure];
        let full = ActivitySummary::from_rows(&rows, 3, 10, 1000, Some(Action::SignIn));
        assert_eq!(full.total, 3);
        assert!(full.saturated);
        assert_eq!(full.counts[&LoginFailure], 2);
        assert_eq!(full.counts[&LoginAttempt], 1);
        let exact = ActivitySummary::from_rows(&rows[..3], 3, 10, 1000, None);
        assert!(!exact.saturated);
        assert_eq!(exact.total, 3);
        assert_eq!(
            serde_json::to_value(&exact).unwrap(),
            json!({
                "source": "application", "observedAt": 10, "windowMs": 1000,
                "counts": {"login-attempt": 1, "login-failure": 2}, "total": 3, "saturated": false
            })
        );
        let action = serde_json::to_value(&full).unwrap();
        assert_eq!(action["action"], "sign-in");
        let empty = ActivitySummary::from_rows(&[], 3, 10, 1000, None);
        assert_eq!(serde_json::to_value(&empty).unwrap()["counts"], json!({}));
    }

    #[test]
    fn query_json_needs_exactly_one_key() {
        let sub = format!("sub_{}", "0".repeat(64));
        assert!(VelocityQuery::from_json(&json!({"subjectId": sub})).is_ok());
        assert!(VelocityQuery::from_json(&json!({"sessionId": "s"})).is_ok());
        for bad in [
            json!({}),
            json!({"subjectId": sub, "actorId": sub}),
            json!({"subjectId": sub, "sessionId": "s"}),
        ] {
            let err = VelocityQuery::from_json(&bad).unwrap_err();
            assert_eq!(err.field, "subjectId|sessionId|actorId", "{bad}");
        }
        for (window, ok) in [
            (999, false),
            (1000, true),
            (86_400_000, true),
            (86_400_001, false),
        ] {
            let q = VelocityQuery::from_json(&json!({"subjectId": sub, "windowMs": window}));
            assert_eq!(q.is_ok(), ok, "{window}");
            if let Err(e) = q {
                assert_eq!(e.field, "windowMs");
            }
        }
        assert_eq!(
            VelocityQuery::from_json(&json!({"subjectId": sub, "windowMs": 1500.5}))
                .unwrap_err()
                .field,
            "windowMs"
        );
        assert_eq!(
            VelocityQuery::from_json(&json!({"subjectId": sub, "action": "pay"}))
                .unwrap_err()
                .field,
            "action"
        );
        assert_eq!(
            VelocityQuery::from_json(&json!({"subjectId": sub, "limit": 3}))
                .unwrap_err()
                .field,
            "limit"
        );
        let q = VelocityQuery::from_json(&json!({"sessionId": "  s  "})).unwrap();
        assert_eq!(q.key(), &ActivityKey::Session("s".into()));
        assert_eq!(q.window(), 900_000);
        assert_eq!(format!("{:?}", q.key()), "Session(…)");
    }
}
