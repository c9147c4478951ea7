//! Misspelled `JANITOR_*` variables. A settings file refuses an unknown key, but an environment holds many
//! variables nothing here reads, so a misspelled one (`JANITOR_ENVIROMENT`) would be ignored without a word:
//! every `JANITOR_*` name that no reader of the library knows, and the application has not declared as its
//! own, is reported, with the known name it probably means.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Mutex, PoisonError};

use janitor_core::config::EnvSource;

use super::JanitorSettings;

/// The prefix of the names checked: the library's, which an application may share.
const PREFIX: &str = "JANITOR_";

/// Most single-character edits (insertion, deletion, substitution; case ignored) between an unknown name and
/// the known name suggested for it (1–3: one typo or a plural, `_PROXY` for `_PROXIES`).
const SUGGESTION_MAX_EDITS: usize = 3;

/// The names already warned about: a process that reads its settings twice says it once.
static WARNED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// A `JANITOR_*` variable that is set and that nothing reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownEnvVariable {
    /// Its name (never its value).
    pub name: String,
    /// The known name closest to it, when one is close.
    pub suggestion: Option<String>,
}

impl fmt::Display for UnknownEnvVariable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is set but nothing reads it", self.name)?;
        match &self.suggestion {
            Some(known) => write!(f, ": did you mean {known}?"),
            None => Ok(()),
        }
    }
}

/// Every variable the library reads with the features it is built with: [`JanitorSettings::from_env`],
/// `ServeConfig::from_env` (feature `serve`), `JevSettings::from_env` (feature `jev`) and janitor-sql's
/// `DatabaseSettings::from_env` and `LookupReplica::from_env` (feature `postgres`).
pub fn known_env_variables() -> Vec<&'static str> {
    // Without the optional features nothing is added.
    #[allow(unused_mut)]
    let mut names = JanitorSettings::ENV_VARIABLES.to_vec();
    #[cfg(feature = "serve")]
    names.extend_from_slice(crate::serve::ServeConfig::ENV_VARIABLES);
    #[cfg(feature = "jev")]
    names.extend_from_slice(crate::jev::JevSettings::ENV_VARIABLES);
    #[cfg(feature = "postgres")]
    names.extend_from_slice(janitor_sql::ENV_VARIABLES);
    #[cfg(feature = "postgres")]
    names.extend_from_slice(janitor_sql::REPLICA_ENV_VARIABLES);
    names
}

/// The `JANITOR_*` variables set in `env` (to a value that is not empty) that neither the library
/// ([`known_env_variables`]) nor the application (`own`) reads, in order of name, each with the known or own
/// name it is closest to when one is close. Nothing is logged.
pub fn unknown_env_variables(env: &EnvSource, own: &[&str]) -> Vec<UnknownEnvVariable> {
    let known = known_env_variables();
    let candidates: Vec<&str> = known.iter().chain(own).copied().collect();
    env.names_with_prefix(PREFIX)
        .into_iter()
        .filter(|name| !candidates.contains(name))
        .map(|name| UnknownEnvVariable {
            name: name.to_owned(),
            suggestion: closest(name, &candidates).map(str::to_owned),
        })
        .collect()
}

/// [`unknown_env_variables`], each logged as a `tracing` warning the first time this process sees it.
/// [`JanitorSettings::from_env`] calls it; call it directly to check an environment read some other way.
pub fn warn_unknown_env(env: &EnvSource, own: &[&str]) -> Vec<UnknownEnvVariable> {
    let unknown = unknown_env_variables(env, own);
    let mut warned = WARNED.lock().unwrap_or_else(PoisonError::into_inner);
    for variable in &unknown {
        if warned.insert(variable.name.clone()) {
            tracing::warn!(
                "{variable} (an application's own JANITOR_* variables are declared with \
                 JanitorSettings::from_env_with_own)"
            );
        }
    }
    unknown
}

/// The candidate fewest edits from `name`, if within [`SUGGESTION_MAX_EDITS`]; the first of equals.
fn closest<'a>(name: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|candidate| (edits(name, candidate), *candidate))
        .filter(|(edits, _)| *edits <= SUGGESTION_MAX_EDITS)
        .min_by_key(|(edits, _)| *edits)
        .map(|(_, candidate)| candidate)
}

