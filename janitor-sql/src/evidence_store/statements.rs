//! The SQL of the evidence store, public so it can be reviewed, `EXPLAIN`ed and replayed by load tools. Each
//! runs as a prepared statement, cached per connection.

/// Stores an event unless its id exists, creating the subject rows its subject and actor name if they are
/// missing — one round trip. `$1` id, `$2` scope, `$3` digest, `$4` subject id, `$5` session label, `$6` actor
/// id, `$7` visitor id, `$8` action, `$9` occurred_at, `$10` expires_at, `$11` record, `$12` kind of a new
/// subject row. Its row count is 1 when the event was inserted, 0 when the id existed (no `RETURNING`: the
/// count says it, and no row has to be built and sent).
///
/// The subject rows are written by the statement's first part; the foreign keys are checked at the end of the
/// statement, when they exist.
pub(crate) const INSERT_EVENT: &str = "\
WITH subjects AS ( \
  INSERT INTO identity_subjects (id, kind, record) \
  SELECT DISTINCT named.id, $12::text, \
    jsonb_build_object('id', named.id, 'kind', $12::text, 'updatedAt', $9::bigint) \
  FROM unnest(ARRAY[$4::text, $6::text]) AS named(id) \
  WHERE named.id IS NOT NULL \
  ON CONFLICT (id) DO NOTHING \
) \
INSERT INTO application_events \
  (id, scope, digest, subject_id, session_id, actor_id, visitor_id, action, occurred_at, expires_at, record) \
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
ON CONFLICT (id) DO NOTHING";

/// [`INSERT_EVENT`] for a group of events with distinct ids, in one statement and one commit. `$1`–`$11` are
/// the same columns as arrays of one element per event, `$12` the kind of new subject rows. A subject row new
/// to the group takes the earliest `occurred_at` of the events naming it; rows are written in key order, so two
/// groups naming the same new subjects wait on each other instead of deadlocking. Returns the ids inserted.
pub(crate) const INSERT_EVENTS: &str = "\
WITH batch AS ( \
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], \
    $8::text[], $9::int8[], $10::int8[], $11::jsonb[]) \
    AS b(id, scope, digest, subject_id, session_id, actor_id, visitor_id, action, occurred_at, expires_at, record) \
), subjects AS ( \
  INSERT INTO identity_subjects (id, kind, record) \
  SELECT named.id, $12::text, jsonb_build_object('id', named.id, 'kind', $12::text, 'updatedAt', min(named.at)) \
  FROM (SELECT subject_id, occurred_at FROM batch UNION ALL SELECT actor_id, occurred_at FROM batch) \
    AS named(id, at) \
  WHERE named.id IS NOT NULL \
  GROUP BY named.id ORDER BY named.id \
  ON CONFLICT (id) DO NOTHING \
) \
INSERT INTO application_events \
  (id, scope, digest, subject_id, session_id, actor_id, visitor_id, action, occurred_at, expires_at, record) \
SELECT id, scope, digest, subject_id, session_id, actor_id, visitor_id, action, occurred_at, expires_at, record \
FROM batch ORDER BY id \
ON CONFLICT (id) DO NOTHING \
RETURNING id";

/// The digests of stored events: `$1` ids, `$2` their scopes, pairwise. Read only for the events of a group
/// that [`INSERT_EVENTS`] did not insert; returns id and digest.
pub(crate) const EVENT_DIGESTS: &str = "\
SELECT e.id, e.digest FROM application_events e \
JOIN unnest($1::text[], $2::text[]) AS k(id, scope) ON e.id = k.id AND e.scope = k.scope";

/// The digest of a stored event (`$1` id, `$2` scope): read only when [`INSERT_EVENT`] inserted nothing.
pub(crate) const EVENT_DIGEST: &str =
    "SELECT digest FROM application_events WHERE id = $1 AND scope = $2";

