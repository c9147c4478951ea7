//! Cases about delegations, attribution, erasure and retention.

use super::*;
use serde_json::json;

const DAY: i64 = 86_400_000;

fn grant(principal: &SubjectId, actor: &SubjectId, expires_at: i64) -> DelegationInput {
    DelegationInput {
        principal: principal.clone(),
        actor: actor.clone(),
        audience: "billing".into(),
        scopes: vec!["pay".into(), "read".into()],
        expires_at,
    }
}

/// A person (account 1), an agent (account 2) and another person (account 3).
async fn cast<S: DirectoryStore>(d: &Directory<S>) -> Vec<SubjectId> {
    let kinds = [
        (1, SubjectKind::Person),
        (2, SubjectKind::Agent),
        (3, SubjectKind::Person),
    ];
    register(d, &kinds).await
}

/// Case: a grant ends after now and at most 30 days ahead.
pub async fn delegation_expiry_bounds(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = cast(&d).await;
    for (at, ok) in [
        (T0, false),
        (T0 + 1, true),
        (T0 + 30 * DAY, true),
        (T0 + 30 * DAY + 1, false),
    ] {
        let outcome = d.at(T0).create_delegation(&grant(&s[0], &s[1], at)).await;
        match ok {
            true => assert_eq!(outcome.expect("in range").expires_at, at),
            false => invalid_at(outcome, "expiresAt"),
        }
    }
    let made = d
        .at(T0)
        .create_delegation(&grant(&s[0], &s[1], T0 + DAY))
        .await
        .expect("ok");
    assert!(DelegationId::parse(made.id.as_str()).is_some());
    assert_eq!(
        d.delegation(&made.id).await.expect("read"),
        Some(made.clone())
    );
    let json = serde_json::to_value(&made).expect("json");
    assert_eq!(
        json,
        json!({"id": made.id.as_str(), "principalId": s[0].as_str(), "actorId": s[1].as_str(),
               "audience": "billing", "scopes": ["pay", "read"], "expiresAt": T0 + DAY})
    );
}

/// Case: 1–32 scopes counted on the input, each 1–256 characters; stored trimmed, unique and sorted.
pub async fn delegation_scope_bounds(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = cast(&d).await;
    let with_scopes = |scopes: Vec<String>| DelegationInput {
        scopes,
        ..grant(&s[0], &s[1], T0 + DAY)
    };
    let numbered = |n: usize| (0..n).map(|i| format!("scope-{i:02}")).collect::<Vec<_>>();
    invalid_at(
        d.at(T0).create_delegation(&with_scopes(vec![])).await,
        "scopes",
    );
    assert_eq!(
        d.at(T0)
            .create_delegation(&with_scopes(numbered(1)))
            .await
            .expect("1")
            .scopes
            .len(),
        1
    );
    assert_eq!(
        d.at(T0)
            .create_delegation(&with_scopes(numbered(32)))
            .await
            .expect("32")
            .scopes
            .len(),
        32
    );
    invalid_at(
        d.at(T0).create_delegation(&with_scopes(numbered(33))).await,
        "scopes",
    );
    assert!(d
        .at(T0)
        .create_delegation(&with_scopes(vec!["s".repeat(256)]))
        .await
        .is_ok());
    invalid_at(
        d.at(T0)
            .create_delegation(&with_scopes(vec!["s".repeat(257)]))
            .await,
        "scopes[0]",
    );
    invalid_at(
        d.at(T0)
            .create_delegation(&with_scopes(vec!["a".into(), " ".into()]))
            .await,
        "scopes[1]",
    );
    let tidy = d
        .at(T0)
        .create_delegation(&with_scopes(vec![
            " write".into(),
            "read ".into(),
            "write".into(),
        ]))
        .await
        .expect("ok");
    assert_eq!(tidy.scopes, ["read", "write"]);
}

/// Case: an audience holds 1–256 characters after trimming.
pub async fn delegation_audience_bounds(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = cast(&d).await;
    let audience = |audience: String| DelegationInput {
        audience,
        ..grant(&s[0], &s[1], T0 + DAY)
    };
    invalid_at(
        d.at(T0).create_delegation(&audience(" ".into())).await,
        "audience",
    );
    assert!(d
        .at(T0)
        .create_delegation(&audience("a".repeat(256)))
        .await
        .is_ok());
    invalid_at(
        d.at(T0).create_delegation(&audience("a".repeat(257))).await,
        "audience",
    );
}

/// Case: principal and actor must both exist and differ.
pub async fn delegations_need_two_known_subjects(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = cast(&d).await;
    let ghost = account(&d, 9);
    assert_eq!(
        d.at(T0)
            .create_delegation(&grant(&s[0], &s[0], T0 + DAY))
            .await,
        Err(DirectoryError::SelfDelegation)
    );
    assert_eq!(
        d.at(T0)
            .create_delegation(&grant(&ghost, &s[1], T0 + DAY))
            .await,
        Err(DirectoryError::UnknownSubject { field: "principal" })
    );
    assert_eq!(
        d.at(T0)
            .create_delegation(&grant(&s[0], &ghost, T0 + DAY))
            .await,
        Err(DirectoryError::UnknownSubject { field: "actor" })
    );
}

