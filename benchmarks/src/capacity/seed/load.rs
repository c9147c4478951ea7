//! Loading the event fixture fast: in one transaction, the constraints and indexes of `application_events` are
//! taken off, the subjects and events arrive by binary `COPY`, and the constraints and indexes are put back
//! from their own definitions (read from the catalog first), so the schema ends exactly as the migration made
//! it. Then one event goes through the library's API, and `VACUUM ANALYZE` runs under its own deadline.
//!
//! The rows are the ones the library writes: each event is made by `Evidence::event_record` (labelled id,
//! content digest, expiry), only stored by `COPY` instead of one statement per event.

use std::collections::BTreeMap;
use std::time::Instant;

use janitor_core::evidence::{Action, EventInput, EventType, Evidence};
use janitor_sql::PgEvidenceStore;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_postgres::binary_copy::BinaryCopyInWriter;
use tokio_postgres::types::{Json, ToSql, Type};
use tokio_postgres::Client;

use super::fixture::{action_of, offset_ms, owner_of, Owner, FIXTURE_API_EVENT};
use super::{
    connect, evidence, now_ms, pg, sparse_account, HOT_ACCOUNT, SEED_DEADLINE, SPARSE_SUBJECTS,
};
use crate::capacity::env::CapacityEnv;
use crate::capacity::Target;

/// The event fixture as the SQL report describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    /// Events in all, the one recorded through the API included.
    pub events: u64,
    /// Events recorded through the library's API (the others came by `COPY`).
    pub events_through_api: u64,
    /// Subjects: the hot one and the sparse ones.
    pub subjects: u64,
    /// Events of the hot subject.
    pub hot_subject_events: u64,
    /// The fixture's clock, epoch milliseconds: velocity reads are asked as of it.
    pub fixture_now_ms: i64,
    /// How long before that clock the events are spread.
    pub spread_ms: i64,
    /// Sizes of `application_events`.
    pub bytes: TableBytes,
    /// The fixture was found from an earlier run.
    pub reused: bool,
    /// How long the load took; absent when the fixture was reused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seconds: Option<LoadSeconds>,
}

/// Sizes of a table in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableBytes {
    /// Table, indexes and TOAST.
    pub total: i64,
    /// The table alone.
    pub table: i64,
    /// Its indexes.
    pub indexes: i64,
}

/// Seconds of each part of the load, to two decimals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSeconds {
    /// The `COPY` of subjects and events.
    pub load: f64,
    /// Putting constraints and indexes back.
    pub index_build: f64,
    /// `VACUUM ANALYZE` of the two tables.
    pub vacuum_analyze: f64,
    /// The whole load.
    pub total: f64,
    /// Each constraint and index put back, by name.
    pub by_index: BTreeMap<String, f64>,
}

/// Seeds the fixture (or finds it, with `JANITOR_BENCHMARK_REUSE=1`) and describes it.
pub async fn events(target: &Target, env: &CapacityEnv) -> Result<Dataset, String> {
    let database = target.database(2)?;
    let evidence = evidence(&database);
    let mut client = connect(&target.url, &target.schema, SEED_DEADLINE).await?;
    if env.reuse {
        if let Some(fixture_now) = existing(&client, &evidence, env.events).await? {
            println!(
                "events: reusing the fixture of {} events in schema {}",
                env.events + 1,
                target.schema
            );
            let mut dataset = describe(&client, env.events, fixture_now).await?;
            dataset.reused = true;
            return Ok(dataset);
        }
    }
    let started = Instant::now();
    let fixture_now = now_ms();
    let timings = load(&mut client, &evidence, env.events, fixture_now).await?;
    // One event through the library's own path: labels, validation, the insert statement, the new indexes.
    let input = api_event_input(&evidence)?;
    let recorded = evidence
        .at(fixture_now)
        .record(&input)
        .await
        .map_err(|e| format!("recording the fixture's API event: {e}"))?;
    if !recorded.recorded {
        return Err(
            "the fixture's API event was already there: the load did not start empty".into(),
        );
    }
    let vacuum_started = Instant::now();
    // One statement per call: VACUUM refuses to run inside the implicit transaction of a multi-statement query.
    for table in ["application_events", "identity_subjects"] {
        client
            .batch_execute(&format!("VACUUM ANALYZE {table}"))
            .await
            .map_err(|e| format!("VACUUM ANALYZE {table}: {}", pg(&e)))?;
    }
    let vacuum = vacuum_started.elapsed().as_secs_f64();
    let total = started.elapsed().as_secs_f64();
    let mut dataset = describe(&client, env.events, fixture_now).await?;
    let by_index = serde_json::to_string(&timings.by_index).unwrap_or_default();
    dataset.seconds = Some(LoadSeconds {
        load: round(timings.load),
        index_build: round(timings.index_build),
        vacuum_analyze: round(vacuum),
        total: round(total),
        by_index: timings.by_index,
    });
    println!(
        "events: {} events over {} subjects in {:.1} s (load {:.1} s, indexes {:.1} s, vacuum {:.1} s); \
         application_events {} bytes with indexes",
        env.events + 1,
        SPARSE_SUBJECTS + 1,
        total,
        timings.load,
        timings.index_build,
        vacuum,
        dataset.bytes.total
    );
    println!("events: constraints and indexes put back (seconds): {by_index}");
    Ok(dataset)
}

