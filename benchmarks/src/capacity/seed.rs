//! The fixtures of a run: the schema, the evidence fixture of the SQL run, the known-cookie visitors of the HTTP
//! runs, and the missing-cookie lookup at scale.
//!
//! Every fixture is loaded with `COPY` on a connection of its own whose statements get the long
//! [`SEED_DEADLINE`], never the pool's short statement timeout.

mod cookies;
mod covering;
mod fixture;
mod load;
mod lookup;

use std::path::Path;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use janitor_core::evidence::{Evidence, EvidenceConfig, SubjectId};
use janitor_core::LabelKey;
use janitor_sql::{Database, GroupedInserts, PgEvidenceStore, SchemaName};
use tokio_postgres::{Client, NoTls};

use super::env::CapacityEnv;
use super::Target;

pub use cookies::{
    known_visitors, read_cookies, record_visitors, write_cookies, CookieLine, VisitorFixture,
};
pub use covering::CoveringCost;
pub use fixture::{
    action_of, offset_ms, owner_of, sparse_sign_ins, Owner, FIXTURE_API_EVENT, WINDOW_SPREAD_MS,
};
pub use load::{table_bytes, Dataset, LoadSeconds, TableBytes};
pub use lookup::{lookup_schema, LookupFigures, Timed};

/// The account whose subject holds half the events.
pub const HOT_ACCOUNT: &str = "hot-account";

/// Subjects besides the hot one; the other half of the events is spread over them.
pub const SPARSE_SUBJECTS: u64 = 100_000;

/// How long one statement of a fixture load (a `COPY`, an index build, a `VACUUM`) may run.
pub const SEED_DEADLINE: Duration = Duration::from_secs(15 * 60);

/// The account behind sparse subject `i`.
pub fn sparse_account(i: u64) -> String {
    format!("account-{i}")
}

/// The identity secret and namespace of the harness: every label of the fixtures and workloads derives from it.
pub fn key() -> LabelKey {
    LabelKey::new(&"b".repeat(64), "benchmark")
        .expect("a 64-character secret and a namespace are valid")
}

/// The evidence service of the harness over `database`, with the library's default options.
pub fn evidence(database: &Database) -> Evidence<PgEvidenceStore> {
    Evidence::new(
        PgEvidenceStore::new(database.clone()),
        key(),
        EvidenceConfig::default(),
    )
    // The harness names the time of each call (a fixture's own instant, say).
    .with_clock(janitor_core::Clock::manual(janitor_core::now_ms()))
}

/// The same service with event inserts grouped (64 events per statement, 2 writers: the defaults).
pub fn grouped_evidence(database: &Database) -> Evidence<PgEvidenceStore> {
    Evidence::new(
        PgEvidenceStore::new(database.clone()).with_grouped_inserts(GroupedInserts::default()),
        key(),
        EvidenceConfig::default(),
    )
    // The harness names the time of each call (a fixture's own instant, say).
    .with_clock(janitor_core::Clock::manual(janitor_core::now_ms()))
}

/// The subject of sparse account `i`.
pub fn sparse_subject(evidence: &Evidence<PgEvidenceStore>, i: u64) -> SubjectId {
    evidence.subject_id(&sparse_account(i))
}

/// Now, epoch milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A plain connection (outside any pool) working in `schema` with statements bounded by `timeout`.
pub async fn connect(url: &str, schema: &str, timeout: Duration) -> Result<Client, String> {
    let schema = SchemaName::new(schema).map_err(|e| format!("schema: {e}"))?;
    let mut config =
        tokio_postgres::Config::from_str(url).map_err(|e| format!("database URL: {e}"))?;
    let options = format!(
        "{} -c search_path={schema} -c statement_timeout={}",
        config.get_options().unwrap_or_default(),
        timeout.as_millis()
    );
    config.options(options.trim_start());
    let (client, connection) = config
        .connect(NoTls)
        .await
        .map_err(|e| format!("connecting to the database: {}", pg(&e)))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Whether schema `name` exists.
pub async fn schema_exists(client: &Client, name: &str) -> Result<bool, String> {
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            &[&name],
        )
        .await
        .map_err(|e| format!("looking for schema {name}: {}", pg(&e)))?;
    Ok(row.get(0))
}

/// Creates the run's schema and applies the migrations; refuses when the schema exists and is not reused.
pub async fn prepare_schema(target: &Target, env: &CapacityEnv) -> Result<(), String> {
    let client = connect(&target.url, "public", Duration::from_secs(60)).await?;
    if schema_exists(&client, &target.schema).await? && !env.reuse {
        return Err(format!(
            "schema {schema} already exists in this database, so it is not this run's to fill or remove. \
             Drop it (`DROP SCHEMA {schema} CASCADE`, if it is a leftover of an earlier run) or keep it as \
             the fixture with JANITOR_BENCHMARK_REUSE=1",
            schema = target.schema
        ));
    }
    let database = target.database(1)?;
    database
        .migrate()
        .await
        .map_err(|e| format!("migrating schema {}: {e}", target.schema))?;
    Ok(())
}

/// Drops the run's schema and everything in it.
pub async fn drop_schema(target: &Target) -> Result<(), String> {
    drop_named(&target.url, &target.schema).await
}

/// Drops schema `name` (a checked plain identifier) and everything in it.
async fn drop_named(url: &str, name: &str) -> Result<(), String> {
    let name = SchemaName::new(name).map_err(|e| format!("schema: {e}"))?;
    let client = connect(url, "public", SEED_DEADLINE).await?;
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
        .await
        .map_err(|e| format!("dropping schema {name}: {}", pg(&e)))
}

/// Seeds the event fixture (capacity.md §1) and describes it.
pub async fn events(target: &Target, env: &CapacityEnv) -> Result<Dataset, String> {
    load::events(target, env).await
}

/// Seeds `env.visitors` known visitors and writes the cookie file: one `visitor-id<TAB>payload-json` line each.
pub async fn visitors(
    target: &Target,
    env: &CapacityEnv,
    cookies: &Path,
) -> Result<VisitorFixture, String> {
    cookies::visitors(target, env, cookies).await
}

/// The missing-cookie lookup at `env.lookup_visitors` visitors, in a schema of its own
/// ([`lookup_schema`], refused if it exists, dropped afterwards); `None` when the setting is 0.
pub async fn lookup_scale(
    target: &Target,
    env: &CapacityEnv,
) -> Result<Option<LookupFigures>, String> {
    lookup::run(target, env).await
}

/// Runs `work` on its own task so that a panic inside library test support (which panics on database errors)
/// comes back as an error of the run.
async fn guarded<T: Send + 'static>(
    what: &str,
    work: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, String> {
    tokio::spawn(work).await.map_err(|e| {
        let detail = match e.try_into_panic() {
            Ok(panic) => panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_else(|| "panicked".to_owned()),
            Err(e) => e.to_string(),
        };
        format!("{what}: {detail}")
    })
}

/// A database error with the server's own message (the client library's display says only "db error").
pub fn pg(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!("{}: {}", db.severity(), db.message());
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            text
        }
        None => match std::error::Error::source(e) {
            Some(source) => format!("{e}: {source}"),
            None => e.to_string(),
        },
    }
}
