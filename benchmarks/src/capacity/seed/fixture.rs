//! The layout of the event fixture, as pure functions of the event's number: whose it is, what it is about and
//! when it happened. The load writes it and the SQL run checks its counts against it.

use janitor_core::evidence::Action;

use super::SPARSE_SUBJECTS;

/// The application's id of the one fixture event recorded through the library's API (at the fixture's now).
pub const FIXTURE_API_EVENT: &str = "capacity-fixture-api";

/// The events are spread over this long before the fixture's now: ten minutes.
pub const WINDOW_SPREAD_MS: i64 = 600_000;

/// Whose event number `i` is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// The hot subject: every even event.
    Hot,
    /// Sparse subject `n` (0–99,999).
    Sparse(u64),
}

/// Event `i` belongs to the hot subject when even; odd events go round the sparse subjects, shifted by one
/// subject per round so that each subject's events fall on different residues of 5 — with 1,000,000 events
/// every sparse subject gets exactly five, one of them a payment.
pub fn owner_of(i: u64) -> Owner {
    if i % 2 == 0 {
        Owner::Hot
    } else {
        let j = i / 2;
        Owner::Sparse((j + j / SPARSE_SUBJECTS) % SPARSE_SUBJECTS)
    }
}

/// Every fifth event is a payment, the others sign-ins.
pub fn action_of(i: u64) -> Action {
    if i % 5 == 0 {
        Action::Payment
    } else {
        Action::SignIn
    }
}

/// How long before the fixture's now event `i` of `events` happened: from 1 ms (event 0, the newest) to just
/// under ten minutes.
pub fn offset_ms(i: u64, events: u64) -> i64 {
    1 + (u128::from(i) * WINDOW_SPREAD_MS as u128 / u128::from(events.max(1))) as i64
}

/// How many sign-ins sparse subject `n` has among `events` fixture events (all of them within any velocity
/// window that covers the last ten minutes of the fixture).
pub fn sparse_sign_ins(n: u64, events: u64) -> u32 {
    let sparse_events = events / 2;
    let mut count = 0;
    // Round k gives subject n the sparse event j = k·100,000 + (n − k mod 100,000).
    for k in 0..=sparse_events / SPARSE_SUBJECTS {
        let j = k * SPARSE_SUBJECTS + (n + SPARSE_SUBJECTS - k % SPARSE_SUBJECTS) % SPARSE_SUBJECTS;
        let i = 2 * j + 1;
        if j < sparse_events && i < events && action_of(i) == Action::SignIn {
            count += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_million_events_split_as_the_specification_says() {
        const EVENTS: u64 = 1_000_000;
        let mut per_subject = vec![(0u32, 0u32); SPARSE_SUBJECTS as usize];
        let (mut hot, mut payments) = (0, 0);
        for i in 0..EVENTS {
            let payment = action_of(i) == Action::Payment;
            payments += u64::from(payment);
            match owner_of(i) {
                Owner::Hot => hot += 1,
                Owner::Sparse(n) => {
                    let entry = &mut per_subject[n as usize];
                    if payment {
                        entry.1 += 1;
                    } else {
                        entry.0 += 1;
                    }
                }
            }
        }
        assert_eq!(hot, EVENTS / 2);
        assert_eq!(payments, EVENTS / 5);
        // Every sparse subject: four sign-ins and one payment, as counted by the closed form too.
        for (n, &(sign_ins, subject_payments)) in per_subject.iter().enumerate() {
            assert_eq!((sign_ins, subject_payments), (4, 1), "subject {n}");
            assert_eq!(sparse_sign_ins(n as u64, EVENTS), 4, "subject {n}");
        }
    }

    #[test]
    fn the_closed_form_matches_small_and_uneven_fixtures() {
        for events in [10_000, 333_333, 1_234_567] {
            let mut sign_ins = std::collections::HashMap::new();
            for i in 0..events {
                if let Owner::Sparse(n) = owner_of(i) {
                    if action_of(i) == Action::SignIn {
                        *sign_ins.entry(n).or_insert(0u32) += 1;
                    }
                }
            }
            for n in (0..SPARSE_SUBJECTS)
                .step_by(997)
                .chain([0, 1, 4_999, 99_999])
            {
                assert_eq!(
                    sparse_sign_ins(n, events),
                    sign_ins.get(&n).copied().unwrap_or(0),
                    "subject {n} of {events}"
                );
            }
        }
    }

    #[test]
    fn events_spread_over_the_last_ten_minutes() {
        assert_eq!(offset_ms(0, 1_000_000), 1);
        assert_eq!(offset_ms(999_999, 1_000_000), 600_000);
        assert!(offset_ms(500_000, 1_000_000) > offset_ms(499_999, 1_000_000) - 1);
        assert_eq!(offset_ms(9_999, 10_000), 1 + 599_940);
    }
}
