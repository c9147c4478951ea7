//! Collection, labelling, disputes, limits, cleanup and erasure.

use super::*;

/// Per-request consent collects only on `true`; the application policy collects unless `false`; a refused
/// request deletes its row and clears its cookie, and a request with neither cookie nor consent leaves both
/// alone.
pub async fn consent_decides_collection<F: Fresh<(), Store = S>, S: LearningStore + Clone>(
    fresh: F,
) {
    let store = fresh.store(()).await;
    let per_request = collector(store.clone(), CollectionPolicy::PerRequest);
    let o = snapshot("en-us", "Europe/Paris");
    assert_eq!(
        visit(&per_request, None, None, &Login::Anonymous, &o, T0).await,
        None
    );
    assert_eq!(
        visit(&per_request, None, Some(false), &Login::Anonymous, &o, T0).await,
        None
    );
    let (id, _, _) = set(visit(&per_request, None, Some(true), &Login::Anonymous, &o, T0).await);
    assert!(store
        .session(per_request.scope(), &id)
        .await
        .unwrap()
        .is_some());
    // Without consent, the flow's row goes and the cookie is cleared.
    let refused = visit(&per_request, Some(&id), None, &Login::Anonymous, &o, T0 + 1).await;
    assert_eq!(refused, Some(LearningCookie::Clear));
    assert!(store
        .session(per_request.scope(), &id)
        .await
        .unwrap()
        .is_none());

    let application = collector(store.clone(), CollectionPolicy::Application);
    let (id, _, _) = set(visit(&application, None, None, &Login::Anonymous, &o, T0).await);
    let refused = visit(
        &application,
        Some(&id),
        Some(false),
        &Login::Anonymous,
        &o,
        T0 + 1,
    )
    .await;
    assert_eq!(refused, Some(LearningCookie::Clear));
    assert!(store
        .session(application.scope(), &id)
        .await
        .unwrap()
        .is_none());

    // Learning off: nothing is collected, and a leftover cookie is cleared.
    let off = Learning::<S>::new(
        store.clone(),
        &key("suite"),
        LearningConfig::default(),
        None,
    )
    .unwrap()
    .with_clock(crate::Clock::manual(0));
    assert_eq!(
        visit(&off, None, Some(true), &Login::Anonymous, &o, T0).await,
        None
    );
    assert_eq!(
        visit(&off, Some(&id), Some(true), &Login::Anonymous, &o, T0).await,
        Some(LearningCookie::Clear)
    );
}

/// A session lives its fixed minutes from its start: the cookie's Max-Age counts down, the session is reused
/// 1 ms before its end and replaced at it; a cookie of another format starts a new session.
pub async fn sessions_have_a_fixed_lifetime<F: Fresh<(), Store = S>, S: LearningStore + Clone>(
    fresh: F,
) {
    let learning = collector(fresh.store(()).await, CollectionPolicy::Application);
    let o = snapshot("en-us", "Europe/Paris");
    let (id, age, _) = set(visit(&learning, None, None, &Login::Anonymous, &o, T0).await);
    assert_eq!(age, 30 * 60);
    let (again, age, _) = set(visit(
        &learning,
        Some(&id),
        None,
        &Login::Anonymous,
        &o,
        T0 + 10 * MINUTE + 500,
    )
    .await);
    assert_eq!((again.clone(), age), (id.clone(), 20 * 60 - 1));
    let end = T0 + 30 * MINUTE;
    let (last, age, _) =
        set(visit(&learning, Some(&id), None, &Login::Anonymous, &o, end - 1).await);
    assert_eq!((last, age), (id.clone(), 0));
    let (next, age, _) = set(visit(&learning, Some(&id), None, &Login::Anonymous, &o, end).await);
    assert_ne!(next, id);
    assert_eq!(age, 30 * 60);
    let forged = visit(&learning, None, None, &Login::Anonymous, &o, end).await;
    assert!(matches!(forged, Some(LearningCookie::Set { .. })));
    let edited = LearningVisit {
        cookie: Some("ses_NOT-HEX"),
        consent: None,
        login: &Login::Anonymous,
        observation: &o,
    };
    let (fresh_id, _, _) = set(learning.at(end).observe(edited).await.unwrap());
    assert_ne!(fresh_id, next);
}

