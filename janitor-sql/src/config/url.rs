//! The connection string, read in the order that keeps its password out of every refusal: its form first, then
//! libpq's TLS parameters, then the driver's parser, whose reasons are passed on only when they name an option.

use std::error::Error as _;
use std::str::FromStr;

use super::ssl::{split_ssl, SslSettings};
use crate::error::SetupError;

/// What a connection string may look like, as refusals say it.
pub(crate) const ACCEPTED_FORMS: &str =
    "expected a postgres:// or postgresql:// URL, or libpq's key=value pairs";

/// How a connection string is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// `postgres://` or `postgresql://`.
    Url,
    /// libpq's `key=value` pairs.
    KeyValue,
}

/// The driver's configuration and the TLS settings of `connection`.
pub(crate) fn parse(connection: &str) -> Result<(tokio_postgres::Config, SslSettings), SetupError> {
    let (rest, ssl) = split_ssl(connection, form(connection)?)?;
    let postgres = tokio_postgres::Config::from_str(&rest)
        .map_err(|e| SetupError::InvalidUrl(driver_reason(&e)))?;
    Ok((postgres, ssl))
}

/// The form of `connection`. Anything else is refused here, since the parsers' own messages would quote it.
pub(crate) fn form(connection: &str) -> Result<Form, SetupError> {
    if connection.starts_with("postgres://") || connection.starts_with("postgresql://") {
        return Ok(Form::Url);
    }
    // A `://` after the first `=` or space is inside a key=value string's value (`application_name=https://…`),
    // not a scheme: libpq tells a URL only by its prefix.
    let scheme = connection
        .split_once("://")
        .filter(|(before, _)| !before.contains(|c: char| c == '=' || c.is_whitespace()));
    if let Some((scheme, _)) = scheme {
        // Only a name made of a scheme's characters is shown: anything else may be part of a password.
        let named = scheme.len() <= 32
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        return Err(SetupError::InvalidUrl(if named {
            format!("unknown scheme {scheme:?}: {ACCEPTED_FORMS}")
        } else {
            format!("unknown scheme: {ACCEPTED_FORMS}")
        }));
    }
    let text = connection.trim_start();
    if text.is_empty() {
        return Err(SetupError::InvalidUrl(format!(
            "the connection string is empty: {ACCEPTED_FORMS}"
        )));
    }
    // libpq's pairs start with a keyword and `=`; anything else (`postgres//…`, `user:pw@host`) is a URL
    // written wrong.
    let keyword = leading_word(text);
    if !is_keyword(keyword) || !text[keyword.len()..].trim_start().starts_with('=') {
        return Err(SetupError::InvalidUrl(format!(
            "unknown scheme: {ACCEPTED_FORMS}"
        )));
    }
    Ok(Form::KeyValue)
}

/// The start of `text` up to whitespace or `=`.
pub(crate) fn leading_word(text: &str) -> &str {
    let end = text
        .find(|c: char| c == '=' || c.is_whitespace())
        .unwrap_or(text.len());
    &text[..end]
}

/// Whether `word` can be a libpq keyword (lower-case letters and `_`), and so may be shown in a refusal.
pub(crate) fn is_keyword(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 40
        && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

/// The driver's reason, when it names only an option; a fixed sentence otherwise, since some of its reasons
/// quote the text (an unknown key, an unexpected character).
fn driver_reason(error: &tokio_postgres::Error) -> String {
    let cause = error.source().map(ToString::to_string).unwrap_or_default();
    let option = |prefix: &str| {
        cause
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix('`'))
            .filter(|name| is_keyword(name))
    };
    if let Some(name) = option("invalid value for option `") {
        let taken = if name == "target_session_attrs" {
            // libpq 14 also takes primary, standby and prefer-*; the driver does not, so say what to write.
            ": any, read-write (the primary of a failover list) or read-only (a standby)"
        } else {
            ""
        };
        format!("invalid value for option `{name}`{taken}")
    } else if let Some(name) = option("unknown option `") {
        format!("unknown option `{name}`")
    } else {
        format!("the connection string does not parse: {ACCEPTED_FORMS}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_check_the_driver_lacks_is_refused_with_the_ones_it_has() {
        for attrs in ["prefer-standby", "primary", "standby"] {
            let url = format!("postgres://u:pw@a,b/db?target_session_attrs={attrs}");
            let error = parse(&url).unwrap_err().to_string();
            assert!(
                error.contains("`target_session_attrs`: any, read-write") && !error.contains("pw"),
                "{error}"
            );
        }
        for attrs in ["any", "read-write", "read-only"] {
            let url = format!("postgres://u:pw@a,b/db?target_session_attrs={attrs}");
            assert!(parse(&url).is_ok(), "{attrs}");
        }
    }

    #[test]
    fn forms() {
        for url in [
            "postgres://h/db",
            "postgresql://u@h:5432/db?sslmode=require",
        ] {
            assert_eq!(form(url).unwrap(), Form::Url, "{url}");
        }
        for pairs in [
            "host=h",
            "  host = h dbname=app",
            "dbname='my app'",
            // A value may hold `://`: only the prefix makes a URL.
            "host=db password=ab://cd",
            "application_name=https://app.example host=h",
        ] {
            assert_eq!(form(pairs).unwrap(), Form::KeyValue, "{pairs}");
        }
        for (text, reason) in [
            ("mysql://u:pw@h/db", "unknown scheme \"mysql\""),
            ("a b://u:pw@h/db", "unknown scheme: expected"),
            ("postgres:/h/db", "unknown scheme: expected"),
            ("Host=h", "unknown scheme: expected"),
            ("host h", "unknown scheme: expected"),
            ("   ", "is empty"),
        ] {
            let error = form(text).unwrap_err().to_string();
            assert!(error.contains(reason), "{text}: {error}");
        }
    }
}
