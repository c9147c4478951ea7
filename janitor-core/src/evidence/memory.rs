//! The in-memory evidence store: the embedded default and the reference for other stores.
//!
//! It keeps the indexes the database has — per key and scope by time, per key, scope and action by time, by
//! expiry, by subject for links, by retirement — so an activity read walks one ordered bucket backwards from
//! now and stops after `limit` rows, as the PostgreSQL index scan does. Everything sits behind one mutex, held
//! only for the synchronous work of a call.
//!
//! There is no visitors table here: visitor ids are taken as given (PostgreSQL checks them against
//! `visitors`). Erasing a browser or an account goes through [`Inner::erase`], which applies the rule of
//! [`event_fate`] to every event naming either.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::config::{store_activity_rows, store_cleanup_batch, store_link_list_limit};
use super::event::{Action, ApplicationEvent, EventType};
use super::ids::{LinkId, SubjectId};
use super::link::{DeviceLink, Revocation};
use super::store::{
    EventOwner, EventWrite, EvidenceCleanup, EvidenceStore, LinkWrite, SubjectKind,
    IMPLICIT_SUBJECT_KIND,
};
use super::velocity::{ActivityColumn, ActivityRead};
use crate::erasure::{detached, event_fate, AccountErasure, EventFate};
use crate::error::StoreError;
use crate::visitor::VisitorId;

/// `(time, id)`: ordered as `ORDER BY time, id`.
type Slot = (i64, String);
/// `(scope, time, id)`: ordered as an index on `(scope, time)`.
type ScopedSlot = (String, i64, String);

/// A thread-safe evidence store held in process memory. A cheap handle: clones share the same evidence, which
/// lives as long as the last handle; use the PostgreSQL store to share evidence between instances.
#[derive(Debug, Clone, Default)]
pub struct MemoryEvidenceStore {
    inner: Arc<Mutex<Inner>>,
}

/// The evidence behind the lock. [`MemoryStores`](crate::MemoryStores) holds it, with every other store's
/// lock, while it erases an account.
#[derive(Debug, Default)]
pub(crate) struct Inner {
    subjects: HashMap<String, (SubjectKind, i64)>,
    events: HashMap<String, ApplicationEvent>,
    /// `(column, key, scope)` → events by time.
    by_key: BTreeMap<(ActivityColumn, String, String), BTreeSet<Slot>>,
    /// `(column, key, scope, action)` → events by time.
    by_key_action: BTreeMap<(ActivityColumn, String, String, Action), BTreeSet<Slot>>,
    events_by_expiry: BTreeSet<ScopedSlot>,
    events_by_visitor: HashMap<String, BTreeSet<String>>,
    links: HashMap<String, DeviceLink>,
    /// `(subject, scope)` → links by creation.
    links_by_subject: BTreeMap<(String, String), BTreeSet<Slot>>,
    links_by_retirement: BTreeSet<ScopedSlot>,
    links_by_visitor: HashMap<String, BTreeSet<String>>,
}

