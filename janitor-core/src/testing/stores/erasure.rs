//! Cases about erasing an account and a browser across every store of a family.

use super::*;

/// Case: Erasing an account keeps another account's lockout.
///
/// Dave's account is locked by five failed sign-ins from one browser; alice then signs in from that browser,
/// and is erased with it. Dave's failures are evidence about dave: they stay, without the browser.
pub async fn erasing_an_account_keeps_another_accounts_lockout(
    fresh: impl Fresh<(), Store: Stores>,
) {
    let f = family(fresh).await;
    let shared = f.browser(1).await;
    let daves_own = f.browser(2).await;
    let (alice, dave) = (f.account("alice"), f.account("dave"));
    f.fail_sign_ins("dave-fail", &dave, &shared, 5).await;
    let success = EventInput::builder("alice-in", EventType::LoginSuccess)
        .subject(alice.clone())
        .visitor(shared.clone());
    f.record(success).await;
    f.link(&alice, &shared, "alice-passkey").await;
    let daves_link = f.link(&dave, &daves_own, "dave-passkey").await;
    let (grant, flow) = f.settle_in(&alice, "alice@example.com").await;
    assert_eq!(f.count(ActivityKey::Subject(dave.clone())).await, 5);

    let report = f.erase("alice", Some(&shared)).await;
    let expected = AccountErasure {
        subject_existed: true,
        events_deleted: 1,
        events_detached: 5,
        links_deleted: 1,
        keys_deleted: 1,
        delegations_deleted: 1,
        learning_sessions_deleted: 1,
        visitor_erased: true,
        visitor_not_linked: false,
    };
    assert_eq!(
        report, expected,
        "erasing_an_account_keeps_another_accounts_lockout"
    );
    assert_eq!(
        f.count(ActivityKey::Subject(dave.clone())).await,
        5,
        "dave's failures still count: his lockout holds"
    );
    let sign_in = VelocityQuery::new(ActivityKey::Subject(dave.clone())).action(Action::SignIn);
    let by_action = f
        .evidence
        .at(T0)
        .velocity(&sign_in)
        .await
        .expect("velocity");
    assert_eq!(by_action.counts.get(&EventType::LoginFailure), Some(&5));
    // A retry of one of dave's failures is still a repeat: the detached row kept its digest.
    let retry = f.record(failure("dave-fail-0", &dave, &shared)).await;
    assert!(!retry.recorded, "a retried event is an idempotent repeat");

    assert_eq!(f.count(ActivityKey::Subject(alice.clone())).await, 0);
    assert!(f.evidence.list(&alice, 20).await.expect("list").is_empty());
    assert_eq!(
        f.evidence.list(&dave, 20).await.expect("list"),
        vec![daves_link]
    );
    let email = KeyInput::new(KeyType::Email, "app", "alice@example.com");
    assert_eq!(f.directory.find_subject(&email).await.expect("find"), None);
    assert_eq!(
        f.directory.delegation(&grant.id).await.expect("grant"),
        None
    );
    assert_eq!(f.directory.subject(&alice).await.expect("subject"), None);
    assert!(!f.learning_session(&flow).await, "the labelled flow went");
    assert!(f
        .learning
        .at(T0 + 2)
        .reports(100)
        .await
        .expect("reports")
        .is_empty());
    assert_eq!(
        f.observations(&shared).await,
        0,
        "the browser's observations went"
    );
    assert_eq!(
        f.observations(&daves_own).await,
        1,
        "another browser's stay"
    );
    assert!(f.directory.subject(&dave).await.expect("subject").is_some());
}

