//! The sign-in defence's cases of the quota store suite: GCRA, the network counter, chains, and the guard's
//! decisions on a real store.

use crate::protection::quota::{
    network_label, ChainLink, ClaimChain, ClaimOutcome, ClaimWhen, LinkOutcome, NetworkPrefixBits,
    QuotaAlgorithm, QuotaClaim, QuotaConfig, QuotaContext, QuotaCounter, QuotaDecision, QuotaStore,
    RequestQuotas,
};
use crate::protection::signin::{
    SignInAttempt, SignInConfig, SignInDecision, SignInGuard, SignInReason, Verdict,
};
use crate::testing::{join_all, label_key, Fresh, T0};

fn gcra(id: &str, limit: u32, now: i64) -> QuotaClaim {
    QuotaClaim {
        id: id.to_owned(),
        limit,
        window_start: now,
        window_ms: 60_000,
        algorithm: QuotaAlgorithm::Gcra,
    }
}

/// Case: GCRA spreads the limit without an edge burst.
pub async fn gcra_spreads_the_limit_without_an_edge_burst(
    fresh: impl Fresh<(), Store: QuotaStore>,
) {
    let store = &fresh.store(()).await;
    for i in 0..3 {
        let outcome = store.claim(&gcra("g", 3, T0)).await.expect("claim");
        assert_eq!(
            outcome,
            ClaimOutcome::Allowed,
            "claim {i} of the burst of 3"
        );
    }
    // The next fits one interval (20 s) later, not at the end of a window.
    let denied = store.claim(&gcra("g", 3, T0 + 1)).await.expect("claim");
    assert_eq!(
        denied,
        ClaimOutcome::Denied {
            reset_at: Some(T0 + 20_000)
        }
    );
    let at = store
        .claim(&gcra("g", 3, T0 + 19_999))
        .await
        .expect("claim");
    assert!(matches!(at, ClaimOutcome::Denied { .. }), "{at:?}");
    assert_eq!(
        store
            .claim(&gcra("g", 3, T0 + 20_000))
            .await
            .expect("claim"),
        ClaimOutcome::Allowed
    );
    assert!(matches!(
        store.claim(&gcra("g", 3, T0 + 20_001)).await.expect("claim"),
        ClaimOutcome::Denied { reset_at: Some(r) } if r == T0 + 40_000
    ));
    // A quiet window later the whole burst is back; the contract's cleanup sees such a row as ended.
    for _ in 0..3 {
        assert_eq!(
            store
                .claim(&gcra("g", 3, T0 + 200_000))
                .await
                .expect("claim"),
            ClaimOutcome::Allowed
        );
    }
    assert_eq!(store.cleanup(10, T0 + 260_000).await.expect("cleanup"), 1);
}

fn network_quotas(
    store: impl QuotaStore,
    algorithm: QuotaAlgorithm,
) -> RequestQuotas<impl QuotaStore> {
    let config = QuotaConfig::builder()
        .without_global()
        .without_session()
        .account(2)
        .network(3)
        .network_algorithm(algorithm)
        .build()
        .expect("valid quotas");
    RequestQuotas::new(store, label_key("signin"), config)
}

/// Case: The network counter comes before the account's, and counts any mix of accounts.
pub async fn the_network_counter_comes_before_the_account(
    fresh: impl Fresh<(), Store: QuotaStore>,
) {
    let quotas = network_quotas(fresh.store(()).await, QuotaAlgorithm::FixedWindow);
    let key = label_key("signin");
    let network = network_label(
        &key,
        NetworkPrefixBits::default(),
        "203.0.113.7".parse().unwrap(),
    );
    let other = network_label(
        &key,
        NetworkPrefixBits::default(),
        "198.51.100.7".parse().unwrap(),
    );
    for account in ["ada", "grace", "alan"] {
        let context = QuotaContext::new(Some(account), None)
            .unwrap()
            .with_network(Some(&network));
        assert_eq!(
            quotas.check(&context, T0).await.expect("check"),
            QuotaDecision::Allowed
        );
    }
    let fourth = QuotaContext::new(Some("edsger"), None)
        .unwrap()
        .with_network(Some(&network));
    assert_eq!(
        quotas.check(&fourth, T0 + 1_000).await.expect("check"),
        QuotaDecision::Limited {
            counter: QuotaCounter::Network,
            retry_after_secs: 59
        }
    );
    // Another network is counted apart; the account's own counter still applies.
    let elsewhere = QuotaContext::new(Some("ada"), None)
        .unwrap()
        .with_network(Some(&other));
    assert_eq!(
        quotas.check(&elsewhere, T0).await.expect("check"),
        QuotaDecision::Allowed
    );
    assert!(matches!(
        quotas.check(&elsewhere, T0).await.expect("check"),
        QuotaDecision::Limited {
            counter: QuotaCounter::Account,
            ..
        }
    ));
}