macro_rules! recent_types {
    ($column:literal, $action:literal) => {
        concat!(
            "SELECT event_type FROM application_events WHERE ",
            $column,
            " = $1 AND scope = $2",
            $action,
            " AND occurred_at >= $3 AND occurred_at <= $4 AND expires_at > $4 \
             ORDER BY occurred_at DESC, id DESC LIMIT $5"
        )
    };
}

/// The activity read by subject: `$1` subject id, `$2` scope, `$3` window start, `$4` now, `$5` row limit.
/// Only the event type leaves the server. The scan is `idx_events_subject_time`, newest first, stopping at the
/// limit; it carries `expires_at` and `event_type` (migration 0007), so the read is an index-only scan that
/// visits no table page where the visibility map allows it.
pub(crate) const RECENT_TYPES_BY_SUBJECT: &str = recent_types!("subject_id", "");
/// The same by session label.
pub(crate) const RECENT_TYPES_BY_SESSION: &str = recent_types!("session_id", "");
/// The same by actor.
pub(crate) const RECENT_TYPES_BY_ACTOR: &str = recent_types!("actor_id", "");
/// The activity read by subject for one action (`$6`), on `idx_events_subject_action`.
pub(crate) const RECENT_TYPES_BY_SUBJECT_ACTION: &str =
    recent_types!("subject_id", " AND action = $6");
/// The same by session label.
pub(crate) const RECENT_TYPES_BY_SESSION_ACTION: &str =
    recent_types!("session_id", " AND action = $6");
/// The same by actor.
pub(crate) const RECENT_TYPES_BY_ACTOR_ACTION: &str = recent_types!("actor_id", " AND action = $6");

/// Stores a device link unless its id exists, creating its subject row if missing. `$1` id, `$2` scope,
/// `$3` digest, `$4` subject id, `$5` visitor id, `$6` created_at, `$7` retire_at (the link's end), `$8`
/// record, `$9` kind of a new subject row. Returns the record when inserted.
pub(crate) const INSERT_LINK: &str = "\
WITH subject AS ( \
  INSERT INTO identity_subjects (id, kind, record) \
  VALUES ($4, $9::text, jsonb_build_object('id', $4::text, 'kind', $9::text, 'updatedAt', $6::bigint)) \
  ON CONFLICT (id) DO NOTHING \
) \
INSERT INTO device_links (id, scope, digest, subject_id, visitor_id, created_at, retire_at, record) \
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
ON CONFLICT (id) DO NOTHING \
RETURNING record";

/// One link's record (`$1` id, `$2` scope).
pub(crate) const LINK: &str = "SELECT record FROM device_links WHERE id = $1 AND scope = $2";

/// A subject's links, newest first (`$1` subject id, `$2` scope, `$3` limit), on `idx_device_links_subject`.
pub(crate) const LINKS_OF_SUBJECT: &str = "\
SELECT record FROM device_links WHERE subject_id = $1 AND scope = $2 \
ORDER BY created_at DESC, id DESC LIMIT $3";

/// Revokes a link not revoked yet, pulling its retirement to the revocation time. `$1` revocation (jsonb),
/// `$2` revoked_at, `$3` id, `$4` scope.
pub(crate) const REVOKE_LINK: &str = "\
UPDATE device_links \
SET record = jsonb_set(record, '{revocation}', $1::jsonb), retire_at = LEAST(retire_at, $2) \
WHERE id = $3 AND scope = $4 AND NOT (record ? 'revocation')";

/// Deletes a subject's events in a scope, as subject or actor (`$1` scope, `$2` subject id).
pub(crate) const DELETE_SUBJECT_EVENTS: &str =
    "DELETE FROM application_events WHERE scope = $1 AND (subject_id = $2 OR actor_id = $2)";

/// Deletes a session's events in a scope (`$1` scope, `$2` session label).
pub(crate) const DELETE_SESSION_EVENTS: &str =
    "DELETE FROM application_events WHERE scope = $1 AND session_id = $2";

