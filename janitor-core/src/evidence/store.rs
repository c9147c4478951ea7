//! The evidence store: where application events, device links and the subjects they name live.
//!
//! One trait, implemented in memory here ([`MemoryEvidenceStore`](super::MemoryEvidenceStore)) and on
//! PostgreSQL in `janitor-sql`, with the behaviour written down once as `testing::evidence_store` (feature
//! `testing`). Stores receive finished records: every label is computed by
//! [`Evidence`](super::Evidence) before a store sees it, so no store ever handles a raw account, session or
//! event id.

use std::future::Future;

use serde::{Deserialize, Serialize};

use super::event::{ApplicationEvent, EventType};
use super::ids::{LinkId, SubjectId};
use super::link::{DeviceLink, Revocation};
use super::velocity::ActivityRead;
use crate::error::StoreError;
use crate::visitor::VisitorId;

/// What an identity subject is. Rows made implicitly by evidence are [`SubjectKind::Person`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SubjectKind {
    /// A person's account.
    Person,
    /// An automated agent's account.
    Agent,
}

impl SubjectKind {
    /// The name stored in `identity_subjects.kind`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SubjectKind::Person => "person",
            SubjectKind::Agent => "agent",
        }
    }

    /// The kind with this stored name.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "person" => Some(SubjectKind::Person),
            "agent" => Some(SubjectKind::Agent),
            _ => None,
        }
    }
}

/// The kind given to a subject row that an event or a link creates because it did not exist yet.
pub const IMPLICIT_SUBJECT_KIND: SubjectKind = SubjectKind::Person;

/// What writing an event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventWrite {
    /// It was new and is stored.
    Inserted,
    /// The same id was stored before with the same digest: nothing changed.
    Repeated,
    /// The same id was stored before with another digest (or in another scope): nothing changed.
    Conflict,
}

/// What writing a device link did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkWrite {
    /// It was new; here it is as stored.
    Created(DeviceLink),
    /// The same id existed with the same digest; here is the stored one (with its original times and any
    /// revocation).
    Existing(DeviceLink),
    /// The same id existed with another digest: the verification was used for another association.
    Conflict,
}

/// Whose events to delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventOwner<'a> {
    /// Rows where this subject is the subject or the actor.
    Subject(&'a SubjectId),
    /// Rows of this session label.
    Session(&'a str),
}

/// What one evidence cleanup call deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvidenceCleanup {
    /// Expired events deleted.
    pub events_deleted: u64,
    /// Device links deleted because they retired more than link retention ago.
    pub links_deleted: u64,
}

/// Storage of evidence. All times are epoch milliseconds passed in by the caller.
///
/// Subject and actor ids reference subject rows: writing an event or a link creates the rows it names that
/// do not exist yet (kind [`IMPLICIT_SUBJECT_KIND`]), and deleting a subject deletes its events (as subject
/// or actor) and links with it.
pub trait EvidenceStore: Send + Sync {
    /// Stores an event unless its id exists; when it does, compares the stored digest.
    fn put_event(
        &self,
        event: &ApplicationEvent,
    ) -> impl Future<Output = Result<EventWrite, StoreError>> + Send;

    /// The types of the events `read` selects, newest first (`occurred_at DESC, id DESC`), at most
    /// `read.limit` (stores clamp it with [`store_activity_rows`](super::config::store_activity_rows)).
    fn recent_event_types(
        &self,
        read: &ActivityRead<'_>,
    ) -> impl Future<Output = Result<Vec<EventType>, StoreError>> + Send;

    /// Stores a link unless its id exists; when it does, compares digests.
    fn put_device_link(
        &self,
        link: &DeviceLink,
    ) -> impl Future<Output = Result<LinkWrite, StoreError>> + Send;

    /// One link of `scope`, if present (whatever its state).
    fn device_link(
        &self,
        scope: &str,
        id: &LinkId,
    ) -> impl Future<Output = Result<Option<DeviceLink>, StoreError>> + Send;

    /// A subject's links in `scope`, newest first (`created_at DESC, id DESC`), at most `limit` (stores clamp
    /// it to 1–100 with [`store_link_list_limit`](super::config::store_link_list_limit)).
    fn device_links(
        &self,
        scope: &str,
        subject: &SubjectId,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<DeviceLink>, StoreError>> + Send;

    /// Revokes a link that is not revoked yet, moving its retirement to `revocation.revoked_at` if that is
    /// earlier. Returns whether this call revoked it.
    fn revoke_device_link(
        &self,
        scope: &str,
        id: &LinkId,
        revocation: &Revocation,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes the events of a subject (as subject or actor) or of a session label in `scope`; returns how
    /// many.
    fn delete_events(
        &self,
        scope: &str,
        owner: EventOwner<'_>,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Creates a subject row of `kind`, or refreshes its `updatedAt` when it exists with that kind. Returns
    /// false, changing nothing, when it exists with the other kind.
    fn put_subject(
        &self,
        subject: &SubjectId,
        kind: SubjectKind,
        now_ms: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes a subject row and, with it, every event naming it (as subject or actor) and every link of it:
    /// the contract's cascade, which also removes events about other subjects in which it only acted.
    /// Returns whether it existed. Erasure requests go through
    /// [`Stores::erase_account`](crate::Stores::erase_account) instead.
    fn delete_subject(
        &self,
        subject: &SubjectId,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Erases a browser from evidence, by the rule of [`crate::erasure`]: deletes its links and the events
    /// naming it that name no subject or actor, and detaches it from the events that do (their visitor id
    /// removed, the row and its digest kept). Returns how many rows were deleted. The visitor row itself is
    /// the visitor store's ([`Stores::erase_visitor`](crate::Stores::erase_visitor) erases both at once).
    fn delete_visitor_evidence(
        &self,
        visitor: &VisitorId,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Deletes at most `batch` events of `scope` with `expires_at <= now_ms` (earliest expiry first) and at
    /// most `batch` links of `scope` with retirement at or before `link_cutoff` (earliest first). Stores clamp
    /// `batch` to 1–1000 with [`store_cleanup_batch`](super::config::store_cleanup_batch).
    fn cleanup(
        &self,
        scope: &str,
        link_cutoff: i64,
        batch: usize,
        now_ms: i64,
    ) -> impl Future<Output = Result<EvidenceCleanup, StoreError>> + Send;
}