/// Case: A chain claims in order, by whether the browser is known, and stops at the first denial.
pub async fn a_chain_claims_in_order_and_stops_at_the_first_denial(
    fresh: impl Fresh<(), Store: QuotaStore>,
) {
    let store = &fresh.store(()).await;
    let link = |id: &str, limit, when| ChainLink {
        claim: QuotaClaim::fixed(id.to_owned(), limit, T0, 60_000),
        when,
    };
    let chain = |mark: Option<&str>| ClaimChain {
        all_or_nothing: false,
        known_mark: mark.map(str::to_owned),
        now_ms: T0,
        links: vec![
            link("always", 2, ClaimWhen::Always),
            link("known", 5, ClaimWhen::Known),
            link("unknown", 1, ClaimWhen::Unknown),
            link("after", 5, ClaimWhen::Always),
        ],
    };
    let first = store
        .claim_chain(&chain(Some("mark")))
        .await
        .expect("chain");
    assert!(!first.known);
    use LinkOutcome::{Allowed, Denied, Skipped};
    assert_eq!(first.links, [Allowed, Skipped, Allowed, Allowed]);
    let second = store.claim_chain(&chain(None)).await.expect("chain");
    assert_eq!(
        second.links,
        [
            Allowed,
            Skipped,
            Denied {
                reset_at: Some(T0 + 60_000)
            },
            Skipped
        ]
    );
    // Nothing after the denial was counted: `after` has one claim, so four more fit.
    for _ in 0..4 {
        assert_eq!(
            store
                .claim(&QuotaClaim::fixed("after".into(), 5, T0, 60_000))
                .await
                .unwrap(),
            ClaimOutcome::Allowed
        );
    }
    // A live mark makes the browser known: the known link is claimed, the unknown one skipped.
    store
        .settle_chain(&crate::protection::quota::ChainSettle {
            releases: vec![],
            mark: Some(("mark".into(), T0 + 1)),
        })
        .await
        .expect("settle");
    let known = store
        .claim_chain(&ClaimChain {
            links: vec![
                link("known", 5, ClaimWhen::Known),
                link("unknown", 1, ClaimWhen::Unknown),
            ],
            ..chain(Some("mark"))
        })
        .await
        .expect("chain");
    assert!(known.known);
    assert_eq!(known.links, [Allowed, Skipped]);
    // All or nothing: a full link stops the chain and the links that had room are not counted.
    let atomic = ClaimChain {
        all_or_nothing: true,
        links: vec![
            link("spare", 1, ClaimWhen::Always),
            link("unknown", 1, ClaimWhen::Unknown),
        ],
        ..chain(None)
    };
    let stopped = store.claim_chain(&atomic).await.expect("chain");
    assert_eq!(
        stopped.links,
        [
            Skipped,
            Denied {
                reset_at: Some(T0 + 60_000)
            }
        ]
    );
    let spare = QuotaClaim::fixed("spare".into(), 1, T0, 60_000);
    assert_eq!(
        store.claim(&spare).await.unwrap(),
        ClaimOutcome::Allowed,
        "spare was not counted"
    );
    // The mark is live only until its time.
    let later = ClaimChain {
        now_ms: T0 + 1,
        links: vec![],
        ..chain(Some("mark"))
    };
    assert!(!store.claim_chain(&later).await.expect("chain").known);
}

fn guard(config: SignInConfig) -> SignInGuard {
    SignInGuard::new(label_key("signin"), config)
}

