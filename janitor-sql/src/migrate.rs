//! The schema migrations: the numbered files of the repository's `migrations/`, embedded, applied in order under
//! a lock. The crate reaches them through `janitor-sql/migrations`, a relative link to that folder, so that
//! `include_str!` and `cargo package` (which takes only files inside the crate, and packages a linked folder as
//! its files) both find them.

use janitor_core::StoreError;
use sha2::{Digest, Sha256};

use crate::database::Database;

/// One embedded migration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Migration {
    /// Its number: the order it runs in, counted from 1 without gaps.
    pub version: i32,
    /// Its file name.
    pub name: &'static str,
    /// Its SQL.
    pub sql: &'static str,
}

impl Migration {
    /// SHA-256 of the file, lower-case hex, as recorded when it was applied.
    pub fn checksum(&self) -> String {
        Sha256::digest(self.sql.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }
}

macro_rules! migrations {
    ($($version:literal => $file:literal),* $(,)?) => {
        &[$(Migration {
            version: $version,
            name: $file,
            sql: include_str!(concat!("../migrations/", $file)),
        }),*]
    };
}

/// Every migration this version knows, in order. Files are append-only: once released, a file never changes
/// (its checksum is verified), and a change to the schema is a new file.
pub const MIGRATIONS: &[Migration] = migrations![
    1 => "0001_visitors.sql",
    2 => "0002_protection.sql",
    3 => "0003_evidence.sql",
    4 => "0004_key_checks.sql",
    5 => "0005_save_observation.sql",
    6 => "0006_lookup_features.sql",
    7 => "0007_evidence_index_only.sql",
    8 => "0008_identity_directory.sql",
    9 => "0009_learning.sql",
    10 => "0010_observation_network.sql",
    11 => "0011_observation_extended.sql",
];

/// The table recording applied migrations, in the migrated schema.
pub const LEDGER_TABLE: &str = "janitor_migrations";

/// What [`migrate`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MigrationReport {
    /// Versions applied by this call, in order.
    pub applied: Vec<i32>,
    /// Versions found applied already (and verified).
    pub already_applied: Vec<i32>,
    /// Versions recorded by a newer release that this one does not know. They are left alone: migrations only
    /// add, so an older release keeps working during a rolling upgrade.
    pub newer: Vec<i32>,
}

/// Why [`migrate`] stopped. Nothing of a failed call is kept: it runs in one transaction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MigrateError {
    /// The database could not be reached or the ledger could not be read.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A file applied earlier has changed since.
    #[error(
        "migration {name} changed after it was applied (recorded checksum {recorded}, file {current}); \
         released migrations are append-only: restore the file and add a new one"
    )]
    ChecksumMismatch {
        /// The file name.
        name: &'static str,
        /// The checksum in the ledger.
        recorded: String,
        /// The checksum of the embedded file.
        current: String,
    },
    /// A migration's SQL failed.
    #[error("migration {name} failed: {error}")]
    Failed {
        /// The file name.
        name: &'static str,
        /// What the server said.
        error: StoreError,
    },
}

/// Applies every pending migration of [`MIGRATIONS`], in one transaction.
///
/// Safe to call from every process at start-up: a transaction-scoped advisory lock (per database and schema)
/// lets one process migrate while the others wait, then find nothing to do. Creates the configured schema if
/// it is missing. Refuses to run when an applied file's checksum no longer matches.
pub async fn migrate(database: &Database) -> Result<MigrationReport, MigrateError> {
    let mut connection = database.connection().await?;
    let schema = database.schema().map(|s| s.as_str().to_owned());
    // Without session settings (a transaction pooler, a pool handed in) the schema is set for the migration's
    // transaction only, which a transaction pooler keeps on one server session.
    let set_search_path = !database.session_settings();
    let outcome = async {
        let transaction = connection
            .client_mut()
            .transaction()
            .await
            .map_err(|e| Stop::Sql(None, e))?;
        let report = apply(&transaction, schema.as_deref(), set_search_path).await?;
        transaction.commit().await.map_err(|e| Stop::Sql(None, e))?;
        Ok(report)
    }
    .await;
    connection.count_statement();
    let report = match outcome {
        Ok(report) => report,
        Err(Stop::Sql(name, e)) => {
            let error = connection.fail(&e);
            return Err(match name {
                Some(name) => MigrateError::Failed { name, error },
                None => MigrateError::Store(error),
            });
        }
        Err(Stop::Refused(error)) => return Err(error),
    };
    if !report.newer.is_empty() {
        tracing::warn!(
            newer = ?report.newer,
            "the database holds migrations from a newer release; running with the older schema code"
        );
    }
    if !report.applied.is_empty() {
        tracing::info!(applied = ?report.applied, "applied migrations");
    }
    // A table that was filled and never analysed would plan its candidate lookups blind (see `statistics`).
    if let Err(e) = crate::statistics::gather_if_missing(&mut connection).await {
        tracing::warn!(error = %e, "gathering the observations' missing statistics failed");
    }
    Ok(report)
}

