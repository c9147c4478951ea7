//! The SQL of the identity directory store, run as prepared statements cached per connection.

/// A subject's record (`$1` id).
pub(crate) const SUBJECT: &str = "SELECT record FROM identity_subjects WHERE id = $1";

/// Stores a key for its subject if the subject exists: a key of the same subject gets the new record, a key
/// of another subject is left alone (`$1` digest, `$2` subject id, `$3` record). No row back means the key
/// belongs to another subject or the subject does not exist; concurrent claims of one digest by different
/// subjects let exactly one through.
pub(crate) const PUT_KEY: &str = "\
INSERT INTO identity_keys (digest, subject_id, record) \
SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM identity_subjects WHERE id = $2) \
ON CONFLICT (digest) DO UPDATE SET record = EXCLUDED.record \
WHERE identity_keys.subject_id = EXCLUDED.subject_id \
RETURNING digest";

/// The owner of a key (`$1` digest).
pub(crate) const KEY_OWNER: &str = "SELECT subject_id FROM identity_keys WHERE digest = $1";

/// Deletes a key of one subject (`$1` digest, `$2` subject id).
pub(crate) const REMOVE_KEY: &str =
    "DELETE FROM identity_keys WHERE digest = $1 AND subject_id = $2";

/// Stores a delegation if both subjects exist (`$1` id, `$2` principal, `$3` actor, `$4` expires_at, `$5`
/// record). Returns the id when stored.
pub(crate) const PUT_DELEGATION: &str = "\
INSERT INTO identity_delegations (id, principal_id, actor_id, expires_at, record) \
SELECT $1, $2, $3, $4, $5 \
WHERE EXISTS (SELECT 1 FROM identity_subjects WHERE id = $2) \
  AND EXISTS (SELECT 1 FROM identity_subjects WHERE id = $3) \
ON CONFLICT (id) DO NOTHING \
RETURNING id";

/// A delegation's record (`$1` id).
pub(crate) const DELEGATION: &str = "SELECT record FROM identity_delegations WHERE id = $1";

/// Revokes a delegation not revoked yet (`$1` id, `$2` now): only the first revocation counts.
pub(crate) const REVOKE_DELEGATION: &str = "\
UPDATE identity_delegations SET record = jsonb_set(record, '{revokedAt}', to_jsonb($2::bigint)) \
WHERE id = $1 AND NOT (record ? 'revokedAt')";

/// Deletes at most `$2` delegations that ended at or before `$1`, earliest first, on
/// `idx_identity_delegations_expiry`.
pub(crate) const CLEANUP: &str = "\
DELETE FROM identity_delegations WHERE id IN ( \
  SELECT id FROM identity_delegations WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2)";
