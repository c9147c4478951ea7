//! The activity read on a hot key: 5,000 events of one subject (and one session and one actor) among 20,000
//! others, seeded with one set-based statement each in the layout the code writes. The read saturates at the
//! configured maximum, and `EXPLAIN (ANALYZE, FORMAT JSON)` of the exact statements with their real parameters
//! shows an index scan on the key's index that stops after max + 1 rows.

use janitor_core::config::DAY_MS;
use janitor_core::evidence::{
    Action, ActivityColumn, ActivityKey, EventInput, EventType, Evidence, EvidenceConfig,
    VelocityQuery,
};
use janitor_core::LabelKey;
use janitor_sql::testing::statements::recent_event_types;
use janitor_sql::testing::with_schemas;
use janitor_sql::{Database, PgEvidenceStore};
use serde_json::Value;
use tokio_postgres::types::{Json, ToSql};

const NOW: i64 = 1_735_689_600_000;
const HOT_EVENTS: i64 = 5_000;
const BACKGROUND_SUBJECTS: i64 = 2_000;
const BACKGROUND_EVENTS: i64 = 20_000;
const MAX: u32 = 1000;

/// Seeds `HOT_EVENTS` events for one subject, session and actor, 100 ms apart going back from `NOW - 100`:
/// every third a login failure (the rest attempts), every fifth a payment (the rest sign-ins). Ids and digests
/// are well-formed labels made by md5 (unique; no application would produce them).
const SEED_HOT: &str = "\
INSERT INTO application_events \
  (id, scope, digest, subject_id, session_id, actor_id, visitor_id, action, occurred_at, expires_at, record) \
SELECT id, $1, digest, $2, $3, $4, NULL, action, at, at + $6, \
  jsonb_build_object('id', id, 'type', type, 'action', action, 'subjectId', $2::text, 'sessionId', $3::text, \
    'actorId', $4::text, 'digest', digest, 'scope', $1::text, 'occurredAt', at, 'expiresAt', at + $6) \
FROM ( \
  SELECT 'sub_' || md5('hot-' || g) || md5('hot+' || g) AS id, \
         'sub_' || md5('digest-' || g) || md5('digest+' || g) AS digest, \
         CASE WHEN g % 3 = 0 THEN 'login-failure' ELSE 'login-attempt' END AS type, \
         CASE WHEN g % 5 = 0 THEN 'payment' ELSE 'sign-in' END AS action, \
         $5::bigint - g * 100 AS at \
  FROM generate_series(1, $7::bigint) AS g \
) AS seeded";

/// Background: `BACKGROUND_SUBJECTS` other subjects with `BACKGROUND_EVENTS` events between them.
const SEED_BACKGROUND_SUBJECTS: &str = "\
INSERT INTO identity_subjects (id, kind, record) \
SELECT s, 'person', jsonb_build_object('id', s, 'kind', 'person', 'updatedAt', $1::bigint) \
FROM (SELECT 'sub_' || lpad(to_hex(g), 64, '0') AS s FROM generate_series(1, $2::bigint) AS g) AS named";

const SEED_BACKGROUND: &str = "\
INSERT INTO application_events \
  (id, scope, digest, subject_id, session_id, actor_id, visitor_id, action, occurred_at, expires_at, record) \
SELECT id, $1, id, subject, NULL, NULL, NULL, 'sign-in', at, at + $3, \
  jsonb_build_object('id', id, 'type', 'login-success', 'action', 'sign-in', 'subjectId', subject, \
    'digest', id, 'scope', $1::text, 'occurredAt', at, 'expiresAt', at + $3) \
FROM ( \
  SELECT 'sub_' || md5('bg-' || g) || md5('bg+' || g) AS id, \
         'sub_' || lpad(to_hex(1 + g % $4::bigint), 64, '0') AS subject, \
         $2::bigint - g * 10 AS at \
  FROM generate_series(1, $5::bigint) AS g \
) AS seeded";

/// Every plan node, depth first.
fn nodes<'a>(plan: &'a Value, out: &mut Vec<&'a Value>) {
    out.push(plan);
    for child in plan["Plans"].as_array().into_iter().flatten() {
        nodes(child, out);
    }
}

/// A statement parameter, as a Rust value or as an SQL literal.
enum Arg<'a> {
    Text(&'a str),
    Int(i64),
}

impl Arg<'_> {
    fn sql_type(&self) -> &'static str {
        match self {
            Arg::Text(_) => "text",
            Arg::Int(_) => "bigint",
        }
    }

    fn literal(&self) -> String {
        match self {
            // Labels and action names: letters, digits, `_` and `-` only.
            Arg::Text(text) => {
                assert!(text
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
                format!("'{text}'")
            }
            Arg::Int(n) => n.to_string(),
        }
    }

    fn value(&self) -> &(dyn ToSql + Sync) {
        match self {
            Arg::Text(text) => text,
            Arg::Int(n) => n,
        }
    }
}

