//! libpq's TLS parameters (`sslmode`, `sslrootcert`), read out of a connection string before the rest goes to
//! `tokio_postgres`, which knows only `disable`, `prefer` and `require`.

use std::path::PathBuf;

use super::url::{is_keyword, leading_word, Form};
use crate::error::SetupError;

/// How a connection uses TLS: libpq's `sslmode`, with libpq's meaning for each value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SslMode {
    /// Plain connections only.
    Disable,
    /// TLS when the server offers it, without checking its certificate; plain otherwise (libpq's default).
    #[default]
    Prefer,
    /// TLS always, without checking the certificate, unless `sslrootcert` is given: then as
    /// [`VerifyCa`](Self::VerifyCa), as libpq does.
    Require,
    /// TLS always, with a certificate signed by a trusted CA (any host name).
    VerifyCa,
    /// TLS always, with a certificate signed by a trusted CA and issued for the host connected to.
    VerifyFull,
}

impl SslMode {
    fn parse(value: &str) -> Result<SslMode, SetupError> {
        match value {
            "disable" => Ok(SslMode::Disable),
            "prefer" => Ok(SslMode::Prefer),
            "require" => Ok(SslMode::Require),
            "verify-ca" => Ok(SslMode::VerifyCa),
            "verify-full" => Ok(SslMode::VerifyFull),
            "allow" => Err(SetupError::Tls(
                "sslmode=allow is not supported (it tries a plain connection first): use prefer"
                    .into(),
            )),
            // A value made of a mode's characters is shown; anything else may hold part of a password.
            other if other.len() <= 20 && other.bytes().all(|b| b.is_ascii_lowercase() || b == b'-') => {
                Err(SetupError::Tls(format!(
                    "sslmode must be disable, prefer, require, verify-ca or verify-full, got {other:?}"
                )))
            }
            _ => Err(SetupError::Tls(
                "sslmode must be disable, prefer, require, verify-ca or verify-full".into(),
            )),
        }
    }

    /// The name libpq gives it.
    pub fn as_str(&self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// The CAs a verified connection trusts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum RootCerts {
    /// The system's store (`/etc/ssl/certs` and the like): the default, and `sslrootcert=system`.
    #[default]
    System,
    /// The certificates of a PEM file (`sslrootcert=/path/ca.pem`).
    File(PathBuf),
}

/// The TLS settings of a connection string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SslSettings {
    /// `sslmode`.
    pub mode: SslMode,
    /// `sslrootcert`, when given.
    pub root_cert: Option<RootCerts>,
}

impl SslSettings {
    /// Whether the server's certificate is checked against the roots.
    pub fn verifies_chain(&self) -> bool {
        match self.mode {
            SslMode::Disable | SslMode::Prefer => false,
            SslMode::Require => self.root_cert.is_some(),
            SslMode::VerifyCa | SslMode::VerifyFull => true,
        }
    }

    /// Whether the certificate must also name the host.
    pub fn verifies_host(&self) -> bool {
        self.mode == SslMode::VerifyFull
    }

    /// The CAs trusted when verifying.
    pub fn roots(&self) -> RootCerts {
        self.root_cert.clone().unwrap_or_default()
    }

    /// Whether TLS is required but the server is not authenticated (`require` without `sslrootcert`): it looks
    /// safe and is not, so it is said as a warning.
    pub fn encrypts_without_authenticating(&self) -> bool {
        self.mode == SslMode::Require && !self.verifies_chain()
    }

    /// What connections with these settings do, in words, for the line a pool logs when it is built.
    pub fn describe(&self) -> String {
        let roots = match self.roots() {
            RootCerts::System => "a CA of the system's store".to_owned(),
            RootCerts::File(path) => format!("a CA of {}", path.display()),
        };
        match self.mode {
            SslMode::Disable => "sslmode=disable: plain connections, never TLS (for loopback only)".into(),
            #[cfg(not(feature = "tls"))]
            SslMode::Prefer => "sslmode=prefer (the default): plain connections, since this build has no TLS \
                                (janitor-sql's `tls` feature)"
                .into(),
            #[cfg(feature = "tls")]
            SslMode::Prefer => "sslmode=prefer (the default): TLS when the server offers it, plain otherwise, \
                                and the server's certificate is not checked, so a man in the middle goes \
                                unnoticed; use verify-full in production"
                .into(),
            SslMode::Require if !self.verifies_chain() => "sslmode=require encrypts but does not \
                                                          authenticate the server: use verify-full with \
                                                          sslrootcert"
                .into(),
            SslMode::Require => format!(
                "sslmode=require with sslrootcert: TLS, with a server certificate signed by {roots} (as \
                 verify-ca), for any host name"
            ),
            SslMode::VerifyCa => format!(
                "sslmode=verify-ca: TLS, with a server certificate signed by {roots}, for any host name"
            ),
            SslMode::VerifyFull => format!(
                "sslmode=verify-full: TLS, with a server certificate signed by {roots} and issued for the host"
            ),
        }
    }
}

