//! Cases about recording events and counting activity.

use super::*;
use crate::config::DAY_MS;
use crate::Clock;

/// Case: Recording is idempotent.
pub async fn recording_is_idempotent(fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>) {
    let e = evidence(fresh.store(visitors()).await, defaults());
    let alice = subject(&e, 1);
    let input = event("evt-1", EventType::LoginFailure)
        .action(Action::SignIn)
        .subject(alice.clone())
        .session("sess-1")
        .visitor(visitor(1))
        .build()
        .expect("valid");
    let first = e.at(T0).record(&input).await.expect("record");
    assert!(first.recorded, "recording_is_idempotent: first");
    let again = e.at(T0 + 1000).record(&input).await.expect("repeat");
    assert!(!again.recorded, "recording_is_idempotent: repeat");
    // The id is trimmed before it is labelled: padding is the same event.
    let padded = event("  evt-1\t", EventType::LoginFailure)
        .action(Action::SignIn)
        .subject(alice.clone())
        .session(" sess-1 ")
        .visitor(visitor(1))
        .build()
        .expect("valid");
    assert!(
        !e.at(T0 + 2000)
            .record(&padded)
            .await
            .expect("repeat")
            .recorded,
        "recording_is_idempotent: trimmed repeat"
    );
    let changes = [
        event("evt-1", EventType::LoginSuccess)
            .action(Action::SignIn)
            .subject(alice.clone())
            .session("sess-1")
            .visitor(visitor(1)),
        event("evt-1", EventType::LoginFailure)
            .subject(alice.clone())
            .session("sess-1")
            .visitor(visitor(1)),
        event("evt-1", EventType::LoginFailure)
            .action(Action::SignIn)
            .subject(alice.clone())
            .session("sess-2")
            .visitor(visitor(1)),
        event("evt-1", EventType::LoginFailure)
            .action(Action::SignIn)
            .subject(alice.clone())
            .session("sess-1"),
        event("evt-1", EventType::LoginFailure)
            .action(Action::SignIn)
            .actor(alice.clone())
            .session("sess-1")
            .visitor(visitor(1)),
    ];
    for (n, change) in changes.into_iter().enumerate() {
        let result = e
            .at(T0 + 3000)
            .record(&change.build().expect("valid"))
            .await;
        assert_eq!(
            result,
            Err(EvidenceError::IdempotencyConflict),
            "recording_is_idempotent: change {n}"
        );
    }
    let summary = count(
        &e,
        VelocityQuery::new(ActivityKey::Subject(alice)),
        T0 + 5000,
    )
    .await;
    assert_eq!(summary.total, 1, "recording_is_idempotent: stored once");
    assert_eq!(summary.counts.get(&EventType::LoginFailure), Some(&1));
}

/// Case: Velocity counts the window.
pub async fn velocity_counts_the_window(fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>) {
    let e = evidence(fresh.store(visitors()).await, defaults());
    let alice = subject(&e, 1);
    let window = 60_000;
    let now = T0 + window;
    // Recorded before, at both edges of, inside, and after the window [now - window, now].
    for (n, at) in [T0 - 1, T0, T0 + 1, now, now + 1].into_iter().enumerate() {
        let input = event(&format!("w-{n}"), EventType::LoginAttempt)
            .subject(alice.clone())
            .build()
            .expect("valid");
        e.at(at).record(&input).await.expect("record");
    }
    let summary = count(
        &e,
        VelocityQuery::new(ActivityKey::Subject(alice.clone())).window_ms(window),
        now,
    )
    .await;
    assert_eq!(
        summary.total, 3,
        "velocity_counts_the_window: edges inclusive"
    );
    assert!(!summary.saturated);
    assert_eq!(summary.observed_at, now);
    assert_eq!(summary.window_ms, window);
    assert_eq!(summary.action, None);
    assert_eq!(
        summary.counts.into_iter().collect::<Vec<_>>(),
        vec![(EventType::LoginAttempt, 3)]
    );
    let nobody = count(
        &e,
        VelocityQuery::new(ActivityKey::Subject(subject(&e, 9))),
        now,
    )
    .await;
    assert_eq!(
        nobody.total, 0,
        "velocity_counts_the_window: unknown subject"
    );
    assert!(nobody.counts.is_empty());
    for bad in [999, 86_400_001] {
        let query = VelocityQuery::new(ActivityKey::Subject(alice.clone())).window_ms(bad);
        match e.at(now).velocity(&query).await {
            Err(EvidenceError::Invalid(err)) => assert_eq!(err.field, "windowMs"),
            other => panic!("velocity_counts_the_window: window {bad} gave {other:?}"),
        }
    }
}

