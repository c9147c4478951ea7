//! The SQL of the budget store, public so it can be reviewed, `EXPLAIN`ed and replayed by load tools. Each runs
//! as a prepared statement, cached per connection. The statements are the same as Janitor instances in other
//! languages run on the same table, so every instance of a namespace contends on one row by version.

/// The row `$1`: version, expiry and record. Expired rows are read too: expiry only marks a row for cleanup,
/// and the record's own times say which window, circuit and leases still count.
pub(crate) const READ: &str =
    "SELECT version, expires_at, record FROM evaluation_controls WHERE id = $1";

/// Creates the row `$1` at version `$2`, expiring at `$3`, with record `$4`, unless a row `$1` exists (another
/// instance created it first). One row changed means the write won.
pub(crate) const INSERT: &str =
    "INSERT INTO evaluation_controls (id, version, expires_at, record) \
     VALUES ($1, $2, $3, $4) ON CONFLICT (id) DO NOTHING";

/// Replaces the row `$1` with version `$2`, expiry `$3` and record `$4` if its version is still `$5`, expired
/// or not. One row changed means the write won.
pub(crate) const UPDATE: &str =
    "UPDATE evaluation_controls SET version = $2, expires_at = $3, record = $4 \
     WHERE id = $1 AND version = $5";

/// Deletes at most `$2` rows expired at `$1`, soonest-expired first. The outer condition is checked again on
/// the row as it is when deleted, so a row renewed meanwhile by another instance stays.
pub(crate) const CLEANUP: &str = "DELETE FROM evaluation_controls WHERE id IN ( \
       SELECT id FROM evaluation_controls WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 \
     ) AND expires_at <= $1";
