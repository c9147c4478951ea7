//! The identity directory on PostgreSQL beyond the shared suite: erasing an account leaves neither its raw
//! id nor its label in any column of any table.

use janitor_core::directory::{DelegationInput, IdentityDirectory, KeyInput, KeyType, SubjectKind};
use janitor_core::evidence::{
    DeviceLinkInput, EventInput, EventType, Evidence, EvidenceConfig, SubjectId, VerificationInput,
    VerificationMethod,
};
use janitor_core::learning::{
    CollectionPolicy, Learning, LearningConfig, LearningCookie, LearningVisit, Login,
};
use janitor_core::testing::{label_key, visitor};
use janitor_core::Observation;
use janitor_core::{now_ms, Retention, Stores, VisitorStore};
use janitor_sql::testing::with_schemas;
use janitor_sql::PgStores;

const ACCOUNT: &str = "forget-me-account-7781";

/// How many values of text and jsonb columns in `schema` contain `needle`, by table and column.
async fn occurrences(
    client: &tokio_postgres::Client,
    schema: &str,
    needle: &str,
) -> Vec<(String, String, i64)> {
    let columns = client
        .query(
            "SELECT table_name::text, column_name::text FROM information_schema.columns \
             WHERE table_schema = $1 AND data_type IN ('text', 'jsonb', 'character varying') \
             ORDER BY 1, 2",
            &[&schema],
        )
        .await
        .expect("columns");
    assert!(columns.len() > 20, "the scan sees the schema's columns");
    let mut found = Vec::new();
    for row in columns {
        let (table, column): (String, String) = (row.get(0), row.get(1));
        // Names come from the catalog of a schema the harness made: quoted as identifiers all the same.
        let sql = format!(
            "SELECT count(*) FROM \"{schema}\".\"{table}\" WHERE \"{column}\"::text LIKE '%' || $1 || '%'"
        );
        let count: i64 = client
            .query_one(&sql, &[&needle])
            .await
            .expect("scan")
            .get(0);
        if count > 0 {
            found.push((table, column, count));
        }
    }
    found
}

/// Events naming `me` as subject and as actor, and a device link of `me`.
async fn record_evidence(
    stores: &PgStores,
    evidence: &Evidence<janitor_sql::PgEvidenceStore>,
    me: &SubjectId,
    agent: &SubjectId,
    now: i64,
) {
    let browser = visitor(1);
    stores
        .visitors(Retention::default())
        .create_visitor(&browser, now)
        .await
        .unwrap();
    for (id, subject, actor) in [("e-1", me, None), ("e-2", agent, Some(me))] {
        let mut input = EventInput::builder(id, EventType::LoginSuccess).subject(subject.clone());
        if let Some(actor) = actor {
            input = input.actor(actor.clone());
        }
        evidence.record(&input.build().unwrap(), now).await.unwrap();
    }
    let link = DeviceLinkInput {
        subject: me.clone(),
        visitor: browser.clone(),
        verification: VerificationInput {
            method: VerificationMethod::Passkey,
            issuer: "auth".into(),
            event_id: "verify-1".into(),
            verified_at: now,
        },
        expires_at: now + 60_000,
    };
    evidence.link(&link, now).await.unwrap();
}

/// A learning flow that `me`'s verified login labelled; the learning service, to read it back.
async fn labelled_learning_flow(
    stores: &PgStores,
    me: &SubjectId,
    now: i64,
) -> Learning<janitor_sql::PgLearningStore> {
    let config = LearningConfig::builder()
        .enabled(true)
        .collection(CollectionPolicy::Application)
        .build()
        .unwrap();
    let learning = Learning::new(stores.learning(), &label_key("erasure"), config, None).unwrap();
    let snapshot = Observation {
        timezone: Some("Europe/Paris".into()),
        ..Observation::default()
    };
    let visit = |cookie, login| LearningVisit {
        cookie,
        consent: None,
        login,
        observation: &snapshot,
    };
    let Some(LearningCookie::Set { id, .. }) = learning
        .observe(visit(None, &Login::Anonymous), now)
        .await
        .unwrap()
    else {
        panic!("a flow starts");
    };
    let login = Login::VerifiedSelf(me.clone());
    learning
        .observe(visit(Some(id.as_str()), &login), now + 1)
        .await
        .unwrap();
    assert_eq!(learning.reports(100, now + 2).await.unwrap().len(), 1);
    learning
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_user_leaves_no_trace() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let stores = PgStores::new(database.clone());
        let key = label_key("erasure");
        let evidence = Evidence::new(stores.evidence(), key.clone(), EvidenceConfig::default());
        let directory = IdentityDirectory::new(stores.directory(), key);
        let me = directory.subject_id(ACCOUNT).unwrap();
        let agent = directory.subject_id("helper-agent").unwrap();
        let now = now_ms();
        directory
            .put_subject(&me, SubjectKind::Person, now)
            .await
            .unwrap();
        directory
            .put_subject(&agent, SubjectKind::Agent, now)
            .await
            .unwrap();
        let email = KeyInput::new(KeyType::Email, "app", "me@example.com");
        directory.add_verified_key(&me, &email, now).await.unwrap();
        let grant = DelegationInput {
            principal: me.clone(),
            actor: agent.clone(),
            audience: "billing".into(),
            scopes: vec!["pay".into()],
            expires_at: now + 60_000,
        };
        directory.create_delegation(&grant, now).await.unwrap();
        record_evidence(&stores, &evidence, &me, &agent, now).await;
        let learning = labelled_learning_flow(&stores, &me, now).await;

        let client = janitor_sql::testing::admin_client().await;
        let schema = database.schema().unwrap().as_str().to_owned();
        assert!(
            !occurrences(&client, &schema, me.as_str()).await.is_empty(),
            "the scan finds the label before erasure"
        );
        assert!(directory.forget_user(ACCOUNT).await.unwrap());
        for needle in [ACCOUNT, me.as_str()] {
            assert_eq!(
                occurrences(&client, &schema, needle).await,
                vec![],
                "{needle}"
            );
        }
        assert!(learning.reports(100, now + 2).await.unwrap().is_empty());
        // The agent and the visitor stay, without anything of the forgotten account.
        assert!(directory.subject(&agent).await.unwrap().is_some());
        assert_eq!(
            evidence.store().database().schema().unwrap().as_str(),
            schema
        );
    })
    .await;
}
