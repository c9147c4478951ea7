//! Cases about subjects and verified keys.

use super::*;
use crate::testing::join_all;

/// Case: a subject's kind never changes.
pub async fn subjects_keep_their_kind(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let ann = account(&d, 1);
    assert!(d.subject(&ann).await.expect("read").is_none());
    d.at(T0)
        .put_subject(&ann, SubjectKind::Person)
        .await
        .expect("new");
    d.at(T0 + 5)
        .put_subject(&ann, SubjectKind::Person)
        .await
        .expect("refresh");
    let record = d.subject(&ann).await.expect("read").expect("present");
    assert_eq!(
        (record.kind, record.updated_at),
        (SubjectKind::Person, T0 + 5)
    );
    assert_eq!(
        d.at(T0 + 9).put_subject(&ann, SubjectKind::Agent).await,
        Err(DirectoryError::KindConflict)
    );
    let record = d.subject(&ann).await.expect("read").expect("present");
    assert_eq!(
        (record.kind, record.updated_at),
        (SubjectKind::Person, T0 + 5),
        "unchanged"
    );
    let json = serde_json::to_value(&record).expect("json");
    assert_eq!(
        json,
        serde_json::json!({"id": ann.as_str(), "kind": "person", "updatedAt": T0 + 5})
    );
}

/// Case: account ids hold 1–512 characters.
pub async fn account_ids_are_bounded(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    invalid_at(d.subject_id(""), "accountId");
    assert!(d.subject_id("a").is_ok());
    assert!(d.subject_id(&"é".repeat(512)).is_ok());
    invalid_at(d.subject_id(&"a".repeat(513)), "accountId");
    assert_eq!(
        d.subject_id("x").expect("valid").as_str(),
        label_key("suite").subject("x"),
        "the evidence label"
    );
    invalid_at(d.forget_user("").await, "accountId");
}

/// Case: a key belongs to one subject; re-adding one's own refreshes it.
pub async fn keys_belong_to_one_subject(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = register(&d, &[(1, SubjectKind::Person), (2, SubjectKind::Person)]).await;
    let ghost = account(&d, 9);
    assert_eq!(
        d.at(T0)
            .add_verified_key(&ghost, &email("g@example.com"))
            .await,
        Err(DirectoryError::UnknownSubject { field: "subject" })
    );
    let first = d
        .at(T0)
        .add_verified_key(&s[0], &email(" Ann@Example.com "))
        .await
        .expect("add");
    assert_eq!((first.issuer.as_str(), first.verified_at), ("app", T0));
    let again = d
        .at(T0 + 7)
        .add_verified_key(&s[0], &email("Ann@EXAMPLE.COM"))
        .await
        .expect("same key, same subject");
    assert_eq!(
        (again.digest.clone(), again.verified_at),
        (first.digest.clone(), T0 + 7)
    );
    assert_eq!(
        d.at(T0)
            .add_verified_key(&s[1], &email("Ann@example.com"))
            .await,
        Err(DirectoryError::KeyClaimed)
    );
    let found = d
        .find_subject(&email("Ann@example.com"))
        .await
        .expect("find");
    assert_eq!(found.as_ref(), Some(&s[0]), "the claim did not move it");
    assert!(
        d.find_subject(&email("ann@example.com"))
            .await
            .expect("find")
            .is_none(),
        "local part kept"
    );
    invalid_at(d.find_subject(&email("not-an-email")).await, "value");
    let record = serde_json::to_string(&again).expect("json");
    assert!(
        !record.contains("Ann@"),
        "the value is never stored: {record}"
    );
}

/// Case: concurrent claims of one key by different subjects: exactly one wins.
pub async fn concurrent_claims_have_one_winner(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let accounts: Vec<(u32, SubjectKind)> = (1..=8).map(|n| (n, SubjectKind::Person)).collect();
    let subjects = register(&d, &accounts).await;
    let key = KeyInput::new(KeyType::PublicKey, "app", "SHA256:abcdef");
    let claims = subjects
        .iter()
        .map(|s| d.at(T0).add_verified_key(s, &key))
        .collect();
    let outcomes = join_all(claims).await;
    let winners: Vec<&SubjectId> = outcomes
        .iter()
        .zip(&subjects)
        .filter(|(o, _)| o.is_ok())
        .map(|(_, s)| s)
        .collect();
    assert_eq!(winners.len(), 1, "one winner: {outcomes:?}");
    for outcome in &outcomes {
        assert!(
            matches!(outcome, Ok(_) | Err(DirectoryError::KeyClaimed)),
            "{outcome:?}"
        );
    }
    let owner = d.find_subject(&key).await.expect("find");
    assert_eq!(owner.as_ref(), Some(winners[0]));
}

/// Case: subjects sharing an email domain, a similar address or a fingerprint stay separate subjects.
pub async fn subjects_are_never_merged(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = register(&d, &[(1, SubjectKind::Person), (2, SubjectKind::Person)]).await;
    d.at(T0)
        .add_verified_key(&s[0], &email("Pat@example.com"))
        .await
        .expect("add");
    d.at(T0)
        .add_verified_key(&s[1], &email("pat@example.com"))
        .await
        .expect("another address");
    let print = |issuer: &str| KeyInput::new(KeyType::PublicKey, issuer, "SHA256:same");
    d.at(T0)
        .add_verified_key(&s[0], &print("idp-a"))
        .await
        .expect("add");
    d.at(T0)
        .add_verified_key(&s[1], &print("idp-b"))
        .await
        .expect("another issuer, another key");
    assert_eq!(
        d.find_subject(&email("Pat@example.com"))
            .await
            .expect("find"),
        Some(s[0].clone())
    );
    assert_eq!(
        d.find_subject(&email("pat@example.com"))
            .await
            .expect("find"),
        Some(s[1].clone())
    );
    assert_eq!(
        d.find_subject(&print("idp-b")).await.expect("find"),
        Some(s[1].clone())
    );
    for subject in &s {
        assert!(
            d.subject(subject).await.expect("read").is_some(),
            "both subjects remain"
        );
    }
    assert!(d.delete_subject(&s[0]).await.expect("delete"));
    assert_eq!(
        d.find_subject(&email("pat@example.com"))
            .await
            .expect("find"),
        Some(s[1].clone())
    );
}

/// Case: removing a key deletes only that subject's key.
pub async fn key_removal_is_per_subject(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = register(&d, &[(1, SubjectKind::Person), (2, SubjectKind::Agent)]).await;
    let key = KeyInput::new(KeyType::External, "github", "12345");
    d.at(T0).add_verified_key(&s[0], &key).await.expect("add");
    assert!(
        !d.remove_key(&s[1], &key).await.expect("remove"),
        "not its key"
    );
    assert_eq!(
        d.find_subject(&key).await.expect("find"),
        Some(s[0].clone())
    );
    assert!(d.remove_key(&s[0], &key).await.expect("remove"));
    assert!(
        !d.remove_key(&s[0], &key).await.expect("remove"),
        "gone already"
    );
    assert!(d.find_subject(&key).await.expect("find").is_none());
    d.at(T0)
        .add_verified_key(&s[1], &key)
        .await
        .expect("free to claim now");
}
