//! A lookup replica from the environment: its own URL, the primary's other database settings.

use janitor_core::config::EnvSource;

use super::{LookupReplica, REPLICA_CHECK_INTERVAL_MS, REPLICA_MAX_LAG_MS, REPLICA_TIMEOUT_MS};
use crate::config::DatabaseSettings;
use crate::database::Database;
use crate::error::SetupError;

/// Every environment variable [`LookupReplica::from_env`] reads besides [`ENV_VARIABLES`](crate::ENV_VARIABLES).
pub const REPLICA_ENV_VARIABLES: &[&str] = &[
    "JANITOR_DATABASE_REPLICA_URL",
    "JANITOR_DATABASE_REPLICA_MAX_LAG_MS",
    "JANITOR_DATABASE_REPLICA_CHECK_INTERVAL_MS",
    "JANITOR_DATABASE_REPLICA_TIMEOUT_MS",
];

impl LookupReplica {
    /// The replica `JANITOR_DATABASE_REPLICA_URL` names (libpq's forms; a list of standbys with
    /// `target_session_attrs=read-only`, say), pooled with the primary's other settings (`JANITOR_SCHEMA`,
    /// `JANITOR_DATABASE_*`), accepting `JANITOR_DATABASE_REPLICA_MAX_LAG_MS` of lag read every
    /// `JANITOR_DATABASE_REPLICA_CHECK_INTERVAL_MS`, waiting on it at most
    /// `JANITOR_DATABASE_REPLICA_TIMEOUT_MS`. `None` without the URL; the other three set without it are
    /// refused, since they would do nothing.
    pub fn from_env(env: &EnvSource) -> Result<Option<LookupReplica>, SetupError> {
        let max_lag_ms = env.number("JANITOR_DATABASE_REPLICA_MAX_LAG_MS")?;
        let check_interval_ms = env.number("JANITOR_DATABASE_REPLICA_CHECK_INTERVAL_MS")?;
        let timeout_ms = env.number("JANITOR_DATABASE_REPLICA_TIMEOUT_MS")?;
        let Some(url) = env.text("JANITOR_DATABASE_REPLICA_URL") else {
            if max_lag_ms.is_some() || check_interval_ms.is_some() || timeout_ms.is_some() {
                return Err(SetupError::InvalidUrl(
                    "JANITOR_DATABASE_REPLICA_MAX_LAG_MS, _CHECK_INTERVAL_MS or _TIMEOUT_MS is set without \
                     JANITOR_DATABASE_REPLICA_URL"
                        .into(),
                ));
            }
            return Ok(None);
        };
        let settings = DatabaseSettings {
            url: Some(url),
            ..DatabaseSettings::from_env(env)?
        };
        let database = Database::new(settings.build()?)?;
        LookupReplica::new(
            database,
            REPLICA_MAX_LAG_MS.or_default(max_lag_ms)?,
            REPLICA_CHECK_INTERVAL_MS.or_default(check_interval_ms)?,
        )?
        .with_timeout_ms(REPLICA_TIMEOUT_MS.or_default(timeout_ms)?)
        .map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRIMARY: &str = "postgres://app@primary/app";
    const REPLICA: &str = "postgres://app@standby-a,standby-b/app?target_session_attrs=read-only";

    #[tokio::test]
    async fn the_environment_names_the_replica_and_its_bounds() {
        let env = EnvSource::from_pairs([("DATABASE_URL", PRIMARY)]);
        assert!(LookupReplica::from_env(&env).unwrap().is_none());

        let env = EnvSource::from_pairs([
            ("DATABASE_URL", PRIMARY),
            ("JANITOR_SCHEMA", "tenant_a"),
            ("JANITOR_DATABASE_REPLICA_URL", REPLICA),
            ("JANITOR_DATABASE_REPLICA_MAX_LAG_MS", "250"),
            ("JANITOR_DATABASE_REPLICA_TIMEOUT_MS", "300"),
        ]);
        let replica = LookupReplica::from_env(&env).unwrap().expect("a replica");
        assert_eq!(replica.inner.max_lag.as_millis(), 250);
        assert_eq!(replica.timeout().as_millis(), 300);
        assert_eq!(
            replica.inner.check_every.as_millis(),
            u128::from(REPLICA_CHECK_INTERVAL_MS.default)
        );
        assert_eq!(
            replica.database().schema().map(|s| s.as_str()),
            Some("tenant_a")
        );
        let mut names = env.names_read();
        names.sort();
        let mut expected: Vec<&str> = crate::ENV_VARIABLES.to_vec();
        expected.extend_from_slice(REPLICA_ENV_VARIABLES);
        expected.sort();
        assert_eq!(names, expected);

        for (name, value) in [
            ("JANITOR_DATABASE_REPLICA_MAX_LAG_MS", "0"),
            ("JANITOR_DATABASE_REPLICA_CHECK_INTERVAL_MS", "60001"),
            ("JANITOR_DATABASE_REPLICA_MAX_LAG_MS", "soon"),
        ] {
            let env = EnvSource::from_pairs([
                ("DATABASE_URL", PRIMARY),
                ("JANITOR_DATABASE_REPLICA_URL", REPLICA),
                (name, value),
            ]);
            assert!(LookupReplica::from_env(&env).is_err(), "{name}={value}");
        }
        // Every bound and its neighbour outside it.
        for (name, limit) in [
            ("MAX_LAG_MS", REPLICA_MAX_LAG_MS),
            ("CHECK_INTERVAL_MS", REPLICA_CHECK_INTERVAL_MS),
            ("TIMEOUT_MS", REPLICA_TIMEOUT_MS),
        ] {
            let edges = [
                (limit.min - 1, false),
                (limit.min, true),
                (limit.max, true),
                (limit.max + 1, false),
            ];
            for (value, ok) in edges {
                let name = format!("JANITOR_DATABASE_REPLICA_{name}");
                let value = value.to_string();
                let env = EnvSource::from_pairs([
                    ("DATABASE_URL", PRIMARY),
                    ("JANITOR_DATABASE_REPLICA_URL", REPLICA),
                    (name.as_str(), value.as_str()),
                ]);
                assert_eq!(LookupReplica::from_env(&env).is_ok(), ok, "{name}={value}");
            }
        }
        let env = EnvSource::from_pairs([
            ("DATABASE_URL", PRIMARY),
            ("JANITOR_DATABASE_REPLICA_MAX_LAG_MS", "250"),
        ]);
        let refused = LookupReplica::from_env(&env).unwrap_err().to_string();
        assert!(
            refused.contains("without JANITOR_DATABASE_REPLICA_URL"),
            "{refused}"
        );
    }
}
