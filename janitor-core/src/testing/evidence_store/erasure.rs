//! Cases about erasure, retention and subject rows.

use super::*;
use crate::config::DAY_MS;

/// Case: Erasure removes exactly the owner.
pub async fn erasure_removes_exactly_the_owner(
    fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>,
) {
    let e = evidence(fresh.store(visitors()).await, defaults());
    let alice = subject(&e, 1);
    let bob = subject(&e, 2);
    let inputs = [
        event("e-1", EventType::LoginFailure).subject(alice.clone()),
        event("e-2", EventType::SensitiveAction)
            .subject(bob.clone())
            .actor(alice.clone()),
        event("e-3", EventType::LoginSuccess)
            .subject(bob.clone())
            .session("shared-sess"),
        event("e-4", EventType::LoginAttempt).session("shared-sess"),
        event("e-5", EventType::LoginAttempt).session("other-sess"),
    ];
    record_all(&e, inputs, T0).await;
    let link = link_input(&alice, &visitor(1), "keep-link", T0, T0 + DAY_MS);
    e.at(T0).link(&link).await.expect("link");
    assert_eq!(
        e.delete_subject_events(&alice).await.expect("delete"),
        2,
        "erasure_removes_exactly_the_owner: as subject and as actor"
    );
    let bob_now = count(
        &e,
        VelocityQuery::new(ActivityKey::Subject(bob.clone())),
        T0,
    )
    .await;
    assert_eq!(bob_now.total, 1, "bob keeps his own event");
    assert_eq!(
        e.list(&alice, 20).await.expect("list").len(),
        1,
        "links stay"
    );
    assert_eq!(e.delete_session(" shared-sess ").await.expect("delete"), 2);
    let session = VelocityQuery::new(ActivityKey::Session("other-sess".into()));
    assert_eq!(count(&e, session, T0).await.total, 1, "other session stays");
    assert_eq!(e.delete_session("shared-sess").await.expect("delete"), 0);
    assert!(matches!(
        e.delete_session("").await,
        Err(EvidenceError::Invalid(ref err)) if err.field == "sessionId"
    ));
}

/// Case: Subject deletion cascades.
pub async fn subject_deletion_cascades(fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>) {
    let e = evidence(fresh.store(visitors()).await, defaults());
    let alice = subject(&e, 1);
    let bob = subject(&e, 2);
    let inputs = [
        event("c-1", EventType::LoginFailure).subject(alice.clone()),
        event("c-2", EventType::SensitiveAction)
            .subject(bob.clone())
            .actor(alice.clone()),
        event("c-3", EventType::LoginSuccess).subject(bob.clone()),
    ];
    record_all(&e, inputs, T0).await;
    e.at(T0)
        .link(&link_input(&alice, &visitor(1), "c-link", T0, T0 + DAY_MS))
        .await
        .expect("link");
    let bob_link = e
        .at(T0)
        .link(&link_input(&bob, &visitor(1), "c-bob", T0, T0 + DAY_MS))
        .await
        .expect("link");
    assert!(e.delete_subject(&alice).await.expect("delete"));
    assert!(
        !e.delete_subject(&alice).await.expect("delete"),
        "gone already"
    );
    let alice_now = count(
        &e,
        VelocityQuery::new(ActivityKey::Subject(alice.clone())),
        T0,
    )
    .await;
    assert_eq!(
        alice_now.total, 0,
        "subject_deletion_cascades: subject rows"
    );
    let bob_now = count(
        &e,
        VelocityQuery::new(ActivityKey::Subject(bob.clone())),
        T0,
    )
    .await;
    assert_eq!(
        bob_now.total, 1,
        "subject_deletion_cascades: the acted-on row went with the actor"
    );
    assert!(e.list(&alice, 20).await.expect("list").is_empty());
    assert_eq!(e.list(&bob, 20).await.expect("list"), vec![bob_link]);
    // A later event recreates the subject.
    let back = event("c-4", EventType::LoginAttempt)
        .subject(alice.clone())
        .build()
        .expect("valid");
    assert!(e.at(T0 + 1).record(&back).await.expect("record").recorded);
}

