//! Grouped event inserts (opt-in): the events of callers that arrive while a write is under way go to the
//! database together, in one statement and one commit.
//!
//! Recording an event is one short statement whose cost is mostly the commit: the wait for the write-ahead log
//! to reach the disk. Callers that record at the same moment each pay it. With grouping on, a few writer tasks
//! take the events that are waiting (up to [`GroupedInserts::max_events`]) and insert them with one statement;
//! each caller is answered once that statement has committed, so an acknowledged event is as durable as with
//! a statement of its own. A lone caller waits for nothing: a writer that is free takes its event at once.
//!
//! Each caller still gets its own answer. An id repeated within one group is written after the group, as if it
//! had come second; when the group's statement is refused for one event's data (a browser id that names no
//! visitor), every event of the group is written on its own, so the others are unaffected.

use std::collections::{HashMap, HashSet};
use std::ops::RangeInclusive;
use std::sync::{Arc, OnceLock};

use janitor_core::config::check;
use janitor_core::evidence::{ApplicationEvent, EventWrite, SubjectId, IMPLICIT_SUBJECT_KIND};
use janitor_core::{ConfigError, StoreError, VisitorId};
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio_postgres::types::Json;

use super::{put_one, statements};
use crate::database::Database;
use crate::error::unreadable;

/// The range of [`GroupedInserts::max_events`].
pub const MAX_EVENTS_PER_GROUP: RangeInclusive<usize> = 1..=1_000;
/// The range of [`GroupedInserts::writers`].
pub const GROUP_WRITERS: RangeInclusive<usize> = 1..=64;

/// How [`PgEvidenceStore`](super::PgEvidenceStore) groups event inserts, when it does
/// ([`PgStores::group_event_inserts`](crate::PgStores::group_event_inserts)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupedInserts {
    max_events: usize,
    writers: usize,
}

impl GroupedInserts {
    /// At most `max_events` events per statement (1–1,000), written by `writers` tasks (1–64) that each hold
    /// one pooled connection while they write. A writer collects the next group while the others write, so
    /// two writers keep the database busy without taking the pool from the reads.
    pub fn new(max_events: usize, writers: usize) -> Result<Self, ConfigError> {
        Ok(GroupedInserts {
            max_events: check("max_events", max_events, &MAX_EVENTS_PER_GROUP)?,
            writers: check("writers", writers, &GROUP_WRITERS)?,
        })
    }

    /// Events per statement at most.
    pub fn max_events(&self) -> usize {
        self.max_events
    }

    /// Writer tasks (and so pooled connections writing events at once).
    pub fn writers(&self) -> usize {
        self.writers
    }
}

impl Default for GroupedInserts {
    /// 64 events per statement, 2 writers.
    fn default() -> Self {
        GroupedInserts {
            max_events: 64,
            writers: 2,
        }
    }
}

type Answer = Result<EventWrite, StoreError>;

struct Pending {
    event: ApplicationEvent,
    answer: oneshot::Sender<Answer>,
}

/// The writers of one store family, shared by every clone of its evidence store. They start with the first
/// event and stop when the last clone is dropped.
pub(crate) struct EventGroups {
    settings: GroupedInserts,
    database: Database,
    queue: OnceLock<mpsc::Sender<Pending>>,
}

impl std::fmt::Debug for EventGroups {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventGroups")
            .field("settings", &self.settings)
            .field("started", &self.queue.get().is_some())
            .finish()
    }
}

impl EventGroups {
    pub(crate) fn new(database: Database, settings: GroupedInserts) -> Arc<Self> {
        Arc::new(EventGroups {
            settings,
            database,
            queue: OnceLock::new(),
        })
    }

    /// Records `event` in the next group and waits until that group has committed.
    pub(crate) async fn put(&self, event: &ApplicationEvent) -> Answer {
        let queue = self.queue.get_or_init(|| self.start());
        let (answer, answered) = oneshot::channel();
        let pending = Pending {
            event: event.clone(),
            answer,
        };
        if queue.send(pending).await.is_err() {
            // The writers ran on a runtime that has ended: write alone.
            return put_one(&self.database, event).await;
        }
        answered.await.unwrap_or_else(|_| {
            Err(StoreError::Unavailable(
                "the event writer stopped before the event's group was answered".to_owned(),
            ))
        })
    }

    fn start(&self) -> mpsc::Sender<Pending> {
        let (queue, waiting) = mpsc::channel(self.settings.max_events * self.settings.writers * 2);
        let waiting = Arc::new(Mutex::new(waiting));
        for _ in 0..self.settings.writers {
            let (database, waiting) = (self.database.clone(), Arc::clone(&waiting));
            tokio::spawn(write_groups(database, waiting, self.settings.max_events));
        }
        queue
    }
}

/// One writer: takes what is waiting (at least one event), writes it, answers, and again, until every sender
/// is gone.
async fn write_groups(
    database: Database,
    waiting: Arc<Mutex<mpsc::Receiver<Pending>>>,
    max_events: usize,
) {
    let mut group = Vec::with_capacity(max_events);
    loop {
        // Only one writer collects at a time; the lock is let go before writing, so the next writer collects
        // while this one waits on the database.
        let taken = waiting.lock().await.recv_many(&mut group, max_events).await;
        if taken == 0 {
            return;
        }
        write_group(&database, &mut group).await;
    }
}