/// Each anonymous request replaces the session's one snapshot; nothing accumulates.
pub async fn one_latest_snapshot_per_session<F: Fresh<(), Store = S>, S: LearningStore + Clone>(
    fresh: F,
) {
    let store = fresh.store(()).await;
    let learning = collector(store.clone(), CollectionPolicy::Application);
    let first = snapshot("en-us", "Europe/Paris");
    let second = snapshot("fr-fr", "Europe/Paris");
    let (id, _, _) = set(visit(&learning, None, None, &Login::Anonymous, &first, T0).await);
    set(visit(
        &learning,
        Some(&id),
        None,
        &Login::Anonymous,
        &second,
        T0 + MINUTE,
    )
    .await);
    let row = store.session(learning.scope(), &id).await.unwrap().unwrap();
    assert_eq!(row.observation, second);
    assert_eq!((row.started_at, row.observed_at), (T0, T0 + MINUTE));
    assert_eq!(row.expires_at, T0 + 30 * MINUTE);
    assert_eq!(row.prediction.status, PredictionStatus::NotRun);
}

/// A verified person signing in as themselves labels the flow's last anonymous snapshot and clears the
/// cookie; measurements after the login never overwrite it.
pub async fn a_verified_self_login_labels<F: Fresh<(), Store = S>, S: LearningStore + Clone>(
    fresh: F,
) {
    let store = fresh.store(()).await;
    let learning = collector(store.clone(), CollectionPolicy::Application);
    let before = snapshot("en-us", "Europe/Paris");
    let id = labelled_flow(&learning, &before, &subject(1), T0).await;
    let row = store.session(learning.scope(), &id).await.unwrap().unwrap();
    assert_eq!(row.subject_id, Some(subject(1)));
    assert_eq!(row.verified_at, Some(T0 + 1));
    // The same cookie replayed after the login starts a new flow; the label stays.
    let after = snapshot("de-de", "Europe/Berlin");
    let (next, _, _) = set(visit(
        &learning,
        Some(&id),
        None,
        &Login::Anonymous,
        &after,
        T0 + 2,
    )
    .await);
    assert_ne!(next, id);
    let reports = learning.at(T0 + 3).reports(100).await.unwrap();
    assert_eq!(reports.len(), 1);
    assert_eq!(reports[0].example.observation, before);
    assert_eq!(reports[0].example.subject_id, subject(1));
    assert_eq!(reports[0].example.verified_at, T0 + 1);
    // The same subject confirming again changes nothing.
    let login = Login::VerifiedSelf(subject(1));
    visit(&learning, Some(&id), None, &login, &after, T0 + 4).await;
    let row = store.session(learning.scope(), &id).await.unwrap().unwrap();
    assert_eq!((row.verified_at, row.disputed), (Some(T0 + 1), false));
}

/// Agents, delegated actors and unknown actors never label: their login ends the flow unlabelled.
pub async fn other_logins_never_label<F: Fresh<(), Store = S>, S: LearningStore + Clone>(fresh: F) {
    let store = fresh.store(()).await;
    let learning = collector(store.clone(), CollectionPolicy::Application);
    let o = snapshot("en-us", "Europe/Paris");
    let (id, _, _) = set(visit(&learning, None, None, &Login::Anonymous, &o, T0).await);
    let answer = visit(&learning, Some(&id), None, &Login::Other, &o, T0 + 1).await;
    assert_eq!(answer, Some(LearningCookie::Clear));
    assert!(store
        .session(learning.scope(), &id)
        .await
        .unwrap()
        .is_none());
    assert!(learning.at(T0 + 2).reports(100).await.unwrap().is_empty());
}

