//! Why a pooled connection could not be had, in words that name where the pool connects and the cause, so that
//! "the database is down" and "this is the wrong port" read differently in the application's log. Nothing here
//! quotes the connection string: the address is rebuilt from the parsed hosts and ports.

use std::error::Error as _;
use std::time::Duration;

use deadpool_postgres::{Pool, PoolError};
use janitor_core::StoreError;
use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;

/// The cause when the bytes that came back are not PostgreSQL's protocol.
const NOT_POSTGRES: &str = "the answer is not PostgreSQL's protocol (a wrong port?)";

/// What to do when a pooler refuses the `options` startup parameter, which session mode sends.
const POOLER_REFUSES_OPTIONS: &str = "PgBouncer refuses the `options` startup parameter (which session mode \
     sends for statement_timeout and search_path) in each of its pool modes — the whole parameter up to 1.19, \
     the settings in it that it does not track from 1.20: connect through it with \
     JANITOR_DATABASE_POOL_MODE=transaction (PoolMode::Transaction) and no `options` in the connection string";

/// Where a pool connects, as messages name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target(Option<String>);

impl Target {
    /// Every host of `config` with its port (`db1:5432, db2:5432`), or its socket directory.
    pub(crate) fn of(config: &tokio_postgres::Config) -> Target {
        let ports = config.get_ports();
        let port = |i: usize| ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        let hosts: Vec<String> = if config.get_hosts().is_empty() {
            config
                .get_hostaddrs()
                .iter()
                .enumerate()
                .map(|(i, address)| format!("{address}:{}", port(i)))
                .collect()
        } else {
            config
                .get_hosts()
                .iter()
                .enumerate()
                .map(|(i, host)| match host {
                    Host::Tcp(name) if name.contains(':') => format!("[{name}]:{}", port(i)),
                    Host::Tcp(name) => format!("{name}:{}", port(i)),
                    Host::Unix(dir) => {
                        format!("the socket in {} (port {})", dir.display(), port(i))
                    }
                })
                .collect()
        };
        Target(Some(hosts.join(", ")).filter(|hosts| !hosts.is_empty()))
    }