impl MemoryEvidenceStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryEvidenceStore::default()
    }

    /// Events held, expired or not (for tests and metrics).
    pub fn event_count(&self) -> usize {
        self.lock().events.len()
    }

    /// Device links held (for tests and metrics).
    pub fn link_count(&self) -> usize {
        self.lock().links.len()
    }

    /// The kind and `updatedAt` of a subject row (the identity directory shares these rows).
    pub(crate) fn subject_row(&self, subject: &SubjectId) -> Option<(SubjectKind, i64)> {
        self.lock().subjects.get(subject.as_str()).copied()
    }

    /// [`EvidenceStore::put_subject`], synchronously.
    pub(crate) fn put_subject_row(
        &self,
        subject: &SubjectId,
        kind: SubjectKind,
        now_ms: i64,
    ) -> bool {
        let mut inner = self.lock();
        match inner.subjects.get_mut(subject.as_str()) {
            Some((stored, _)) if *stored != kind => false,
            Some((_, updated_at)) => {
                *updated_at = now_ms;
                true
            }
            None => {
                inner
                    .subjects
                    .insert(subject.as_str().to_owned(), (kind, now_ms));
                true
            }
        }
    }

    /// [`EvidenceStore::delete_subject`], synchronously.
    pub(crate) fn delete_subject_row(&self, subject: &SubjectId) -> bool {
        let mut inner = self.lock();
        if inner.subjects.remove(subject.as_str()).is_none() {
            return false;
        }
        for id in inner.subject_events(subject.as_str(), None) {
            inner.remove_event(&id);
        }
        for id in inner.subject_links(subject.as_str()) {
            inner.remove_link(&id);
        }
        true
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        // No call panics while holding the lock with the indexes half-updated, so a poisoned lock still guards
        // consistent data.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The `(column, key)` pairs an event is filed under.
fn event_keys(event: &ApplicationEvent) -> impl Iterator<Item = (ActivityColumn, &str)> {
    [
        (
            ActivityColumn::Subject,
            event.subject_id.as_ref().map(SubjectId::as_str),
        ),
        (ActivityColumn::Session, event.session_id.as_deref()),
        (
            ActivityColumn::Actor,
            event.actor_id.as_ref().map(SubjectId::as_str),
        ),
    ]
    .into_iter()
    .filter_map(|(column, key)| key.map(|k| (column, k)))
}

/// The ids `index` files under `key`.
fn filed(index: &HashMap<String, BTreeSet<String>>, key: &str) -> Vec<String> {
    index.get(key).into_iter().flatten().cloned().collect()
}

/// Bounds of every slot with a time in `[from, to]`.
fn time_range(from: i64, to: i64) -> (Bound<Slot>, Bound<Slot>) {
    let upper = match to.checked_add(1) {
        Some(next) => Bound::Excluded((next, String::new())),
        None => Bound::Unbounded,
    };
    (Bound::Included((from, String::new())), upper)
}

/// The slots of `scope` with a time at or before `to`, earliest first.
fn scoped_until<'a>(
    set: &'a BTreeSet<ScopedSlot>,
    scope: &'a str,
    to: i64,
) -> impl Iterator<Item = &'a ScopedSlot> + 'a {
    set.range((scope.to_owned(), i64::MIN, String::new())..)
        .take_while(move |(s, time, _)| s == scope && *time <= to)
}

impl Inner {
    fn ensure_subject(&mut self, subject: &SubjectId, now_ms: i64) {
        self.subjects
            .entry(subject.as_str().to_owned())
            .or_insert((IMPLICIT_SUBJECT_KIND, now_ms));
    }

    fn insert_event(&mut self, event: ApplicationEvent) {
        let slot: Slot = (event.occurred_at, event.id.clone());
        for (column, key) in event_keys(&event) {
            let index = (column, key.to_owned(), event.scope.clone());
            self.by_key.entry(index).or_default().insert(slot.clone());
            if let Some(action) = event.action {
                let index = (column, key.to_owned(), event.scope.clone(), action);
                self.by_key_action
                    .entry(index)
                    .or_default()
                    .insert(slot.clone());
            }
        }
        self.events_by_expiry
            .insert((event.scope.clone(), event.expires_at, event.id.clone()));
        if let Some(visitor) = &event.visitor_id {
            self.events_by_visitor
                .entry(visitor.as_str().to_owned())
                .or_default()
                .insert(event.id.clone());
        }
        self.events.insert(event.id.clone(), event);
    }

