//! Application evidence on PostgreSQL: `application_events`, `device_links` and `identity_subjects`, in the
//! tables of `migrations/0003_evidence.sql` (shared with Janitor instances in other languages).
//!
//! Round trips: recording an event is one statement (subject rows and the event together), plus one digest
//! read only when the id existed (with [`GroupedInserts`], one statement per group of callers recording at the
//! same moment, plus one digest read for the group's repeats); an activity read, a link write, a listing, a revocation, each erasure and
//! each cleanup step are one statement each.

use janitor_core::erasure::AccountErasure;
use janitor_core::evidence::config::{
    store_activity_rows, store_cleanup_batch, store_link_list_limit,
};
use janitor_core::evidence::{
    ActivityColumn, ActivityRead, ApplicationEvent, DeviceLink, EventOwner, EventType, EventWrite,
    EvidenceCleanup, EvidenceStore, LinkId, LinkWrite, Revocation, SubjectId, SubjectKind,
    IMPLICIT_SUBJECT_KIND,
};
use janitor_core::StoreError;
use janitor_core::VisitorId;
use std::sync::Arc;
use tokio_postgres::types::Json;

use tokio_postgres::Row;

use crate::database::{Connection, Database};
use crate::error::{erased_meanwhile, unreadable};
use crate::params::Param;

mod grouped;
pub(crate) mod statements;

pub(crate) use grouped::EventGroups;
pub use grouped::{GroupedInserts, GROUP_WRITERS, MAX_EVENTS_PER_GROUP};

/// Evidence in PostgreSQL. Cheap to clone; clones share the pool. Run [`migrate`](crate::migrate()) once
/// before use.
///
/// Visitor ids must name rows of `visitors` (a foreign key): a write naming an unknown visitor is a
/// [`StoreError::Data`]. Deleting a visitor row directly deletes its events and links by cascade (the
/// contract's foreign keys); [`PgStores::erase_visitor`](crate::PgStores) erases a browser without deleting
/// events about accounts.
#[derive(Debug, Clone)]
pub struct PgEvidenceStore {
    database: Database,
    groups: Option<Arc<EventGroups>>,
}

impl PgEvidenceStore {
    /// A store over `database`.
    pub fn new(database: Database) -> Self {
        PgEvidenceStore {
            database,
            groups: None,
        }
    }

    /// The same store with its event inserts grouped (see [`GroupedInserts`]); its clones share the writers.
    /// [`PgStores::group_event_inserts`](crate::PgStores::group_event_inserts) does this for every evidence
    /// store of a family.
    pub fn with_grouped_inserts(self, settings: GroupedInserts) -> Self {
        let groups = EventGroups::new(self.database.clone(), settings);
        self.sharing_groups(Some(groups))
    }

    pub(crate) fn sharing_groups(self, groups: Option<Arc<EventGroups>>) -> Self {
        PgEvidenceStore { groups, ..self }
    }

    /// The database handle (for its counters, or the application's own statements).
    pub fn database(&self) -> &Database {
        &self.database
    }
}

/// The activity statement for a column, with or without an action.
pub(crate) fn recent_types_statement(column: ActivityColumn, with_action: bool) -> &'static str {
    use statements::*;
    match (column, with_action) {
        (ActivityColumn::Subject, false) => RECENT_TYPES_BY_SUBJECT,
        (ActivityColumn::Session, false) => RECENT_TYPES_BY_SESSION,
        (ActivityColumn::Actor, false) => RECENT_TYPES_BY_ACTOR,
        (ActivityColumn::Subject, true) => RECENT_TYPES_BY_SUBJECT_ACTION,
        (ActivityColumn::Session, true) => RECENT_TYPES_BY_SESSION_ACTION,
        (ActivityColumn::Actor, true) => RECENT_TYPES_BY_ACTOR_ACTION,
    }
}

fn link(row: &Row) -> Result<DeviceLink, StoreError> {
    row.try_get::<_, Json<DeviceLink>>(0)
        .map(|Json(link)| link)
        .map_err(|e| unreadable("a device link", e))
}

fn event_type(row: &Row) -> Result<EventType, StoreError> {
    let name: Option<&str> = row.try_get(0).map_err(|e| unreadable("an event type", e))?;
    name.and_then(EventType::parse)
        .ok_or_else(|| unreadable("an event type", "not one of the event types"))
}

