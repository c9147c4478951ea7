//! The identity directory through the handle, on both stores: attribution of an agent acting for a person,
//! erasure of an account with its evidence, and ended delegations going with cleanup.

use janitor_axum::handle::{Clock, Stores};
use janitor_axum::Janitor;
use janitor_core::directory::{
    AssessmentContext, DelegationAttribution, DelegationInput, KeyInput, KeyType, SubjectId,
    SubjectKind,
};
use janitor_core::evidence::{EventInput, EventType, VelocityQuery};
use janitor_core::now_ms;

use crate::common;
use common::stores::on_both_stores;

/// A person and an agent, registered.
async fn person_and_agent(janitor: &Janitor) -> (SubjectId, SubjectId) {
    let person = janitor.directory().subject_id("person-1").unwrap();
    let agent = janitor.directory().subject_id("agent-1").unwrap();
    let person_kind = janitor
        .directory()
        .put_subject(&person, SubjectKind::Person);
    person_kind.await.unwrap();
    let agent_kind = janitor.directory().put_subject(&agent, SubjectKind::Agent);
    agent_kind.await.unwrap();
    (person, agent)
}

/// A grant from `person` to `agent` for an hour, and the context that presents it.
async fn delegated(janitor: &Janitor, person: &SubjectId, agent: &SubjectId) -> AssessmentContext {
    let grant = janitor
        .directory()
        .create_delegation(&DelegationInput {
            principal: person.clone(),
            actor: agent.clone(),
            audience: "shop".into(),
            scopes: vec!["order".into()],
            expires_at: now_ms() + 3_600_000,
        })
        .await
        .unwrap();
    AssessmentContext {
        actor_id: Some(agent.clone()),
        delegation_id: Some(grant.id),
        audience: Some("shop".into()),
        required_scopes: vec!["order".into()],
        ..AssessmentContext::new(person.clone())
    }
}

async fn an_agent_acts_for_a_person_until_forgotten<S: Stores>(stores: S) {
    let janitor = Janitor::new(common::config("directory-tests").build().unwrap(), stores);
    let (person, agent) = person_and_agent(&janitor).await;
    let key = KeyInput::new(KeyType::Email, "app", "person@example.com");
    janitor
        .directory()
        .add_verified_key(&person, &key)
        .await
        .unwrap();
    assert_eq!(
        janitor.directory().find_subject(&key).await.unwrap(),
        Some(person.clone())
    );
    let context = delegated(&janitor, &person, &agent).await;
    let attribution = janitor.directory().assess(&context).await.unwrap();
    assert!(matches!(
        attribution.delegation,
        DelegationAttribution::Valid { .. }
    ));
    let event = EventInput::builder("evt-1", EventType::SensitiveAction)
        .subject(person.clone())
        .actor(agent.clone())
        .build()
        .unwrap();
    janitor.evidence().record(&event).await.unwrap();

    let agent_key = KeyInput::new(KeyType::PublicKey, "app", "SHA256:agent");
    janitor
        .directory()
        .add_verified_key(&agent, &agent_key)
        .await
        .unwrap();
    assert!(
        janitor
            .erase_account("person-1", None)
            .await
            .unwrap()
            .subject_existed
    );
    assert!(janitor
        .directory()
        .find_subject(&key)
        .await
        .unwrap()
        .is_none());
    let attribution = janitor.directory().assess(&context).await.unwrap();
    assert!(matches!(
        attribution.delegation,
        DelegationAttribution::Invalid { .. }
    ));
    let summary = janitor
        .evidence()
        .velocity(&VelocityQuery::new(
            janitor_core::evidence::ActivityKey::Actor(agent.clone()),
        ))
        .await
        .unwrap();
    assert_eq!(
        summary.total, 0,
        "the event naming the forgotten person went with it"
    );
    // Erasing the agent's account reaches its directory keys too.
    assert!(
        janitor
            .erase_account("agent-1", None)
            .await
            .unwrap()
            .subject_existed
    );
    assert!(janitor
        .directory()
        .find_subject(&agent_key)
        .await
        .unwrap()
        .is_none());
}

async fn ended_delegations_go_with_cleanup<S: Stores>(stores: S) {
    // The handle's services read a clock this test moves: the grant is made in the past.
    let now = now_ms();
    let clock = Clock::manual(now - 5);
    let janitor = Janitor::builder(common::config("directory-cleanup").build().unwrap(), stores)
        .clock(clock.clone())
        .build();
    let directory = janitor.directory();
    let person = directory.subject_id("person-2").unwrap();
    let agent = directory.subject_id("agent-2").unwrap();
    directory
        .put_subject(&person, SubjectKind::Person)
        .await
        .unwrap();
    directory
        .put_subject(&agent, SubjectKind::Agent)
        .await
        .unwrap();
    let grant = DelegationInput {
        principal: person,
        actor: agent,
        audience: "shop".into(),
        scopes: vec!["order".into()],
        expires_at: now + 1,
    };
    // Made a moment in the past, so it has ended by the time cleanup runs.
    let made = directory
        .create_delegation(&DelegationInput {
            expires_at: now - 1,
            ..grant
        })
        .await
        .unwrap();
    clock.set(now);
    let step = janitor.cleanup(None, 100).await.unwrap();
    assert_eq!(step.delegations, 1);
    assert!(directory.delegation(&made.id).await.unwrap().is_none());
}

on_both_stores!(
    an_agent_acts_for_a_person_until_forgotten,
    ended_delegations_go_with_cleanup
);
