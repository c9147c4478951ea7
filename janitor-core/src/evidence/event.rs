//! Application events: what the application reports (its input, strictly checked) and what is stored (labels
//! only).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::InputError;
use super::ids::{optional_visitor_text, SubjectId};
use super::json::{choice, label_text, Object};
use crate::visitor::VisitorId;

macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident, $names:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)+
        }

        #[doc = concat!("Every [`", stringify!($name), "`] name, in declaration order.")]
        pub const $names: &[&str] = &[$($text),+];

        impl $name {
            /// The name the contract uses.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            /// The value with this exact name.
            pub fn parse(name: &str) -> Option<Self> {
                match name {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
pub(crate) use named_enum;

named_enum!(
    /// What happened, as the application reports it.
    EventType, EVENT_TYPES {
        /// A sign-in was attempted.
        LoginAttempt = "login-attempt",
        /// A sign-in succeeded.
        LoginSuccess = "login-success",
        /// A sign-in failed.
        LoginFailure = "login-failure",
        /// A verification (a code, a passkey) succeeded.
        VerificationSuccess = "verification-success",
        /// A verification failed.
        VerificationFailure = "verification-failure",
        /// Account recovery was requested.
        RecoveryRequested = "recovery-requested",
        /// Account recovery was completed.
        RecoveryCompleted = "recovery-completed",
        /// A sensitive action was performed.
        SensitiveAction = "sensitive-action",
        /// An action was refused.
        ActionDenied = "action-denied",
    }
);

named_enum!(
    /// What the event was about.
    Action, ACTIONS {
        /// Signing in.
        SignIn = "sign-in",
        /// Recovering an account.
        Recovery = "recovery",
        /// A payment.
        Payment = "payment",
        /// Changing a profile.
        ProfileUpdate = "profile-update",
        /// Reading data.
        Read = "read",
        /// Anything else.
        Other = "other",
    }
);

/// The JSON keys of an event input.
const EVENT_KEYS: &[&str] = &[
    "id",
    "type",
    "action",
    "subjectId",
    "sessionId",
    "actorId",
    "visitorId",
];

/// A checked event the application reports. Server code only: there is no endpoint that takes these from
/// browsers, and the time is always the server's.
///
/// `Debug` hides the raw event and session ids.
#[derive(Clone, PartialEq, Eq)]
pub struct EventInput {
    id: String,
    event_type: EventType,
    action: Option<Action>,
    subject: Option<SubjectId>,
    session: Option<String>,
    actor: Option<SubjectId>,
    visitor: Option<VisitorId>,
}

impl fmt::Debug for EventInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventInput")
            .field("event_type", &self.event_type)
            .field("action", &self.action)
            .field("subject", &self.subject)
            .field("session", &self.session.as_ref().map(|_| "…"))
            .field("actor", &self.actor)
            .field("visitor", &self.visitor)
            .finish_non_exhaustive()
    }
}

impl EventInput {
    /// Starts an event with the application's own id (its idempotency key) and type.
    pub fn builder(id: &str, event_type: EventType) -> EventInputBuilder {
        EventInputBuilder {
            input: EventInput {
                id: id.to_owned(),
                event_type,
                action: None,
                subject: None,
                session: None,
                actor: None,
                visitor: None,
            },
        }
    }

    /// Reads `{id, type, action?, subjectId?, sessionId?, actorId?, visitorId?}`, refusing unknown keys,
    /// `null`s, and anything that breaks a rule of [`EventInputBuilder::build`].
    pub fn from_json(value: &Value) -> Result<Self, InputError> {
        let o = Object::strict(value, "", EVENT_KEYS)?;
        let id = o.required_text("id")?;
        let event_type = choice(
            "type",
            o.required_text("type")?,
            EventType::parse,
            EVENT_TYPES,
        )?;
        let mut builder = EventInput::builder(id, event_type);
        if let Some(action) = o.text("action")? {
            builder = builder.action(choice("action", action, Action::parse, ACTIONS)?);
        }
        if let Some(subject) = o.text("subjectId")? {
            builder = builder.subject(subject_id("subjectId", subject)?);
        }
        if let Some(session) = o.text("sessionId")? {
            builder = builder.session(session);
        }
        if let Some(actor) = o.text("actorId")? {
            builder = builder.actor(subject_id("actorId", actor)?);
        }
        if let Some(visitor) = o.text("visitorId")? {
            builder = builder.visitor(visitor_id("visitorId", visitor)?);
        }
        builder.build()
    }

    /// The application's event id, trimmed.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// What happened.
    pub fn event_type(&self) -> EventType {
        self.event_type
    }

    /// What it was about, if said.
    pub fn action(&self) -> Option<Action> {
        self.action
    }

    /// The subject it concerns.
    pub fn subject(&self) -> Option<&SubjectId> {
        self.subject.as_ref()
    }

    /// The raw session id, trimmed (stored only as its label).
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Who acted.
    pub fn actor(&self) -> Option<&SubjectId> {
        self.actor.as_ref()
    }

    /// The browser it happened in.
    pub fn visitor(&self) -> Option<&VisitorId> {
        self.visitor.as_ref()
    }
}

/// Builds an [`EventInput`]; [`build`](Self::build) checks it.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct EventInputBuilder {
    input: EventInput,
}