    fn remove_event(&mut self, id: &str) -> Option<ApplicationEvent> {
        let event = self.events.remove(id)?;
        let slot: Slot = (event.occurred_at, event.id.clone());
        for (column, key) in event_keys(&event) {
            let index = (column, key.to_owned(), event.scope.clone());
            self.by_key.remove_item(index, &slot);
            if let Some(action) = event.action {
                let index = (column, key.to_owned(), event.scope.clone(), action);
                self.by_key_action.remove_item(index, &slot);
            }
        }
        self.events_by_expiry
            .remove(&(event.scope.clone(), event.expires_at, event.id.clone()));
        if let Some(visitor) = &event.visitor_id {
            self.events_by_visitor
                .remove_item(visitor.as_str().to_owned(), &event.id);
        }
        Some(event)
    }

    fn insert_link(&mut self, link: DeviceLink) {
        let id = link.id.as_str().to_owned();
        self.links_by_subject
            .entry((link.subject_id.as_str().to_owned(), link.scope.clone()))
            .or_default()
            .insert((link.created_at, id.clone()));
        self.links_by_retirement
            .insert((link.scope.clone(), link.retire_at(), id.clone()));
        self.links_by_visitor
            .entry(link.visitor_id.as_str().to_owned())
            .or_default()
            .insert(id.clone());
        self.links.insert(id, link);
    }

    fn remove_link(&mut self, id: &str) -> Option<DeviceLink> {
        let link = self.links.remove(id)?;
        let key = (link.subject_id.as_str().to_owned(), link.scope.clone());
        self.links_by_subject
            .remove_item(key, &(link.created_at, id.to_owned()));
        self.links_by_retirement
            .remove(&(link.scope.clone(), link.retire_at(), id.to_owned()));
        self.links_by_visitor
            .remove_item(link.visitor_id.as_str().to_owned(), &id.to_owned());
        Some(link)
    }

    /// Ids of the links of `subject`, in every scope.
    fn subject_links(&self, subject: &str) -> Vec<String> {
        self.links_by_subject
            .range((subject.to_owned(), String::new())..)
            .take_while(|((s, _), _)| s == subject)
            .flat_map(|(_, slots)| slots.iter().map(|(_, id)| id.clone()))
            .collect()
    }

    /// Whether `browser` is the account `subject`'s own: a device link joins them, or the browser signed in to
    /// the account (a login-success event names both), in any scope.
    pub(crate) fn is_linked(&self, subject: &SubjectId, browser: &VisitorId) -> bool {
        let linked = filed(&self.links_by_visitor, browser.as_str())
            .iter()
            .any(|id| self.links.get(id).is_some_and(|l| l.subject_id == *subject));
        let signed_in = |id: &String| {
            self.events.get(id).is_some_and(|e| {
                e.event_type == EventType::LoginSuccess && e.subject_id.as_ref() == Some(subject)
            })
        };
        linked
            || filed(&self.events_by_visitor, browser.as_str())
                .iter()
                .any(signed_in)
    }

    /// Erases `subject` and `browser` from evidence, in every scope: each event naming either is deleted or
    /// detached as [`event_fate`] says, and their links are deleted. Adds the counts to `report`; the subject
    /// row is [`remove_subject`](Self::remove_subject)'s.
    pub(crate) fn erase(
        &mut self,
        subject: Option<&SubjectId>,
        browser: Option<&VisitorId>,
        report: &mut AccountErasure,
    ) {
        let mut events = BTreeSet::new();
        let mut links = BTreeSet::new();
        if let Some(subject) = subject {
            events.extend(self.subject_events(subject.as_str(), None));
            links.extend(self.subject_links(subject.as_str()));
        }
        if let Some(browser) = browser {
            events.extend(filed(&self.events_by_visitor, browser.as_str()));
            links.extend(filed(&self.links_by_visitor, browser.as_str()));
        }
        for id in events {
            let fate = self
                .events
                .get(&id)
                .and_then(|e| event_fate(e, subject, browser));
            let Some(event) = fate.and_then(|_| self.remove_event(&id)) else {
                continue;
            };
            if fate == Some(EventFate::Detached) {
                // Filed again under the keys it still names, so velocity reads keep counting it.
                self.insert_event(detached(event, subject, browser));
                report.events_detached += 1;
            } else {
                report.events_deleted += 1;
            }
        }
        for id in links {
            report.links_deleted += u64::from(self.remove_link(&id).is_some());
        }
    }

