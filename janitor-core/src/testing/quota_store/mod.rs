//! The behaviour every [`QuotaStore`] must show: [`quota_store_tests!`](crate::quota_store_tests) runs each
//! case as its own test.
//!
//! The factory returns an empty store. Concurrent claims are polled together on one task, so a store that
//! uses several connections sees them at the same time.

use super::{join_all, label_key, Fresh, T0};

mod signin;

use crate::protection::quota::{
    ClaimOutcome, QuotaClaim, QuotaConfig, QuotaContext, QuotaCounter, QuotaDecision, QuotaStore,
    RequestQuotas,
};
pub use signin::*;

/// A global quota of 21 cut into 4 shards of one-minute windows: slices of 6, 5, 5 and 5.
pub fn sharded_quotas() -> QuotaConfig {
    QuotaConfig::builder()
        .global(21)
        .shards(4)
        .window_ms(60_000)
        .build()
        .expect("valid fixture quotas")
}

/// Whether `decision` allowed the request; a denial must come from the global counter, with the minute-long
/// aligned window's Retry-After of 60 seconds.
pub fn allowed_or_global_denial(decision: QuotaDecision) -> bool {
    match decision {
        QuotaDecision::Allowed => true,
        QuotaDecision::Limited {
            counter,
            retry_after_secs,
        } => {
            assert_eq!(counter, QuotaCounter::Global);
            assert_eq!(retry_after_secs, 60);
            false
        }
    }
}

fn claim(id: &str, limit: u32, window_start: i64) -> QuotaClaim {
    QuotaClaim::fixed(id.to_owned(), limit, window_start, 60_000)
}

/// Case: Fills then denies with the reset time.
pub async fn fills_then_denies_with_the_reset_time(fresh: impl Fresh<(), Store: QuotaStore>) {
    let store = &fresh.store(()).await;
    for i in 0..3 {
        let outcome = store.claim(&claim("q", 3, T0 + i)).await.expect("claim");
        assert_eq!(outcome, ClaimOutcome::Allowed, "claim {i} of 3");
    }
    let denied = store.claim(&claim("q", 3, T0 + 10)).await.expect("claim");
    assert_eq!(
        denied,
        ClaimOutcome::Denied {
            reset_at: Some(T0 + 60_000)
        },
        "the fourth is denied, and the window still ends where the first claim put it"
    );
    // A denial does not count: raising the limit to 4 admits exactly one more.
    assert_eq!(
        store.claim(&claim("q", 4, T0 + 11)).await.expect("claim"),
        ClaimOutcome::Allowed
    );
    assert!(matches!(
        store.claim(&claim("q", 4, T0 + 12)).await.expect("claim"),
        ClaimOutcome::Denied { .. }
    ));
}

/// Case: An ended window restarts.
pub async fn an_ended_window_restarts(fresh: impl Fresh<(), Store: QuotaStore>) {
    let store = &fresh.store(()).await;
    store.claim(&claim("q", 1, T0)).await.expect("claim");
    // One millisecond before the window ends: still full.
    assert!(matches!(
        store
            .claim(&claim("q", 1, T0 + 59_999))
            .await
            .expect("claim"),
        ClaimOutcome::Denied { .. }
    ));
    // At reset_at the window has ended: restart at 1 with a new reset time.
    assert_eq!(
        store
            .claim(&claim("q", 1, T0 + 60_000))
            .await
            .expect("claim"),
        ClaimOutcome::Allowed
    );
    assert_eq!(
        store
            .claim(&claim("q", 1, T0 + 60_001))
            .await
            .expect("claim"),
        ClaimOutcome::Denied {
            reset_at: Some(T0 + 120_000)
        }
    );
}

/// Case: Counters are independent.
pub async fn counters_are_independent(fresh: impl Fresh<(), Store: QuotaStore>) {
    let store = &fresh.store(()).await;
    assert_eq!(
        store.claim(&claim("a", 1, T0)).await.expect("claim"),
        ClaimOutcome::Allowed
    );
    assert_eq!(
        store.claim(&claim("b", 1, T0)).await.expect("claim"),
        ClaimOutcome::Allowed
    );
    assert!(matches!(
        store.claim(&claim("a", 1, T0)).await.expect("claim"),
        ClaimOutcome::Denied { .. }
    ));
}

/// Case: Concurrent claims admit exactly the limit.
pub async fn concurrent_claims_admit_exactly_the_limit(fresh: impl Fresh<(), Store: QuotaStore>) {
    let store = &fresh.store(()).await;
    let claims: Vec<QuotaClaim> = (0..25).map(|i| claim("hot", 7, T0 + i)).collect();
    let outcomes = join_all(claims.iter().map(|c| store.claim(c)).collect()).await;
    let allowed = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(ClaimOutcome::Allowed)))
        .count();
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert_eq!(allowed, 7, "25 concurrent claims against a limit of 7");
}