/// An attempt from `browser`, a browser that holds its cookie (`None`: a client with neither cookie nor payload).
fn attempt<'a>(account: &'a str, network: &'a str, browser: Option<&'a str>) -> SignInAttempt<'a> {
    SignInAttempt {
        account,
        session: None,
        network: Some(network),
        network_quota_id: None,
        cookie: browser,
        browser,
    }
}

/// One attempt that is checked and fails, or is stopped; its decision.
async fn fail<S: QuotaStore>(
    guard: &SignInGuard,
    store: &S,
    attempt: &SignInAttempt<'_>,
    now: i64,
) -> SignInDecision {
    let decision = guard.begin(store, attempt, None, now).await.expect("begin");
    if decision.verdict() == Verdict::Allow {
        guard
            .finish(store, &decision, false, now)
            .await
            .expect("finish");
    }
    decision
}

/// Case: A known browser signs in while unknown browsers are locked out of the account.
pub async fn a_known_browser_signs_in_while_unknown_browsers_are_locked(
    fresh: impl Fresh<(), Store: QuotaStore>,
) {
    let store = &fresh.store(()).await;
    let guard = guard(SignInConfig::default());
    // Ada signs in once from her browser: it becomes known to her account.
    let ada = attempt("ada", "198.51.100.0/24", Some("v-ada"));
    let first = guard.begin(store, &ada, None, T0).await.expect("begin");
    assert_eq!(
        (first.verdict(), first.known_browser()),
        (Verdict::Allow, false)
    );
    guard.finish(store, &first, true, T0).await.expect("finish");
    // An attacker without a payload fails five times from elsewhere, then is challenged even with the password.
    let attacker = attempt("ada", "203.0.113.0/24", None);
    for i in 0..5 {
        let decision = fail(&guard, store, &attacker, T0 + 1_000 + i).await;
        assert_eq!(decision.verdict(), Verdict::Allow, "failure {i}");
    }
    let locked = guard
        .begin(store, &attacker, None, T0 + 2_000)
        .await
        .expect("begin");
    assert_eq!(locked.verdict(), Verdict::Challenge);
    assert_eq!(locked.reasons(), [SignInReason::LockedForUnknownBrowsers]);
    // The lock's window opened with Ada's first sign-in, from a browser then unknown, at T0.
    assert_eq!(locked.retry_after_secs(), Some(898));
    // A client that copied her browser's payload (identified as her browser) but has no cookie is not known.
    let copied = SignInAttempt {
        cookie: None,
        ..ada
    };
    let copy = guard
        .begin(store, &copied, None, T0 + 2_000)
        .await
        .expect("begin");
    assert_eq!(
        (copy.verdict(), copy.known_browser()),
        (Verdict::Challenge, false)
    );
    // So is a new browser of anyone's.
    let stranger = attempt("ada", "192.0.2.0/24", Some("v-new"));
    assert_eq!(
        guard
            .begin(store, &stranger, None, T0 + 2_000)
            .await
            .unwrap()
            .verdict(),
        Verdict::Challenge
    );
    // Ada's own browser is known and signs in, again and again.
    for i in 0..10 {
        let decision = guard
            .begin(store, &ada, None, T0 + 3_000 + i)
            .await
            .expect("begin");
        assert_eq!(
            (decision.verdict(), decision.known_browser()),
            (Verdict::Allow, true),
            "sign-in {i}"
        );
        guard
            .finish(store, &decision, true, T0 + 3_000 + i)
            .await
            .expect("finish");
    }
    // Her browser's own failures lock only it: five, then denied.
    for i in 0..5 {
        assert_eq!(
            fail(&guard, store, &ada, T0 + 4_000 + i).await.verdict(),
            Verdict::Allow
        );
    }
    let own = guard
        .begin(store, &ada, None, T0 + 5_000)
        .await
        .expect("begin");
    assert_eq!(
        (own.verdict(), own.reasons()),
        (Verdict::Deny, &[SignInReason::LockedForThisBrowser][..])
    );
}

