//! At most one log line a second for one kind of event, so that a fault every request or statement meets (an
//! overload, a schema never migrated) is seen without flooding the log. The storage and HTTP crates share it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// One kind of event's log lines: the second of the last one, and how many were left out since.
#[derive(Debug, Default)]
pub struct Throttle {
    second: AtomicU64,
    left_out: AtomicU64,
}

impl Throttle {
    /// A throttle that has let no line through yet (usable in a `static`).
    pub const fn new() -> Throttle {
        Throttle {
            second: AtomicU64::new(0),
            left_out: AtomicU64::new(0),
        }
    }

    /// `Some(lines left out since the last one)` when this second has no line yet.
    pub fn allow(&self) -> Option<u64> {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        self.allow_at(now)
    }

    fn allow_at(&self, second: u64) -> Option<u64> {
        let last = self.second.load(Ordering::Relaxed);
        if last != second
            && self
                .second
                .compare_exchange(last, second, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            Some(self.left_out.swap(0, Ordering::Relaxed))
        } else {
            self.left_out.fetch_add(1, Ordering::Relaxed);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_a_second_and_the_count_left_out() {
        let throttle = Throttle::default();
        assert_eq!(throttle.allow_at(10), Some(0));
        assert_eq!(throttle.allow_at(10), None);
        assert_eq!(throttle.allow_at(10), None);
        assert_eq!(throttle.allow_at(11), Some(2));
        assert_eq!(throttle.allow_at(11), None);
        assert_eq!(throttle.allow_at(12), Some(1));
    }
}