    /// Deletes a subject row; returns whether it existed. Its events and links are [`erase`](Self::erase)'s.
    pub(crate) fn remove_subject(&mut self, subject: &SubjectId) -> bool {
        self.subjects.remove(subject.as_str()).is_some()
    }

    /// Ids of the events where `subject` is the subject or the actor, in `scope` or (when `None`) any scope.
    fn subject_events(&self, subject: &str, scope: Option<&str>) -> Vec<String> {
        let mut ids = Vec::new();
        for column in [ActivityColumn::Subject, ActivityColumn::Actor] {
            let from = (
                column,
                subject.to_owned(),
                scope.unwrap_or_default().to_owned(),
            );
            for ((c, key, s), slots) in self.by_key.range(from..) {
                if *c != column || key != subject || scope.is_some_and(|scope| scope != s) {
                    break;
                }
                ids.extend(slots.iter().map(|(_, id)| id.clone()));
            }
        }
        ids
    }
}

/// A map of sets, ordered or hashed.
trait SetMap<K, T> {
    fn remove_item(&mut self, key: K, item: &T);
}

impl<K: Ord, T: Ord> SetMap<K, T> for BTreeMap<K, BTreeSet<T>> {
    fn remove_item(&mut self, key: K, item: &T) {
        if let Some(set) = self.get_mut(&key) {
            set.remove(item);
            if set.is_empty() {
                self.remove(&key);
            }
        }
    }
}

impl<K: std::hash::Hash + Eq, T: Ord> SetMap<K, T> for HashMap<K, BTreeSet<T>> {
    fn remove_item(&mut self, key: K, item: &T) {
        if let Some(set) = self.get_mut(&key) {
            set.remove(item);
            if set.is_empty() {
                self.remove(&key);
            }
        }
    }
}

impl EvidenceStore for MemoryEvidenceStore {
    async fn put_event(&self, event: &ApplicationEvent) -> Result<EventWrite, StoreError> {
        let mut inner = self.lock();
        if let Some(stored) = inner.events.get(&event.id) {
            let same = stored.scope == event.scope && stored.digest == event.digest;
            return Ok(if same {
                EventWrite::Repeated
            } else {
                EventWrite::Conflict
            });
        }
        for subject in [&event.subject_id, &event.actor_id].into_iter().flatten() {
            inner.ensure_subject(subject, event.occurred_at);
        }
        inner.insert_event(event.clone());
        Ok(EventWrite::Inserted)
    }

    async fn recent_event_types(
        &self,
        read: &ActivityRead<'_>,
    ) -> Result<Vec<EventType>, StoreError> {
        let inner = self.lock();
        let slots = match read.action {
            None => inner
                .by_key
                .get(&(read.column, read.key.to_owned(), read.scope.to_owned())),
            Some(action) => inner.by_key_action.get(&(
                read.column,
                read.key.to_owned(),
                read.scope.to_owned(),
                action,
            )),
        };
        let Some(slots) = slots else {
            return Ok(Vec::new());
        };
        let limit = usize::try_from(store_activity_rows(read.limit)).unwrap_or(usize::MAX);
        Ok(slots
            .range(time_range(read.since, read.until))
            .rev()
            .filter_map(|(_, id)| inner.events.get(id))
            .filter(|event| event.expires_at > read.until)
            .take(limit)
            .map(|event| event.event_type)
            .collect())
    }

