//! Errors, and the one place that decides whether a database failure is "unavailable" or "data".

mod connect;

use janitor_core::config::ConfigError;
use janitor_core::StoreError;
use tokio_postgres::error::SqlState;

pub(crate) use connect::{from_pool, Target};
pub(crate) use janitor_core::throttle::Throttle;

/// What a statement that found no table, schema or function of the stores asks of the operator.
pub(crate) const RUN_MIGRATIONS: &str =
    "the schema is not migrated: run the migrations (Database::migrate or janitor_sql::migrate) at start-up";

/// A configuration that cannot be used. Nothing has touched the network when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SetupError {
    /// A numeric option outside its range.
    #[error(transparent)]
    OutOfRange(#[from] ConfigError),
    /// The connection URL does not parse.
    #[error("invalid database URL: {0}")]
    InvalidUrl(String),
    /// The schema name breaks a rule of [`SchemaName`](crate::SchemaName).
    #[error("invalid schema name {name:?}: {reason}")]
    InvalidSchema {
        /// The name given (cut to 80 characters).
        name: String,
        /// The rule it breaks.
        reason: &'static str,
    },
    /// The pool could not be created.
    #[error("cannot create the connection pool: {0}")]
    Pool(String),
    /// An environment variable that does not read as its type.
    #[error(transparent)]
    Environment(#[from] janitor_core::config::EnvError),
    /// A TLS setting (`sslmode`, `sslrootcert`) that cannot be used.
    #[error("TLS: {0}")]
    Tls(String),
}

/// Whether a failed statement means the database cannot answer now, as opposed to refusing what was asked.
///
/// Unavailable: connection lost or refused, server shutting down or out of resources, statement cancelled by
/// its timeout, lock or serialization conflicts that a retry can win, a write refused by a read-only server
/// (25006: the connection is on a standby, as after a failover, and another connection can reach the primary). Invalid: a data exception (class 22),
/// a value the database cannot take. Everything else — constraints, a missing table (migrations not
/// applied, see [`not_migrated`], whose text says to run them) — is a data error. Messages carry PostgreSQL's
/// message and SQLSTATE, never its DETAIL line, which can quote row values.
pub(crate) fn from_postgres(error: &tokio_postgres::Error) -> StoreError {
    let Some(db) = error.as_db_error() else {
        // No server answer at all: the socket closed, or I/O, TLS or the protocol failed.
        #[cfg(feature = "tls")]
        if let Some(refused) = crate::tls::refused_certificate(error) {
            return StoreError::Unavailable(refused);
        }
        return StoreError::Unavailable(error.to_string());
    };
    let text = format!("{} (SQLSTATE {})", db.message(), db.code().code());
    if is_transient(db.code()) {
        StoreError::Unavailable(text)
    } else if db.code().code().starts_with("22") {
        // Data exceptions: the value sent, not the database, is what failed.
        StoreError::Invalid(text)
    } else if not_migrated(error) {
        StoreError::Data(format!("{text}: {RUN_MIGRATIONS}"))
    } else {
        StoreError::Data(text)
    }
}

/// Whether `error` says that an object the migrations create is missing: a table (42P01), the schema itself
/// (3F000, a qualified name in transaction mode), or one of the migrations' functions (42883 naming a
/// `janitor_` function; the same code for an operator is a fault of the statement, not of the schema).
pub(crate) fn not_migrated(error: &tokio_postgres::Error) -> bool {
    let Some(db) = error.as_db_error() else {
        return false;
    };
    let code = db.code();
    *code == SqlState::UNDEFINED_TABLE
        || *code == SqlState::INVALID_SCHEMA_NAME
        || (*code == SqlState::UNDEFINED_FUNCTION && names_our_function(db.message()))
}

/// Whether PostgreSQL's "function … does not exist" names a function of the migrations, qualified or not.
fn names_our_function(message: &str) -> bool {
    message
        .strip_prefix("function ")
        .and_then(|rest| rest.split('(').next())
        .and_then(|name| name.rsplit('.').next())
        .is_some_and(|name| name.starts_with("janitor_"))
}

fn is_transient(code: &SqlState) -> bool {
    let class = &code.code()[..2];
    matches!(
        class,
        "08" // connection exception
        | "53" // insufficient resources (too many connections, out of memory or disk)
        | "57" // operator intervention: statement timeout, terminated backend, shutdown
        | "58" // system error (I/O)
        | "40" // serialization failure, deadlock: a retry can succeed
    ) || *code == SqlState::LOCK_NOT_AVAILABLE
        || *code == SqlState::READ_ONLY_SQL_TRANSACTION
}

/// Whether the session is gone after `error`: the socket closed, or the server ended it (terminated backend,
/// shutdown, a connection-class error). A statement timeout or a constraint leaves the session usable.
pub(crate) fn ends_session(error: &tokio_postgres::Error) -> bool {
    if error.is_closed() {
        return true;
    }
    match error.as_db_error() {
        None => true,
        Some(db) => {
            let code = db.code();
            code.code().starts_with("08")
                || *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CRASH_SHUTDOWN
                || *code == SqlState::CANNOT_CONNECT_NOW
                // A write refused as read-only: the session is on a standby, or on a primary that was demoted
                // (failover), and every later write on it would fail the same way.
                || *code == SqlState::READ_ONLY_SQL_TRANSACTION
        }
    }
}

/// Whether a write failed on a foreign key (SQLSTATE 23503, the end of the text [`from_postgres`] gives it): a
/// row it names is not there. Besides a caller naming a row that never existed, that is what a write meets
/// when an erasure deletes the subject or browser it names while the write waits for that row's lock: a race,
/// not an outage. Run once more, the write sees what the erasure left — and answers as the memory store does
/// after an erasure (a subject row that the write creates when missing is created again; a write that needs
/// an existing subject finds none). A row still missing then, such as an erased browser, is a data error.
pub(crate) fn erased_meanwhile<T>(outcome: &Result<T, StoreError>) -> bool {
    matches!(outcome, Err(StoreError::Data(text)) if text.ends_with("(SQLSTATE 23503)"))
}

/// A row that does not read as what the schema promises.
pub(crate) fn unreadable(what: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::Data(format!("cannot read {what}: {error}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_migrations_functions_mean_not_migrated() {
        for ours in [
            "function janitor_save_observation(unknown) does not exist",
            "function tenant_a.janitor_save_observation(text, bigint) does not exist",
        ] {
            assert!(names_our_function(ours), "{ours}");
        }
        for theirs in [
            "function lower(integer) does not exist",
            "operator does not exist: text = integer",
            "function janitor.lower(integer) does not exist",
        ] {
            assert!(!names_our_function(theirs), "{theirs}");
        }
    }
}