/// Case: Erasing an actor detaches it from events about others.
pub async fn erasing_an_actor_detaches_it_from_events_about_others(
    fresh: impl Fresh<(), Store: Stores>,
) {
    let f = family(fresh).await;
    let (alice, bob) = (f.account("alice"), f.account("bob"));
    let inputs = [
        // Alice acted for bob: evidence about bob.
        EventInput::builder("for-bob", EventType::SensitiveAction)
            .action(Action::Payment)
            .subject(bob.clone())
            .actor(alice.clone()),
        EventInput::builder("bob-own", EventType::LoginSuccess).subject(bob.clone()),
        // About alice, even though bob acted: it goes with her.
        EventInput::builder("for-alice", EventType::SensitiveAction)
            .subject(alice.clone())
            .actor(bob.clone()),
        // Alice acted in a session, about nobody else.
        EventInput::builder("alice-acted", EventType::ActionDenied)
            .session("alice-session")
            .actor(alice.clone()),
    ];
    for input in inputs {
        f.record(input).await;
    }
    let report = f.erase("alice", None).await;
    assert_eq!(
        (
            report.subject_existed,
            report.events_deleted,
            report.events_detached
        ),
        (true, 2, 1),
        "erasing_an_actor_detaches_it_from_events_about_others"
    );
    assert_eq!(
        f.count(ActivityKey::Subject(bob.clone())).await,
        2,
        "bob keeps both"
    );
    let payments = VelocityQuery::new(ActivityKey::Subject(bob.clone())).action(Action::Payment);
    let read = f
        .evidence
        .at(T0)
        .velocity(&payments)
        .await
        .expect("velocity");
    assert_eq!(
        read.total, 1,
        "the detached event is still filed under its action"
    );
    assert_eq!(f.count(ActivityKey::Actor(alice.clone())).await, 0);
    assert_eq!(
        f.count(ActivityKey::Actor(bob.clone())).await,
        0,
        "bob acted for alice only"
    );
    let session = ActivityKey::Session("alice-session".into());
    assert_eq!(f.count(session).await, 0);
    let retry = EventInput::builder("for-bob", EventType::SensitiveAction)
        .action(Action::Payment)
        .subject(bob.clone())
        .actor(alice.clone());
    assert!(!f.record(retry).await.recorded, "still a repeat");
}

/// Case: Erasing a browser deletes its anonymous events.
pub async fn erasing_a_browser_deletes_its_anonymous_events(fresh: impl Fresh<(), Store: Stores>) {
    let f = family(fresh).await;
    let (mine, other) = (f.browser(1).await, f.browser(2).await);
    let alice = f.account("alice");
    let anonymous = |id: &str, session: &str, browser: &VisitorId| {
        EventInput::builder(id, EventType::LoginAttempt)
            .session(session)
            .visitor(browser.clone())
    };
    f.record(anonymous("anon-1", "before-sign-in", &mine)).await;
    f.record(anonymous("anon-2", "before-sign-in", &mine)).await;
    f.record(anonymous("anon-3", "elsewhere", &other)).await;
    let signed_in = EventInput::builder("signed-in", EventType::LoginSuccess)
        .subject(alice.clone())
        .session("before-sign-in")
        .visitor(mine.clone());
    f.record(signed_in).await;
    let report = f.erase("alice", Some(&mine)).await;
    assert_eq!(
        (
            report.events_deleted,
            report.events_detached,
            report.visitor_erased
        ),
        (3, 0, true),
        "erasing_a_browser_deletes_its_anonymous_events"
    );
    let before = ActivityKey::Session("before-sign-in".into());
    assert_eq!(f.count(before).await, 0);
    let elsewhere = ActivityKey::Session("elsewhere".into());
    assert_eq!(
        f.count(elsewhere).await,
        1,
        "another browser's anonymous event stays"
    );
    assert_eq!(f.observations(&other).await, 1);
}

/// Case: Erasing an account takes only a browser linked to it.
///
/// Visitor ids reach page scripts, so an account holder could present another's: the browser goes with the
/// account only when it signed in to it or holds a device link to it, and the report says when it stayed.
pub async fn erasing_an_account_takes_only_its_own_browser(fresh: impl Fresh<(), Store: Stores>) {
    let f = family(fresh).await;
    let (victims, signed_in, linked) = (f.browser(1).await, f.browser(2).await, f.browser(3).await);
    let (mallory, alice, bob) = (f.account("mallory"), f.account("alice"), f.account("bob"));
    // Mallory only failed to sign in from the victim's browser, and the victim signed in as alice there.
    f.record(failure("mallory-fail", &mallory, &victims)).await;
    let alice_in = |id: &str, browser: &VisitorId| {
        EventInput::builder(id, EventType::LoginSuccess)
            .subject(alice.clone())
            .visitor(browser.clone())
    };
    f.record(alice_in("alice-there", &victims)).await;
    let report = f.erase("mallory", Some(&victims)).await;
    assert_eq!(
        (
            report.subject_existed,
            report.events_deleted,
            report.visitor_erased,
            report.visitor_not_linked
        ),
        (true, 1, false, true),
        "erasing_an_account_takes_only_its_own_browser: an unlinked browser stays"
    );
    assert_eq!(
        f.observations(&victims).await,
        1,
        "the victim's browser kept its history"
    );
    assert_eq!(f.count(ActivityKey::Subject(alice.clone())).await, 1);
    // A browser that signed in to the account goes with it, and so does one with a device link.
    f.record(alice_in("alice-in", &signed_in)).await;
    let report = f.erase("alice", Some(&signed_in)).await;
    assert!(
        report.visitor_erased && !report.visitor_not_linked,
        "{report:?}"
    );
    assert_eq!(f.observations(&signed_in).await, 0);
    f.record(EventInput::builder("bob-in", EventType::LoginSuccess).subject(bob.clone()))
        .await;
    f.link(&bob, &linked, "bob-passkey").await;
    let report = f.erase("bob", Some(&linked)).await;
    assert!(
        report.visitor_erased && !report.visitor_not_linked,
        "{report:?}"
    );
    assert_eq!(f.observations(&linked).await, 0);
    assert_eq!(f.observations(&victims).await, 1);
}