/// Why [`apply`] stopped: a statement failed (in the named migration, if any), or the ledger was refused.
enum Stop {
    Sql(Option<&'static str>, tokio_postgres::Error),
    Refused(MigrateError),
}

async fn apply(
    transaction: &deadpool_postgres::Transaction<'_>,
    schema: Option<&str>,
    set_search_path: bool,
) -> Result<MigrationReport, Stop> {
    let sql = |e| Stop::Sql(None, e);
    // Building an index over a large table can outlast the per-statement timeout; waiting for another
    // migrator (or for a table lock held by running queries) is bounded instead.
    transaction
        .batch_execute("SET LOCAL statement_timeout = 0; SET LOCAL lock_timeout = '60s'")
        .await
        .map_err(sql)?;
    transaction
        .execute(
            "SELECT pg_advisory_xact_lock(hashtextextended( \
               'janitor.migrations:' || current_database() || ':' || coalesce($1, current_schema(), ''), 0))",
            &[&schema],
        )
        .await
        .map_err(sql)?;
    if let Some(schema) = schema {
        // The name is a validated plain identifier (see SchemaName): nothing to quote or escape.
        transaction
            .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .await
            .map_err(sql)?;
        if set_search_path {
            transaction
                .batch_execute(&format!("SET LOCAL search_path = {schema}"))
                .await
                .map_err(sql)?;
        }
    }
    transaction
        .batch_execute(&format!(
            "CREATE TABLE IF NOT EXISTS {LEDGER_TABLE} (
               version INTEGER PRIMARY KEY,
               name TEXT NOT NULL,
               checksum TEXT NOT NULL,
               applied_at BIGINT NOT NULL
             )"
        ))
        .await
        .map_err(sql)?;
    let recorded = transaction
        .query(
            &format!("SELECT version, checksum FROM {LEDGER_TABLE} ORDER BY version"),
            &[],
        )
        .await
        .map_err(sql)?;
    let mut applied = std::collections::HashMap::new();
    for row in &recorded {
        let version: i32 = row.try_get(0).map_err(sql)?;
        let checksum: String = row.try_get(1).map_err(sql)?;
        applied.insert(version, checksum);
    }

    let mut report = MigrationReport::default();
    for migration in MIGRATIONS {
        match applied.remove(&migration.version) {
            Some(recorded) if recorded == migration.checksum() => {
                report.already_applied.push(migration.version)
            }
            Some(recorded) => {
                return Err(Stop::Refused(MigrateError::ChecksumMismatch {
                    name: migration.name,
                    recorded,
                    current: migration.checksum(),
                }))
            }
            None => {
                let failed = |e| Stop::Sql(Some(migration.name), e);
                transaction
                    .batch_execute(migration.sql)
                    .await
                    .map_err(failed)?;
                transaction
                    .execute(
                        &format!(
                            "INSERT INTO {LEDGER_TABLE} (version, name, checksum, applied_at) \
                             VALUES ($1, $2, $3, (extract(epoch FROM clock_timestamp()) * 1000)::bigint)"
                        ),
                        &[&migration.version, &migration.name, &migration.checksum()],
                    )
                    .await
                    .map_err(failed)?;
                report.applied.push(migration.version);
            }
        }
    }
    report.newer = applied.into_keys().collect();
    report.newer.sort_unstable();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_is_embedded_in_order() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations");
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .expect("migrations directory")
            .map(|e| e.expect("entry").file_name().into_string().expect("utf-8"))
            .filter(|name| name.ends_with(".sql"))
            .collect();
        files.sort();
        let embedded: Vec<&str> = MIGRATIONS.iter().map(|m| m.name).collect();
        assert_eq!(
            files, embedded,
            "every file in migrations/ is listed, in order"
        );
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(
                m.version as usize,
                i + 1,
                "versions count from 1 without gaps"
            );
            assert!(
                m.name.starts_with(&format!("{:04}_", m.version)),
                "{} starts with its version",
                m.name
            );
        }
    }

    #[test]
    fn checksum_is_sha256_hex() {
        let m = Migration {
            version: 1,
            name: "x",
            sql: "abc",
        };
        assert_eq!(
            m.checksum(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
