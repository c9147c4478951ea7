//! [`Evidence`]: the operations server code calls. Labels are computed here, so stores only ever see them.

use crate::clock::Clock;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::config::{
    device_link_list_limit, evidence_cleanup_batch, velocity_window, EvidenceConfig,
};
use super::error::{EvidenceError, InputError};
use super::event::{ApplicationEvent, EventInput};
use super::ids::{LinkId, SubjectId};
use super::json::label_text;
use super::link::{
    DeviceAssessment, DeviceLink, DeviceLinkInput, Revocation, RevocationInput, Verification,
};
use super::store::{
    EventOwner, EventWrite, EvidenceCleanup, EvidenceStore, LinkWrite, SubjectKind,
};
use super::velocity::{ActivityColumn, ActivityKey, ActivityRead, ActivitySummary, VelocityQuery};
use crate::label::{EvidenceKey, LabelKey};
use crate::visitor::VisitorId;

/// The scope every label of application evidence is bound to.
pub const APPLICATION_SCOPE: &str = "application";
/// Purpose of the label of an event's content.
pub const EVENT_PAYLOAD_PURPOSE: &str = "event-payload";
/// Purpose of the label of a device link's content.
pub const DEVICE_PAYLOAD_PURPOSE: &str = "device-payload";

/// What [`Evidence::record`] did: `{"recorded": false}` for an idempotent repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recorded {
    /// The event was new and is stored.
    pub recorded: bool,
}

/// Application evidence over a store: recording events, counting recent activity, device links, erasure and
/// retention. Server code only; nothing here is reachable from a browser.
///
/// Every raw id the application passes (account-derived subject ids are labels already; session and event
/// ids are raw) is turned into an HMAC label before anything is stored, so the store never holds a raw
/// account, session or event id.
#[derive(Debug, Clone)]
pub struct Evidence<S> {
    store: S,
    key: LabelKey,
    config: EvidenceConfig,
    scope: String,
    clock: Clock,
}

