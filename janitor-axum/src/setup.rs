//! The one error an application handles while it starts: configuration, database, key check, listener.
//!
//! Every start-up step of the library has its own precise error; each converts into [`SetupError`], so that
//! `main` can use `?` throughout and still tell, by [`SetupError::kind`], what went wrong (in the manner of
//! hyper's one error type). Run-time errors stay with their services, and [`Refusal`](crate::Refusal) stays
//! the one HTTP mapping.

use std::error::Error as StdError;
use std::fmt;

/// What kind of start-up step failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetupErrorKind {
    /// A setting or the configuration built from them (a variable out of range, a short secret, a bad origin).
    Config,
    /// The database: its configuration, the pool, or the migrations.
    Database,
    /// Another instance on the same database labels with another secret.
    KeyCheck,
    /// The operating system: binding the listener, serving.
    Io,
    /// Anything else the application converts (the metrics exporter, say).
    Other,
}

impl fmt::Display for SetupErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SetupErrorKind::Config => "configuration",
            SetupErrorKind::Database => "database",
            SetupErrorKind::KeyCheck => "key check",
            SetupErrorKind::Io => "input/output",
            SetupErrorKind::Other => "start-up",
        })
    }
}

/// Why an application could not start: a [kind](SetupErrorKind) and the step's own error as its source.
#[derive(Debug)]
pub struct SetupError {
    kind: SetupErrorKind,
    source: Box<dyn StdError + Send + Sync>,
}

impl SetupError {
    /// An error of `kind` caused by `source`.
    pub fn new(kind: SetupErrorKind, source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        SetupError {
            kind,
            source: source.into(),
        }
    }

    /// An error of another library (kind [`Other`](SetupErrorKind::Other)).
    pub fn other(source: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        SetupError::new(SetupErrorKind::Other, source)
    }

    /// What kind of step failed.
    pub fn kind(&self) -> SetupErrorKind {
        self.kind
    }
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error: {}", self.kind, self.source)
    }
}

impl StdError for SetupError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&*self.source)
    }
}

macro_rules! setup_kind {
    ($kind:ident: $($error:ty),* $(,)?) => {
        $(
            impl From<$error> for SetupError {
                fn from(error: $error) -> Self {
                    SetupError::new(SetupErrorKind::$kind, error)
                }
            }
        )*
    };
}

setup_kind!(Config:
    crate::config::JanitorConfigError,
    crate::config::OriginError,
    crate::config::ProxyRangeError,
    janitor_core::ConfigError,
    janitor_core::LabelError,
);
#[cfg(feature = "serve")]
setup_kind!(Config: crate::serve::ServeConfigError);
#[cfg(feature = "jev")]
setup_kind!(Config: crate::jev::JevConfigError);
#[cfg(feature = "postgres")]
setup_kind!(Database: janitor_sql::SetupError, janitor_sql::MigrateError);
setup_kind!(KeyCheck: crate::handle::KeyCheckError);
setup_kind!(Io: std::io::Error);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_keeps_its_kind_and_its_error_as_the_source() {
        let io = SetupError::from(std::io::Error::new(std::io::ErrorKind::AddrInUse, "taken"));
        assert_eq!(io.kind(), SetupErrorKind::Io);
        assert_eq!(io.to_string(), "input/output error: taken");
        assert_eq!(io.source().map(|s| s.to_string()).as_deref(), Some("taken"));
        let differs = SetupError::from(crate::handle::KeyCheckError::Differs {
            namespace: "shop".into(),
        });
        assert_eq!(differs.kind(), SetupErrorKind::KeyCheck);
        let config = SetupError::from(janitor_core::ConfigError {
            field: "cleanup_batch",
            range: "1-1000".into(),
            value: "0".into(),
        });
        assert_eq!(config.kind(), SetupErrorKind::Config);
        assert_eq!(SetupError::other("exporter").kind(), SetupErrorKind::Other);
    }
}