/// Case: Velocity reads each key and action.
pub async fn velocity_reads_each_key_and_action(
    fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>,
) {
    let e = evidence(fresh.store(visitors()).await, defaults());
    let alice = subject(&e, 1);
    let agent = subject(&e, 2);
    let inputs = [
        event("k-1", EventType::LoginFailure)
            .action(Action::SignIn)
            .subject(alice.clone())
            .session("sess-a"),
        event("k-2", EventType::LoginFailure)
            .action(Action::SignIn)
            .subject(alice.clone()),
        event("k-3", EventType::SensitiveAction)
            .action(Action::Payment)
            .subject(alice.clone())
            .actor(agent.clone())
            .session("sess-a"),
        event("k-4", EventType::ActionDenied)
            .action(Action::Payment)
            .actor(agent.clone()),
        event("k-5", EventType::RecoveryRequested).session("sess-b"),
    ];
    for (n, input) in inputs.into_iter().enumerate() {
        e.at(T0 + n as i64)
            .record(&input.build().expect("valid"))
            .await
            .expect("record");
    }
    let now = T0 + 10;
    let of = |summary: ActivitySummary| summary.counts.into_iter().collect::<Vec<_>>();
    let subject_all = count(
        &e,
        VelocityQuery::new(ActivityKey::Subject(alice.clone())),
        now,
    )
    .await;
    assert_eq!(
        of(subject_all),
        vec![
            (EventType::LoginFailure, 2),
            (EventType::SensitiveAction, 1)
        ],
        "velocity_reads_each_key_and_action: subject"
    );
    let subject_payment = count(
        &e,
        VelocityQuery::new(ActivityKey::Subject(alice.clone())).action(Action::Payment),
        now,
    )
    .await;
    assert_eq!(subject_payment.action, Some(Action::Payment));
    assert_eq!(of(subject_payment), vec![(EventType::SensitiveAction, 1)]);
    let actor = count(
        &e,
        VelocityQuery::new(ActivityKey::Actor(agent.clone())),
        now,
    )
    .await;
    assert_eq!(
        of(actor),
        vec![
            (EventType::SensitiveAction, 1),
            (EventType::ActionDenied, 1)
        ],
        "velocity_reads_each_key_and_action: actor"
    );
    let actor_sign_in = count(
        &e,
        VelocityQuery::new(ActivityKey::Actor(agent)).action(Action::SignIn),
        now,
    )
    .await;
    assert_eq!(actor_sign_in.total, 0);
    // Sessions are read by the raw id the application holds, trimmed as when recorded.
    let session = count(
        &e,
        VelocityQuery::new(ActivityKey::Session(" sess-a ".into())),
        now,
    )
    .await;
    assert_eq!(
        of(session),
        vec![
            (EventType::LoginFailure, 1),
            (EventType::SensitiveAction, 1)
        ],
        "velocity_reads_each_key_and_action: session"
    );
    let other = count(
        &e,
        VelocityQuery::new(ActivityKey::Session("sess-b".into())),
        now,
    )
    .await;
    assert_eq!(of(other), vec![(EventType::RecoveryRequested, 1)]);
    let blank = e
        .at(now)
        .velocity(&VelocityQuery::new(ActivityKey::Session("  ".into())))
        .await;
    assert!(matches!(blank, Err(EvidenceError::Invalid(ref err)) if err.field == "sessionId"));
}

