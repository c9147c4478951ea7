//! Where services read the time.
//!
//! The evidence, directory and learning services each hold a [`Clock`], so that no caller passes the time and
//! every instance reads it the same way. A test (or a simulation) gives them a manual clock and moves it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use crate::identification::engine::now_ms;

/// The system's clock, or a manual one that only moves when told (cheap to clone; clones share the time).
#[derive(Debug, Clone, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicI64>>,
}

impl Clock {
    /// The system's clock (milliseconds since the Unix epoch).
    pub fn system() -> Self {
        Clock::default()
    }

    /// A clock that reads `start_ms` until [`set`](Self::set) or [`advance`](Self::advance) moves it.
    pub fn manual(start_ms: i64) -> Self {
        Clock {
            manual: Some(Arc::new(AtomicI64::new(start_ms))),
        }
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        match &self.manual {
            Some(time) => time.load(Ordering::Relaxed),
            None => now_ms(),
        }
    }

    /// Sets a manual clock to `ms`. The system's clock cannot be set: on it this does nothing and answers false.
    pub fn set(&self, ms: i64) -> bool {
        match &self.manual {
            Some(time) => {
                time.store(ms, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// Sets a manual clock to `ms`, for a test that names each call's time; panics on the system's clock,
    /// which cannot be set, so that such a test cannot run on the real time without noticing.
    pub fn pin(&self, ms: i64) {
        assert!(
            self.set(ms),
            "a test that sets the time must build the service with a manual clock"
        );
    }

    /// Moves a manual clock forward by `ms` and answers the new time; the system's clock answers its time.
    pub fn advance(&self, ms: i64) -> i64 {
        match &self.manual {
            Some(time) => time.fetch_add(ms, Ordering::Relaxed).saturating_add(ms),
            None => now_ms(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_clones_share_it() {
        let clock = Clock::manual(1_000);
        let clone = clock.clone();
        assert_eq!(clock.now_ms(), 1_000);
        assert!(clone.set(5_000));
        assert_eq!(clock.now_ms(), 5_000);
        assert_eq!(clock.advance(250), 5_250);
        assert_eq!(clone.now_ms(), 5_250);
    }

    #[test]
    fn the_system_clock_cannot_be_set() {
        let clock = Clock::system();
        assert!(!clock.set(0));
        assert!(clock.now_ms() > 1_600_000_000_000);
    }

    #[test]
    #[should_panic(expected = "manual clock")]
    fn pinning_the_system_clock_fails_loudly() {
        Clock::system().pin(0);
    }
}