/// Creates a subject row, or refreshes its record when the kind is the same (`$1` id, `$2` kind, `$3` now).
/// No row back means the subject exists with the other kind.
pub(crate) const PUT_SUBJECT: &str = "\
INSERT INTO identity_subjects (id, kind, record) \
VALUES ($1, $2, jsonb_build_object('id', $1::text, 'kind', $2::text, 'updatedAt', $3::bigint)) \
ON CONFLICT (id) DO UPDATE SET record = EXCLUDED.record WHERE identity_subjects.kind = EXCLUDED.kind \
RETURNING id";

/// Deletes a subject row (`$1`); its events and links go by cascade.
pub(crate) const DELETE_SUBJECT: &str = "DELETE FROM identity_subjects WHERE id = $1";

/// The events an erasure of subject `$1` and browser `$2` reaches: those naming either (a `NULL` names nothing).
/// Each key has its index (`idx_events_subject_time`, `idx_events_actor_time`, `idx_events_visitor`).
macro_rules! named_by_erasure {
    () => {
        "(subject_id = $1 OR actor_id = $1 OR visitor_id = $2)"
    };
}

/// Of those, the events that go: the erased subject's own, and those naming no other subject. Never `NULL`
/// (every comparison is wrapped in `IS TRUE`), so `NOT` selects exactly the events that stay.
macro_rules! erased_by_erasure {
    () => {
        "((subject_id = $1) IS TRUE \
          OR (subject_id IS NULL AND (actor_id IS NULL OR (actor_id = $1) IS TRUE)))"
    };
}

/// Erases subject `$1` and browser `$2` (either may be `NULL`) from evidence, in every scope, in one round
/// trip: deletes the events [`janitor_core::erasure::event_fate`] deletes; detaches the others that name
/// either (the erased actor and browser set to `NULL` and their keys removed from `record`, so every reader of
/// the row sees one event; `digest` stays as recorded, so a retry of the original event is still a repeat);
/// deletes the links of either. Returns the three counts.
///
/// The two sets of events are disjoint, so no row is changed twice by the statement.
pub(crate) const ERASE_EVIDENCE: &str = concat!(
    "WITH deleted AS ( \
       DELETE FROM application_events WHERE ",
    named_by_erasure!(),
    " AND ",
    erased_by_erasure!(),
    " RETURNING 1 \
     ), detached AS ( \
       UPDATE application_events SET \
         actor_id = CASE WHEN actor_id = $1 THEN NULL ELSE actor_id END, \
         visitor_id = CASE WHEN visitor_id = $2 THEN NULL ELSE visitor_id END, \
         record = record - array_remove(ARRAY[ \
           CASE WHEN actor_id = $1 THEN 'actorId' END, \
           CASE WHEN visitor_id = $2 THEN 'visitorId' END], NULL) \
       WHERE ",
    named_by_erasure!(),
    " AND NOT ",
    erased_by_erasure!(),
    " RETURNING 1 \
     ), links AS ( \
       DELETE FROM device_links WHERE subject_id = $1 OR visitor_id = $2 RETURNING 1 \
     ) \
     SELECT (SELECT count(*) FROM deleted), (SELECT count(*) FROM detached), (SELECT count(*) FROM links)"
);

/// One retention step in one round trip: at most `$4` expired events of scope `$1` (`expires_at <= $2`,
/// earliest first) and at most `$4` links retired at or before `$3`. Returns both counts.
pub(crate) const CLEANUP: &str = "\
WITH expired AS ( \
  DELETE FROM application_events WHERE id IN ( \
    SELECT id FROM application_events WHERE scope = $1 AND expires_at <= $2 \
    ORDER BY expires_at LIMIT $4) \
  RETURNING 1 \
), retired AS ( \
  DELETE FROM device_links WHERE id IN ( \
    SELECT id FROM device_links WHERE scope = $1 AND retire_at <= $3 \
    ORDER BY retire_at LIMIT $4) \
  RETURNING 1 \
) \
SELECT (SELECT count(*) FROM expired), (SELECT count(*) FROM retired)";
