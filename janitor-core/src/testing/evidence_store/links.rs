//! Cases about device links: times, idempotency, assessment, listing and revocation.

use super::*;
use crate::config::DAY_MS;
use crate::visitor::VisitorId;

pub(super) fn link_input(
    subject: &SubjectId,
    visitor: &VisitorId,
    event_id: &str,
    verified_at: i64,
    expires_at: i64,
) -> DeviceLinkInput {
    DeviceLinkInput {
        subject: subject.clone(),
        visitor: visitor.clone(),
        verification: VerificationInput {
            method: VerificationMethod::Passkey,
            issuer: "auth".into(),
            event_id: event_id.into(),
            verified_at,
        },
        expires_at,
    }
}

/// Case: Links check their times.
pub async fn links_check_their_times(fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>) {
    let e = evidence(fresh.store(visitors()).await, defaults());
    let alice = subject(&e, 1);
    let now = T0;
    let cases = [
        ("fresh-oldest", now - 300_000, now + DAY_MS, None),
        (
            "too-old",
            now - 300_001,
            now + DAY_MS,
            Some("verification.verifiedAt"),
        ),
        ("skew-edge", now + 5_000, now + DAY_MS, None),
        (
            "too-early",
            now + 5_001,
            now + DAY_MS,
            Some("verification.verifiedAt"),
        ),
        ("ends-now", now, now, Some("expiresAt")),
        ("ends-next-ms", now, now + 1, None),
        ("ends-90-days", now, now + 90 * DAY_MS, None),
        (
            "ends-too-late",
            now,
            now + 90 * DAY_MS + 1,
            Some("expiresAt"),
        ),
    ];
    for (id, verified_at, expires_at, refused) in cases {
        let input = link_input(&alice, &visitor(1), id, verified_at, expires_at);
        match (e.at(now).link(&input).await, refused) {
            (Ok(link), None) => {
                assert_eq!(link.expires_at, expires_at, "links_check_their_times: {id}");
                assert_eq!(link.created_at, now);
            }
            (Err(EvidenceError::Invalid(err)), Some(field)) => {
                assert_eq!(err.field, field, "links_check_their_times: {id}");
            }
            (other, _) => panic!("links_check_their_times: {id} gave {other:?}"),
        }
    }
    assert_eq!(e.list(&alice, 100).await.expect("list").len(), 4);
}

/// Case: Links are idempotent per verification.
pub async fn links_are_idempotent_per_verification(
    fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>,
) {
    let e = evidence(fresh.store(visitors()).await, defaults());
    let alice = subject(&e, 1);
    let input = link_input(&alice, &visitor(1), "proof-1", T0, T0 + DAY_MS);
    let link = e.at(T0).link(&input).await.expect("link");
    assert!(link.id.as_str().starts_with("dev_"));
    assert_eq!(&link.id.as_str()[4..], &link.verification.event_id[4..]);
    assert!(link.verification.event_id.starts_with("sub_"));
    assert_eq!(link.verification.issuer, "auth");
    assert_eq!(link.revocation, None);
    // The same verification again, later: the stored link comes back unchanged.
    let again = e.at(T0 + 1_000).link(&input).await.expect("repeat");
    assert_eq!(again, link, "links_are_idempotent_per_verification: repeat");
    // The same verification for another browser, subject, method or time is refused.
    let mut other_visitor = input.clone();
    other_visitor.visitor = visitor(2);
    let mut other_subject = input.clone();
    other_subject.subject = subject(&e, 2);
    let mut other_method = input.clone();
    other_method.verification.method = VerificationMethod::Password;
    let mut other_expiry = input.clone();
    other_expiry.expires_at += 1;
    for (what, reuse) in [
        ("visitor", other_visitor),
        ("subject", other_subject),
        ("method", other_method),
        ("expiry", other_expiry),
    ] {
        assert_eq!(
            e.at(T0).link(&reuse).await,
            Err(EvidenceError::VerificationReused),
            "links_are_idempotent_per_verification: {what}"
        );
    }
    // Another issuer's event with the same id is another verification.
    let mut other_issuer = input.clone();
    other_issuer.verification.issuer = "sso".into();
    let second = e.at(T0).link(&other_issuer).await.expect("link");
    assert_ne!(second.id, link.id);
}

