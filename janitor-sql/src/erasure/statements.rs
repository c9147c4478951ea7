//! The SQL of an erasure's transaction, besides [`ERASE_EVIDENCE`](crate::evidence_store::statements) and the
//! visitor store's `DELETE_VISITOR`. Prepared statements, cached per connection.

/// Locks the subject row `$1` and the visitor row `$2` for the rest of the transaction and says which exist,
/// then whether the browser is the account's own: a device link joins them, or it signed in to the account (a
/// login-success event names both; the subject's index finds its events). Writes naming either row (an event, a
/// link, a key, an observation) check or lock it, so they wait until the erasure commits and nothing new about
/// the account or the browser slips in between its statements.
pub(crate) const LOCK_TARGETS: &str = "\
SELECT EXISTS (SELECT 1 FROM identity_subjects WHERE id = $1 FOR UPDATE), \
       EXISTS (SELECT 1 FROM visitors WHERE id = $2 FOR UPDATE), \
       EXISTS (SELECT 1 FROM device_links WHERE subject_id = $1 AND visitor_id = $2) \
       OR EXISTS (SELECT 1 FROM application_events \
                  WHERE subject_id = $1 AND visitor_id = $2 AND record->>'type' = 'login-success')";

/// Deletes subject `$1` with its keys, the delegations naming it (principal or actor) and the learning
/// sessions labelled with it or predicted for it, counting each. Run after evidence is erased: by then no
/// event or link names the subject, so the foreign keys' cascade from its row finds nothing left to delete.
pub(crate) const ERASE_SUBJECT: &str = "\
WITH keys AS (DELETE FROM identity_keys WHERE subject_id = $1 RETURNING 1), \
delegations AS ( \
  DELETE FROM identity_delegations WHERE principal_id = $1 OR actor_id = $1 RETURNING 1 \
), \
sessions AS ( \
  DELETE FROM learning_sessions WHERE subject_id = $1 OR predicted_subject_id = $1 RETURNING 1 \
), \
subject AS (DELETE FROM identity_subjects WHERE id = $1 RETURNING 1) \
SELECT (SELECT count(*) FROM keys), (SELECT count(*) FROM delegations), (SELECT count(*) FROM sessions)";