fn round(seconds: f64) -> f64 {
    (seconds * 100.0).round() / 100.0
}

fn api_event_input(evidence: &Evidence<PgEvidenceStore>) -> Result<EventInput, String> {
    EventInput::builder(FIXTURE_API_EVENT, EventType::LoginAttempt)
        .action(Action::SignIn)
        .subject(evidence.subject_id(HOT_ACCOUNT))
        .build()
        .map_err(|e| format!("the fixture's API event: {e}"))
}

/// The fixture's now when a complete fixture of `events` (+1) is in place: its API event is there, and as many
/// events as it needs happened at or before it (later ones were written by earlier runs' workloads).
async fn existing(
    client: &Client,
    evidence: &Evidence<PgEvidenceStore>,
    events: u64,
) -> Result<Option<i64>, String> {
    let id = evidence.event_record(&api_event_input(evidence)?, 0).id;
    let row = client
        .query_opt(
            "SELECT occurred_at FROM application_events WHERE id = $1 AND scope = $2",
            &[&id, &evidence.scope()],
        )
        .await
        .map_err(|e| format!("looking for the fixture: {}", pg(&e)))?;
    let Some(row) = row else {
        return Ok(None);
    };
    let fixture_now: i64 = row.get(0);
    let count: i64 = client
        .query_one(
            "SELECT count(*) FROM application_events WHERE occurred_at <= $1",
            &[&fixture_now],
        )
        .await
        .map_err(|e| format!("counting the fixture: {}", pg(&e)))?
        .get(0);
    if count as u64 == events + 1 {
        Ok(Some(fixture_now))
    } else {
        println!(
            "events: the fixture found holds {} events, not {}: seeding it again",
            count,
            events + 1
        );
        Ok(None)
    }
}

/// The dataset's description: counts, the fixture's clock and the sizes of `application_events`.
async fn describe(client: &Client, events: u64, fixture_now: i64) -> Result<Dataset, String> {
    let bytes = table_bytes(client).await?;
    Ok(Dataset {
        events: events + 1,
        events_through_api: 1,
        subjects: SPARSE_SUBJECTS + 1,
        hot_subject_events: events.div_ceil(2) + 1,
        fixture_now_ms: fixture_now,
        spread_ms: super::WINDOW_SPREAD_MS,
        bytes,
        reused: false,
        seconds: None,
    })
}

/// The bytes of `application_events`: in all, the table, its indexes.
pub async fn table_bytes(client: &Client) -> Result<TableBytes, String> {
    let row = client
        .query_one(
            "SELECT pg_total_relation_size('application_events'), pg_table_size('application_events'), \
             pg_indexes_size('application_events')",
            &[],
        )
        .await
        .map_err(|e| format!("sizing application_events: {}", pg(&e)))?;
    Ok(TableBytes {
        total: row.get(0),
        table: row.get(1),
        indexes: row.get(2),
    })
}