/// Case: only the first revocation counts.
pub async fn revocation_counts_once(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = cast(&d).await;
    let made = d
        .at(T0)
        .create_delegation(&grant(&s[0], &s[1], T0 + DAY))
        .await
        .expect("ok");
    assert!(d
        .at(T0 + 10)
        .revoke_delegation(&made.id)
        .await
        .expect("revoke"));
    assert!(!d
        .at(T0 + 20)
        .revoke_delegation(&made.id)
        .await
        .expect("again"));
    let stored = d
        .delegation(&made.id)
        .await
        .expect("read")
        .expect("present");
    assert_eq!(stored.revoked_at, Some(T0 + 10));
    assert_eq!(
        serde_json::to_value(&stored).expect("json")["revokedAt"],
        json!(T0 + 10)
    );
    assert!(!d
        .at(T0)
        .revoke_delegation(&DelegationId::generate())
        .await
        .expect("unknown"));
}

fn context(subject: &SubjectId, actor: &SubjectId, id: &DelegationId) -> AssessmentContext {
    AssessmentContext {
        actor_id: Some(actor.clone()),
        delegation_id: Some(id.clone()),
        audience: Some(" billing ".into()),
        required_scopes: vec!["pay".into()],
        ..AssessmentContext::new(subject.clone())
    }
}

async fn reason<S: DirectoryStore>(
    d: &Directory<S>,
    c: &AssessmentContext,
    now: i64,
) -> Option<InvalidDelegationReason> {
    match d.at(now).assess(c).await.expect("assess").delegation {
        DelegationAttribution::Invalid { reason, .. } => Some(reason),
        DelegationAttribution::Valid { .. } => None,
        DelegationAttribution::None => panic!("a grant was presented"),
    }
}

/// Case: every reason at its edge, in the order missing, revoked, expired, principal, actor, audience, scope.
pub async fn assessment_reasons_in_order(fresh: impl Fresh<(), Store: DirectoryStore>) {
    use InvalidDelegationReason::*;
    let d = directory(fresh.store(()).await);
    let s = cast(&d).await;
    let ghost = account(&d, 9);
    let end = T0 + DAY;
    let g = d
        .at(T0)
        .create_delegation(&grant(&s[0], &s[1], end))
        .await
        .expect("ok")
        .id;
    let ok = context(&s[0], &s[1], &g);
    assert_eq!(
        reason(&d, &ok, end - 1).await,
        None,
        "valid 1 ms before the end"
    );
    assert_eq!(
        reason(&d, &ok, end).await,
        Some(Expired),
        "expired at expiresAt"
    );
    let missing = context(&s[0], &s[1], &DelegationId::generate());
    assert_eq!(reason(&d, &missing, T0).await, Some(Missing));
    let with = |change: &dyn Fn(&mut AssessmentContext)| {
        let mut c = ok.clone();
        change(&mut c);
        c
    };
    for (c, expected) in [
        (context(&s[2], &s[1], &g), Principal),
        (context(&ghost, &s[1], &g), Principal),
        (context(&s[0], &s[2], &g), Actor),
        (context(&s[0], &ghost, &g), Actor),
        (with(&|c| c.actor_id = None), Actor),
        (with(&|c| c.audience = None), Audience),
        (with(&|c| c.audience = Some("billing-2".into())), Audience),
        (with(&|c| c.required_scopes.push("admin".into())), Scope),
    ] {
        assert_eq!(reason(&d, &c, T0).await, Some(expected), "{c:?}");
    }
    let no_scopes = with(&|c| c.required_scopes.clear());
    assert_eq!(reason(&d, &no_scopes, T0).await, None, "nothing required");
}

/// Case: an earlier reason wins over a later one; 0–32 required scopes.
pub async fn earlier_reasons_win(fresh: impl Fresh<(), Store: DirectoryStore>) {
    use InvalidDelegationReason::*;
    let d = directory(fresh.store(()).await);
    let s = cast(&d).await;
    let end = T0 + DAY;
    let g = d
        .at(T0)
        .create_delegation(&grant(&s[0], &s[1], end))
        .await
        .expect("ok")
        .id;
    let ok = context(&s[0], &s[1], &g);
    // An expired grant with the wrong actor is expired; a revoked one that also ended is revoked.
    assert_eq!(
        reason(&d, &context(&s[0], &s[2], &g), end).await,
        Some(Expired)
    );
    assert!(d.at(T0 + 1).revoke_delegation(&g).await.expect("revoke"));
    assert_eq!(
        reason(&d, &context(&s[2], &s[2], &g), end).await,
        Some(Revoked)
    );
    let too_many = AssessmentContext {
        required_scopes: vec!["x".into(); 33],
        ..ok.clone()
    };
    invalid_at(d.at(T0).assess(&too_many).await, "requiredScopes");
    let full = AssessmentContext {
        required_scopes: vec!["x".into(); 32],
        ..ok
    };
    assert!(
        d.at(T0).assess(&full).await.is_ok(),
        "32 required scopes are allowed"
    );
}