/// Runs `EXPLAIN (ANALYZE, FORMAT JSON)` of `sql` with `args` — planned for those values, or (`generic`) as the
/// generic plan a prepared statement can switch to after a few executions — and checks: the top node is a Limit
/// that returned `rows`, nothing is a sequential scan or a sort, and every read of `application_events` is an
/// index scan on `index`.
async fn assert_plan(
    client: &deadpool_postgres::Object,
    sql: &str,
    args: &[Arg<'_>],
    generic: bool,
    index: &str,
    rows: u64,
    what: &str,
) {
    let row = if generic {
        let types: Vec<&str> = args.iter().map(Arg::sql_type).collect();
        let literals: Vec<String> = args.iter().map(Arg::literal).collect();
        client
            .batch_execute(&format!(
                "SET plan_cache_mode = force_generic_plan; PREPARE velocity_plan ({}) AS {sql}",
                types.join(", ")
            ))
            .await
            .unwrap_or_else(|e| panic!("PREPARE failed: {e}\n{sql}"));
        let row = client
            .query_one(
                &format!(
                    "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE velocity_plan ({})",
                    literals.join(", ")
                ),
                &[],
            )
            .await
            .unwrap_or_else(|e| panic!("EXPLAIN failed: {e}\n{sql}"));
        client
            .batch_execute("DEALLOCATE velocity_plan; RESET plan_cache_mode")
            .await
            .expect("deallocate");
        row
    } else {
        let params: Vec<&(dyn ToSql + Sync)> = args.iter().map(Arg::value).collect();
        client
            .query_one(&format!("EXPLAIN (ANALYZE, FORMAT JSON) {sql}"), &params)
            .await
            .unwrap_or_else(|e| panic!("EXPLAIN failed: {e}\n{sql}"))
    };
    let Json(document): Json<Value> = row.get(0);
    let text = serde_json::to_string_pretty(&document).unwrap_or_default();
    let top = &document[0]["Plan"];
    assert_eq!(top["Node Type"], "Limit", "{what}: top node\n{text}");
    assert_eq!(
        top["Actual Rows"], rows,
        "{what}: rows out of the limit\n{text}"
    );
    let mut all = Vec::new();
    nodes(top, &mut all);
    assert!(
        all.iter().all(|n| n["Node Type"] != "Seq Scan"),
        "{what}: a sequential scan\n{text}"
    );
    let reads: Vec<&&Value> = all
        .iter()
        .filter(|n| n["Relation Name"] == "application_events")
        .collect();
    assert!(
        !reads.is_empty(),
        "{what}: application_events not read\n{text}"
    );
    for read in reads {
        assert!(
            matches!(
                read["Node Type"].as_str(),
                Some("Index Scan" | "Index Only Scan")
            ),
            "{what}: {} on application_events\n{text}",
            read["Node Type"]
        );
        assert_eq!(read["Index Name"], index, "{what}: index\n{text}");
    }
    assert!(
        all.iter().all(|n| n["Node Type"] != "Sort"),
        "{what}: rows sorted instead of read in index order\n{text}"
    );
}

async fn seed(database: &Database, e: &Evidence<PgEvidenceStore>, keys: &HotKeys) {
    // One real event creates the subject and actor rows (and sits outside the window: it is not counted).
    let first = EventInput::builder("hot-seed", EventType::LoginSuccess)
        .subject(e.subject_id("hot-account"))
        .actor(e.subject_id("hot-agent"))
        .build()
        .expect("valid");
    assert!(
        e.at(NOW - DAY_MS)
            .record(&first)
            .await
            .expect("record")
            .recorded
    );
    let client = database.pool().get().await.expect("connection");
    let retention = 7 * DAY_MS;
    let inserted = client
        .execute(
            SEED_HOT,
            &[
                &e.scope(),
                &keys.subject,
                &keys.session,
                &keys.actor,
                &NOW,
                &retention,
                &HOT_EVENTS,
            ],
        )
        .await
        .expect("seed hot key");
    assert_eq!(inserted, HOT_EVENTS as u64);
    client
        .execute(SEED_BACKGROUND_SUBJECTS, &[&NOW, &BACKGROUND_SUBJECTS])
        .await
        .expect("seed subjects");
    let inserted = client
        .execute(
            SEED_BACKGROUND,
            &[
                &e.scope(),
                &NOW,
                &retention,
                &BACKGROUND_SUBJECTS,
                &BACKGROUND_EVENTS,
            ],
        )
        .await
        .expect("seed background");
    assert_eq!(inserted, BACKGROUND_EVENTS as u64);
    // Statistics as autovacuum would have them on a live table.
    client
        .batch_execute("ANALYZE application_events")
        .await
        .expect("analyze");
}

struct HotKeys {
    subject: String,
    session: String,
    actor: String,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hot_subject_saturates_with_a_bounded_index_scan() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let config = EvidenceConfig::builder()
            .max_events_per_query(MAX)
            .build()
            .expect("valid");
        let key = LabelKey::new(&"h".repeat(32), "hot").expect("valid key");
        let e = Evidence::new(PgEvidenceStore::new(database.clone()), key, config)
            .with_clock(janitor_core::Clock::manual(0));
        let keys = HotKeys {
            subject: e.subject_id("hot-account").as_str().to_owned(),
            session: e.session_label("hot-session"),
            actor: e.subject_id("hot-agent").as_str().to_owned(),
        };
        seed(&database, &e, &keys).await;

        // Through the service: the newest 1,000 of 5,000 are counted (g = 1..=1000: 333 multiples of 3).
        let subject = e.subject_id("hot-account");
        let summary = e
            .at(NOW)
            .velocity(&VelocityQuery::new(ActivityKey::Subject(subject.clone())))
            .await
            .expect("velocity");
        assert!(summary.saturated);
        assert_eq!(summary.total, MAX);
        assert_eq!(summary.counts.get(&EventType::LoginFailure), Some(&333));
        assert_eq!(summary.counts.get(&EventType::LoginAttempt), Some(&667));
        let session = e
            .at(NOW)
            .velocity(&VelocityQuery::new(ActivityKey::Session(
                "hot-session".into(),
            )))
            .await
            .expect("velocity");
        assert_eq!((session.total, session.saturated), (MAX, true));
        let agent = e.subject_id("hot-agent");
        let sign_in = e
            .at(NOW)
            .velocity(&VelocityQuery::new(ActivityKey::Actor(agent)).action(Action::SignIn))
            .await
            .expect("velocity");
        assert_eq!((sign_in.total, sign_in.saturated), (MAX, true));
        // Exactly 1,000 payments: a full count, not saturated.
        let payments = e
            .at(NOW)
            .velocity(
                &VelocityQuery::new(ActivityKey::Subject(subject.clone())).action(Action::Payment),
            )
            .await
            .expect("velocity");
        assert_eq!((payments.total, payments.saturated), (MAX, false));
        assert_eq!(payments.counts.values().sum::<u32>(), MAX);

        // The exact statements with their real parameters, for a custom and for a generic plan.
        let client = database.pool().get().await.expect("connection");
        let since = NOW - 900_000;
        let limit = i64::from(MAX + 1);
        let scope = e.scope().to_owned();
        let action = "sign-in";
        for generic in [false, true] {
            let mode = if generic {
                "generic plan"
            } else {
                "custom plan"
            };
            for (column, key, name) in [
                (ActivityColumn::Subject, &keys.subject, "subject"),
                (ActivityColumn::Session, &keys.session, "session"),
                (ActivityColumn::Actor, &keys.actor, "actor"),
            ] {
                let mut args = vec![
                    Arg::Text(key),
                    Arg::Text(&scope),
                    Arg::Int(since),
                    Arg::Int(NOW),
                    Arg::Int(limit),
                ];
                assert_plan(
                    &client,
                    recent_event_types(column, false),
                    &args,
                    generic,
                    &format!("idx_events_{name}_time"),
                    1001,
                    &format!("{name} ({mode})"),
                )
                .await;
                args.push(Arg::Text(action));
                assert_plan(
                    &client,
                    recent_event_types(column, true),
                    &args,
                    generic,
                    &format!("idx_events_{name}_action"),
                    1001,
                    &format!("{name} + action ({mode})"),
                )
                .await;
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sparse_subject_gets_exact_counts() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let key = LabelKey::new(&"h".repeat(32), "sparse").expect("valid key");
        let e = Evidence::new(
            PgEvidenceStore::new(database.clone()),
            key,
            EvidenceConfig::default(),
        )
        .with_clock(janitor_core::Clock::manual(0));
        let keys = HotKeys {
            subject: e.subject_id("hot-account").as_str().to_owned(),
            session: e.session_label("hot-session"),
            actor: e.subject_id("hot-agent").as_str().to_owned(),
        };
        seed(&database, &e, &keys).await;
        let quiet = e.subject_id("quiet-account");
        for (n, event_type) in [
            EventType::LoginFailure,
            EventType::LoginFailure,
            EventType::LoginSuccess,
        ]
        .into_iter()
        .enumerate()
        {
            let input = EventInput::builder(&format!("quiet-{n}"), event_type)
                .action(Action::SignIn)
                .subject(quiet.clone())
                .build()
                .expect("valid");
            e.at(NOW - 1_000 * n as i64)
                .record(&input)
                .await
                .expect("record");
        }
        let summary = e
            .at(NOW)
            .velocity(&VelocityQuery::new(ActivityKey::Subject(quiet.clone())))
            .await
            .expect("velocity");
        assert!(!summary.saturated);
        assert_eq!(summary.total, 3);
        assert_eq!(
            summary.counts.into_iter().collect::<Vec<_>>(),
            vec![(EventType::LoginSuccess, 1), (EventType::LoginFailure, 2)]
        );
        let client = database.pool().get().await.expect("connection");
        let since = NOW - 900_000;
        let limit = 1001_i64;
        let scope = e.scope().to_owned();
        let args = [
            Arg::Text(quiet.as_str()),
            Arg::Text(&scope),
            Arg::Int(since),
            Arg::Int(NOW),
            Arg::Int(limit),
        ];
        for generic in [false, true] {
            assert_plan(
                &client,
                recent_event_types(ActivityColumn::Subject, false),
                &args,
                generic,
                "idx_events_subject_time",
                3,
                "sparse subject",
            )
            .await;
        }
    })
    .await;
}