struct Timings {
    load: f64,
    index_build: f64,
    /// Seconds of each constraint and index put back, by name.
    by_index: BTreeMap<String, f64>,
}

/// The primary key and foreign keys of `application_events` with their definitions, the primary key first.
const CONSTRAINTS: &str = "\
SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint \
WHERE conrelid = 'application_events'::regclass AND contype IN ('p', 'f') \
ORDER BY contype DESC, conname";

/// The indexes of `application_events` that no constraint owns, with their definitions.
const SECONDARY_INDEXES: &str = "\
SELECT i.indexname, i.indexdef FROM pg_indexes i \
WHERE i.schemaname = current_schema() AND i.tablename = 'application_events' \
  AND NOT EXISTS (SELECT 1 FROM pg_constraint c \
                  WHERE c.conrelid = 'application_events'::regclass AND c.conname = i.indexname) \
ORDER BY i.indexname";

/// A catalog name as a quoted identifier.
fn ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

async fn definitions(
    transaction: &tokio_postgres::Transaction<'_>,
    query: &str,
    what: &str,
) -> Result<Vec<(String, String)>, String> {
    Ok(transaction
        .query(query, &[])
        .await
        .map_err(|e| format!("reading the {what}: {}", pg(&e)))?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect())
}

/// Loads the fixture in one transaction, so that a failure leaves the tables as they were. The table's
/// constraints and indexes are taken off first and put back from their own catalog definitions afterwards:
/// building each once by sorting is many times cheaper than a million index insertions and foreign-key checks
/// (and the primary key of random labels would be built by random insertions). The rows are copied frozen,
/// which the emptied table allows, so the index builds do not rewrite every page to set hint bits.
async fn load(
    client: &mut Client,
    evidence: &Evidence<PgEvidenceStore>,
    events: u64,
    fixture_now: i64,
) -> Result<Timings, String> {
    let sql = |what: &'static str| move |e: tokio_postgres::Error| format!("{what}: {}", pg(&e));
    let transaction = client
        .transaction()
        .await
        .map_err(sql("starting the load"))?;
    // Sorting for the index builds in memory rather than on disk (this transaction only).
    transaction
        .batch_execute(
            "SET LOCAL maintenance_work_mem = '256MB'; \
             TRUNCATE application_events, device_links, identity_keys, identity_delegations, \
             learning_sessions, identity_subjects",
        )
        .await
        .map_err(sql("emptying the evidence tables"))?;
    let constraints = definitions(&transaction, CONSTRAINTS, "constraint definitions").await?;
    let indexes = definitions(&transaction, SECONDARY_INDEXES, "index definitions").await?;
    if indexes.is_empty()
        || !constraints
            .iter()
            .any(|(_, d)| d.starts_with("PRIMARY KEY"))
    {
        return Err(
            "application_events lacks its primary key or indexes: is the schema migrated?".into(),
        );
    }
    for (name, _) in constraints.iter().rev() {
        transaction
            .batch_execute(&format!(
                "ALTER TABLE application_events DROP CONSTRAINT {}",
                ident(name)
            ))
            .await
            .map_err(|e| format!("dropping constraint {name}: {}", pg(&e)))?;
    }
    for (name, _) in &indexes {
        transaction
            .batch_execute(&format!("DROP INDEX {}", ident(name)))
            .await
            .map_err(|e| format!("dropping index {name}: {}", pg(&e)))?;
    }

    let started = Instant::now();
    copy_subjects(&transaction, evidence, fixture_now).await?;
    copy_events(&transaction, evidence, events, fixture_now).await?;
    let load = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let mut by_index = BTreeMap::new();
    let statements = constraints
        .iter()
        .take(1)
        .chain(&indexes)
        .chain(constraints.iter().skip(1));
    // The primary key first, then the indexes, then the foreign keys (each validated by one query).
    for (name, definition) in statements {
        let statement = if !definition.starts_with("CREATE ") {
            format!(
                "ALTER TABLE application_events ADD CONSTRAINT {} {definition}",
                ident(name)
            )
        } else {
            definition.clone()
        };
        let began = Instant::now();
        transaction
            .batch_execute(&statement)
            .await
            .map_err(|e| format!("putting back {name}: {}", pg(&e)))?;
        by_index.insert(name.clone(), round(began.elapsed().as_secs_f64()));
    }
    let index_build = started.elapsed().as_secs_f64();
    transaction
        .commit()
        .await
        .map_err(sql("committing the fixture"))?;
    Ok(Timings {
        load,
        index_build,
        by_index,
    })
}