/// Case: Visitor erasure keeps events about subjects.
///
/// Erasing a browser deletes its links and its events that name no subject; events about a subject stay,
/// without the browser, so a browser's erasure never resets an account's lockout.
pub async fn visitor_erasure_keeps_events_about_subjects(
    fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>,
) {
    let e = evidence(fresh.store(visitors()).await, defaults());
    let alice = subject(&e, 1);
    let inputs = [
        event("v-1", EventType::LoginFailure)
            .subject(alice.clone())
            .visitor(visitor(1)),
        event("v-2", EventType::LoginFailure)
            .subject(alice.clone())
            .visitor(visitor(2)),
        event("v-3", EventType::LoginAttempt)
            .session("anonymous")
            .visitor(visitor(1)),
    ];
    record_all(&e, inputs, T0).await;
    e.at(T0)
        .link(&link_input(&alice, &visitor(1), "v-link", T0, T0 + DAY_MS))
        .await
        .expect("link");
    e.at(T0)
        .link(&link_input(
            &alice,
            &visitor(2),
            "v-link-2",
            T0,
            T0 + DAY_MS,
        ))
        .await
        .expect("link");
    assert_eq!(
        e.delete_visitor(&visitor(1)).await.expect("delete"),
        2,
        "visitor_erasure_keeps_events_about_subjects: the anonymous event and the link"
    );
    let left = count(
        &e,
        VelocityQuery::new(ActivityKey::Subject(alice.clone())),
        T0,
    )
    .await;
    assert_eq!(
        left.total, 2,
        "visitor_erasure_keeps_events_about_subjects: alice's events stay"
    );
    let anonymous = VelocityQuery::new(ActivityKey::Session("anonymous".into()));
    assert_eq!(count(&e, anonymous, T0).await.total, 0);
    let links = e.list(&alice, 20).await.expect("list");
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].visitor_id, visitor(2));
    assert_eq!(e.delete_visitor(&visitor(1)).await.expect("again"), 0);
}

/// Case: Cleanup is bounded.
pub async fn cleanup_is_bounded(fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>) {
    let e = evidence(fresh.store(visitors()).await, short());
    let alice = subject(&e, 1);
    for n in 0..5 {
        let input = event(&format!("x-{n}"), EventType::LoginAttempt)
            .subject(alice.clone())
            .build()
            .expect("valid");
        e.at(T0 + n).record(&input).await.expect("record");
    }
    let fresh = event("x-fresh", EventType::LoginAttempt)
        .subject(alice.clone())
        .build()
        .expect("valid");
    e.at(T0 + DAY_MS).record(&fresh).await.expect("record");
    let ending = link_input(&alice, &visitor(1), "x-link", T0, T0 + 10);
    e.at(T0).link(&ending).await.expect("link");
    let lasting = link_input(&alice, &visitor(2), "x-link-2", T0, T0 + 3 * DAY_MS);
    e.at(T0).link(&lasting).await.expect("link");

    // Retention is one day for both: events expire at T0 + n + 1 day; the first link retires at T0 + 10 and
    // goes one day later.
    let now = T0 + DAY_MS + 10;
    let mut deleted = Vec::new();
    for _ in 0..4 {
        let report = e.at(now).cleanup(2).await.expect("cleanup");
        deleted.push((report.events_deleted, report.links_deleted));
    }
    assert_eq!(
        deleted,
        vec![(2, 1), (2, 0), (1, 0), (0, 0)],
        "cleanup_is_bounded: batches"
    );
    let left = count(
        &e,
        VelocityQuery::new(ActivityKey::Subject(alice.clone())).window_ms(DAY_MS),
        now,
    )
    .await;
    assert_eq!(left.total, 1, "cleanup_is_bounded: the fresh event stays");
    assert_eq!(e.list(&alice, 20).await.expect("list").len(), 1);
    for bad in [0, 1001] {
        assert!(
            matches!(e.at(now).cleanup(bad).await, Err(EvidenceError::Invalid(ref err)) if err.field == "batch"),
            "cleanup_is_bounded: batch {bad}"
        );
    }
    assert!(e.at(now).cleanup(1000).await.is_ok());
}

/// Case: Subject kinds do not change.
pub async fn subject_kinds_do_not_change(fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>) {
    let e = evidence(fresh.store(visitors()).await, defaults());
    let agent = subject(&e, 7);
    e.at(T0)
        .register_subject(&agent, SubjectKind::Agent)
        .await
        .expect("register");
    e.at(T0 + 1)
        .register_subject(&agent, SubjectKind::Agent)
        .await
        .expect("same kind again");
    let input = event("k-agent", EventType::SensitiveAction)
        .actor(agent.clone())
        .build()
        .expect("valid");
    assert!(e.at(T0).record(&input).await.expect("record").recorded);
    assert_eq!(
        e.at(T0).register_subject(&agent, SubjectKind::Person).await,
        Err(EvidenceError::SubjectKindConflict),
        "subject_kinds_do_not_change: agent to person"
    );
    // A subject first named by an event is a person.
    let person = subject(&e, 8);
    let input = event("k-person", EventType::LoginSuccess)
        .subject(person.clone())
        .build()
        .expect("valid");
    e.at(T0).record(&input).await.expect("record");
    assert_eq!(
        e.at(T0).register_subject(&person, SubjectKind::Agent).await,
        Err(EvidenceError::SubjectKindConflict),
        "subject_kinds_do_not_change: implicit person"
    );
    e.at(T0)
        .register_subject(&person, SubjectKind::Person)
        .await
        .expect("person stays person");
}
