//! The identity directory on PostgreSQL beyond the shared suite: erasing an account leaves neither its raw
//! id nor its label in any column of any table; erasing it with its browser leaves no trace of the browser
//! either, while other accounts' events stay, detached.

use janitor_core::directory::{DelegationInput, Directory, KeyInput, KeyType, SubjectKind};
use janitor_core::erasure::{erase_account, AccountErasure};
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
        evidence
            .at(now)
            .record(&input.build().unwrap())
            .await
            .unwrap();
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
    evidence.at(now).link(&link).await.unwrap();
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
    let learning = Learning::new(stores.learning(), &label_key("erasure"), config, None)
        .unwrap()
        .with_clock(janitor_core::Clock::manual(0));
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
        .at(now)
        .observe(visit(None, &Login::Anonymous))
        .await
        .unwrap()
    else {
        panic!("a flow starts");
    };
    let login = Login::VerifiedSelf(me.clone());
    learning
        .at(now + 1)
        .observe(visit(Some(id.as_str()), &login))
        .await
        .unwrap();
    assert_eq!(learning.at(now + 2).reports(100).await.unwrap().len(), 1);
    learning
}

/// An account with everything it accumulates: a key, a delegation to an agent, events as subject and as
/// actor, a device link to its browser (`visitor(1)`), a labelled learning flow.
struct Settled {
    database: janitor_sql::Database,
    stores: PgStores,
    evidence: Evidence<janitor_sql::PgEvidenceStore>,
    directory: Directory<janitor_sql::PgDirectoryStore>,
    learning: Learning<janitor_sql::PgLearningStore>,
    me: SubjectId,
    agent: SubjectId,
    now: i64,
}

async fn settled(schemas: &janitor_sql::testing::Schemas) -> Settled {
    settled_on(schemas.fresh().await).await
}

/// The same on `database`.
async fn settled_on(database: janitor_sql::Database) -> Settled {
    let stores = PgStores::new(database.clone());
    let key = label_key("erasure");
    let evidence = Evidence::new(stores.evidence(), key.clone(), EvidenceConfig::default())
        .with_clock(janitor_core::Clock::manual(0));
    let directory =
        Directory::new(stores.directory(), key).with_clock(janitor_core::Clock::manual(0));
    let me = directory.subject_id(ACCOUNT).unwrap();
    let agent = directory.subject_id("helper-agent").unwrap();
    let now = now_ms();
    directory
        .at(now)
        .put_subject(&me, SubjectKind::Person)
        .await
        .unwrap();
    directory
        .at(now)
        .put_subject(&agent, SubjectKind::Agent)
        .await
        .unwrap();
    let email = KeyInput::new(KeyType::Email, "app", "me@example.com");
    directory
        .at(now)
        .add_verified_key(&me, &email)
        .await
        .unwrap();
    let grant = DelegationInput {
        principal: me.clone(),
        actor: agent.clone(),
        audience: "billing".into(),
        scopes: vec!["pay".into()],
        expires_at: now + 60_000,
    };
    directory.at(now).create_delegation(&grant).await.unwrap();
    record_evidence(&stores, &evidence, &me, &agent, now).await;
    let learning = labelled_learning_flow(&stores, &me, now).await;
    Settled {
        database,
        stores,
        evidence,
        directory,
        learning,
        me,
        agent,
        now,
    }
}