/// libpq parameters for client certificates and revocation lists: refused, since connections would silently go
/// without them.
const UNSUPPORTED: &[&str] = &["sslcert", "sslkey", "sslpassword", "sslcrl", "sslcrldir"];

/// Splits `sslmode` and `sslrootcert` out of a connection string of `form` and returns the rest, for
/// `tokio_postgres::Config`, with the settings.
pub(crate) fn split_ssl(connection: &str, form: Form) -> Result<(String, SslSettings), SetupError> {
    let mut settings = SslSettings::default();
    let mut take = |key: &str, value: &str| -> Result<bool, SetupError> {
        match key {
            "sslmode" => settings.mode = SslMode::parse(value)?,
            "sslrootcert" => {
                settings.root_cert = Some(match value {
                    "system" => RootCerts::System,
                    "" => return Err(SetupError::Tls("sslrootcert is empty".into())),
                    path => RootCerts::File(PathBuf::from(path)),
                })
            }
            key if UNSUPPORTED.contains(&key) => {
                return Err(SetupError::Tls(format!(
                    "{key} is not supported: client certificates and revocation lists need a pool with your own \
                     TLS connector (Database::from_pool)"
                )))
            }
            _ => return Ok(false),
        }
        Ok(true)
    };
    let rest = match form {
        Form::Url => split_url(connection, &mut take)?,
        Form::KeyValue => split_key_values(connection, &mut take)?,
    };
    Ok((rest, settings))
}

/// The URL form: the parameters are in the query string, percent-encoded.
fn split_url(
    url: &str,
    take: &mut impl FnMut(&str, &str) -> Result<bool, SetupError>,
) -> Result<String, SetupError> {
    let Some((base, query)) = url.split_once('?') else {
        return Ok(url.to_owned());
    };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !take(&percent_decode(key)?, &percent_decode(value)?)? {
            kept.push(pair);
        }
    }
    Ok(if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    })
}

/// The `key=value` form: whitespace-separated pairs, values optionally single-quoted with `\` escapes.
fn split_key_values(
    text: &str,
    take: &mut impl FnMut(&str, &str) -> Result<bool, SetupError>,
) -> Result<String, SetupError> {
    let mut kept = String::new();
    let mut rest = text.trim_start();
    let mut previous = None;
    while !rest.is_empty() {
        let key = leading_word(rest);
        let Some(after_key) = rest[key.len()..].trim_start().strip_prefix('=') else {
            // Never quoted: the part without `=` is often the rest of a password with a space in it.
            return Err(SetupError::InvalidUrl(match previous {
                Some(previous) => format!(
                    "expected key=value pairs: a part after the value of `{previous}` has no `=` \
                     (quote a value with spaces in single quotes)"
                ),
                None => "expected key=value pairs: the first part has no `=`".to_owned(),
            }));
        };
        let after_key = after_key.trim_start();
        let (value, raw_len) = key_value(after_key)?;
        let raw = &after_key[..raw_len];
        if !take(key, &value)? {
            kept.push_str(&format!("{key}={raw} "));
        }
        previous = Some(key).filter(|key| is_keyword(key));
        rest = after_key[raw_len..].trim_start();
    }
    Ok(kept.trim_end().to_owned())
}

/// A value at the start of `text` and how many bytes of `text` it took.
fn key_value(text: &str) -> Result<(String, usize), SetupError> {
    let Some(quoted) = text.strip_prefix('\'') else {
        let end = text.find(char::is_whitespace).unwrap_or(text.len());
        return Ok((text[..end].to_owned(), end));
    };
    let mut value = String::new();
    let mut chars = quoted.char_indices();
    while let Some((at, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, escaped)) => value.push(escaped),
                None => break,
            },
            '\'' => return Ok((value, at + 2)),
            c => value.push(c),
        }
    }
    Err(SetupError::InvalidUrl("unterminated quoted value".into()))
}