async fn write_group(database: &Database, group: &mut Vec<Pending>) {
    let mut seen = HashSet::with_capacity(group.len());
    let (first, repeated): (Vec<Pending>, Vec<Pending>) = group
        .drain(..)
        .partition(|pending| seen.insert(pending.event.id.clone()));
    let events: Vec<&ApplicationEvent> = first.iter().map(|p| &p.event).collect();
    match insert_group(database, &events).await {
        Ok(writes) => {
            for (pending, write) in first.into_iter().zip(writes) {
                let _ = pending.answer.send(Ok(write));
            }
        }
        Err(StoreError::Data(_) | StoreError::Invalid(_)) if first.len() > 1 => {
            // One event's data refused the whole group: write each on its own, for its own answer.
            for pending in first {
                let answer = put_one(database, &pending.event).await;
                let _ = pending.answer.send(answer);
            }
        }
        Err(failure) => {
            for pending in first {
                let _ = pending.answer.send(Err(failure.clone()));
            }
        }
    }
    for pending in repeated {
        let answer = put_one(database, &pending.event).await;
        let _ = pending.answer.send(answer);
    }
}

/// Inserts `events` (distinct ids) in one statement, then reads the digests of those that were not inserted;
/// each event's write, in order.
async fn insert_group(
    database: &Database,
    events: &[&ApplicationEvent],
) -> Result<Vec<EventWrite>, StoreError> {
    let mut connection = database.connection().await?;
    let text = |value: fn(&ApplicationEvent) -> Option<&str>| -> Vec<Option<&str>> {
        events.iter().map(|event| value(event)).collect()
    };
    let ids: Vec<&str> = events.iter().map(|e| e.id.as_str()).collect();
    let scopes: Vec<&str> = events.iter().map(|e| e.scope.as_str()).collect();
    let digests: Vec<&str> = events.iter().map(|e| e.digest.as_str()).collect();
    let subjects = text(|e| e.subject_id.as_ref().map(SubjectId::as_str));
    let sessions = text(|e| e.session_id.as_deref());
    let actors = text(|e| e.actor_id.as_ref().map(SubjectId::as_str));
    let visitors = text(|e| e.visitor_id.as_ref().map(VisitorId::as_str));
    let actions = text(|e| e.action.map(|a| a.as_str()));
    let occurred: Vec<i64> = events.iter().map(|e| e.occurred_at).collect();
    let expires: Vec<i64> = events.iter().map(|e| e.expires_at).collect();
    let records: Vec<Json<&ApplicationEvent>> = events.iter().map(|e| Json(*e)).collect();
    let kind = IMPLICIT_SUBJECT_KIND.as_str();
    let inserted = connection
        .query(
            statements::INSERT_EVENTS,
            &[
                &ids, &scopes, &digests, &subjects, &sessions, &actors, &visitors, &actions,
                &occurred, &expires, &records, &kind,
            ],
        )
        .await?;
    let inserted = inserted
        .iter()
        .map(|row| row.try_get::<_, String>(0))
        .collect::<Result<HashSet<String>, _>>()
        .map_err(|e| unreadable("an inserted event id", e))?;
    if inserted.len() == events.len() {
        return Ok(vec![EventWrite::Inserted; events.len()]);
    }
    let (left_ids, left_scopes): (Vec<&str>, Vec<&str>) = events
        .iter()
        .filter(|e| !inserted.contains(&e.id))
        .map(|e| (e.id.as_str(), e.scope.as_str()))
        .unzip();
    let stored: HashMap<String, String> = connection
        .query(statements::EVENT_DIGESTS, &[&left_ids, &left_scopes])
        .await?
        .iter()
        .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
        .collect::<Result<_, tokio_postgres::Error>>()
        .map_err(|e| unreadable("an event digest", e))?;
    Ok(events
        .iter()
        .map(|event| {
            if inserted.contains(&event.id) {
                EventWrite::Inserted
            } else if stored.get(&event.id) == Some(&event.digest) {
                EventWrite::Repeated
            } else {
                EventWrite::Conflict
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_hold_their_ranges() {
        for (events, writers) in [(1, 1), (1_000, 64), (64, 2)] {
            let settings = GroupedInserts::new(events, writers).expect("in range");
            assert_eq!(
                (settings.max_events(), settings.writers()),
                (events, writers)
            );
        }
        for (events, writers, field) in [
            (0, 2, "max_events"),
            (1_001, 2, "max_events"),
            (64, 0, "writers"),
            (64, 65, "writers"),
        ] {
            let refused = GroupedInserts::new(events, writers).expect_err("out of range");
            assert_eq!(refused.field, field);
        }
        assert_eq!(
            GroupedInserts::default(),
            GroupedInserts::new(64, 2).unwrap()
        );
    }
}