/// Case: Fifty concurrent wrong passwords from unknown browsers check at most the lock's five.
pub async fn concurrent_wrong_passwords_check_at_most_the_lock(
    fresh: impl Fresh<(), Store: QuotaStore>,
) {
    let store = &fresh.store(()).await;
    let config = SignInConfig::builder()
        .without_network_failures()
        .without_browser_failures()
        .build()
        .unwrap();
    let guard = guard(config);
    let attempts: Vec<SignInAttempt<'_>> = (0..50)
        .map(|_| attempt("ada", "203.0.113.0/24", None))
        .collect();
    let decisions = join_all(
        attempts
            .iter()
            .map(|a| guard.begin(store, a, None, T0))
            .collect(),
    )
    .await;
    let checked = decisions
        .iter()
        .filter(|d| d.as_ref().expect("begin").verdict() == Verdict::Allow)
        .count();
    assert_eq!(checked, 5, "50 concurrent attempts against a lock of 5");
}

/// Case: A right password gives its slots back and marks the browser known.
pub async fn a_right_password_gives_its_slots_back_and_marks_the_browser(
    fresh: impl Fresh<(), Store: QuotaStore>,
) {
    let store = &fresh.store(()).await;
    let guard = guard(SignInConfig::builder().lock_failures(2).build().unwrap());
    let grace = attempt("grace", "198.51.100.0/24", Some("v-grace"));
    // Many right passwords from a new browser in a row never lock: each gives its slot back.
    for i in 0..2 {
        let decision = guard
            .begin(store, &grace, None, T0 + i)
            .await
            .expect("begin");
        assert_eq!(decision.verdict(), Verdict::Allow);
        assert_eq!(decision.known_browser(), i > 0);
        guard
            .finish(store, &decision, true, T0 + i)
            .await
            .expect("finish");
    }
    // From another browser, two right passwords then two wrong ones: the wrong ones lock it.
    let other = attempt("grace", "198.51.100.0/24", None);
    for i in 0..2 {
        let d = guard
            .begin(store, &other, None, T0 + 10 + i)
            .await
            .expect("begin");
        guard
            .finish(store, &d, true, T0 + 10 + i)
            .await
            .expect("finish");
    }
    assert_eq!(
        fail(&guard, store, &other, T0 + 20).await.verdict(),
        Verdict::Allow
    );
    assert_eq!(
        fail(&guard, store, &other, T0 + 21).await.verdict(),
        Verdict::Allow
    );
    assert_eq!(
        guard
            .begin(store, &other, None, T0 + 22)
            .await
            .unwrap()
            .verdict(),
        Verdict::Challenge
    );
    // The known browser expires after the configured days.
    let days = i64::from(SignInConfig::default().known_browser_days());
    let later = guard
        .begin(store, &grace, None, T0 + 1 + days * 86_400_000 + 1)
        .await
        .unwrap();
    assert!(!later.known_browser());
}

/// Case: Failure budgets challenge unknown browsers only: per network, per browser, and for every client
/// without a payload as one browser.
pub async fn failure_budgets_challenge_unknown_browsers_only(
    fresh: impl Fresh<(), Store: QuotaStore>,
) {
    let store = &fresh.store(()).await;
    let config = SignInConfig::builder()
        .network_failures(3)
        .browser_failures(4)
        .build()
        .unwrap();
    let guard = guard(config);
    let owner = attempt("owner", "203.0.113.0/24", Some("v-owner"));
    let d = guard.begin(store, &owner, None, T0).await.unwrap();
    guard.finish(store, &d, true, T0).await.unwrap();
    // One network fails on three accounts, then its unknown browsers are challenged on a fourth.
    let accounts = ["a1", "a2", "a3"];
    for (i, account) in accounts.iter().enumerate() {
        let browser = format!("v-{i}");
        let d = fail(
            &guard,
            store,
            &attempt(account, "203.0.113.0/24", Some(&browser)),
            T0 + 1,
        )
        .await;
        assert_eq!(d.verdict(), Verdict::Allow);
    }
    let fourth = guard
        .begin(
            store,
            &attempt("a4", "203.0.113.0/24", Some("v-9")),
            None,
            T0 + 2,
        )
        .await
        .unwrap();
    assert_eq!(
        (fourth.verdict(), fourth.reasons()),
        (Verdict::Challenge, &[SignInReason::NetworkFailures][..])
    );
    // The budget comes back one failure per day / 3.
    let back = guard
        .begin(
            store,
            &attempt("a4", "203.0.113.0/24", Some("v-9")),
            None,
            T0 + 1 + 28_800_000,
        )
        .await
        .unwrap();
    assert_eq!(back.verdict(), Verdict::Allow);
    // A known browser on that network is not counted against it.
    assert_eq!(
        guard
            .begin(store, &owner, None, T0 + 3)
            .await
            .unwrap()
            .verdict(),
        Verdict::Allow
    );
    // Clients without a payload share one browser budget, whatever their network and account.
    for i in 0..4 {
        let network = format!("192.0.{i}.0/24");
        let account = format!("b{i}");
        assert_eq!(
            fail(&guard, store, &attempt(&account, &network, None), T0)
                .await
                .verdict(),
            Verdict::Allow
        );
    }
    let fifth = guard
        .begin(store, &attempt("b9", "192.0.9.0/24", None), None, T0)
        .await
        .unwrap();
    assert_eq!(fifth.reasons(), [SignInReason::BrowserFailures]);
}

