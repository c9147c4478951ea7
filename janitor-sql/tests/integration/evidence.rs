//! Application evidence on PostgreSQL: round trips, what the rows hold (labels only), the
//! cascades of erasure, and device links at their edges. Plans of the activity read are in
//! `evidence_plans.rs`.

#[path = "evidence/grouped.rs"]
mod grouped;

use std::future::Future;

use janitor_core::config::DAY_MS;
use janitor_core::evidence::{
    Action, DeviceLinkInput, EventInput, EventType, Evidence, EvidenceConfig, EvidenceError,
    RevocationInput, RevocationReason, SubjectId, VerificationInput, VerificationMethod,
};
use janitor_core::{LabelKey, Retention, StoreError, VisitorId, VisitorStore};
use janitor_sql::testing::{create_visitors, with_schemas};
use janitor_sql::{Database, PgEvidenceStore, PgVisitorStore};
use serde_json::{json, Value};

use janitor_core::testing::{label_key, visitor, T0};

fn key() -> LabelKey {
    label_key("evidence-tests")
}

/// Evidence over a fresh schema holding visitors 1–3.
async fn evidence(database: &Database) -> Evidence<PgEvidenceStore> {
    create_visitors(database, &[visitor(1), visitor(2), visitor(3)]).await;
    Evidence::new(
        PgEvidenceStore::new(database.clone()),
        key(),
        EvidenceConfig::default(),
    )
    .with_clock(janitor_core::Clock::manual(0))
}

/// Runs `body` on a fresh schema holding visitors 1–3, with evidence over it.
async fn with_evidence<F, Fut>(body: F)
where
    F: FnOnce(Database, Evidence<PgEvidenceStore>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let e = evidence(&database).await;
        body(database, e).await;
    })
    .await;
}