impl<S: EvidenceStore> Evidence<S> {
    /// Evidence over `store`, labelling with `key` (the identity secret and namespace).
    pub fn new(store: S, key: LabelKey, config: EvidenceConfig) -> Self {
        let scope = key.evidence(&EvidenceKey::Scope(APPLICATION_SCOPE));
        Evidence {
            store,
            key,
            config,
            scope,
            clock: Clock::system(),
        }
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

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The options.
    pub fn config(&self) -> &EvidenceConfig {
        &self.config
    }

    /// The scope label rows of this namespace carry.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The subject label of an authenticated account id.
    pub fn subject_id(&self, account_id: &str) -> SubjectId {
        SubjectId::from_label(self.key.subject(account_id))
    }

    /// The label a raw session id is stored as.
    pub fn session_label(&self, session_id: &str) -> String {
        self.key.evidence(&EvidenceKey::Session(session_id))
    }

    /// The row [`record`](Self::record) would store for `input` at `now_ms`: every id labelled, the digest
    /// over `[type, action, subject, session, actor, visitor]` (absent ones `null`, the session raw).
    pub fn event_record(&self, input: &EventInput, now_ms: i64) -> ApplicationEvent {
        let content = json!([
            input.event_type().as_str(),
            input.action().map(|a| a.as_str()),
            input.subject().map(SubjectId::as_str),
            input.session(),
            input.actor().map(SubjectId::as_str),
            input.visitor().map(VisitorId::as_str),
        ]);
        ApplicationEvent {
            id: self.key.evidence(&EvidenceKey::Event(input.id())),
            event_type: input.event_type(),
            action: input.action(),
            subject_id: input.subject().cloned(),
            session_id: input.session().map(|s| self.session_label(s)),
            actor_id: input.actor().cloned(),
            visitor_id: input.visitor().cloned(),
            digest: self.payload_label(EVENT_PAYLOAD_PURPOSE, &content),
            scope: self.scope.clone(),
            occurred_at: now_ms,
            expires_at: self.config.event_expiry(now_ms),
        }
    }

    fn payload_label(&self, purpose: &str, value: &Value) -> String {
        self.key.evidence(&EvidenceKey::Other { purpose, value })
    }

    /// Records an event at the clock's time, kept for event retention. Repeating an event (same id, same
    /// content) records nothing and answers `recorded: false`; the same id with another content is
    /// [`EvidenceError::IdempotencyConflict`]. Subjects and actors named for the first time get a subject row.
    pub async fn record(&self, input: &EventInput) -> Result<Recorded, EvidenceError> {
        let now_ms = self.clock.now_ms();
        let event = self.event_record(input, now_ms);
        match self.store.put_event(&event).await? {
            EventWrite::Inserted => Ok(Recorded { recorded: true }),
            EventWrite::Repeated => Ok(Recorded { recorded: false }),
            EventWrite::Conflict => Err(EvidenceError::IdempotencyConflict),
        }
    }

    /// Counts one key's events in `[now − window, now]` that have not expired, by type, newest first, reading
    /// at most `max_events_per_query + 1` rows.
    ///
    /// When more than `max_events_per_query` events match, `saturated` is true, `total` is that maximum, and
    /// the counts are **lower bounds** (the newest events were counted).
    pub async fn velocity(&self, query: &VelocityQuery) -> Result<ActivitySummary, EvidenceError> {
        let now_ms = self.clock.now_ms();
        velocity_window(query.window()).map_err(InputError::from)?;
        let (column, key) = match query.key() {
            ActivityKey::Subject(subject) => (ActivityColumn::Subject, subject.as_str().to_owned()),
            ActivityKey::Actor(actor) => (ActivityColumn::Actor, actor.as_str().to_owned()),
            ActivityKey::Session(raw) => (
                ActivityColumn::Session,
                self.session_label(&label_text("sessionId", raw)?),
            ),
        };
        let read = ActivityRead {
            scope: &self.scope,
            column,
            key: &key,
            since: now_ms.saturating_sub(query.window()),
            until: now_ms,
            action: query.action_filter(),
            limit: self.config.activity_rows(),
        };
        let rows = self.store.recent_event_types(&read).await?;
        Ok(ActivitySummary::from_rows(
            &rows,
            self.config.max_events_per_query(),
            now_ms,
            query.window(),
            query.action_filter(),
        ))
    }

    /// Records that the application verified `input.visitor` as a browser of `input.subject`. The verification
    /// must be fresh (300 s before to 5 s after now) and the link must end within 90 days. The link's id
    /// derives from the verification (issuer and event id), so repeating the call returns the stored link;
    /// using the same verification for another association is [`EvidenceError::VerificationReused`].
    ///
    /// Only the application's own verified evidence may create a link; never pass a visitor id that was
    /// restored by similarity.
    pub async fn link(&self, input: &DeviceLinkInput) -> Result<DeviceLink, EvidenceError> {
        let now_ms = self.clock.now_ms();
        let input = input.normalized()?;
        input.check_times(now_ms)?;
        let v = &input.verification;
        let proof = self.key.evidence(&EvidenceKey::Verification {
            issuer: &v.issuer,
            event_id: &v.event_id,
        });
        let id = LinkId::from_verification(&proof)
            .ok_or_else(|| InputError::new("verification", "does not label as a link id"))?;
        let content = json!([
            input.subject.as_str(),
            input.visitor.as_str(),
            v.method.as_str(),
            v.verified_at,
            input.expires_at,
        ]);
        let link = DeviceLink {
            subject_id: input.subject.clone(),
            visitor_id: input.visitor.clone(),
            verification: Verification {
                method: v.method,
                issuer: v.issuer.clone(),
                event_id: proof,
                verified_at: v.verified_at,
            },
            expires_at: input.expires_at,
            id,
            digest: self.payload_label(DEVICE_PAYLOAD_PURPOSE, &content),
            scope: self.scope.clone(),
            created_at: now_ms,
            revocation: None,
        };
        match self.store.put_device_link(&link).await? {
            LinkWrite::Created(link) | LinkWrite::Existing(link) => Ok(link),
            LinkWrite::Conflict => Err(EvidenceError::VerificationReused),
        }
    }

    /// Whether link `id` vouches for `subject` on `visitor` now. Reasons, checked in this order: missing,
    /// revoked, expired, subject, visitor.
    pub async fn assess(
        &self,
        id: &LinkId,
        subject: &SubjectId,
        visitor: &VisitorId,
    ) -> Result<DeviceAssessment, EvidenceError> {
        let now_ms = self.clock.now_ms();
        let link = self.store.device_link(&self.scope, id).await?;
        Ok(DeviceAssessment::of(link, subject, visitor, now_ms))
    }

    /// A subject's links, newest first; `limit` 1–100 (the reference's default is
    /// [`DEVICE_LINK_LIST_LIMIT`](super::config::DEVICE_LINK_LIST_LIMIT)).
    pub async fn list(
        &self,
        subject: &SubjectId,
        limit: usize,
    ) -> Result<Vec<DeviceLink>, EvidenceError> {
        let limit = device_link_list_limit(limit).map_err(InputError::from)?;
        Ok(self.store.device_links(&self.scope, subject, limit).await?)
    }

    /// Revokes a link, if it exists and is not revoked yet; its retirement moves to now if that is earlier.
    /// Returns whether this call revoked it (a second revocation changes nothing and returns false).
    pub async fn revoke(
        &self,
        id: &LinkId,
        input: &RevocationInput,
    ) -> Result<bool, EvidenceError> {
        let now_ms = self.clock.now_ms();
        let input = input.normalized()?;
        let revocation = Revocation {
            reason: input.reason,
            event_id: self.key.evidence(&EvidenceKey::Revocation {
                issuer: &input.issuer,
                event_id: &input.event_id,
            }),
            issuer: input.issuer,
            revoked_at: now_ms,
        };
        Ok(self
            .store
            .revoke_device_link(&self.scope, id, &revocation)
            .await?)
    }

    /// Deletes the events of a raw session id (found by its label); returns how many.
    ///
    /// The contract's session erasure (every event of the session, whoever it is about). For an account's
    /// erasure request use [`erasure::erase_account`](crate::erasure::erase_account).
    pub async fn delete_session(&self, session_id: &str) -> Result<u64, EvidenceError> {
        let trimmed = label_text("sessionId", session_id)?;
        let label = self.session_label(&trimmed);
        Ok(self
            .store
            .delete_events(&self.scope, EventOwner::Session(&label))
            .await?)
    }

    /// Deletes the events where `subject` is the subject or the actor; returns how many. Its links and its
    /// subject row stay (see [`delete_subject`](Self::delete_subject)).
    ///
    /// As the contract defines it, this also deletes events about other subjects in which `subject` only
    /// acted. A GDPR erasure request needs [`erasure::erase_account`](crate::erasure::erase_account), which
    /// keeps those events and detaches the erased account from them.
    pub async fn delete_subject_events(&self, subject: &SubjectId) -> Result<u64, EvidenceError> {
        Ok(self
            .store
            .delete_events(&self.scope, EventOwner::Subject(subject))
            .await?)
    }

    /// Erases a subject: its row, and by cascade its events (as subject or actor) and device links, in every
    /// namespace sharing the database. Returns whether it existed.
    ///
    /// The contract's cascade: events about other subjects in which it only acted go too. An erasure request
    /// needs [`erasure::erase_account`](crate::erasure::erase_account).
    pub async fn delete_subject(&self, subject: &SubjectId) -> Result<bool, EvidenceError> {
        Ok(self.store.delete_subject(subject).await?)
    }

    /// Erases a browser from evidence (see [`EvidenceStore::delete_visitor_evidence`]): its links and the
    /// events naming no subject go, events about subjects stay without it. Returns how many rows were deleted.
    /// [`Stores::erase_visitor`](crate::Stores::erase_visitor) also deletes the visitor row.
    pub async fn delete_visitor(&self, visitor: &VisitorId) -> Result<u64, EvidenceError> {
        Ok(self.store.delete_visitor_evidence(visitor).await?)
    }

    /// Declares a subject's kind (person or agent) before events name it; rows created implicitly by events
    /// are persons. A subject's kind never changes: [`EvidenceError::SubjectKindConflict`].
    pub async fn register_subject(
        &self,
        subject: &SubjectId,
        kind: SubjectKind,
    ) -> Result<(), EvidenceError> {
        let now_ms = self.clock.now_ms();
        if self.store.put_subject(subject, kind, now_ms).await? {
            Ok(())
        } else {
            Err(EvidenceError::SubjectKindConflict)
        }
    }

    /// One bounded retention step: deletes at most `batch` (1–1000, default 100) expired events and at most
    /// `batch` links retired (ended or revoked) more than link retention ago.
    pub async fn cleanup(&self, batch: usize) -> Result<EvidenceCleanup, EvidenceError> {
        let now_ms = self.clock.now_ms();
        let batch = evidence_cleanup_batch(batch).map_err(InputError::from)?;
        Ok(self
            .store
            .cleanup(&self.scope, self.config.link_cutoff(now_ms), batch, now_ms)
            .await?)
    }
}