fn percent_decode(text: &str) -> Result<String, SetupError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| SetupError::InvalidUrl("invalid percent-encoding".into()))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| SetupError::InvalidUrl("a parameter is not UTF-8".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_any(text: &str) -> Result<(String, SslSettings), SetupError> {
        split_ssl(text, crate::config::url::form(text)?)
    }

    fn split(text: &str) -> (String, SslSettings) {
        split_any(text).unwrap()
    }

    #[test]
    fn each_mode_says_what_it_does() {
        let said = |query: &str| split(&format!("postgres://db/app?{query}")).1.describe();
        assert!(said("sslmode=disable").starts_with("sslmode=disable: plain connections"));
        assert!(said("x=1").starts_with("sslmode=prefer (the default): "));
        assert!(said("sslmode=require").contains("does not authenticate the server"));
        assert_eq!(
            said("sslmode=require&sslrootcert=/etc/ca.pem"),
            "sslmode=require with sslrootcert: TLS, with a server certificate signed by a CA of /etc/ca.pem \
             (as verify-ca), for any host name"
        );
        assert!(said("sslmode=verify-ca")
            .contains("signed by a CA of the system's store, for any host"));
        assert!(said("sslmode=verify-full").ends_with("and issued for the host"));
        let warned: Vec<bool> = ["disable", "prefer", "require", "verify-ca", "verify-full"]
            .iter()
            .map(|mode| {
                let (_, settings) = split(&format!("postgres://db/app?sslmode={mode}"));
                settings.encrypts_without_authenticating()
            })
            .collect();
        assert_eq!(warned, [false, false, true, false, false]);
    }

    #[test]
    fn every_mode_parses_and_leaves_the_rest() {
        for (name, mode) in [
            ("disable", SslMode::Disable),
            ("prefer", SslMode::Prefer),
            ("require", SslMode::Require),
            ("verify-ca", SslMode::VerifyCa),
            ("verify-full", SslMode::VerifyFull),
        ] {
            let (rest, settings) = split(&format!(
                "postgres://u:p@db.example.com/app?application_name=x&sslmode={name}"
            ));
            assert_eq!(rest, "postgres://u:p@db.example.com/app?application_name=x");
            assert_eq!(settings.mode, mode);
            assert_eq!(mode.as_str(), name);
        }
        let (rest, settings) = split("postgres://u@h/db");
        assert_eq!(
            (rest.as_str(), settings),
            ("postgres://u@h/db", SslSettings::default())
        );
    }

    #[test]
    fn root_certificates_and_what_they_verify() {
        let (rest, settings) =
            split("postgres://u@h/db?sslmode=verify-full&sslrootcert=%2Fetc%2Fca%20dir%2Froot.pem");
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!(
            settings.root_cert,
            Some(RootCerts::File("/etc/ca dir/root.pem".into()))
        );
        assert!(settings.verifies_chain() && settings.verifies_host());
        let (_, system) = split("postgres://u@h/db?sslmode=verify-ca&sslrootcert=system");
        assert_eq!(system.roots(), RootCerts::System);
        assert!(system.verifies_chain() && !system.verifies_host());
        // libpq: require with a root certificate verifies the chain.
        let (_, require) = split("postgres://u@h/db?sslmode=require");
        assert!(!require.verifies_chain());
        let (_, require) = split("postgres://u@h/db?sslmode=require&sslrootcert=/ca.pem");
        assert!(require.verifies_chain() && !require.verifies_host());
        let (_, prefer) = split("postgres://u@h/db?sslrootcert=/ca.pem");
        assert!(!prefer.verifies_chain());
    }

    #[test]
    fn key_value_strings() {
        let (rest, settings) = split(
            "host=db.example.com  sslmode = verify-full dbname=app sslrootcert='/etc/my ca\\'s.pem' user=u",
        );
        assert_eq!(rest, "host=db.example.com dbname=app user=u");
        assert_eq!(settings.mode, SslMode::VerifyFull);
        assert_eq!(
            settings.root_cert,
            Some(RootCerts::File("/etc/my ca's.pem".into()))
        );
        assert!(matches!(
            split_any("host=h sslmode='verify-full"),
            Err(SetupError::InvalidUrl(_))
        ));
    }

    #[test]
    fn refusals_say_why() {
        for (text, needle) in [
            ("postgres://u@h/db?sslmode=allow", "use prefer"),
            ("postgres://u@h/db?sslmode=verify", "must be disable"),
            ("postgres://u@h/db?sslcert=/c.pem", "Database::from_pool"),
            ("host=h sslkey=/k.pem", "sslkey is not supported"),
            ("postgres://u@h/db?sslrootcert=", "empty"),
            ("postgres://u@h/db?sslmode=%zz", "percent"),
        ] {
            let err = split_any(text).unwrap_err().to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
