//! Reading options from environment variables, with errors that name the variable and what it must hold. The
//! crates' `from_env` constructors read through this, then validate as their builders do.

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::str::FromStr;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A value that does not read as its variable's type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable} must be {expected}, got {value:?}")]
pub struct EnvError {
    /// The variable.
    pub variable: String,
    /// What it must hold.
    pub expected: &'static str,
    /// What it holds (variables read this way never hold secrets).
    pub value: String,
}

/// Where variables come from: the process's environment, or a map (for tests, or a file of `NAME=value`).
/// It remembers which names were asked for ([`names_read`](Self::names_read)), so a list of the variables a
/// reader knows can be checked against what it really reads. `Debug` shows the names, never the values.
pub struct EnvSource {
    vars: HashMap<String, String>,
    read: Mutex<BTreeSet<String>>,
}

impl Clone for EnvSource {
    fn clone(&self) -> Self {
        EnvSource {
            vars: self.vars.clone(),
            read: Mutex::new(self.lock_read().clone()),
        }
    }
}

impl fmt::Debug for EnvSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Values hold secrets (JANITOR_SECRET, a DATABASE_URL's password).
        let names: BTreeSet<&str> = self.vars.keys().map(String::as_str).collect();
        f.debug_struct("EnvSource")
            .field("names", &names)
            .finish_non_exhaustive()
    }
}

impl EnvSource {
    /// The process's environment, as it is now.
    pub fn process() -> EnvSource {
        EnvSource::new(std::env::vars().collect())
    }

    /// The given variables only.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> EnvSource {
        EnvSource::new(
            pairs
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        )
    }

    fn new(vars: HashMap<String, String>) -> EnvSource {
        EnvSource {
            vars,
            read: Mutex::new(BTreeSet::new()),
        }
    }

    /// A variable's text; an empty value counts as unset.
    pub fn text(&self, name: &str) -> Option<String> {
        self.lock_read().insert(name.to_owned());
        self.vars.get(name).filter(|v| !v.is_empty()).cloned()
    }

    /// The names of the variables set (to a value that is not empty) that start with `prefix`, in order. Only
    /// names: a value is never shown.
    pub fn names_with_prefix(&self, prefix: &str) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .vars
            .iter()
            .filter(|(k, v)| k.starts_with(prefix) && !v.is_empty())
            .map(|(k, _)| k.as_str())
            .collect();
        names.sort_unstable();
        names
    }

    /// Every name asked for through this source so far, set or not, in order.
    pub fn names_read(&self) -> Vec<String> {
        self.lock_read().iter().cloned().collect()
    }

    fn lock_read(&self) -> MutexGuard<'_, BTreeSet<String>> {
        // The set is only ever inserted into, so a panic elsewhere cannot leave it half-changed.
        self.read.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A number (`u32`, `u64`, `usize`, `f64`, ...), when set.
    pub fn number<T: FromStr>(&self, name: &str) -> Result<Option<T>, EnvError> {
        self.parsed(name, "a number", |v| v.parse().ok())
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`, `on`/`off`), when set.
    pub fn flag(&self, name: &str) -> Result<Option<bool>, EnvError> {
        self.parsed(name, "true or false", |v| {
            match v.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Some(true),
                "false" | "0" | "no" | "off" => Some(false),
                _ => None,
            }
        })
    }

    /// One of `choices`, when set.
    pub fn choice(&self, name: &str, choices: &'static str) -> Result<Option<String>, EnvError> {
        self.parsed(name, choices, |v| {
            let v = v.to_ascii_lowercase();
            choices.split(" or ").any(|c| c == v).then_some(v)
        })
    }

    /// A comma-separated list, blanks dropped; empty when unset.
    pub fn list(&self, name: &str) -> Vec<String> {
        self.text(name)
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether any variable starting with `prefix` is set (to decide whether an optional part is on).
    pub fn any_with_prefix(&self, prefix: &str) -> bool {
        self.vars
            .iter()
            .any(|(k, v)| k.starts_with(prefix) && !v.is_empty())
    }

    fn parsed<T>(
        &self,
        name: &str,
        expected: &'static str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<Option<T>, EnvError> {
        match self.text(name) {
            None => Ok(None),
            Some(value) => parse(value.trim()).map(Some).ok_or(EnvError {
                variable: name.to_owned(),
                expected,
                value,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_or_say_what_they_must_be() {
        let env = EnvSource::from_pairs([
            ("N", "42"),
            ("F", "yes"),
            ("L", " a, ,b "),
            ("BAD", "4x"),
            ("E", ""),
            ("C", "Transaction"),
        ]);
        assert_eq!(env.number::<u32>("N"), Ok(Some(42)));
        assert_eq!(env.number::<u32>("E"), Ok(None), "empty is unset");
        assert_eq!(env.number::<u32>("MISSING"), Ok(None));
        assert_eq!(env.flag("F"), Ok(Some(true)));
        assert_eq!(env.list("L"), ["a", "b"]);
        assert!(env.list("MISSING").is_empty());
        assert_eq!(
            env.choice("C", "session or transaction"),
            Ok(Some("transaction".to_owned()))
        );
        let err = env.number::<u32>("BAD").unwrap_err();
        assert_eq!(err.to_string(), "BAD must be a number, got \"4x\"");
        assert!(env.flag("N").is_err());
        assert!(env.any_with_prefix("L") && !env.any_with_prefix("E"));
    }

    #[test]
    fn names_are_listed_and_reads_remembered_but_values_never_shown() {
        let env = EnvSource::from_pairs([
            ("JANITOR_SECRET", "a-secret-value"),
            ("JANITOR_ADDR", "127.0.0.1:3000"),
            ("JANITOR_EMPTY", ""),
            ("OTHER", "x"),
        ]);
        assert_eq!(
            env.names_with_prefix("JANITOR_"),
            ["JANITOR_ADDR", "JANITOR_SECRET"]
        );
        assert!(env.names_read().is_empty());
        let _ = env.text("JANITOR_SECRET");
        let _ = env.number::<u32>("JANITOR_MISSING");
        let _ = env.list("JANITOR_ADDR");
        assert_eq!(
            env.names_read(),
            ["JANITOR_ADDR", "JANITOR_MISSING", "JANITOR_SECRET"]
        );
        assert_eq!(env.clone().names_read().len(), 3);
        let debug = format!("{env:?}");
        assert!(debug.contains("JANITOR_SECRET"), "{debug}");
        assert!(!debug.contains("a-secret-value"), "{debug}");
    }
}