    /// The hosts and ports, when known.
    pub(crate) fn hosts(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// A pool handed in, whose address this crate does not know.
    pub(crate) fn unknown() -> Target {
        Target(None)
    }

    fn cannot_connect(&self, cause: &str) -> String {
        match &self.0 {
            Some(hosts) => format!("cannot connect to PostgreSQL at {hosts}: {cause}"),
            None => format!("cannot connect to PostgreSQL: {cause}"),
        }
    }
}

/// Every pool failure is "unavailable": the pool is exhausted (wait timeout), closed, or cannot connect.
pub(crate) fn from_pool(error: PoolError, pool: &Pool, target: &Target) -> StoreError {
    let ms = |limit: Option<Duration>| limit.map_or(0, |d| d.as_millis());
    let timeouts = pool.timeouts();
    StoreError::Unavailable(match error {
        PoolError::Backend(e) => target.cannot_connect(&cause(&e)),
        PoolError::Timeout(deadpool_postgres::TimeoutType::Create) => target.cannot_connect(&format!(
            "timed out after {} ms (connect_timeout_ms): no answer to the connection or its startup",
            ms(timeouts.create)
        )),
        PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => format!(
            "no free database connection within the wait timeout ({} ms): all {} of the pool's connections \
             are in use",
            ms(timeouts.wait),
            pool.status().max_size
        ),
        PoolError::Timeout(deadpool_postgres::TimeoutType::Recycle) => format!(
            "checking a pooled connection timed out after {} ms",
            ms(timeouts.recycle)
        ),
        other => other.to_string(),
    })
}

/// The cause of a failed connection, from the server's answer or the error chain beneath the driver's.
fn cause(error: &tokio_postgres::Error) -> String {
    if let Some(db) = error.as_db_error() {
        return refused_by_server(db);
    }
    #[cfg(feature = "tls")]
    if let Some(refused) = crate::tls::refused_certificate(error) {
        return refused;
    }
    let chain = sources(error);
    if let Some(cause) = first_io_error(error).and_then(io_cause) {
        return cause;
    }
    let kind = error.to_string();
    match kind.as_str() {
        "error parsing response from server" | "unexpected message from server" => {
            format!("{NOT_POSTGRES} ({kind})")
        }
        "error performing TLS handshake" => format!("TLS failed: {chain}"),
        "authentication error" => format!("authentication failed: {chain}"),
        "invalid configuration" if chain == "password missing" => {
            "authentication failed: the server asks for a password and the connection string has none".into()
        }
        _ if chain.is_empty() => kind,
        _ => format!("{kind}: {chain}"),
    }
}

/// The cause an I/O error beneath the driver's names, when it is one a reader can act on.
fn io_cause(io: &std::io::Error) -> Option<String> {
    use std::io::ErrorKind;
    let text = io.to_string();
    Some(match io.kind() {
        ErrorKind::ConnectionRefused => {
            "connection refused (is the server running, and listening on this port?)".into()
        }
        ErrorKind::TimedOut => format!("timed out ({text})"),
        ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => {
            "the connection was closed before a PostgreSQL answer (a wrong port, or a server or pooler that \
             dropped it)"
                .into()
        }
        // A partial message at the end of the stream: the codec's words for bytes that are not PostgreSQL's.
        _ if text == "bytes remaining on stream" => NOT_POSTGRES.into(),
        _ if text.starts_with("failed to lookup address") => {
            format!("the host name was not resolved ({text})")
        }
        _ => return None,
    })
}

/// Whether a pooler refused the `options` startup parameter: PgBouncer up to 1.19 says "unsupported startup
/// parameter: options", from 1.20 "unsupported startup parameter in options: …" or "unsupported options
/// startup parameter: …".
fn refuses_options(message: &str) -> bool {
    message.starts_with("unsupported") && message.contains("options")
}

/// What the server said when it refused the connection: its message and SQLSTATE, with the kind in front.
fn refused_by_server(db: &tokio_postgres::error::DbError) -> String {
    let said = format!("{} (SQLSTATE {})", db.message(), db.code().code());
    let code = db.code();
    if code.code().starts_with("28") {
        format!("authentication failed: {said}")
    } else if refuses_options(db.message()) {
        format!("{said}; {POOLER_REFUSES_OPTIONS}")
    } else if *code == SqlState::TOO_MANY_CONNECTIONS {
        format!("the server has no connection slot left: {said}")
    } else if *code == SqlState::CANNOT_CONNECT_NOW {
        format!("the server is starting up or shutting down: {said}")
    } else {
        said
    }
}

/// The sources beneath the driver's error, joined: its own text says only which step failed.
fn sources(error: &tokio_postgres::Error) -> String {
    let mut texts = Vec::new();
    let mut source = error.source();
    while let Some(current) = source {
        texts.push(current.to_string());
        source = current.source();
    }
    texts.join(": ")
}

fn first_io_error(error: &tokio_postgres::Error) -> Option<&std::io::Error> {
    let mut source = error.source();
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            return Some(io);
        }
        source = current.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    #[test]
    fn every_pgbouncer_wording_of_the_options_refusal_is_recognised() {
        for message in [
            "unsupported startup parameter: options",
            "unsupported startup parameter in options: statement_timeout",
            "unsupported options startup parameter: only '-c config=val' is allowed",
        ] {
            assert!(refuses_options(message), "{message}");
        }
        for message in [
            "unsupported startup parameter: extra_float_digits",
            "no such user",
        ] {
            assert!(!refuses_options(message), "{message}");
        }
    }

    fn target(url: &str) -> Target {
        Target::of(&tokio_postgres::Config::from_str(url).unwrap())
    }

    #[test]
    fn targets_name_every_host_with_its_port_and_never_the_password() {
        let one = target("postgres://u:S3cretMarker@db.example.com/app");
        assert_eq!(one.0.as_deref(), Some("db.example.com:5432"));
        let several = target("postgres://u:S3cretMarker@db1:5433,db2/app");
        assert_eq!(several.0.as_deref(), Some("db1:5433, db2:5432"));
        let v6 = target("postgres://u@[::1]:6000/app");
        assert_eq!(v6.0.as_deref(), Some("[::1]:6000"));
        let pairs = target("host=a,b port=1,2 password=S3cretMarker");
        assert_eq!(pairs.0.as_deref(), Some("a:1, b:2"));
        assert_eq!(
            Target::unknown().cannot_connect("refused"),
            "cannot connect to PostgreSQL: refused"
        );
    }

    #[test]
    fn io_causes_in_plain_words() {
        use std::io::{Error, ErrorKind};
        for (error, words) in [
            (Error::from(ErrorKind::ConnectionRefused), "connection refused"),
            (Error::new(ErrorKind::TimedOut, "connection timed out"), "timed out"),
            (Error::from(ErrorKind::UnexpectedEof), "closed before a PostgreSQL answer"),
            (Error::other("bytes remaining on stream"), "a wrong port?"),
            (
                // What the system's resolver says of a name it does not know.
                Error::other("failed to lookup address information: Name or service not known"),
                "the host name was not resolved (failed to lookup address information: Name or service not known)",
            ),
        ] {
            let cause = io_cause(&error).unwrap_or_default();
            assert!(cause.contains(words), "{error}: {cause}");
        }
        assert_eq!(io_cause(&Error::other("something else")), None);
    }
}