async fn rows(database: &Database, sql: &str) -> i64 {
    let client = database.pool().get().await.expect("connection");
    client.query_one(sql, &[]).await.expect(sql).get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_are_idempotent_and_cost_one_extra_read() {
    with_evidence(|database, e| async move {
        let subject = e.subject_id("acct-1");
        let input = EventInput::builder("evt-1", EventType::LoginFailure)
            .action(Action::SignIn)
            .subject(subject.clone())
            .session("sess-1")
            .visitor(visitor(1))
            .build()
            .expect("valid");
        let statements = || database.statements_executed();

        let before = statements();
        assert!(e.at(T0).record(&input).await.expect("record").recorded);
        assert_eq!(statements() - before, 1, "a new event is one statement");

        let before = statements();
        assert!(!e.at(T0 + 5).record(&input).await.expect("repeat").recorded);
        assert_eq!(statements() - before, 2, "a repeat adds one digest read");

        let changed = EventInput::builder("evt-1", EventType::LoginSuccess)
            .action(Action::SignIn)
            .subject(subject.clone())
            .session("sess-1")
            .visitor(visitor(1))
            .build()
            .expect("valid");
        let before = statements();
        assert_eq!(
            e.at(T0 + 10).record(&changed).await,
            Err(EvidenceError::IdempotencyConflict)
        );
        assert_eq!(statements() - before, 2);
        assert_eq!(
            rows(&database, "SELECT count(*) FROM application_events").await,
            1
        );
        let occurred: i64 = rows(&database, "SELECT occurred_at FROM application_events").await;
        assert_eq!(occurred, T0, "the first recording stands");

        let before = statements();
        let query = janitor_core::evidence::VelocityQuery::new(
            janitor_core::evidence::ActivityKey::Subject(subject),
        );
        assert_eq!(
            e.at(T0 + 10)
                .velocity(&query)
                .await
                .expect("velocity")
                .total,
            1
        );
        assert_eq!(
            statements() - before,
            1,
            "an activity read is one statement"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_length_bounds_reach_the_table_or_nothing_does() {
    with_evidence(|database, e| async move {
        let subject = e.subject_id("acct-1");
        let build = |id: &str, session: &str| {
            EventInput::builder(id, EventType::LoginAttempt)
                .subject(subject.clone())
                .session(session)
                .build()
        };
        let longest = build(&format!(" {} ", "i".repeat(256)), &"s".repeat(256)).expect("valid");
        assert!(e.at(T0).record(&longest).await.expect("record").recorded);
        let shortest = build("i", "s").expect("valid");
        assert!(e.at(T0).record(&shortest).await.expect("record").recorded);
        assert_eq!(build(&"i".repeat(257), "s").unwrap_err().field, "id");
        assert_eq!(build("  ", "s").unwrap_err().field, "id");
        assert_eq!(build("i", &"s".repeat(257)).unwrap_err().field, "sessionId");
        let doc =
            json!({"id": "x", "type": "login-attempt", "subjectId": subject.as_str(), "at": T0});
        assert_eq!(EventInput::from_json(&doc).unwrap_err().field, "at");
        assert_eq!(
            rows(&database, "SELECT count(*) FROM application_events").await,
            2
        );
        // Every stored id is a label, whatever the length of the application's id.
        assert_eq!(
            rows(
                &database,
                "SELECT count(*) FROM application_events WHERE id ~ '^sub_[0-9a-f]{64}$' \
                 AND session_id ~ '^sub_[0-9a-f]{64}$'"
            )
            .await,
            2
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_raw_account_session_or_event_id_is_stored_anywhere() {
    with_evidence(|database, e| async move {
        let subject = e.subject_id("acct-raw-123");
        let actor = e.subject_id("acct-raw-123-agent");
        let inputs = [
            EventInput::builder("evt-raw-789", EventType::LoginFailure)
                .action(Action::SignIn)
                .subject(subject.clone())
                .session("sess-raw-456")
                .visitor(visitor(1)),
            EventInput::builder("evt-raw-789-2", EventType::SensitiveAction)
                .action(Action::Payment)
                .subject(subject.clone())
                .actor(actor)
                .session("sess-raw-456"),
        ];
        for input in inputs {
            e.at(T0)
                .record(&input.build().expect("valid"))
                .await
                .expect("record");
        }
        let link = DeviceLinkInput {
            subject: subject.clone(),
            visitor: visitor(1),
            verification: VerificationInput {
                method: VerificationMethod::Password,
                issuer: "auth-issuer".into(),
                event_id: "evt-raw-789".into(),
                verified_at: T0,
            },
            expires_at: T0 + DAY_MS,
        };
        let link = e.at(T0).link(&link).await.expect("link");
        let revocation = RevocationInput {
            reason: RevocationReason::Logout,
            issuer: "auth-issuer".into(),
            event_id: "sess-raw-456".into(),
        };
        assert!(e
            .at(T0 + 1)
            .revoke(&link.id, &revocation)
            .await
            .expect("revoke"));

        let client = database.pool().get().await.expect("connection");
        let columns = client
            .query(
                "SELECT table_name::text, column_name::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() \
                   AND table_name IN ('application_events', 'identity_subjects', 'device_links') \
                   AND data_type IN ('text', 'jsonb') ORDER BY 1, 2",
                &[],
            )
            .await
            .expect("columns");
        let columns: Vec<(String, String)> = columns.iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(
            columns.len(),
            19,
            "every text and jsonb column: {columns:?}"
        );
        let hits = |needle: &'static str| {
            let client = &client;
            let columns = &columns;
            async move {
                let mut found = Vec::new();
                for (table, column) in columns {
                    // Names come from the catalogue of our own tables.
                    let sql = format!(
                        "SELECT count(*) FROM {table} WHERE strpos({column}::text, $1) > 0"
                    );
                    let n: i64 = client.query_one(&sql, &[&needle]).await.expect(&sql).get(0);
                    if n > 0 {
                        found.push(format!("{table}.{column}"));
                    }
                }
                found
            }
        };
        for raw in ["acct-raw-123", "sess-raw-456", "evt-raw-789"] {
            assert_eq!(hits(raw).await, Vec::<String>::new(), "{raw} is stored");
        }
        // The scan does find what is stored in clear: the issuer's name.
        assert_eq!(hits("auth-issuer").await, vec!["device_links.record"]);
        assert_eq!(
            rows(&database, "SELECT count(*) FROM application_events").await,
            2
        );
        assert_eq!(
            rows(&database, "SELECT count(*) FROM identity_subjects").await,
            2
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subject_rows_are_created_as_persons_once() {
    with_evidence(|database, e| async move {
        let subject = e.subject_id("acct-1");
        let same = EventInput::builder("self", EventType::SensitiveAction)
            .subject(subject.clone())
            .actor(subject.clone())
            .build()
            .expect("valid");
        e.at(T0).record(&same).await.expect("record");
        let client = database.pool().get().await.expect("connection");
        let row = client
            .query_one("SELECT id, kind, record FROM identity_subjects", &[])
            .await
            .expect("one subject row");
        let record: Value = row.get(2);
        assert_eq!(row.get::<_, String>(0), subject.as_str());
        assert_eq!(row.get::<_, String>(1), "person");
        assert_eq!(
            record,
            json!({"id": subject.as_str(), "kind": "person", "updatedAt": T0})
        );
        let later = EventInput::builder("later", EventType::LoginSuccess)
            .subject(subject.clone())
            .build()
            .expect("valid");
        e.at(T0 + 50).record(&later).await.expect("record");
        let record: Value = client
            .query_one("SELECT record FROM identity_subjects", &[])
            .await
            .expect("still one row")
            .get(0);
        assert_eq!(
            record["updatedAt"],
            json!(T0),
            "an existing row is left alone"
        );
        let stored: Value = client
            .query_one(
                "SELECT record FROM application_events WHERE occurred_at = $1",
                &[&T0],
            )
            .await
            .expect("event")
            .get(0);
        let mut keys: Vec<&str> = stored
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "actorId",
                "digest",
                "expiresAt",
                "id",
                "occurredAt",
                "scope",
                "subjectId",
                "type"
            ]
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn erasure_cascades_from_subjects_and_visitors() {
    with_evidence(|database, e| async move {
        let alice = e.subject_id("alice");
        let bob = e.subject_id("bob");
        let record = |id: &'static str, subject: &SubjectId, actor: Option<&SubjectId>, v: u64| {
            let mut input = EventInput::builder(id, EventType::LoginAttempt)
                .subject(subject.clone())
                .session(id)
                .visitor(visitor(v));
            if let Some(actor) = actor {
                input = input.actor(actor.clone());
            }
            let input = input.build().expect("valid");
            let e = &e;
            async move { e.at(T0).record(&input).await.expect("record") }
        };
        record("a-1", &alice, None, 1).await;
        record("a-2", &bob, Some(&alice), 2).await;
        record("b-1", &bob, None, 2).await;
        record("b-2", &bob, None, 3).await;
        let link = |subject: &SubjectId, v: u64, proof: &'static str| DeviceLinkInput {
            subject: subject.clone(),
            visitor: visitor(v),
            verification: VerificationInput {
                method: VerificationMethod::Passkey,
                issuer: "auth".into(),
                event_id: proof.into(),
                verified_at: T0,
            },
            expires_at: T0 + DAY_MS,
        };
        e.at(T0).link(&link(&alice, 1, "p-1")).await.expect("link");
        e.at(T0).link(&link(&bob, 2, "p-2")).await.expect("link");
        e.at(T0).link(&link(&bob, 3, "p-3")).await.expect("link");
        let count = |sql: &'static str| rows(&database, sql);

        // Deleting the visitor row cascades to its events and links, and to nothing else.
        let visitors = PgVisitorStore::new(database.clone(), Retention::default());
        assert!(visitors.delete_visitor(&visitor(3)).await.expect("delete"));
        assert_eq!(count("SELECT count(*) FROM application_events").await, 3);
        assert_eq!(count("SELECT count(*) FROM device_links").await, 2);

        // Session erasure by the raw id.
        assert_eq!(e.delete_session("b-1").await.expect("delete"), 1);
        assert_eq!(count("SELECT count(*) FROM application_events").await, 2);

        // Erasing alice takes her event, the event she acted in, and her link; bob keeps the rest.
        assert!(e.delete_subject(&alice).await.expect("delete"));
        assert_eq!(count("SELECT count(*) FROM application_events").await, 0);
        assert_eq!(count("SELECT count(*) FROM device_links").await, 1);
        assert_eq!(count("SELECT count(*) FROM identity_subjects").await, 1);
        let bob_link: String = {
            let client = database.pool().get().await.expect("connection");
            client
                .query_one("SELECT subject_id FROM device_links", &[])
                .await
                .expect("link")
                .get(0)
        };
        assert_eq!(bob_link, bob.as_str());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_store_retirement_and_refuse_unknown_visitors() {
    with_evidence(|database, e| async move {
        let subject = e.subject_id("acct-1");
        let input = |v: VisitorId, proof: &str| DeviceLinkInput {
            subject: subject.clone(),
            visitor: v,
            verification: VerificationInput {
                method: VerificationMethod::Mfa,
                issuer: "auth".into(),
                event_id: proof.into(),
                verified_at: T0 - 300_000,
            },
            expires_at: T0 + 90 * DAY_MS,
        };
        let link = e
            .at(T0)
            .link(&input(visitor(1), "l-1"))
            .await
            .expect("link");
        let retire = || rows(&database, "SELECT retire_at FROM device_links");
        assert_eq!(retire().await, T0 + 90 * DAY_MS);
        let revocation = RevocationInput {
            reason: RevocationReason::DeviceRemoved,
            issuer: "auth".into(),
            event_id: "r-1".into(),
        };
        assert!(e
            .at(T0 + 7)
            .revoke(&link.id, &revocation)
            .await
            .expect("revoke"));
        assert_eq!(retire().await, T0 + 7, "revocation pulls retirement in");
        assert!(!e
            .at(T0 + 9)
            .revoke(&link.id, &revocation)
            .await
            .expect("again"));
        assert_eq!(
            retire().await,
            T0 + 7,
            "a second revocation changes nothing"
        );

        let unknown = VisitorId::parse(&format!("vis_{}", "9".repeat(48))).expect("well formed");
        match e.at(T0).link(&input(unknown, "l-2")).await {
            Err(EvidenceError::Store(StoreError::Data(message))) => {
                assert!(message.contains("23503"), "{message}")
            }
            other => panic!("an unknown visitor gave {other:?}"),
        }
        // Two instances using one verification at once: one link, one refusal or the same link.
        let (first, second) = (input(visitor(2), "race"), input(visitor(3), "race"));
        let (a, b) = tokio::join!(e.at(T0).link(&first), e.at(T0).link(&second));
        let outcomes = [a.is_ok(), b.is_ok()];
        assert_eq!(outcomes.iter().filter(|ok| **ok).count(), 1, "{a:?} {b:?}");
        assert!(matches!(
            if a.is_ok() { b } else { a },
            Err(EvidenceError::VerificationReused)
        ));
    })
    .await;
}

/// An event written as another implementation writes it (one plain `INSERT` naming its columns, no
/// `event_type`): PostgreSQL fills the type column from the record, and the velocity read counts the event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_written_by_other_implementations_are_counted() {
    use janitor_core::evidence::{ActivityKey, VelocityQuery};
    with_evidence(|database, e| async move {
        let subject = e.subject_id("acct-shared");
        let ours = EventInput::builder("ours", EventType::LoginAttempt)
            .action(Action::SignIn)
            .subject(subject.clone())
            .build()
            .expect("valid");
        assert!(e.at(T0 - 2_000).record(&ours).await.expect("record").recorded);
        let client = database.pool().get().await.expect("connection");
        let id = format!("sub_{}", "e".repeat(64));
        let record = json!({
            "id": id, "scope": e.scope(), "digest": id, "type": "login-failure", "action": "sign-in",
            "subjectId": subject.as_str(), "occurredAt": T0 - 1_000, "expiresAt": T0 + DAY_MS,
        });
        client
            .execute(
                "INSERT INTO application_events (id, scope, digest, subject_id, session_id, actor_id, \
                 visitor_id, action, occurred_at, expires_at, record) \
                 VALUES ($1, $2, $3, $4, NULL, NULL, NULL, 'sign-in', $5, $6, $7::text::jsonb) \
                 ON CONFLICT (id) DO NOTHING RETURNING id",
                &[
                    &id,
                    &e.scope(),
                    &id,
                    &subject.as_str(),
                    &(T0 - 1_000),
                    &(T0 + DAY_MS),
                    &record.to_string(),
                ],
            )
            .await
            .expect("a plain insert");
        let types: Vec<Option<String>> = client
            .query(
                "SELECT event_type FROM application_events ORDER BY occurred_at",
                &[],
            )
            .await
            .expect("types")
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert_eq!(
            types,
            [Some("login-attempt".to_owned()), Some("login-failure".to_owned())]
        );
        let summary = e
            .at(T0).velocity(
                &VelocityQuery::new(ActivityKey::Subject(subject)).action(Action::SignIn)
            )
            .await
            .expect("velocity");
        assert_eq!(summary.total, 2);
        assert_eq!(summary.counts.get(&EventType::LoginFailure), Some(&1));
        assert_eq!(summary.counts.get(&EventType::LoginAttempt), Some(&1));
    })
    .await;
}