    async fn put_device_link(&self, link: &DeviceLink) -> Result<LinkWrite, StoreError> {
        let mut inner = self.lock();
        if let Some(stored) = inner.links.get(link.id.as_str()) {
            return Ok(
                if stored.scope == link.scope && stored.digest == link.digest {
                    LinkWrite::Existing(stored.clone())
                } else {
                    LinkWrite::Conflict
                },
            );
        }
        inner.ensure_subject(&link.subject_id, link.created_at);
        inner.insert_link(link.clone());
        Ok(LinkWrite::Created(link.clone()))
    }

    async fn device_link(
        &self,
        scope: &str,
        id: &LinkId,
    ) -> Result<Option<DeviceLink>, StoreError> {
        let inner = self.lock();
        Ok(inner
            .links
            .get(id.as_str())
            .filter(|link| link.scope == scope)
            .cloned())
    }

    async fn device_links(
        &self,
        scope: &str,
        subject: &SubjectId,
        limit: usize,
    ) -> Result<Vec<DeviceLink>, StoreError> {
        let inner = self.lock();
        let limit = store_link_list_limit(limit);
        let key = (subject.as_str().to_owned(), scope.to_owned());
        let Some(slots) = inner.links_by_subject.get(&key) else {
            return Ok(Vec::new());
        };
        Ok(slots
            .iter()
            .rev()
            .filter_map(|(_, id)| inner.links.get(id))
            .take(limit)
            .cloned()
            .collect())
    }

    async fn revoke_device_link(
        &self,
        scope: &str,
        id: &LinkId,
        revocation: &Revocation,
    ) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        let revocable = inner
            .links
            .get(id.as_str())
            .is_some_and(|link| link.scope == scope && link.revocation.is_none());
        if !revocable {
            return Ok(false);
        }
        let Some(mut link) = inner.remove_link(id.as_str()) else {
            return Ok(false);
        };
        link.revocation = Some(revocation.clone());
        inner.insert_link(link);
        Ok(true)
    }

    async fn delete_events(&self, scope: &str, owner: EventOwner<'_>) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        let ids: Vec<String> = match owner {
            EventOwner::Subject(subject) => inner.subject_events(subject.as_str(), Some(scope)),
            EventOwner::Session(label) => inner
                .by_key
                .get(&(ActivityColumn::Session, label.to_owned(), scope.to_owned()))
                .map(|slots| slots.iter().map(|(_, id)| id.clone()).collect())
                .unwrap_or_default(),
        };
        Ok(ids
            .iter()
            .filter(|id| inner.remove_event(id).is_some())
            .count() as u64)
    }

    async fn put_subject(
        &self,
        subject: &SubjectId,
        kind: SubjectKind,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        Ok(self.put_subject_row(subject, kind, now_ms))
    }

    async fn delete_subject(&self, subject: &SubjectId) -> Result<bool, StoreError> {
        Ok(self.delete_subject_row(subject))
    }

    async fn delete_visitor_evidence(&self, visitor: &VisitorId) -> Result<u64, StoreError> {
        let mut report = AccountErasure::default();
        self.lock().erase(None, Some(visitor), &mut report);
        Ok(report.events_deleted + report.links_deleted)
    }

    async fn cleanup(
        &self,
        scope: &str,
        link_cutoff: i64,
        batch: usize,
        now_ms: i64,
    ) -> Result<EvidenceCleanup, StoreError> {
        let batch = store_cleanup_batch(batch);
        let mut inner = self.lock();
        let expired: Vec<String> = scoped_until(&inner.events_by_expiry, scope, now_ms)
            .take(batch)
            .map(|(_, _, id)| id.clone())
            .collect();
        let retired: Vec<String> = scoped_until(&inner.links_by_retirement, scope, link_cutoff)
            .take(batch)
            .map(|(_, _, id)| id.clone())
            .collect();
        let mut report = EvidenceCleanup::default();
        for id in expired {
            report.events_deleted += u64::from(inner.remove_event(&id).is_some());
        }
        for id in retired {
            report.links_deleted += u64::from(inner.remove_link(&id).is_some());
        }
        Ok(report)
    }
}