/// Case: Velocity saturates newest first.
pub async fn velocity_saturates_newest_first(
    fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore + Clone>,
) {
    let e = evidence(fresh.store(visitors()).await, small());
    let alice = subject(&e, 1);
    let types = [
        EventType::LoginAttempt,
        EventType::LoginAttempt,
        EventType::LoginFailure,
        EventType::LoginFailure,
        EventType::LoginFailure,
    ];
    for (n, event_type) in types.into_iter().enumerate() {
        let input = event(&format!("s-{n}"), event_type)
            .subject(alice.clone())
            .build()
            .expect("valid");
        e.at(T0 + n as i64).record(&input).await.expect("record");
    }
    let query = VelocityQuery::new(ActivityKey::Subject(alice.clone()));
    let summary = count(&e, query.clone(), T0 + 10).await;
    assert!(summary.saturated, "velocity_saturates_newest_first: 5 > 3");
    assert_eq!(summary.total, 3);
    // The newest three are counted; the older attempts are not (the counts are lower bounds).
    assert_eq!(
        summary.counts.into_iter().collect::<Vec<_>>(),
        vec![(EventType::LoginFailure, 3)],
        "velocity_saturates_newest_first: newest counted"
    );
    // Exactly max events: not saturated.
    let exact = count(&e, query.clone(), T0 + 2 + 900_000).await;
    assert_eq!(
        (exact.total, exact.saturated),
        (3, false),
        "three in the window"
    );

    // Equal times are ordered by the stored id, descending.
    let bob = subject(&e, 2);
    let config = EvidenceConfig::builder()
        .max_events_per_query(1)
        .build()
        .expect("valid");
    let one =
        Evidence::new(e.store().clone(), label_key("suite"), config).with_clock(Clock::manual(0));
    let mut labelled = Vec::new();
    for (id, event_type) in [
        ("tie-a", EventType::LoginSuccess),
        ("tie-b", EventType::LoginFailure),
    ] {
        let input = event(id, event_type)
            .subject(bob.clone())
            .build()
            .expect("valid");
        labelled.push((one.event_record(&input, T0).id, event_type));
        one.at(T0).record(&input).await.expect("record");
    }
    labelled.sort();
    let newest = labelled.last().map(|(_, t)| *t).expect("two events");
    let tie = count(&one, VelocityQuery::new(ActivityKey::Subject(bob)), T0).await;
    assert_eq!(
        (tie.total, tie.saturated),
        (1, true),
        "velocity_saturates_newest_first: tie"
    );
    assert_eq!(
        tie.counts.into_iter().collect::<Vec<_>>(),
        vec![(newest, 1)],
        "velocity_saturates_newest_first: ties broken by id descending"
    );
}

/// Case: Expired events do not count.
pub async fn expired_events_do_not_count(fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>) {
    let e = evidence(fresh.store(visitors()).await, short());
    let alice = subject(&e, 1);
    let input = event("old", EventType::LoginFailure)
        .subject(alice.clone())
        .build()
        .expect("valid");
    e.at(T0).record(&input).await.expect("record");
    let query = VelocityQuery::new(ActivityKey::Subject(alice)).window_ms(DAY_MS);
    let before = count(&e, query.clone(), T0 + DAY_MS - 1).await;
    assert_eq!(
        before.total, 1,
        "expired_events_do_not_count: one ms before expiry"
    );
    // Retention is one day: at occurred_at + 1 day the event is inside the window but expired.
    let at = count(&e, query, T0 + DAY_MS).await;
    assert_eq!(at.total, 0, "expired_events_do_not_count: at expiry");
}

/// Case: Namespaces are isolated.
pub async fn namespaces_are_isolated(
    fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore + Clone>,
) {
    let store = fresh.store(visitors()).await;
    let a = Evidence::new(store.clone(), label_key("tenant-a"), defaults())
        .with_clock(Clock::manual(0));
    let b = Evidence::new(store, label_key("tenant-b"), defaults()).with_clock(Clock::manual(0));
    assert_ne!(a.scope(), b.scope(), "namespaces_are_isolated: scopes");
    let shared = subject(&a, 1);
    let input = event("same-id", EventType::LoginFailure)
        .subject(shared.clone())
        .build()
        .expect("valid");
    assert!(a.at(T0).record(&input).await.expect("record").recorded);
    // The same application id in another namespace is another event.
    assert!(b.at(T0).record(&input).await.expect("record").recorded);
    assert!(!b.at(T0).record(&input).await.expect("record").recorded);
    let query = VelocityQuery::new(ActivityKey::Subject(shared.clone()));
    assert_eq!(count(&a, query.clone(), T0).await.total, 1);
    assert_eq!(count(&b, query.clone(), T0).await.total, 1);
    assert_eq!(
        a.delete_subject_events(&shared).await.expect("delete"),
        1,
        "namespaces_are_isolated: erasure in one scope"
    );
    assert_eq!(count(&b, query, T0).await.total, 1);
}
