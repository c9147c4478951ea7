//! Grouped event inserts: callers recording at the same moment share statements, and each still gets the
//! answer, and leaves the rows, that a statement of its own would have given.

use std::sync::Arc;

use janitor_core::evidence::{
    Action, EventInput, EventType, Evidence, EvidenceConfig, EvidenceError,
};
use janitor_core::StoreError;
use janitor_sql::testing::{create_visitors, with_schemas};
use janitor_sql::{Database, GroupedInserts, PgEvidenceStore};
use tokio::task::JoinSet;

use janitor_core::testing::{label_key, visitor, T0};

type Answer = Result<bool, EvidenceError>;

async fn evidence(database: &Database, grouped: bool) -> Arc<Evidence<PgEvidenceStore>> {
    create_visitors(database, &[visitor(1), visitor(2), visitor(3)]).await;
    let mut store = PgEvidenceStore::new(database.clone());
    if grouped {
        store = store.with_grouped_inserts(GroupedInserts::new(64, 2).expect("valid"));
    }
    Arc::new(
        Evidence::new(store, label_key("grouped"), EvidenceConfig::default())
            .with_clock(janitor_core::Clock::manual(0)),
    )
}

/// The workload: new events over shared subjects and actors, repeats and changes of an event recorded
/// before, and pairs of the same new event sent at once. Each call's name and answer, in call order.
async fn record_at_once(e: &Arc<Evidence<PgEvidenceStore>>) -> Vec<(String, Answer)> {
    let input = |id: &str, kind: EventType, n: u32| {
        EventInput::builder(id, kind)
            .action(Action::SignIn)
            .subject(e.subject_id(&format!("acct-{}", n % 20)))
            .actor(e.subject_id(&format!("agent-{}", n % 7)))
            .session(&format!("sess-{n}"))
            .visitor(visitor(u64::from(1 + n % 3)))
            .build()
            .expect("valid")
    };
    let earlier = input("evt-earlier", EventType::LoginFailure, 0);
    assert!(e.at(T0).record(&earlier).await.expect("earlier").recorded);

    let mut calls = Vec::new();
    for n in 0..120 {
        calls.push((
            format!("new-{n}"),
            input(&format!("evt-{n}"), EventType::LoginFailure, n),
        ));
    }
    for n in 0..10 {
        calls.push((format!("repeat-{n}"), earlier.clone()));
        calls.push((
            format!("change-{n}"),
            input("evt-earlier", EventType::LoginSuccess, 0),
        ));
        let twin = input(&format!("twin-{n}"), EventType::LoginSuccess, n);
        calls.push((format!("twin-{n}-a"), twin.clone()));
        calls.push((format!("twin-{n}-b"), twin));
    }
    let mut running = JoinSet::new();
    for (at, (name, input)) in calls.into_iter().enumerate() {
        let e = Arc::clone(e);
        running.spawn(async move { (at, name, e.at(T0).record(&input).await.map(|r| r.recorded)) });
    }
    let mut answers: Vec<_> = running.join_all().await;
    answers.sort_by_key(|(at, _, _)| *at);
    answers
        .into_iter()
        .map(|(_, name, answer)| (name, answer))
        .collect()
}

async fn rows(database: &Database, sql: &str) -> Vec<String> {
    let client = database.pool().get().await.expect("connection");
    let rows = client.query(sql, &[]).await.expect(sql);
    rows.iter().map(|row| row.get::<_, String>(0)).collect()
}

const EVENT_ROWS: &str =
    "SELECT concat_ws('|', id, scope, digest, subject_id, session_id, actor_id, visitor_id, \
    action, occurred_at, expires_at, record::text, event_type) FROM application_events ORDER BY id";
const SUBJECT_ROWS: &str =
    "SELECT concat_ws('|', id, kind, record::text) FROM identity_subjects ORDER BY id";

fn check_answers(answers: &[(String, Answer)], side: &str) {
    for (name, answer) in answers {
        let expected = if name.starts_with("new-") {
            Some(true)
        } else if name.starts_with("repeat-") {
            Some(false)
        } else {
            None
        };
        match (expected, answer) {
            (Some(recorded), Ok(got)) => assert_eq!(*got, recorded, "{side}: {name}"),
            (None, _) if name.starts_with("change-") => assert_eq!(
                answer,
                &Err(EvidenceError::IdempotencyConflict),
                "{side}: {name}"
            ),
            (None, Ok(_)) => {}
            (_, Err(e)) => panic!("{side}: {name} failed: {e}"),
        }
    }
    for n in 0..10 {
        let pair: Vec<bool> = answers
            .iter()
            .filter(|(name, _)| name.starts_with(&format!("twin-{n}-")))
            .map(|(_, answer)| *answer.as_ref().expect("twin recorded"))
            .collect();
        assert_eq!(
            pair.iter().filter(|r| **r).count(),
            1,
            "{side}: exactly one of twin pair {n} records it ({pair:?})"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_callers_share_statements_and_get_the_answers_and_rows_of_their_own() {
    with_schemas(|schemas| async move {
        let (alone, grouped) = (schemas.fresh().await, schemas.fresh().await);
        let alone_answers = record_at_once(&evidence(&alone, false).await).await;
        let calls = alone_answers.len() as u64;
        check_answers(&alone_answers, "alone");

        let e = evidence(&grouped, true).await;
        let before = grouped.statements_executed();
        let grouped_answers = record_at_once(&e).await;
        let statements = grouped.statements_executed() - before;
        check_answers(&grouped_answers, "grouped");
        assert!(
            statements * 2 < calls,
            "{calls} calls at once took {statements} statements: they were not grouped"
        );

        assert_eq!(rows(&alone, EVENT_ROWS).await.len(), 1 + 120 + 10);
        assert_eq!(
            rows(&grouped, EVENT_ROWS).await,
            rows(&alone, EVENT_ROWS).await
        );
        assert_eq!(
            rows(&grouped, SUBJECT_ROWS).await,
            rows(&alone, SUBJECT_ROWS).await
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_refused_for_its_data_leaves_the_rest_of_its_group_recorded() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let e = evidence(&database, true).await;
        let mut running = JoinSet::new();
        for n in 0..40u32 {
            let e = Arc::clone(&e);
            // Every eighth names a browser that has no visitor row: the foreign key refuses it.
            let browser = if n % 8 == 7 {
                visitor(99)
            } else {
                visitor(u64::from(1 + n % 3))
            };
            let input = EventInput::builder(&format!("evt-{n}"), EventType::LoginFailure)
                .subject(e.subject_id(&format!("acct-{n}")))
                .visitor(browser)
                .build()
                .expect("valid");
            running.spawn(async move { (n, e.at(T0).record(&input).await) });
        }
        for (n, answer) in running.join_all().await {
            if n % 8 == 7 {
                assert!(
                    matches!(answer, Err(EvidenceError::Store(StoreError::Data(_)))),
                    "event {n}: {answer:?}"
                );
            } else {
                assert!(answer.expect("recorded").recorded, "event {n}");
            }
        }
        assert_eq!(rows(&database, EVENT_ROWS).await.len(), 35);
    })
    .await;
}