/// Runs [`statements::ERASE_EVIDENCE`] for `subject` and `browser` on `connection` (inside the caller's
/// transaction, when it has one); the event and link counts of the report.
pub(crate) async fn erase_evidence(
    connection: &mut Connection<'_>,
    subject: Option<&SubjectId>,
    browser: Option<&VisitorId>,
) -> Result<AccountErasure, StoreError> {
    let subject = subject.map(SubjectId::as_str);
    let browser = browser.map(VisitorId::as_str);
    let rows = connection
        .query(statements::ERASE_EVIDENCE, &[&subject, &browser])
        .await?;
    let row = rows
        .first()
        .ok_or_else(|| unreadable("erasure counts", "no row"))?;
    Ok(AccountErasure {
        events_deleted: count(row, 0)?,
        events_detached: count(row, 1)?,
        links_deleted: count(row, 2)?,
        ..AccountErasure::default()
    })
}

pub(crate) fn count(row: &Row, column: usize) -> Result<u64, StoreError> {
    let n: i64 = row
        .try_get(column)
        .map_err(|e| unreadable("a row count", e))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// Records one event with a statement of its own.
pub(crate) async fn put_one(
    database: &Database,
    event: &ApplicationEvent,
) -> Result<EventWrite, StoreError> {
    let mut connection = database.connection().await?;
    let subject = event.subject_id.as_ref().map(SubjectId::as_str);
    let actor = event.actor_id.as_ref().map(SubjectId::as_str);
    let visitor = event.visitor_id.as_ref().map(VisitorId::as_str);
    let action = event.action.map(|a| a.as_str());
    let kind = IMPLICIT_SUBJECT_KIND.as_str();
    let record = Json(event);
    let params: [&dyn Param; 12] = [
        &event.id,
        &event.scope,
        &event.digest,
        &subject,
        &event.session_id,
        &actor,
        &visitor,
        &action,
        &event.occurred_at,
        &event.expires_at,
        &record,
        &kind,
    ];
    let mut inserted = connection.execute(statements::INSERT_EVENT, &params).await;
    if erased_meanwhile(&inserted) {
        inserted = connection.execute(statements::INSERT_EVENT, &params).await;
    }
    if inserted? > 0 {
        return Ok(EventWrite::Inserted);
    }
    let stored = connection
        .query(statements::EVENT_DIGEST, &[&event.id, &event.scope])
        .await?;
    let digest: Option<String> = match stored.first() {
        Some(row) => Some(
            row.try_get(0)
                .map_err(|e| unreadable("an event digest", e))?,
        ),
        None => None,
    };
    // No row in this scope (another scope's id, or erased in between) counts as a conflict, as in the
    // reference: the caller's id did not record this content.
    Ok(if digest.as_deref() == Some(event.digest.as_str()) {
        EventWrite::Repeated
    } else {
        EventWrite::Conflict
    })
}

impl EvidenceStore for PgEvidenceStore {
    /// One statement (plus a digest read when the id existed), or a place in the next group when inserts are
    /// grouped.
    async fn put_event(&self, event: &ApplicationEvent) -> Result<EventWrite, StoreError> {
        match &self.groups {
            Some(groups) => groups.put(event).await,
            None => put_one(&self.database, event).await,
        }
    }

    async fn recent_event_types(
        &self,
        read: &ActivityRead<'_>,
    ) -> Result<Vec<EventType>, StoreError> {
        let mut connection = self.database.connection().await?;
        let statement = recent_types_statement(read.column, read.action.is_some());
        let limit = i64::from(store_activity_rows(read.limit));
        let rows = match read.action {
            None => {
                connection
                    .query(
                        statement,
                        &[&read.key, &read.scope, &read.since, &read.until, &limit],
                    )
                    .await?
            }
            Some(action) => {
                let action = action.as_str();
                connection
                    .query(
                        statement,
                        &[
                            &read.key,
                            &read.scope,
                            &read.since,
                            &read.until,
                            &limit,
                            &action,
                        ],
                    )
                    .await?
            }
        };
        rows.iter().map(event_type).collect()
    }

    async fn put_device_link(&self, link_record: &DeviceLink) -> Result<LinkWrite, StoreError> {
        let mut connection = self.database.connection().await?;
        let kind = IMPLICIT_SUBJECT_KIND.as_str();
        let record = Json(link_record);
        let retire_at = link_record.retire_at();
        let params: [&dyn Param; 9] = [
            &link_record.id.as_str(),
            &link_record.scope,
            &link_record.digest,
            &link_record.subject_id.as_str(),
            &link_record.visitor_id.as_str(),
            &link_record.created_at,
            &retire_at,
            &record,
            &kind,
        ];
        let mut inserted = connection.query(statements::INSERT_LINK, &params).await;
        if erased_meanwhile(&inserted) {
            inserted = connection.query(statements::INSERT_LINK, &params).await;
        }
        if let Some(row) = inserted?.first() {
            return link(row).map(LinkWrite::Created);
        }
        let stored = connection
            .query(
                statements::LINK,
                &[&link_record.id.as_str(), &link_record.scope],
            )
            .await?;
        match stored.first().map(link).transpose()? {
            Some(existing) if existing.digest == link_record.digest => {
                Ok(LinkWrite::Existing(existing))
            }
            _ => Ok(LinkWrite::Conflict),
        }
    }

    async fn device_link(
        &self,
        scope: &str,
        id: &LinkId,
    ) -> Result<Option<DeviceLink>, StoreError> {
        let mut connection = self.database.connection().await?;
        let rows = connection
            .query(statements::LINK, &[&id.as_str(), &scope])
            .await?;
        rows.first().map(link).transpose()
    }

    async fn device_links(
        &self,
        scope: &str,
        subject: &SubjectId,
        limit: usize,
    ) -> Result<Vec<DeviceLink>, StoreError> {
        let mut connection = self.database.connection().await?;
        let limit = store_link_list_limit(limit) as i64;
        let rows = connection
            .query(
                statements::LINKS_OF_SUBJECT,
                &[&subject.as_str(), &scope, &limit],
            )
            .await?;
        rows.iter().map(link).collect()
    }

    async fn revoke_device_link(
        &self,
        scope: &str,
        id: &LinkId,
        revocation: &Revocation,
    ) -> Result<bool, StoreError> {
        let mut connection = self.database.connection().await?;
        let changed = connection
            .execute(
                statements::REVOKE_LINK,
                &[
                    &Json(revocation),
                    &revocation.revoked_at,
                    &id.as_str(),
                    &scope,
                ],
            )
            .await?;
        Ok(changed > 0)
    }

    async fn delete_events(&self, scope: &str, owner: EventOwner<'_>) -> Result<u64, StoreError> {
        let mut connection = self.database.connection().await?;
        match owner {
            EventOwner::Subject(subject) => {
                connection
                    .execute(
                        statements::DELETE_SUBJECT_EVENTS,
                        &[&scope, &subject.as_str()],
                    )
                    .await
            }
            EventOwner::Session(label) => {
                connection
                    .execute(statements::DELETE_SESSION_EVENTS, &[&scope, &label])
                    .await
            }
        }
    }

    async fn put_subject(
        &self,
        subject: &SubjectId,
        kind: SubjectKind,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let mut connection = self.database.connection().await?;
        let rows = connection
            .query(
                statements::PUT_SUBJECT,
                &[&subject.as_str(), &kind.as_str(), &now_ms],
            )
            .await?;
        Ok(!rows.is_empty())
    }

    async fn delete_subject(&self, subject: &SubjectId) -> Result<bool, StoreError> {
        let mut connection = self.database.connection().await?;
        let deleted = connection
            .execute(statements::DELETE_SUBJECT, &[&subject.as_str()])
            .await?;
        Ok(deleted > 0)
    }

    /// One statement: the erasure of evidence with no subject.
    async fn delete_visitor_evidence(&self, visitor: &VisitorId) -> Result<u64, StoreError> {
        let mut connection = self.database.connection().await?;
        let erased = erase_evidence(&mut connection, None, Some(visitor)).await?;
        Ok(erased.events_deleted + erased.links_deleted)
    }

    async fn cleanup(
        &self,
        scope: &str,
        link_cutoff: i64,
        batch: usize,
        now_ms: i64,
    ) -> Result<EvidenceCleanup, StoreError> {
        let mut connection = self.database.connection().await?;
        let batch = store_cleanup_batch(batch) as i64;
        let rows = connection
            .query(
                statements::CLEANUP,
                &[&scope, &now_ms, &link_cutoff, &batch],
            )
            .await?;
        let row = rows
            .first()
            .ok_or_else(|| unreadable("cleanup counts", "no row"))?;
        Ok(EvidenceCleanup {
            events_deleted: count(row, 0)?,
            links_deleted: count(row, 1)?,
        })
    }
}