async fn copy_subjects(
    transaction: &tokio_postgres::Transaction<'_>,
    evidence: &Evidence<PgEvidenceStore>,
    fixture_now: i64,
) -> Result<(), String> {
    let sink = transaction
        .copy_in("COPY identity_subjects (id, kind, record) FROM STDIN (FORMAT binary, FREEZE)")
        .await
        .map_err(|e| format!("COPY identity_subjects: {}", pg(&e)))?;
    let writer = BinaryCopyInWriter::new(sink, &[Type::TEXT, Type::TEXT, Type::JSONB]);
    tokio::pin!(writer);
    let accounts =
        std::iter::once(HOT_ACCOUNT.to_owned()).chain((0..SPARSE_SUBJECTS).map(sparse_account));
    for account in accounts {
        let id = evidence.subject_id(&account);
        // The record an implicitly created subject row gets from the library's insert.
        let record = json!({"id": id.as_str(), "kind": "person", "updatedAt": fixture_now});
        writer
            .as_mut()
            .write(&[&id.as_str(), &"person", &Json(&record)])
            .await
            .map_err(|e| format!("COPY identity_subjects: {}", pg(&e)))?;
    }
    writer
        .finish()
        .await
        .map_err(|e| format!("COPY identity_subjects: {}", pg(&e)))?;
    Ok(())
}

async fn copy_events(
    transaction: &tokio_postgres::Transaction<'_>,
    evidence: &Evidence<PgEvidenceStore>,
    events: u64,
    fixture_now: i64,
) -> Result<(), String> {
    let hot = evidence.subject_id(HOT_ACCOUNT);
    let sparse: Vec<_> = (0..SPARSE_SUBJECTS)
        .map(|n| evidence.subject_id(&sparse_account(n)))
        .collect();
    let sink = transaction
        .copy_in(
            "COPY application_events (id, scope, digest, subject_id, session_id, actor_id, visitor_id, \
             action, occurred_at, expires_at, record) FROM STDIN (FORMAT binary, FREEZE)",
        )
        .await
        .map_err(|e| format!("COPY application_events: {}", pg(&e)))?;
    let types = [
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::TEXT,
        Type::INT8,
        Type::INT8,
        Type::JSONB,
    ];
    let writer = BinaryCopyInWriter::new(sink, &types);
    tokio::pin!(writer);
    let none: Option<&str> = None;
    for i in 0..events {
        let subject = match owner_of(i) {
            Owner::Hot => hot.clone(),
            Owner::Sparse(n) => sparse[n as usize].clone(),
        };
        let input = EventInput::builder(&format!("fixture-{i}"), EventType::LoginAttempt)
            .action(action_of(i))
            .subject(subject)
            .build()
            .map_err(|e| format!("fixture event {i}: {e}"))?;
        let event = evidence.event_record(&input, fixture_now - offset_ms(i, events));
        let subject = event.subject_id.as_ref().map(|s| s.as_str());
        let action = event.action.map(|a| a.as_str());
        let row: [&(dyn ToSql + Sync); 11] = [
            &event.id,
            &event.scope,
            &event.digest,
            &subject,
            &none,
            &none,
            &none,
            &action,
            &event.occurred_at,
            &event.expires_at,
            &Json(&event),
        ];
        writer
            .as_mut()
            .write(&row)
            .await
            .map_err(|e| format!("COPY application_events: {}", pg(&e)))?;
    }
    writer
        .finish()
        .await
        .map_err(|e| format!("COPY application_events: {}", pg(&e)))?;
    Ok(())
}
