//! Request quotas on the in-memory store: the order of checks, shards and Retry-After (the store suite runs in
//! `store_suites.rs`).

use janitor_core::label::{LabelKey, ProtectionKey};
use janitor_core::protection::quota::{
    MemoryQuotaStore, QuotaConfig, QuotaContext, QuotaCounter, QuotaDecision, RequestQuotas,
};
use janitor_core::testing::quota_store::{allowed_or_global_denial, sharded_quotas};
use janitor_core::testing::{label_key, T0};

fn key() -> LabelKey {
    label_key("quota-tests")
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
    let context = QuotaContext::new(Some("acct"), Some("sess")).unwrap();
    for i in 0..2 {
        assert_eq!(
            quotas.check(&context, T0 + i).await.unwrap(),
            QuotaDecision::Allowed
        );
    }
    let denied = quotas.check(&context, T0 + 1_500).await.unwrap();
    assert_eq!(
        denied,
        QuotaDecision::Limited {
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
    let other = QuotaContext::new(Some("other"), Some("sess")).unwrap();
    assert_eq!(
        quotas.check(&other, T0 + 2_000).await.unwrap(),
        QuotaDecision::Allowed
    );
    assert_eq!(used(ProtectionKey::Session("sess")), Some(3));
}

#[tokio::test]
async fn sharded_global_quota_admits_exactly_the_limit_per_aligned_window() {
    let config = sharded_quotas();
    let store = MemoryQuotaStore::new();
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
            // A denial names the global counter and the aligned window's end, about 60 s away.
            let decision = quotas.check(&QuotaContext::anonymous(), now).await.unwrap();
            allowed += usize::from(allowed_or_global_denial(decision));
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
    let context = QuotaContext::new(Some("a"), None).unwrap();
    quotas.check(&context, T0).await.unwrap();
    assert_eq!(
        quotas.cleanup(0, T0 + 59_999).await.unwrap(),
        0,
        "batch 0 is clamped to 1, nothing ended"
    );
    assert_eq!(quotas.cleanup(1, T0 + 60_000).await.unwrap(), 1);
    assert_eq!(quotas.cleanup(1000, T0 + 60_000).await.unwrap(), 1);
    assert!(quotas.store().is_empty());
}
