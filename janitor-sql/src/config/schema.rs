//! The schema name the library may create and work in.

use crate::error::SetupError;

/// A PostgreSQL schema name the library may create and use: 1–63 characters of `a-z`, `0-9` and `_`,
/// not starting with a digit or `pg_`.
///
/// Only plain lower-case identifiers are allowed so the name never needs quoting and cannot carry SQL.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SchemaName(String);

impl SchemaName {
    /// Checks `name`.
    pub fn new(name: &str) -> Result<Self, SetupError> {
        let invalid = |reason: &'static str| SetupError::InvalidSchema {
            name: name.chars().take(80).collect(),
            reason,
        };
        if name.is_empty() || name.len() > 63 {
            return Err(invalid("must be 1 to 63 characters long"));
        }
        if !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(invalid("may hold only a-z, 0-9 and _"));
        }
        if name.as_bytes()[0].is_ascii_digit() {
            return Err(invalid("must not start with a digit"));
        }
        if name.starts_with("pg_") {
            return Err(invalid("must not start with pg_ (reserved by PostgreSQL)"));
        }
        Ok(SchemaName(name.to_owned()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SchemaName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