impl EventInputBuilder {
    /// What the event was about.
    pub fn action(mut self, action: Action) -> Self {
        self.input.action = Some(action);
        self
    }

    /// The subject (a label from [`LabelKey::subject`](crate::LabelKey::subject)).
    pub fn subject(mut self, subject: SubjectId) -> Self {
        self.input.subject = Some(subject);
        self
    }

    /// The raw session id; only its label is stored.
    pub fn session(mut self, session: &str) -> Self {
        self.input.session = Some(session.to_owned());
        self
    }

    /// Who acted, when not (only) the subject.
    pub fn actor(mut self, actor: SubjectId) -> Self {
        self.input.actor = Some(actor);
        self
    }

    /// The browser the event happened in.
    pub fn visitor(mut self, visitor: VisitorId) -> Self {
        self.input.visitor = Some(visitor);
        self
    }

    /// Checks the event: `id` and `sessionId` are 1–256 UTF-16 code units after trimming (and are kept
    /// trimmed), and at least one of subject, session and actor is present.
    pub fn build(self) -> Result<EventInput, InputError> {
        let mut input = self.input;
        input.id = label_text("id", &input.id)?;
        if let Some(session) = input.session.take() {
            input.session = Some(label_text("sessionId", &session)?);
        }
        if input.subject.is_none() && input.session.is_none() && input.actor.is_none() {
            return Err(InputError::new(
                "subjectId|sessionId|actorId",
                "at least one of subjectId, sessionId and actorId is required",
            ));
        }
        Ok(input)
    }
}

pub(crate) fn subject_id(field: &str, value: &str) -> Result<SubjectId, InputError> {
    SubjectId::parse(value).ok_or_else(|| InputError::new(field, "must match ^sub_[a-f0-9]{64}$"))
}

pub(crate) fn visitor_id(field: &str, value: &str) -> Result<VisitorId, InputError> {
    VisitorId::parse(value).ok_or_else(|| InputError::new(field, "must match ^vis_[a-f0-9]{48}$"))
}

/// An event as stored: the `record` column of `application_events`, in the reference's JSON layout. The id
/// and the session are labels; nothing raw is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApplicationEvent {
    /// Label of the application's event id.
    pub id: String,
    /// What happened.
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// What it was about.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// The subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject_id: Option<SubjectId>,
    /// Label of the raw session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// Who acted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor_id: Option<SubjectId>,
    /// The browser.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "optional_visitor_text"
    )]
    pub visitor_id: Option<VisitorId>,
    /// Label of the event's content: a repeat with the same id must carry the same digest.
    pub digest: String,
    /// Label of the application scope.
    pub scope: String,
    /// Server time of recording, epoch milliseconds.
    pub occurred_at: i64,
    /// When it stops counting and may be deleted.
    pub expires_at: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_round_trip() {
        for name in EVENT_TYPES {
            assert_eq!(EventType::parse(name).unwrap().as_str(), *name);
        }
        for name in ACTIONS {
            assert_eq!(Action::parse(name).unwrap().as_str(), *name);
        }
        assert_eq!(EVENT_TYPES.len(), 9);
        assert_eq!(ACTIONS.len(), 6);
        assert_eq!(
            serde_json::to_value(EventType::LoginFailure).unwrap(),
            json!("login-failure")
        );
        assert!(EventType::parse("Login-Failure").is_none());
    }

    #[test]
    fn debug_hides_raw_ids() {
        let input = EventInput::builder("evt-secret", EventType::LoginAttempt)
            .session("sess-secret")
            .build()
            .unwrap();
        let shown = format!("{input:?}");
        assert!(!shown.contains("secret"), "{shown}");
    }
}
