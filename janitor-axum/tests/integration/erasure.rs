//! Erasure through the handle, on both stores: an account erased with the browser it shares with another
//! account, and a browser erased alone. Neither resets the other account's lockout.

use janitor_axum::handle::Stores;
use janitor_axum::Janitor;
use janitor_core::directory::{KeyInput, KeyType, SubjectKind};
use janitor_core::erasure::{AccountErasure, ErasureError};
use janitor_core::evidence::{
    Action, ActivityKey, DeviceLinkInput, EventInput, EventType, SubjectId, VelocityQuery,
    VerificationInput, VerificationMethod,
};
use janitor_core::{now_ms, VisitorId, VisitorStore};

use crate::common;
use common::stores::on_both_stores;

/// A browser the endpoint identified: its visitor row and first observation.
async fn browser(janitor: &Janitor) -> VisitorId {
    let payload = janitor_core::testing::mac_payload();
    let first = janitor.engine().identify(&payload, None).await.unwrap();
    first.identity.visitor_id
}

/// Five failed sign-ins against `account` from `browser`: enough for the application to lock it.
async fn lock_out(janitor: &Janitor, account: &SubjectId, browser: &VisitorId) {
    for i in 0..5 {
        let event = EventInput::builder(&format!("lockout-{i}"), EventType::LoginFailure)
            .action(Action::SignIn)
            .subject(account.clone())
            .visitor(browser.clone())
            .build()
            .unwrap();
        assert!(janitor.evidence().record(&event).await.unwrap().recorded);
    }
}

async fn failures(janitor: &Janitor, account: &SubjectId) -> u32 {
    let query = VelocityQuery::new(ActivityKey::Subject(account.clone())).action(Action::SignIn);
    janitor.evidence().velocity(&query).await.unwrap().total
}

/// Alice signs in from `browser`: a verified key, the sign-in, and the browser linked to her.
async fn sign_in(janitor: &Janitor, alice: &SubjectId, browser: &VisitorId) {
    janitor
        .directory()
        .put_subject(alice, SubjectKind::Person)
        .await
        .unwrap();
    let email = KeyInput::new(KeyType::Email, "app", "alice@example.com");
    janitor
        .directory()
        .add_verified_key(alice, &email)
        .await
        .unwrap();
    let event = EventInput::builder("alice-in", EventType::LoginSuccess)
        .action(Action::SignIn)
        .subject(alice.clone())
        .visitor(browser.clone())
        .build()
        .unwrap();
    janitor.evidence().record(&event).await.unwrap();
    let link = DeviceLinkInput {
        subject: alice.clone(),
        visitor: browser.clone(),
        verification: VerificationInput {
            method: VerificationMethod::Passkey,
            issuer: "auth".into(),
            event_id: "alice-passkey".into(),
            verified_at: now_ms(),
        },
        expires_at: now_ms() + 3_600_000,
    };
    janitor.evidence().link(&link).await.unwrap();
}

async fn erasing_an_account_keeps_another_accounts_lockout<S: Stores>(stores: S) {
    let janitor = Janitor::new(common::config("erasure").build().unwrap(), stores);
    let shared = browser(&janitor).await;
    let dave = janitor.evidence().subject_id("dave");
    let alice = janitor.evidence().subject_id("alice");
    lock_out(&janitor, &dave, &shared).await;
    sign_in(&janitor, &alice, &shared).await;

    let report = janitor.erase_account("alice", Some(&shared)).await.unwrap();
    let expected = AccountErasure {
        subject_existed: true,
        events_deleted: 1,
        events_detached: 5,
        links_deleted: 1,
        keys_deleted: 1,
        visitor_erased: true,
        ..AccountErasure::default()
    };
    assert_eq!(report, expected);
    assert_eq!(failures(&janitor, &dave).await, 5, "dave stays locked out");
    assert_eq!(failures(&janitor, &alice).await, 0);
    let email = KeyInput::new(KeyType::Email, "app", "alice@example.com");
    assert_eq!(
        janitor.directory().find_subject(&email).await.unwrap(),
        None
    );
    assert!(janitor
        .evidence()
        .list(&alice, 20)
        .await
        .unwrap()
        .is_empty());
    assert!(janitor.directory().subject(&alice).await.unwrap().is_none());
    let history = janitor
        .engine()
        .store()
        .recent_observations(&shared, 5, now_ms());
    assert!(
        history.await.unwrap().is_empty(),
        "the browser's observations went"
    );

    let again = janitor.erase_account("alice", Some(&shared)).await.unwrap();
    assert_eq!(again, AccountErasure::default(), "nothing is left to erase");
    assert!(matches!(
        janitor.erase_account("", None).await,
        Err(ErasureError::InvalidAccount(_))
    ));
}

async fn erasing_a_browser_keeps_a_lockout<S: Stores>(stores: S) {
    let janitor = Janitor::new(common::config("erasure-browser").build().unwrap(), stores);
    let shared = browser(&janitor).await;
    let dave = janitor.evidence().subject_id("dave");
    let alice = janitor.evidence().subject_id("alice");
    lock_out(&janitor, &dave, &shared).await;
    sign_in(&janitor, &alice, &shared).await;
    assert!(janitor.erase_visitor(&shared).await.unwrap());
    assert_eq!(failures(&janitor, &dave).await, 5, "dave stays locked out");
    assert_eq!(
        failures(&janitor, &alice).await,
        1,
        "alice's sign-in stays hers"
    );
    assert!(
        janitor
            .evidence()
            .list(&alice, 20)
            .await
            .unwrap()
            .is_empty(),
        "the browser's link went with it"
    );
    // Alice's account is still there to erase, now without a browser.
    let report = janitor.erase_account("alice", None).await.unwrap();
    assert_eq!((report.subject_existed, report.events_deleted), (true, 1));
    assert!(!report.visitor_erased);
    assert_eq!(failures(&janitor, &dave).await, 5);
}

on_both_stores!(
    erasing_an_account_keeps_another_accounts_lockout,
    erasing_a_browser_keeps_a_lockout,
);
