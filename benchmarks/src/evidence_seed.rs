//! The evidence fixture of the capacity runs: `events` application events, half of them for one hot subject,
//! the rest spread over `subjects` others; every fifth a payment, the rest sign-ins; spread over the ten
//! minutes before `now_ms`. Written with two set-based statements in one transaction, then analysed.

use janitor_core::evidence::{EvidenceConfig, SubjectId};
use janitor_core::LabelKey;
use janitor_sql::Database;

/// The account whose subject holds half the events.
pub const HOT_ACCOUNT: &str = "hot-account";

/// The account behind sparse subject `i`.
pub fn sparse_account(i: u64) -> String {
    format!("account-{i}")
}

const SUBJECTS: &str = "INSERT INTO identity_subjects (id, kind, record) \
     SELECT s, 'person', jsonb_build_object('id', s, 'kind', 'person', 'updatedAt', $2::bigint) \
     FROM unnest($1::text[]) AS s ON CONFLICT DO NOTHING";

// Event ids and digests are well-formed labels made with md5: unique, and never what an application sends.
const EVENTS: &str = "INSERT INTO application_events \
       (id, scope, digest, subject_id, session_id, actor_id, visitor_id, action, occurred_at, expires_at, record) \
     SELECT id, $1, id, subject, NULL, NULL, NULL, action, at, at + $5, \
       jsonb_build_object('id', id, 'type', 'login-attempt', 'action', action, 'subjectId', subject, \
         'digest', id, 'scope', $1::text, 'occurredAt', at, 'expiresAt', at + $5) \
     FROM ( \
       SELECT 'sub_' || md5('seed-' || g) || md5('seed+' || g) AS id, \
              CASE WHEN g % 2 = 0 THEN $2 \
                   ELSE ($3::text[])[1 + (g / 2) % cardinality($3::text[])] END AS subject, \
              CASE WHEN g % 5 = 0 THEN 'payment' ELSE 'sign-in' END AS action, \
              $4::bigint - 1 - (g * 600000 / $6::bigint) AS at \
       FROM generate_series(1, $6::bigint) AS g \
     ) AS seeded";

/// Seeds the fixture and returns the table and index bytes of `application_events` afterwards.
pub async fn seed(
    database: &Database,
    key: &LabelKey,
    scope: &str,
    events: u64,
    subjects: u64,
    now_ms: i64,
) -> i64 {
    let hot = key.subject(HOT_ACCOUNT);
    let sparse: Vec<String> = (0..subjects)
        .map(|i| key.subject(&sparse_account(i)))
        .collect();
    let mut all = sparse.clone();
    all.push(hot.clone());
    let retention = EvidenceConfig::default().event_expiry(0);
    let mut client = database.pool().get().await.expect("seeding connection");
    let transaction = client.transaction().await.expect("BEGIN");
    transaction
        .batch_execute("SET LOCAL statement_timeout = 0")
        .await
        .expect("no timeout while seeding");
    transaction
        .execute(SUBJECTS, &[&all, &now_ms])
        .await
        .expect("subjects");
    transaction
        .execute(
            EVENTS,
            &[&scope, &hot, &sparse, &now_ms, &retention, &(events as i64)],
        )
        .await
        .expect("events");
    transaction.commit().await.expect("COMMIT");
    // VACUUM runs on its own, outside any transaction, with no statement timeout; the pooled connection gets
    // its timeout back afterwards.
    for statement in [
        "SET statement_timeout = 0",
        "VACUUM ANALYZE application_events",
        "VACUUM ANALYZE identity_subjects",
        "RESET statement_timeout",
    ] {
        client.batch_execute(statement).await.expect(statement);
    }
    client
        .query_one("SELECT pg_total_relation_size('application_events')", &[])
        .await
        .expect("size")
        .get(0)
}

/// The subject of sparse account `i`.
pub fn sparse_subject(key: &LabelKey, i: u64) -> SubjectId {
    SubjectId::parse(&key.subject(&sparse_account(i))).expect("labels are subject ids")
}