/// The flow is the cookie's alone: a login without the learning cookie (a visitor id restored by similarity,
/// a lost cookie) labels nothing, not even the same browser's earlier flow.
pub async fn no_cookie_no_label<F: Fresh<(), Store = S>, S: LearningStore + Clone>(fresh: F) {
    let store = fresh.store(()).await;
    let learning = collector(store.clone(), CollectionPolicy::Application);
    let o = snapshot("en-us", "Europe/Paris");
    let (id, _, _) = set(visit(&learning, None, None, &Login::Anonymous, &o, T0).await);
    let login = Login::VerifiedSelf(subject(1));
    assert_eq!(visit(&learning, None, None, &login, &o, T0 + 1).await, None);
    let row = store.session(learning.scope(), &id).await.unwrap().unwrap();
    assert_eq!(row.subject_id, None);
    assert!(learning.at(T0 + 2).reports(100).await.unwrap().is_empty());
}

/// A flow confirmed for two different subjects is disputed, excluded from reports and removed by cleanup.
pub async fn conflicting_confirmations_dispute<
    F: Fresh<(), Store = S>,
    S: LearningStore + Clone,
>(
    fresh: F,
) {
    let store = fresh.store(()).await;
    let learning = collector(store.clone(), CollectionPolicy::Application);
    let o = snapshot("en-us", "Europe/Paris");
    let id = labelled_flow(&learning, &o, &subject(1), T0).await;
    let other = Login::VerifiedSelf(subject(2));
    visit(&learning, Some(&id), None, &other, &o, T0 + 2).await;
    let row = store.session(learning.scope(), &id).await.unwrap().unwrap();
    assert!(row.disputed);
    assert_eq!(row.subject_id, Some(subject(1)));
    assert!(learning.at(T0 + 3).reports(100).await.unwrap().is_empty());
    assert_eq!(learning.at(T0 + 3).cleanup().await.unwrap(), 1);
    assert!(store
        .session(learning.scope(), &id)
        .await
        .unwrap()
        .is_none());
}

/// At most 20 confirmed sessions are kept per subject: the 21st confirmation removes the oldest.
pub async fn twenty_confirmed_sessions_per_subject<
    F: Fresh<(), Store = S>,
    S: LearningStore + Clone,
>(
    fresh: F,
) {
    let learning = collector(fresh.store(()).await, CollectionPolicy::Application);
    let o = snapshot("en-us", "Europe/Paris");
    let mut flows = Vec::new();
    for i in 0..21 {
        flows.push(labelled_flow(&learning, &o, &subject(1), T0 + i * 10).await);
        let kept = learning.at(T0 + 1_000).reports(100).await.unwrap();
        assert_eq!(kept.len(), (i as usize + 1).min(20));
    }
    let kept = learning.at(T0 + 1_000).reports(100).await.unwrap();
    assert!(kept.iter().all(|r| r.example.session_id != flows[0]));
    assert_eq!(kept[0].example.session_id, flows[20]);
    // Another subject's examples are not counted against the first one's.
    labelled_flow(&learning, &o, &subject(2), T0 + 500).await;
    assert_eq!(
        learning.at(T0 + 1_000).reports(100).await.unwrap().len(),
        21
    );
}

/// Reports take a limit of 1–100 and return only verified, undisputed examples, newest first.
pub async fn report_limits<F: Fresh<(), Store = S>, S: LearningStore + Clone>(fresh: F) {
    let learning = collector(fresh.store(()).await, CollectionPolicy::Application);
    let o = snapshot("en-us", "Europe/Paris");
    for n in 0..3 {
        labelled_flow(&learning, &o, &subject(n), T0 + i64::from(n) * 10).await;
    }
    set(visit(&learning, None, None, &Login::Anonymous, &o, T0 + 50).await);
    for bad in [0, 101] {
        match learning.at(T0 + 60).reports(bad).await {
            Err(LearningError::Config(e)) => assert_eq!(e.field, "limit"),
            other => panic!("limit {bad} gave {other:?}"),
        }
    }
    assert_eq!(learning.at(T0 + 60).reports(1).await.unwrap().len(), 1);
    let all = learning.at(T0 + 60).reports(100).await.unwrap();
    let subjects: Vec<_> = all.iter().map(|r| r.example.subject_id.clone()).collect();
    assert_eq!(subjects, vec![subject(2), subject(1), subject(0)]);
}