/// Case: Cleanup is bounded and keeps live windows.
pub async fn cleanup_is_bounded_and_keeps_live_windows(fresh: impl Fresh<(), Store: QuotaStore>) {
    let store = &fresh.store(()).await;
    for i in 0..5 {
        store
            .claim(&claim(&format!("old{i}"), 1, T0 + i))
            .await
            .expect("claim");
    }
    store
        .claim(&claim("live", 1, T0 + 30_000))
        .await
        .expect("claim");
    // At T0 + 60,003 the first four windows (reset at T0 + 60,000 … 60,003) have ended.
    let now = T0 + 60_003;
    assert_eq!(
        store.cleanup(3, now).await.expect("cleanup"),
        3,
        "bounded by the batch"
    );
    assert_eq!(
        store.cleanup(3, now).await.expect("cleanup"),
        1,
        "the rest of the ended windows"
    );
    assert_eq!(store.cleanup(3, now).await.expect("cleanup"), 0);
    // The survivors still count: old4 and live are full.
    for id in ["old4", "live"] {
        assert!(
            matches!(
                store.claim(&claim(id, 1, now)).await.expect("claim"),
                ClaimOutcome::Denied { .. }
            ),
            "{id}"
        );
    }
    assert_eq!(
        store.claim(&claim("old0", 1, now)).await.expect("claim"),
        ClaimOutcome::Allowed,
        "deleted rows start over"
    );
}

/// Case: Only the counters that are on claim, and only they hold rows.
pub async fn only_counters_that_are_on_claim(fresh: impl Fresh<(), Store: QuotaStore>) {
    let config = QuotaConfig::builder()
        .without_global()
        .account(2)
        .without_session()
        .build()
        .expect("valid quotas");
    let quotas = RequestQuotas::new(fresh.store(()).await, label_key("quota-suite"), config);
    let context = QuotaContext::new(Some("account-1"), Some("session-1")).expect("valid context");
    for i in 0..2 {
        let decision = quotas.check(&context, T0 + i).await.expect("check");
        assert_eq!(
            decision,
            QuotaDecision::Allowed,
            "request {i} of the account's 2"
        );
    }
    assert_eq!(
        quotas.check(&context, T0 + 2).await.expect("check"),
        QuotaDecision::Limited {
            counter: QuotaCounter::Account,
            retry_after_secs: 60
        },
        "the account denies; no global counter was in the way"
    );
    // With the global counter off, requests without an account are never counted.
    for i in 0..50 {
        let decision = quotas.check(&QuotaContext::anonymous(), T0 + i).await;
        assert_eq!(decision.expect("check"), QuotaDecision::Allowed);
    }
    assert_eq!(
        quotas.cleanup(1000, T0 + 120_000).await.expect("cleanup"),
        1,
        "the account's row is the only one: an off counter writes none"
    );
}

/// Case: With every counter off, nothing is counted and no row is written.
pub async fn every_counter_off_counts_nothing(fresh: impl Fresh<(), Store: QuotaStore>) {
    let config = QuotaConfig::builder()
        .without_global()
        .without_account()
        .without_session()
        .shards(4)
        .build()
        .expect("valid quotas");
    let quotas = RequestQuotas::new(fresh.store(()).await, label_key("quota-suite"), config);
    let context = QuotaContext::new(Some("account-1"), Some("session-1")).expect("valid context");
    for i in 0..5 {
        assert_eq!(
            quotas.check(&context, T0 + i).await.expect("check"),
            QuotaDecision::Allowed
        );
    }
    assert_eq!(
        quotas.cleanup(1000, T0 + 3_600_000).await.expect("cleanup"),
        0
    );
}

/// One `#[tokio::test]` per case of the [`QuotaStore`] suite ([`crate::testing`] shows the forms).
///
/// `fresh` makes an empty store from `()`.
///
/// ```ignore
/// janitor_core::quota_store_tests!(fresh: |()| async { MemoryQuotaStore::new() });
/// ```
#[macro_export]
macro_rules! quota_store_tests {
    ($($setup:tt)+) => {
        $crate::__store_suite!(
            quota_store [
            fills_then_denies_with_the_reset_time,
            an_ended_window_restarts,
            counters_are_independent,
            concurrent_claims_admit_exactly_the_limit,
            cleanup_is_bounded_and_keeps_live_windows,
            only_counters_that_are_on_claim,
            every_counter_off_counts_nothing,
            gcra_spreads_the_limit_without_an_edge_burst,
            the_network_counter_comes_before_the_account,
            a_chain_claims_in_order_and_stops_at_the_first_denial,
            a_known_browser_signs_in_while_unknown_browsers_are_locked,
            concurrent_wrong_passwords_check_at_most_the_lock,
            a_right_password_gives_its_slots_back_and_marks_the_browser,
            failure_budgets_challenge_unknown_browsers_only,
            quota_denials_deny_with_the_time_left,
            a_dry_run_decides_and_counts_but_allows,
            ]
            $($setup)+
        );
    };
}
