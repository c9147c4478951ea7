//! Request quotas on the in-memory store: the shared suite, the order of checks, shards and Retry-After.

use std::sync::Arc;

use janitor_core::label::{LabelKey, ProtectionKey};
use janitor_core::protection::quota::{
    suite, Admission, AdmissionContext, MemoryQuotaStore, QuotaConfig, QuotaCounter, RequestQuotas,
};

const T0: i64 = 1_735_689_600_000;

fn key() -> LabelKey {
    LabelKey::new(&"k".repeat(32), "quota-tests").unwrap()
}

#[tokio::test]
async fn memory_store_passes_the_suite() {
    suite::run(|| async { MemoryQuotaStore::new() }).await;
}

#[tokio::test]
async fn checks_stop_at_the_first_denial_and_earlier_counters_count() {
    let config = QuotaConfig::builder()
        .global(100)
        .account(2)
        .session(5)
        .build()
        .unwrap();
    let quotas = RequestQuotas::new(MemoryQuotaStore::new(), key(), config);
    let context = AdmissionContext::new(Some("acct"), Some("sess")).unwrap();
    for i in 0..2 {
        assert_eq!(
            quotas.admit(&context, T0 + i).await.unwrap(),
            Admission::Allowed
        );
    }
    let denied = quotas.admit(&context, T0 + 1_500).await.unwrap();
    assert_eq!(
        denied,
        Admission::Limited {
            counter: QuotaCounter::Account,
            retry_after_secs: 59, // the account window ends at T0 + 60,000
        }
    );
    let store = quotas.store();
    let used = |k: ProtectionKey<'_>| store.counter(&key().protection(&k)).map(|(used, _)| used);
    assert_eq!(
        used(ProtectionKey::Global),
        Some(3),
        "the global counter counted the denied attempt"
    );
    assert_eq!(
        used(ProtectionKey::Account("acct")),
        Some(2),
        "the denying counter did not increment"
    );
    assert_eq!(
        used(ProtectionKey::Session("sess")),
        Some(2),
        "checks after the denial did not run"
    );
    // No raw id is a row key.
    assert_eq!(store.counter("acct"), None);
    // Another account is unaffected; the global and session counters go on.
    let other = AdmissionContext::new(Some("other"), Some("sess")).unwrap();
    assert_eq!(
        quotas.admit(&other, T0 + 2_000).await.unwrap(),
        Admission::Allowed
    );
    assert_eq!(used(ProtectionKey::Session("sess")), Some(3));
}

#[tokio::test]
async fn sharded_global_quota_admits_exactly_the_limit_per_aligned_window() {
    let config = QuotaConfig::builder()
        .global(21)
        .shards(4)
        .window_ms(60_000)
        .build()
        .unwrap();
    let store = Arc::new(MemoryQuotaStore::new());
    // Two instances sharing the counters, starting their rotations at different shards.
    let a = RequestQuotas::with_first_shard(store.clone(), key(), config, 0);
    let b = RequestQuotas::with_first_shard(store.clone(), key(), config, 3);
    let window = T0 + 7 * 60_000; // epoch-aligned
    for round in 0..2 {
        let start = window + round * 60_000;
        let mut allowed = 0;
        for i in 0..60 {
            let quotas = if i % 2 == 0 { &a } else { &b };
            let now = start + 10 + i;
            match quotas
                .admit(&AdmissionContext::anonymous(), now)
                .await
                .unwrap()
            {
                Admission::Allowed => allowed += 1,
                Admission::Limited {
                    counter,
                    retry_after_secs,
                } => {
                    assert_eq!(counter, QuotaCounter::Global);
                    // The aligned window ends at start + 60,000, about 60 s away.
                    assert_eq!(retry_after_secs, 60);
                }
            }
        }
        assert_eq!(allowed, 21, "round {round}: exactly the global limit");
        let slices: Vec<u32> = (0..4)
            .map(|shard| {
                let id = key().protection(&ProtectionKey::GlobalShard { shards: 4, shard });
                store.counter(&id).unwrap().0
            })
            .collect();
        assert_eq!(slices, [6, 5, 5, 5], "round {round}");
    }
}

#[tokio::test]
async fn cleanup_removes_ended_windows() {
    let quotas = RequestQuotas::new(MemoryQuotaStore::new(), key(), QuotaConfig::default());
    let context = AdmissionContext::new(Some("a"), None).unwrap();
    quotas.admit(&context, T0).await.unwrap();
    assert_eq!(
        quotas.cleanup(T0 + 59_999, 0).await.unwrap(),
        0,
        "batch 0 is clamped to 1, nothing ended"
    );
    assert_eq!(quotas.cleanup(T0 + 60_000, 1).await.unwrap(), 1);
    assert_eq!(quotas.cleanup(T0 + 60_000, 1000).await.unwrap(), 1);
    assert!(quotas.store().is_empty());
}