/// Case: Quota denials deny with the time left, naming the counter.
pub async fn quota_denials_deny_with_the_time_left(fresh: impl Fresh<(), Store: QuotaStore>) {
    let quotas = network_quotas(fresh.store(()).await, QuotaAlgorithm::Gcra);
    let guard = guard(SignInConfig::default());
    let key = label_key("signin");
    let network = network_label(
        &key,
        NetworkPrefixBits::default(),
        "203.0.113.7".parse().unwrap(),
    );
    for (i, account) in ["ada", "grace", "alan", "edsger"].iter().enumerate() {
        let attempt = SignInAttempt {
            network_quota_id: Some(&network),
            ..attempt(account, "203.0.113.0/24", None)
        };
        let decision = guard
            .check_quotas(&quotas, &attempt, T0)
            .await
            .expect("quotas");
        if i < 3 {
            assert_eq!(decision, None, "attempt {i}");
        } else {
            let decision = decision.expect("the fourth is denied");
            assert_eq!(
                (decision.verdict(), decision.reasons()),
                (Verdict::Deny, &[SignInReason::NetworkQuota][..])
            );
            // GCRA: one more fits an interval (20 s) after the burst, not a minute later.
            assert_eq!(decision.retry_after_secs(), Some(20));
            let spent = decision.spent().expect("the spent counter");
            assert_eq!((spent.quota, spent.window_secs), (3, 60));
        }
    }
    // The account's own counter (2) stops a third attempt at one account from another network.
    let elsewhere = network_label(
        &key,
        NetworkPrefixBits::default(),
        "198.51.100.7".parse().unwrap(),
    );
    let ada = SignInAttempt {
        network_quota_id: Some(&elsewhere),
        ..attempt("ada", "198.51.100.0/24", None)
    };
    assert_eq!(guard.check_quotas(&quotas, &ada, T0).await.unwrap(), None);
    let third = guard
        .check_quotas(&quotas, &ada, T0)
        .await
        .unwrap()
        .expect("denied");
    assert_eq!(third.reasons(), [SignInReason::AccountQuota]);
}

/// Case: A dry run decides and counts but allows.
pub async fn a_dry_run_decides_and_counts_but_allows(fresh: impl Fresh<(), Store: QuotaStore>) {
    let store = &fresh.store(()).await;
    let guard = guard(
        SignInConfig::builder()
            .lock_failures(1)
            .dry_run(true)
            .build()
            .unwrap(),
    );
    let attacker = attempt("ada", "203.0.113.0/24", None);
    fail(&guard, store, &attacker, T0).await;
    let decision = guard
        .begin(store, &attacker, None, T0 + 1)
        .await
        .expect("begin");
    assert!(decision.dry_run());
    assert_eq!(decision.verdict(), Verdict::Allow);
    assert_eq!(decision.decided(), Verdict::Challenge);
    assert_eq!(decision.reasons(), [SignInReason::LockedForUnknownBrowsers]);
}
