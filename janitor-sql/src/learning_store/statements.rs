//! The SQL of the learning store, run as prepared statements cached per connection.

/// The columns every read returns, in the order `session` decodes them.
macro_rules! columns {
    () => {
        "id, scope, started_at, expires_at, observed_at, signals_json, subject_id, verified_at, disputed, \
         prediction_status, predicted_subject_id, prediction_score"
    };
}

/// Stores a new session (`$1` id … `$9` prediction score).
pub(crate) const INSERT_SESSION: &str = "\
INSERT INTO learning_sessions (id, scope, started_at, expires_at, observed_at, signals_json, \
  prediction_status, predicted_subject_id, prediction_score) \
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";

/// One session of a scope (`$1` scope, `$2` id).
pub(crate) const SESSION: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM learning_sessions WHERE scope = $1 AND id = $2"
);

/// Replaces the snapshot and prediction of an open session: same start and end, unexpired at `$10`,
/// unlabelled, undisputed. `$1`–`$9` are numbered as in [`INSERT_SESSION`].
pub(crate) const UPDATE_SESSION: &str = "\
UPDATE learning_sessions SET observed_at = $5, signals_json = $6, prediction_status = $7, \
  predicted_subject_id = $8, prediction_score = $9 \
WHERE id = $1 AND scope = $2 AND started_at = $3 AND expires_at = $4 AND expires_at > $10 \
  AND subject_id IS NULL AND disputed = 0";

/// Confirms a session in one statement (`$1` scope, `$2` id, `$3` subject, `$4` now, `$5` confirmed sessions
/// kept per subject): creates the subject's row when the session will carry it, labels an unlabelled
/// undisputed session or disputes one labelled with another subject (keeping the first verification time),
/// and deletes the subject's confirmed sessions beyond the newest `$5`. The surplus is ranked over the rows
/// before this statement plus the confirmed one, and never deletes the confirmed one itself (one statement
/// cannot change a row twice).
pub(crate) const CONFIRM_SESSION: &str = "\
WITH subject AS ( \
  INSERT INTO identity_subjects (id, kind, record) \
  SELECT $3::text, 'person', jsonb_build_object('id', $3::text, 'kind', 'person', 'updatedAt', $4::bigint) \
  WHERE EXISTS (SELECT 1 FROM learning_sessions WHERE scope = $1 AND id = $2 AND expires_at > $4 \
    AND subject_id IS NULL AND disputed = 0) \
  ON CONFLICT (id) DO NOTHING \
), confirmed AS ( \
  UPDATE learning_sessions SET \
    disputed = CASE WHEN subject_id IS NOT NULL AND subject_id <> $3 THEN 1 ELSE disputed END, \
    subject_id = CASE WHEN subject_id IS NULL AND disputed = 0 THEN $3 ELSE subject_id END, \
    verified_at = COALESCE(verified_at, $4) \
  WHERE scope = $1 AND id = $2 AND expires_at > $4 \
  RETURNING id, subject_id, disputed, verified_at \
), ranked AS ( \
  SELECT id, ROW_NUMBER() OVER (ORDER BY verified_at DESC, id DESC) AS position FROM ( \
    SELECT id, verified_at FROM learning_sessions WHERE scope = $1 AND subject_id = $3 AND id <> $2 \
    UNION ALL SELECT id, verified_at FROM confirmed WHERE subject_id = $3 AND disputed = 0 \
  ) AS labelled \
), surplus AS ( \
  DELETE FROM learning_sessions WHERE id IN (SELECT id FROM ranked WHERE position > $5 AND id <> $2) \
) \
SELECT disputed FROM confirmed";

/// Deletes one session (`$1` scope, `$2` id).
pub(crate) const DELETE_SESSION: &str =
    "DELETE FROM learning_sessions WHERE scope = $1 AND id = $2";

/// The two example buckets in one round trip (`$1` scope, `$2` first language or NULL, `$3` timezone or
/// NULL, `$4` cutoff, `$5` rows per bucket), each on its partial index; the first column tags the bucket.
pub(crate) const EXAMPLES: &str = concat!(
    "(SELECT 0::int4, ",
    columns!(),
    " FROM learning_sessions WHERE scope = $1 AND (signals_json #>> '{languages,0}') = $2 \
     AND verified_at >= $4 AND observed_at >= $4 AND subject_id IS NOT NULL AND disputed = 0 \
     ORDER BY verified_at DESC, id DESC LIMIT $5) \
     UNION ALL (SELECT 1::int4, ",
    columns!(),
    " FROM learning_sessions WHERE scope = $1 AND (signals_json ->> 'timezone') = $3 \
     AND verified_at >= $4 AND observed_at >= $4 AND subject_id IS NOT NULL AND disputed = 0 \
     ORDER BY verified_at DESC, id DESC LIMIT $5)"
);

/// Recent verified, undisputed sessions (`$1` scope, `$2` cutoff, `$3` limit).
pub(crate) const REPORTS: &str = concat!(
    "SELECT ",
    columns!(),
    " FROM learning_sessions WHERE scope = $1 AND verified_at >= $2 AND observed_at >= $2 \
     AND subject_id IS NOT NULL AND disputed = 0 ORDER BY verified_at DESC, id DESC LIMIT $3"
);

/// Deletes a scope's rows out of retention, disputed rows and ended anonymous rows (`$1` scope, `$2` cutoff,
/// `$3` now).
pub(crate) const CLEANUP_RETIRED: &str = "\
DELETE FROM learning_sessions WHERE scope = $1 \
  AND (observed_at < $2 OR disputed = 1 OR (subject_id IS NULL AND expires_at <= $3))";

/// Deletes each subject's confirmed sessions of a scope beyond the newest `$2`.
pub(crate) const CLEANUP_SURPLUS: &str = "\
DELETE FROM learning_sessions WHERE id IN ( \
  SELECT id FROM ( \
    SELECT id, ROW_NUMBER() OVER (PARTITION BY subject_id ORDER BY verified_at DESC, id DESC) AS position \
    FROM learning_sessions WHERE scope = $1 AND subject_id IS NOT NULL \
  ) AS ranked WHERE position > $2)";

/// Deletes every session labelled with or predicted for a subject (`$1`).
pub(crate) const DELETE_SUBJECT_SESSIONS: &str =
    "DELETE FROM learning_sessions WHERE subject_id = $1 OR predicted_subject_id = $1";