/// Cleanup removes ended anonymous flows (at their end, not 1 ms before) and rows out of retention.
pub async fn cleanup_retires_flows<F: Fresh<(), Store = S>, S: LearningStore + Clone>(fresh: F) {
    let store = fresh.store(()).await;
    let learning = collector(store.clone(), CollectionPolicy::Application);
    let o = snapshot("en-us", "Europe/Paris");
    let (open, _, _) = set(visit(&learning, None, None, &Login::Anonymous, &o, T0).await);
    let labelled = labelled_flow(&learning, &o, &subject(1), T0).await;
    let end = T0 + 30 * MINUTE;
    assert_eq!(learning.at(end - 1).cleanup().await.unwrap(), 0);
    assert_eq!(learning.at(end).cleanup().await.unwrap(), 1);
    assert!(store
        .session(learning.scope(), &open)
        .await
        .unwrap()
        .is_none());
    // The labelled example lives its 30 days from its snapshot.
    let retention = 30 * crate::config::DAY_MS;
    assert_eq!(learning.at(T0 + retention).cleanup().await.unwrap(), 0);
    assert_eq!(
        learning
            .at(T0 + retention)
            .reports(100)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(learning
        .at(T0 + retention + 1)
        .reports(100)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(learning.at(T0 + retention + 1).cleanup().await.unwrap(), 1);
    assert!(store
        .session(learning.scope(), &labelled)
        .await
        .unwrap()
        .is_none());
}

/// `delete_session` deletes one flow (a malformed id is refused); forgetting a subject deletes its examples.
pub async fn erasure_by_session_and_subject<F: Fresh<(), Store = S>, S: LearningStore + Clone>(
    fresh: F,
) {
    let learning = collector(fresh.store(()).await, CollectionPolicy::Application);
    let o = snapshot("en-us", "Europe/Paris");
    let (open, _, _) = set(visit(&learning, None, None, &Login::Anonymous, &o, T0).await);
    assert!(matches!(
        learning.delete_session("ses_1").await,
        Err(LearningError::InvalidSession)
    ));
    assert!(learning.delete_session(open.as_str()).await.unwrap());
    assert!(!learning.delete_session(open.as_str()).await.unwrap());
    labelled_flow(&learning, &o, &subject(1), T0).await;
    labelled_flow(&learning, &o, &subject(2), T0).await;
    assert_eq!(learning.forget_subject(&subject(1)).await.unwrap(), 1);
    let left = learning.at(T0 + 10).reports(100).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].example.subject_id, subject(2));
}

/// Two deployments (two keys) on one store never see each other's flows.
pub async fn scopes_stay_apart<F: Fresh<(), Store = S>, S: LearningStore + Clone>(fresh: F) {
    let store = fresh.store(()).await;
    let ours = collector(store.clone(), CollectionPolicy::Application);
    let theirs: Learning<S> = Learning::new(
        store,
        &key("other"),
        collecting(CollectionPolicy::Application),
        None,
    )
    .unwrap()
    .with_clock(crate::Clock::manual(0));
    assert_ne!(ours.scope(), theirs.scope());
    let o = snapshot("en-us", "Europe/Paris");
    let id = labelled_flow(&ours, &o, &subject(1), T0).await;
    assert!(theirs.at(T0 + 10).reports(100).await.unwrap().is_empty());
    assert!(!theirs.delete_session(id.as_str()).await.unwrap());
    assert_eq!(ours.at(T0 + 10).reports(100).await.unwrap().len(), 1);
}