/// Case: the attribution's JSON without a grant, and with a valid and an invalid one.
pub async fn assessment_without_a_grant(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = cast(&d).await;
    let ghost = account(&d, 9);
    let alone = d
        .at(T0)
        .assess(&AssessmentContext::new(ghost))
        .await
        .expect("assess");
    assert_eq!(
        serde_json::to_value(&alone).expect("json"),
        json!({"subject": {"status": "unknown"}, "actor": {"kind": "unknown", "basis": "unknown"},
               "delegation": {"status": "none"}})
    );
    let g = d
        .at(T0)
        .create_delegation(&grant(&s[0], &s[1], T0 + DAY))
        .await
        .expect("ok")
        .id;
    let valid = d
        .at(T0)
        .assess(&context(&s[0], &s[1], &g))
        .await
        .expect("assess");
    assert_eq!(
        serde_json::to_value(&valid).expect("json"),
        json!({"subject": {"id": s[0].as_str(), "status": "verified"},
               "actor": {"id": s[1].as_str(), "kind": "agent", "basis": "verified-credential"},
               "delegation": {"id": g.as_str(), "status": "valid", "scopes": ["pay", "read"],
                              "expiresAt": T0 + DAY}})
    );
    let late = d
        .at(T0 + DAY)
        .assess(&context(&s[0], &s[1], &g))
        .await
        .expect("assess");
    assert_eq!(
        serde_json::to_value(&late.delegation).expect("json"),
        json!({"id": g.as_str(), "status": "invalid", "reason": "expired"})
    );
}

/// Case: deleting a subject deletes its keys and every grant naming it.
pub async fn deletion_cascades(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = cast(&d).await;
    let key = email("agent@example.com");
    d.at(T0).add_verified_key(&s[1], &key).await.expect("add");
    let as_actor = d
        .at(T0)
        .create_delegation(&grant(&s[0], &s[1], T0 + DAY))
        .await
        .expect("ok");
    let other = d
        .at(T0)
        .create_delegation(&grant(&s[0], &s[2], T0 + DAY))
        .await
        .expect("ok");
    assert!(d.delete_subject(&s[1]).await.expect("delete"));
    assert!(
        !d.delete_subject(&s[1]).await.expect("delete"),
        "gone already"
    );
    assert!(d.find_subject(&key).await.expect("find").is_none());
    assert!(d.delegation(&as_actor.id).await.expect("read").is_none());
    assert!(
        d.delegation(&other.id).await.expect("read").is_some(),
        "others stay"
    );
    assert!(d.delete_subject(&s[0]).await.expect("delete"));
    assert!(
        d.delegation(&other.id).await.expect("read").is_none(),
        "as principal"
    );
    assert!(d.subject(&s[2]).await.expect("read").is_some());
}

/// Case: forget_user erases the account's subject, keys and grants, found by the raw id's label.
pub async fn forget_user_erases_the_account(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = cast(&d).await;
    d.at(T0)
        .add_verified_key(&s[0], &email("me@example.com"))
        .await
        .expect("add");
    let g = d
        .at(T0)
        .create_delegation(&grant(&s[0], &s[1], T0 + DAY))
        .await
        .expect("ok");
    assert!(d.forget_user("account-1").await.expect("forget"));
    assert!(
        !d.forget_user("account-1").await.expect("forget"),
        "nothing left"
    );
    assert!(d.subject(&s[0]).await.expect("read").is_none());
    assert!(d
        .find_subject(&email("me@example.com"))
        .await
        .expect("find")
        .is_none());
    assert!(d.delegation(&g.id).await.expect("read").is_none());
    assert!(
        d.subject(&s[1]).await.expect("read").is_some(),
        "the agent stays"
    );
}

/// Case: cleanup deletes grants that ended (expires_at <= now), earliest first, bounded by the batch.
pub async fn cleanup_removes_ended_grants(fresh: impl Fresh<(), Store: DirectoryStore>) {
    let d = directory(fresh.store(()).await);
    let s = cast(&d).await;
    let mut ids = Vec::new();
    for end in [T0 + 10, T0 + 20, T0 + 30] {
        ids.push(
            d.at(T0)
                .create_delegation(&grant(&s[0], &s[1], end))
                .await
                .expect("ok")
                .id,
        );
    }
    assert_eq!(d.at(T0 + 9).cleanup(100).await.expect("cleanup"), 0);
    assert_eq!(
        d.at(T0 + 20).cleanup(1).await.expect("cleanup"),
        1,
        "bounded"
    );
    assert!(
        d.delegation(&ids[0]).await.expect("read").is_none(),
        "earliest first"
    );
    assert_eq!(
        d.at(T0 + 20).cleanup(0).await.expect("cleanup"),
        1,
        "batch 0 counts as 1"
    );
    assert!(
        d.delegation(&ids[1]).await.expect("read").is_none(),
        "ended exactly now"
    );
    assert!(d.delegation(&ids[2]).await.expect("read").is_some());
}
