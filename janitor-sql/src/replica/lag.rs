//! Reading a replica's state and replay lag from the replica itself, in one statement.

use std::time::Duration;

use crate::database::Database;

/// What a reading found on the replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaState {
    /// A standby streaming from its primary, `lag` behind: zero when it has replayed all it received,
    /// otherwise the time since the last transaction it replayed was committed.
    Replaying {
        /// How far replay trails the primary.
        lag: Duration,
    },
    /// A standby that receives no WAL (its primary is gone or unreachable): how far behind it is cannot be
    /// known, so it is not read.
    NotStreaming,
    /// Not in recovery: a primary, such as a standby promoted by a failover. It is read.
    Primary,
    /// The reading failed: the replica did not answer, or a lookup there failed since.
    Unreachable,
}

impl ReplicaState {
    /// Whether the lookup may read a server in this state when it accepts `max_lag`.
    pub fn accepts(&self, max_lag: Duration) -> bool {
        match self {
            ReplicaState::Replaying { lag } => *lag <= max_lag,
            ReplicaState::Primary => true,
            ReplicaState::NotStreaming | ReplicaState::Unreachable => false,
        }
    }
}

/// Recovery, a running WAL receiver (its row needs no privilege to be seen), and the lag: zero when replay has
/// caught up with what was received, the age of the last replayed commit otherwise. Received equals replayed
/// is also how an idle primary looks from its standby, which the commit age alone would read as lag.
const READING: &str = "SELECT pg_is_in_recovery(), \
     EXISTS (SELECT 1 FROM pg_stat_wal_receiver), \
     CASE WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0::float8 \
          ELSE COALESCE(EXTRACT(EPOCH FROM clock_timestamp() - pg_last_xact_replay_timestamp())::float8 * 1000, \
                        'Infinity'::float8) END";

/// Reads the state of the server behind `database`, giving up after `limit`: a standby that does not answer
/// within it (the lookup taking the reading waits for it) is unreachable until the next reading.
pub(crate) async fn read(database: &Database, limit: Duration) -> ReplicaState {
    let Ok(rows) = database.query_within(limit, READING, &[]).await else {
        return ReplicaState::Unreachable;
    };
    let Some(row) = rows.first() else {
        return ReplicaState::Unreachable;
    };
    let (Ok(recovering), Ok(receiving), Ok(lag_ms)) = (
        row.try_get::<_, bool>(0),
        row.try_get::<_, bool>(1),
        row.try_get::<_, Option<f64>>(2),
    ) else {
        return ReplicaState::Unreachable;
    };
    state_of(recovering, receiving, lag_ms)
}

fn state_of(recovering: bool, receiving: bool, lag_ms: Option<f64>) -> ReplicaState {
    if !recovering {
        return ReplicaState::Primary;
    }
    if !receiving {
        return ReplicaState::NotStreaming;
    }
    match lag_ms {
        // A clock a little behind the primary's gives a negative age: no lag.
        Some(ms) if ms.is_finite() => ReplicaState::Replaying {
            lag: Duration::from_secs_f64(ms.max(0.0) / 1000.0),
        },
        _ => ReplicaState::NotStreaming,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_and_what_each_accepts() {
        let bound = Duration::from_millis(1_000);
        let lag = |ms: u64| ReplicaState::Replaying {
            lag: Duration::from_millis(ms),
        };
        assert_eq!(state_of(false, false, None), ReplicaState::Primary);
        assert_eq!(state_of(true, false, Some(0.0)), ReplicaState::NotStreaming);
        assert_eq!(state_of(true, true, Some(0.0)), lag(0));
        assert_eq!(state_of(true, true, Some(-3.0)), lag(0));
        assert_eq!(state_of(true, true, Some(1_000.0)), lag(1_000));
        assert_eq!(
            state_of(true, true, Some(f64::INFINITY)),
            ReplicaState::NotStreaming
        );
        assert!(lag(1_000).accepts(bound) && !lag(1_001).accepts(bound));
        assert!(ReplicaState::Primary.accepts(bound));
        assert!(!ReplicaState::NotStreaming.accepts(bound));
        assert!(!ReplicaState::Unreachable.accepts(bound));
    }
}