/// Levenshtein distance between `a` and `b`, ignoring ASCII case.
fn edits(a: &str, b: &str) -> usize {
    let a = a.to_ascii_uppercase().into_bytes();
    let b = b.to_ascii_uppercase().into_bytes();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(x != y);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::captured_logs;

    fn names(unknown: &[UnknownEnvVariable]) -> Vec<(&str, Option<&str>)> {
        unknown
            .iter()
            .map(|u| (u.name.as_str(), u.suggestion.as_deref()))
            .collect()
    }

    #[test]
    fn edit_distances() {
        assert_eq!(edits("JANITOR_ENVIROMENT", "JANITOR_ENVIRONMENT"), 1);
        assert_eq!(edits("JANITOR_TRUSTED_PROXY", "JANITOR_TRUSTED_PROXIES"), 3);
        assert_eq!(edits("janitor_secret", "JANITOR_SECRET"), 0);
        assert_eq!(edits("", "ABC"), 3);
        assert_eq!(edits("KITTEN", "SITTING"), 3);
    }

    #[test]
    fn unknown_names_are_found_with_the_name_they_probably_mean() {
        let env = EnvSource::from_pairs([
            ("JANITOR_SECRET", "a-secret-value"),
            ("JANITOR_ENVIROMENT", "development"),
            ("JANITOR_QUOTA_ACOUNT", "3"),
            ("JANITOR_TRUSTED_PROXY", "10.0.0.1"),
            ("JANITOR_secret", "x"),
            ("JANITOR_ADDR", "127.0.0.1:3000"),
            ("JANITOR_ADR", "127.0.0.1:3000"),
            ("JANITOR_DEMO_PASSWORD", "x"),
            ("JANITOR_EMPTY", ""),
            ("OTHER_VARIABLE", "x"),
        ]);
        let unknown = unknown_env_variables(&env, &["JANITOR_ADDR"]);
        assert_eq!(
            names(&unknown),
            [
                ("JANITOR_ADR", Some("JANITOR_ADDR")),
                ("JANITOR_DEMO_PASSWORD", None),
                ("JANITOR_ENVIROMENT", Some("JANITOR_ENVIRONMENT")),
                ("JANITOR_QUOTA_ACOUNT", Some("JANITOR_QUOTA_ACCOUNT")),
                ("JANITOR_TRUSTED_PROXY", Some("JANITOR_TRUSTED_PROXIES")),
                ("JANITOR_secret", Some("JANITOR_SECRET")),
            ]
        );
        assert_eq!(
            unknown[2].to_string(),
            "JANITOR_ENVIROMENT is set but nothing reads it: did you mean JANITOR_ENVIRONMENT?"
        );
        assert_eq!(
            unknown[1].to_string(),
            "JANITOR_DEMO_PASSWORD is set but nothing reads it"
        );
        let declared = unknown_env_variables(&env, &["JANITOR_ADDR", "JANITOR_DEMO_PASSWORD"]);
        assert!(!names(&declared).contains(&("JANITOR_DEMO_PASSWORD", None)));
    }

    #[test]
    fn every_reader_of_the_library_is_known() {
        let known = known_env_variables();
        assert!(known.contains(&"JANITOR_SECRET"));
        #[cfg(feature = "serve")]
        assert!(known.contains(&"JANITOR_SERVE_DRIVER"));
        #[cfg(feature = "jev")]
        assert!(known.contains(&"JANITOR_JEV_BUDGET_COOLDOWN_MS"));
        #[cfg(feature = "postgres")]
        assert!(known.contains(&"JANITOR_DATABASE_POOL_MODE"));
        let unique: BTreeSet<&str> = known.iter().copied().collect();
        assert_eq!(unique.len(), known.len(), "a name listed twice");
    }

    #[test]
    fn each_unknown_name_is_warned_once_without_its_value() {
        let env = EnvSource::from_pairs([
            ("JANITOR_NAMESPASE", "the-value-of-a-typo"),
            ("JANITOR_WARN_TEST_OWN", "x"),
        ]);
        let logs = captured_logs(|| {
            for _ in 0..2 {
                assert_eq!(warn_unknown_env(&env, &["JANITOR_WARN_TEST_OWN"]).len(), 1);
            }
        });
        let lines: Vec<&str> = logs.lines().filter(|l| l.contains("WARN")).collect();
        assert_eq!(lines.len(), 1, "{logs}");
        assert!(
            lines[0].contains(
                "JANITOR_NAMESPASE is set but nothing reads it: did you mean JANITOR_NAMESPACE?"
            ),
            "{logs}"
        );
        assert!(lines[0].contains("from_env_with_own"), "{logs}");
        assert!(!logs.contains("the-value-of-a-typo"), "{logs}");
        assert!(!logs.contains("JANITOR_WARN_TEST_OWN"), "{logs}");
    }

    #[test]
    fn reading_settings_from_the_environment_warns() {
        let env = EnvSource::from_pairs([
            ("JANITOR_SECRET", "7c1e9a24f0b35d86e2a4c7f190b3d5e8"),
            ("JANITOR_RETENTON_DAYS", "30"),
            ("JANITOR_SETTINGS_TEST_ADDR", "127.0.0.1:3000"),
        ]);
        let logs = captured_logs(|| {
            JanitorSettings::from_env_with_own(&env, &["JANITOR_SETTINGS_TEST_ADDR"]).unwrap();
        });
        assert!(
            logs.contains("JANITOR_RETENTON_DAYS is set but nothing reads it: did you mean JANITOR_RETENTION_DAYS?"),
            "{logs}"
        );
        assert!(!logs.contains("JANITOR_SETTINGS_TEST_ADDR"), "{logs}");
        let env = EnvSource::from_pairs([("JANITOR_EXPOSE_CLIENT_SCORE", "true")]);
        let logs = captured_logs(|| {
            JanitorSettings::from_env(&env).unwrap();
        });
        assert!(
            logs.contains("did you mean JANITOR_EXPOSE_CLIENT_SCORES?"),
            "{logs}"
        );
    }
}
