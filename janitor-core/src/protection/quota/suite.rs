//! The behaviour every [`QuotaStore`] must show (feature `test-suite`).
//!
//! ```text
//! janitor_core::protection::quota::suite::run(|| async { MyQuotaStore::fresh().await }).await;
//! ```
//!
//! The factory returns an empty store. Concurrent claims are polled together on one task, so a store that
//! uses several connections sees them at the same time.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use super::{ClaimOutcome, QuotaClaim, QuotaStore};

const T0: i64 = 1_735_689_600_000;

fn claim(id: &str, limit: u32, window_start: i64) -> QuotaClaim {
    QuotaClaim {
        id: id.to_owned(),
        limit,
        window_start,
        window_ms: 60_000,
    }
}

/// Polls every future to completion together and returns their outputs in order.
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs
        .into_iter()
        .map(|o| o.expect("every future finished"))
        .collect()
}

/// Runs every case, each on a fresh store from `fresh`.
pub async fn run<S, F, Fut>(mut fresh: F)
where
    S: QuotaStore,
    F: FnMut() -> Fut,
    Fut: Future<Output = S>,
{
    fills_then_denies_with_the_reset_time(&fresh().await).await;
    an_ended_window_restarts(&fresh().await).await;
    counters_are_independent(&fresh().await).await;
    concurrent_claims_admit_exactly_the_limit(&fresh().await).await;
    cleanup_is_bounded_and_keeps_live_windows(&fresh().await).await;
}

async fn fills_then_denies_with_the_reset_time<S: QuotaStore>(store: &S) {
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

async fn an_ended_window_restarts<S: QuotaStore>(store: &S) {
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

async fn counters_are_independent<S: QuotaStore>(store: &S) {
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

async fn concurrent_claims_admit_exactly_the_limit<S: QuotaStore>(store: &S) {
    let claims: Vec<QuotaClaim> = (0..25).map(|i| claim("hot", 7, T0 + i)).collect();
    let outcomes = join_all(claims.iter().map(|c| store.claim(c)).collect()).await;
    let allowed = outcomes
        .iter()
        .filter(|o| matches!(o, Ok(ClaimOutcome::Allowed)))
        .count();
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    assert_eq!(allowed, 7, "25 concurrent claims against a limit of 7");
}

async fn cleanup_is_bounded_and_keeps_live_windows<S: QuotaStore>(store: &S) {
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
        store.cleanup(now, 3).await.expect("cleanup"),
        3,
        "bounded by the batch"
    );
    assert_eq!(
        store.cleanup(now, 3).await.expect("cleanup"),
        1,
        "the rest of the ended windows"
    );
    assert_eq!(store.cleanup(now, 3).await.expect("cleanup"), 0);
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