/// Case: Assessment reasons in order.
pub async fn assessment_reasons_in_order(fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>) {
    let e = evidence(fresh.store(visitors()).await, defaults());
    let alice = subject(&e, 1);
    let bob = subject(&e, 2);
    let reason = |assessment: DeviceAssessment| match assessment {
        DeviceAssessment::Invalid { reason } => Some(reason),
        DeviceAssessment::VerifiedAssociation { .. } => None,
    };
    let link = e
        .at(T0)
        .link(&link_input(&alice, &visitor(1), "a-1", T0, T0 + 1_000))
        .await
        .expect("link");
    let unknown = LinkId::parse(&format!("dev_{}", "0".repeat(64))).expect("well formed");
    let assess = |id: LinkId, s: SubjectId, v: VisitorId, now: i64| {
        let e = &e;
        async move { e.at(now).assess(&id, &s, &v).await.expect("assess") }
    };
    assert_eq!(
        reason(assess(unknown, alice.clone(), visitor(1), T0).await),
        Some(InvalidLinkReason::Missing)
    );
    match assess(link.id.clone(), alice.clone(), visitor(1), T0).await {
        DeviceAssessment::VerifiedAssociation { link: found } => assert_eq!(*found, link),
        other => panic!("assessment_reasons_in_order: valid link gave {other:?}"),
    }
    assert_eq!(
        reason(assess(link.id.clone(), alice.clone(), visitor(1), T0 + 999).await),
        None,
        "one ms before the end"
    );
    assert_eq!(
        reason(assess(link.id.clone(), bob.clone(), visitor(2), T0).await),
        Some(InvalidLinkReason::Subject),
        "subject is checked before visitor"
    );
    assert_eq!(
        reason(assess(link.id.clone(), alice.clone(), visitor(2), T0).await),
        Some(InvalidLinkReason::Visitor)
    );
    assert_eq!(
        reason(assess(link.id.clone(), bob.clone(), visitor(2), T0 + 1_000).await),
        Some(InvalidLinkReason::Expired),
        "expired is checked before subject"
    );
    let revocation = RevocationInput {
        reason: RevocationReason::Logout,
        issuer: "auth".into(),
        event_id: "logout-1".into(),
    };
    assert!(e
        .at(T0 + 10)
        .revoke(&link.id, &revocation)
        .await
        .expect("revoke"));
    assert_eq!(
        reason(assess(link.id.clone(), bob, visitor(2), T0 + 1_000).await),
        Some(InvalidLinkReason::Revoked),
        "revoked is checked before expired"
    );
    assert_eq!(
        reason(assess(link.id.clone(), alice, visitor(1), T0 + 20).await),
        Some(InvalidLinkReason::Revoked)
    );
}

/// Case: Listing is newest first and bounded.
pub async fn listing_is_newest_first_and_bounded(
    fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>,
) {
    let e = evidence(fresh.store(visitors()).await, defaults());
    let alice = subject(&e, 1);
    let mut made = Vec::new();
    for n in 0..4 {
        let input = link_input(
            &alice,
            &visitor(1 + n % 2),
            &format!("l-{n}"),
            T0,
            T0 + DAY_MS,
        );
        made.push(e.at(T0 + n as i64).link(&input).await.expect("link").id);
    }
    let other = link_input(&subject(&e, 2), &visitor(3), "l-other", T0, T0 + DAY_MS);
    e.at(T0).link(&other).await.expect("link");
    let listed: Vec<LinkId> = e
        .list(&alice, 20)
        .await
        .expect("list")
        .into_iter()
        .map(|l| l.id)
        .collect();
    made.reverse();
    assert_eq!(listed, made, "listing_is_newest_first_and_bounded: order");
    let two = e.list(&alice, 2).await.expect("list");
    assert_eq!(two.len(), 2);
    assert_eq!(two[0].id, made[0]);
    for bad in [0, 101] {
        match e.list(&alice, bad).await {
            Err(EvidenceError::Invalid(err)) => assert_eq!(err.field, "limit"),
            other => panic!("listing_is_newest_first_and_bounded: limit {bad} gave {other:?}"),
        }
    }
    assert_eq!(e.list(&alice, 1).await.expect("list").len(), 1);
    assert_eq!(e.list(&alice, 100).await.expect("list").len(), 4);
}

/// Case: Revocation happens once.
pub async fn revocation_happens_once(fresh: impl Fresh<Vec<VisitorId>, Store: EvidenceStore>) {
    let e = evidence(fresh.store(visitors()).await, short());
    let alice = subject(&e, 1);
    let link = e
        .at(T0)
        .link(&link_input(
            &alice,
            &visitor(1),
            "r-1",
            T0,
            T0 + 30 * DAY_MS,
        ))
        .await
        .expect("link");
    let first = RevocationInput {
        reason: RevocationReason::Compromised,
        issuer: " auth ".into(),
        event_id: "rev-1".into(),
    };
    assert!(e
        .at(T0 + 100)
        .revoke(&link.id, &first)
        .await
        .expect("revoke"));
    let second = RevocationInput {
        reason: RevocationReason::Logout,
        issuer: "auth".into(),
        event_id: "rev-2".into(),
    };
    assert!(
        !e.at(T0 + 200)
            .revoke(&link.id, &second)
            .await
            .expect("revoke"),
        "revocation_happens_once: second revocation changes nothing"
    );
    let stored = e.list(&alice, 20).await.expect("list").remove(0);
    let revocation = stored.revocation.expect("revoked");
    assert_eq!(revocation.reason, RevocationReason::Compromised);
    assert_eq!(revocation.revoked_at, T0 + 100);
    assert_eq!(revocation.issuer, "auth");
    assert!(revocation.event_id.starts_with("sub_") && revocation.event_id.len() == 68);
    let missing = LinkId::parse(&format!("dev_{}", "1".repeat(64))).expect("well formed");
    assert!(!e.at(T0).revoke(&missing, &second).await.expect("revoke"));
    let bad = RevocationInput {
        reason: RevocationReason::Logout,
        issuer: " ".into(),
        event_id: "x".into(),
    };
    assert!(matches!(
        e.at(T0).revoke(&link.id, &bad).await,
        Err(EvidenceError::Invalid(ref err)) if err.field == "issuer"
    ));
    // Revoking pulled retirement to the revocation: link retention (one day) counts from there, not from the
    // link's end 30 days later.
    let kept = e
        .at(T0 + 100 + DAY_MS - 1)
        .cleanup(100)
        .await
        .expect("cleanup");
    assert_eq!(
        kept.links_deleted, 0,
        "revocation_happens_once: within retention"
    );
    let gone = e.at(T0 + 100 + DAY_MS).cleanup(100).await.expect("cleanup");
    assert_eq!(
        gone.links_deleted, 1,
        "revocation_happens_once: retired a day ago"
    );
    assert!(e.list(&alice, 20).await.expect("list").is_empty());
}