/// Case: Erasing a browser alone keeps lockouts.
pub async fn erasing_a_browser_alone_keeps_lockouts(fresh: impl Fresh<(), Store: Stores>) {
    let f = family(fresh).await;
    let browser = f.browser(1).await;
    let dave = f.account("dave");
    f.fail_sign_ins("dave-fail", &dave, &browser, 5).await;
    let anonymous = EventInput::builder("anon", EventType::LoginAttempt)
        .session("anonymous")
        .visitor(browser.clone());
    f.record(anonymous).await;
    f.link(&dave, &browser, "dave-passkey").await;
    assert!(f.stores.erase_visitor(&browser).await.expect("erase"));
    assert_eq!(
        f.count(ActivityKey::Subject(dave.clone())).await,
        5,
        "erasing_a_browser_alone_keeps_lockouts"
    );
    assert_eq!(f.count(ActivityKey::Session("anonymous".into())).await, 0);
    assert!(
        f.evidence.list(&dave, 20).await.expect("list").is_empty(),
        "its link went"
    );
    assert_eq!(f.observations(&browser).await, 0);
    assert!(f.directory.subject(&dave).await.expect("subject").is_some());
    assert!(
        !f.stores.erase_visitor(&browser).await.expect("again"),
        "gone already"
    );
    assert_eq!(f.count(ActivityKey::Subject(dave)).await, 5);
}

/// Case: Erasure is idempotent.
pub async fn erasure_is_idempotent(fresh: impl Fresh<(), Store: Stores>) {
    let f = family(fresh).await;
    let browser = f.browser(1).await;
    let (alice, dave) = (f.account("alice"), f.account("dave"));
    f.fail_sign_ins("dave-fail", &dave, &browser, 3).await;
    f.record(failure("alice-fail", &alice, &browser)).await;
    f.link(&alice, &browser, "alice-passkey").await;
    f.settle_in(&alice, "alice@example.com").await;
    let first = f.erase("alice", Some(&browser)).await;
    assert!(first.subject_existed && first.visitor_erased);
    let second = f.erase("alice", Some(&browser)).await;
    assert_eq!(second, AccountErasure::default(), "erasure_is_idempotent");
    assert_eq!(f.count(ActivityKey::Subject(dave.clone())).await, 3);
    // An account that never existed is no error either.
    assert_eq!(f.erase("nobody", None).await, AccountErasure::default());
    let refused = erase_account(&f.stores, &label_key("suite"), "", None).await;
    assert!(matches!(
        refused,
        Err(crate::erasure::ErasureError::InvalidAccount(_))
    ));
}

/// Case: Erasing without a browser leaves the browser.
pub async fn erasing_without_a_browser_leaves_the_browser(fresh: impl Fresh<(), Store: Stores>) {
    let f = family(fresh).await;
    let browser = f.browser(1).await;
    let (alice, dave) = (f.account("alice"), f.account("dave"));
    f.fail_sign_ins("dave-fail", &dave, &browser, 5).await;
    f.record(failure("alice-fail", &alice, &browser)).await;
    let anonymous = EventInput::builder("anon", EventType::LoginAttempt)
        .session("anonymous")
        .visitor(browser.clone());
    f.record(anonymous).await;
    f.link(&alice, &browser, "alice-passkey").await;
    let daves_link = f.link(&dave, &browser, "dave-passkey").await;
    let report = f.erase("alice", None).await;
    let expected = AccountErasure {
        subject_existed: true,
        events_deleted: 1,
        links_deleted: 1,
        ..AccountErasure::default()
    };
    assert_eq!(
        report, expected,
        "erasing_without_a_browser_leaves_the_browser"
    );
    assert_eq!(f.count(ActivityKey::Subject(dave.clone())).await, 5);
    assert_eq!(f.count(ActivityKey::Session("anonymous".into())).await, 1);
    assert_eq!(
        f.evidence.list(&dave, 20).await.expect("list"),
        vec![daves_link]
    );
    assert_eq!(f.observations(&browser).await, 1, "the browser stays");
    assert!(
        f.stores.erase_visitor(&browser).await.expect("erase"),
        "its row too"
    );
}