impl Settled {
    fn schema(&self) -> String {
        self.database.schema().unwrap().as_str().to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forget_user_leaves_no_trace() {
    with_schemas(|schemas| async move {
        let s = settled(&schemas).await;
        let client = janitor_sql::testing::admin_client().await;
        let schema = s.schema();
        assert!(
            !occurrences(&client, &schema, s.me.as_str())
                .await
                .is_empty(),
            "the scan finds the label before erasure"
        );
        assert!(s.directory.forget_user(ACCOUNT).await.unwrap());
        for needle in [ACCOUNT, s.me.as_str()] {
            assert_eq!(
                occurrences(&client, &schema, needle).await,
                vec![],
                "{needle}"
            );
        }
        assert!(s
            .learning
            .at(s.now + 2)
            .reports(100)
            .await
            .unwrap()
            .is_empty());
        // The agent and the visitor stay, without anything of the forgotten account.
        assert!(s.directory.subject(&s.agent).await.unwrap().is_some());
        assert_eq!(
            s.evidence.store().database().schema().unwrap().as_str(),
            schema
        );
    })
    .await;
}

/// The events of `subject` as stored: `(visitor_id, digest, record has visitorId, record has actorId)`.
async fn stored_events(
    client: &tokio_postgres::Client,
    schema: &str,
    subject: &SubjectId,
) -> Vec<(Option<String>, String, bool, bool)> {
    let sql = format!(
        "SELECT visitor_id, digest, record ? 'visitorId', record ? 'actorId' \
         FROM \"{schema}\".application_events WHERE subject_id = $1 ORDER BY id"
    );
    let rows = client.query(&sql, &[&subject.as_str()]).await.unwrap();
    rows.iter()
        .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erase_account_leaves_no_trace_and_keeps_other_accounts_evidence() {
    with_schemas(|schemas| async move {
        let s = settled(&schemas).await;
        let browser = visitor(1);
        let visitors = s.stores.visitors(Retention::default());
        let seen = janitor_core::testing::visitor_store::observation("erasure");
        visitors
            .save_observation(&browser, &seen, s.now)
            .await
            .unwrap();
        // Another account's failed sign-ins from the same browser, and an anonymous event of it.
        let dave = s.evidence.subject_id("dave");
        for i in 0..5 {
            let input = EventInput::builder(&format!("dave-{i}"), EventType::LoginFailure)
                .subject(dave.clone())
                .visitor(browser.clone());
            s.evidence
                .at(s.now)
                .record(&input.build().unwrap())
                .await
                .unwrap();
        }
        let anonymous = EventInput::builder("anonymous", EventType::LoginAttempt)
            .session("before-sign-in")
            .visitor(browser.clone());
        s.evidence
            .at(s.now)
            .record(&anonymous.build().unwrap())
            .await
            .unwrap();
        let client = janitor_sql::testing::admin_client().await;
        let schema = s.schema();
        let daves_before = stored_events(&client, &schema, &dave).await;
        assert!(!occurrences(&client, &schema, browser.as_str())
            .await
            .is_empty());

        let statements = s.database.statements_executed();
        let key = label_key("erasure");
        let report = erase_account(&s.stores, &key, ACCOUNT, Some(&browser))
            .await
            .unwrap();
        assert_eq!(
            s.database.statements_executed() - statements,
            6,
            "BEGIN, the lock, evidence, the subject, the visitor, COMMIT"
        );
        let expected = AccountErasure {
            subject_existed: true,
            events_deleted: 2,
            events_detached: 6,
            links_deleted: 1,
            keys_deleted: 1,
            delegations_deleted: 1,
            learning_sessions_deleted: 1,
            visitor_erased: true,
            visitor_not_linked: false,
        };
        assert_eq!(report, expected);
        for needle in [ACCOUNT, s.me.as_str(), browser.as_str()] {
            assert_eq!(
                occurrences(&client, &schema, needle).await,
                vec![],
                "{needle}"
            );
        }
        // Dave's rows stay, detached in both the column and the record, with the digests they were recorded
        // with; the agent's event keeps the agent, without the erased actor.
        let daves_after = stored_events(&client, &schema, &dave).await;
        assert_eq!(daves_after.len(), 5);
        for (before, after) in daves_before.iter().zip(&daves_after) {
            assert_eq!(after, &(None, before.1.clone(), false, false));
        }
        let agents = stored_events(&client, &schema, &s.agent).await;
        assert_eq!(agents.len(), 1);
        assert_eq!((agents[0].2, agents[0].3), (false, false));
        assert!(s.directory.subject(&s.agent).await.unwrap().is_some());
        assert!(s
            .learning
            .at(s.now + 2)
            .reports(100)
            .await
            .unwrap()
            .is_empty());
        let statements = s.database.statements_executed();
        let again = erase_account(&s.stores, &key, ACCOUNT, Some(&browser));
        assert_eq!(again.await.unwrap(), AccountErasure::default());
        assert_eq!(
            s.database.statements_executed() - statements,
            3,
            "BEGIN, the lock, COMMIT: nothing left to erase"
        );
    })
    .await;
}

/// An erasure that fails midway — its subject statement waits on a lock past the statement timeout, after the
/// evidence statement ran — leaves everything as it was, and the pool's one connection serves the next erasure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_erasure_that_fails_midway_erases_nothing() {
    with_schemas(|schemas| async move {
        let database = schemas
            .fresh_with(|b| b.statement_timeout_ms(300).max_connections(1))
            .await;
        let s = settled_on(database).await;
        let client = janitor_sql::testing::admin_client().await;
        let schema = s.schema();
        let before = occurrences(&client, &schema, s.me.as_str()).await;
        assert!(before
            .iter()
            .any(|(table, ..)| table == "application_events"));
        let lock = janitor_sql::testing::admin_client().await;
        lock.batch_execute(&format!(
            "BEGIN; LOCK TABLE {schema}.identity_keys IN ACCESS EXCLUSIVE MODE"
        ))
        .await
        .unwrap();
        let key = label_key("erasure");
        let failed = erase_account(&s.stores, &key, ACCOUNT, None).await;
        assert!(
            matches!(
                failed,
                Err(janitor_core::erasure::ErasureError::Store(
                    janitor_core::StoreError::Unavailable(_)
                ))
            ),
            "{failed:?}"
        );
        drop(lock);
        assert_eq!(occurrences(&client, &schema, s.me.as_str()).await, before);
        let erased = erase_account(&s.stores, &key, ACCOUNT, None).await.unwrap();
        assert!(
            erased.subject_existed && erased.events_deleted > 0,
            "{erased:?}"
        );
    })
    .await;
}
