//! The shared-secret check: one fingerprint per label namespace in `janitor_key_checks`.

use janitor_core::{KeyCheck, StoreError};

use crate::database::Database;
use crate::error::unreadable;

/// Records the fingerprint (`$2`) of namespace `$1` at `$3` unless one is recorded; returns the recorded one.
pub(crate) const RECORD: &str = "WITH recorded AS ( \
       INSERT INTO janitor_key_checks (id, fingerprint, created_at) VALUES ($1, $2, $3) \
       ON CONFLICT (id) DO NOTHING RETURNING fingerprint, true AS new \
     ) \
     SELECT fingerprint, new FROM recorded \
     UNION ALL SELECT fingerprint, false FROM janitor_key_checks \
       WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM recorded)";

/// Compares `fingerprint` with the one recorded for `namespace`, recording it when it is the first.
pub(crate) async fn check(
    database: &Database,
    namespace: &str,
    fingerprint: &str,
) -> Result<KeyCheck, StoreError> {
    let mut connection = database.connection().await?;
    let rows = connection
        .query(RECORD, &[&namespace, &fingerprint, &janitor_core::now_ms()])
        .await?;
    let row = rows
        .first()
        .ok_or_else(|| unreadable("the key check", "no row"))?;
    let recorded: &str = row.try_get(0).map_err(|e| unreadable("the key check", e))?;
    let new: bool = row.try_get(1).map_err(|e| unreadable("the key check", e))?;
    Ok(match (new, recorded == fingerprint) {
        (true, _) => KeyCheck::Recorded,
        (false, true) => KeyCheck::Matches,
        (false, false) => KeyCheck::Differs,
    })
}
