//! Errors, and the one place that decides whether a database failure is "unavailable" or "data".

mod connect;

use janitor_core::config::ConfigError;
use janitor_core::StoreError;
use tokio_postgres::error::SqlState;

pub(crate) use connect::{from_pool, Target};

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
/// its timeout, lock or serialization conflicts that a retry can win. Invalid: a data exception (class 22),
/// a value the database cannot take. Everything else — constraints, a missing table (migrations not
/// applied) — is a data error. Messages carry PostgreSQL's message and
/// SQLSTATE, never its DETAIL line, which can quote row values.
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
    } else {
        StoreError::Data(text)
    }
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
        }
    }
}

/// A row that does not read as what the schema promises.
pub(crate) fn unreadable(what: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::Data(format!("cannot read {what}: {error}"))
}
