//! Migrations: idempotent, safe from concurrent processes, refusing edited files, adopting tables that a
//! Janitor instance in another language created.

use janitor_sql::migrate::{MigrateError, MIGRATIONS};
use janitor_sql::testing::{database_url, with_schemas};
use janitor_sql::{Database, DatabaseConfig};

const LATEST: i32 = MIGRATIONS.len() as i32;

fn all_versions() -> Vec<i32> {
    (1..=LATEST).collect()
}

/// Another pool on the same schema, as a second process would have.
fn same_schema(database: &Database) -> Database {
    let schema = database.schema().expect("test databases have a schema");
    Database::new(
        DatabaseConfig::builder(&database_url())
            .schema(schema.as_str())
            .build()
            .unwrap(),
    )
    .unwrap()
}

/// Tables, indexes and ledger rows of the schema: what "one consistent schema" means.
async fn shape(database: &Database) -> (Vec<String>, Vec<String>, Vec<(i32, String)>) {
    let client = database.pool().get().await.unwrap();
    let schema = database.schema().unwrap().as_str();
    let names =
        |rows: Vec<tokio_postgres::Row>| rows.iter().map(|r| r.get(0)).collect::<Vec<String>>();
    let tables = client
        .query(
            "SELECT tablename::text FROM pg_tables WHERE schemaname = $1 ORDER BY 1",
            &[&schema],
        )
        .await
        .unwrap();
    let indexes = client
        .query(
            "SELECT indexname::text FROM pg_indexes WHERE schemaname = $1 ORDER BY 1",
            &[&schema],
        )
        .await
        .unwrap();
    let ledger = client
        .query(
            "SELECT version, name FROM janitor_migrations ORDER BY version",
            &[],
        )
        .await
        .unwrap();
    (
        names(tables),
        names(indexes),
        ledger.iter().map(|r| (r.get(0), r.get(1))).collect(),
    )
}

const TABLES: [&str; 12] = [
    "application_events",
    "device_links",
    "evaluation_controls",
    "identity_delegations",
    "identity_keys",
    "identity_subjects",
    "janitor_key_checks",
    "janitor_migrations",
    "learning_sessions",
    "observations",
    "protection_quotas",
    "visitors",
];

fn expected_indexes() -> Vec<String> {
    let mut names: Vec<String> = [
        "idx_observation_graphics_timezone",
        "idx_observation_platform_browser",
        "idx_observation_screen_hardware",
        "idx_observation_screen_timezone",
        "idx_observation_seen",
        "idx_observation_timezone_browser",
        "idx_observation_visitor_seen",
        "idx_observation_webgl_renderer",
        "idx_visitor_seen",
        "janitor_migrations_pkey",
        "janitor_key_checks_pkey",
        "idx_protection_quota_expiry",
        "protection_quotas_pkey",
        "idx_evaluation_control_expiry",
        "evaluation_controls_pkey",
        "identity_subjects_pkey",
        "identity_keys_pkey",
        "idx_identity_keys_subject",
        "identity_delegations_pkey",
        "idx_identity_delegations_expiry",
        "idx_identity_delegations_principal",
        "idx_identity_delegations_actor",
        "learning_sessions_pkey",
        "idx_learning_scope_verified",
        "idx_learning_scope_expiry",
        "idx_learning_subject_verified",
        "idx_learning_predicted_subject",
        "idx_learning_scope_language",
        "idx_learning_scope_timezone",
        "application_events_pkey",
        "idx_events_subject_time",
        "idx_events_session_time",
        "idx_events_actor_time",
        "idx_events_subject_action",
        "idx_events_session_action",
        "idx_events_actor_action",
        "idx_events_expiry",
        "idx_events_visitor",
        "device_links_pkey",
        "idx_device_links_subject",
        "idx_device_links_visitor",
        "idx_device_links_retire",
        "observations_pkey",
        "visitors_pkey",
    ]
    .map(str::to_owned)
    .to_vec();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn applying_twice_changes_nothing() {
    with_schemas(|schemas| async move {
        let database = schemas.unmigrated_with(|b| b);
        let first = database.migrate().await.expect("first run");
        assert_eq!(first.applied, all_versions());
        assert!(first.already_applied.is_empty());
        let before = shape(&database).await;
        let second = database.migrate().await.expect("second run");
        assert!(second.applied.is_empty());
        assert_eq!(second.already_applied, all_versions());
        assert_eq!(shape(&database).await, before);
        assert_eq!(before.0, TABLES);
        assert_eq!(before.1, expected_indexes());
        let files: Vec<(i32, String)> = MIGRATIONS
            .iter()
            .map(|m| (m.version, m.name.to_owned()))
            .collect();
        assert_eq!(before.2, files);
        assert_eq!(files[0].1, "0001_visitors.sql");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_processes_migrate_once() {
    with_schemas(|schemas| async move {
        for round in 0..3 {
            let first = schemas.unmigrated_with(|b| b);
            let processes: Vec<Database> = std::iter::once(first.clone())
                .chain((0..5).map(|_| same_schema(&first)))
                .collect();
            let runs = processes.iter().map(|db| {
                let db = db.clone();
                tokio::spawn(async move { db.migrate().await })
            });
            let mut applied = 0;
            for run in runs.collect::<Vec<_>>() {
                let report = run
                    .await
                    .unwrap()
                    .unwrap_or_else(|e| panic!("round {round}: {e}"));
                if report.applied == all_versions() {
                    applied += 1;
                } else {
                    assert!(
                        report.applied.is_empty(),
                        "round {round}: partial {report:?}"
                    );
                    assert_eq!(report.already_applied, all_versions());
                }
            }
            assert_eq!(applied, 1, "round {round}: exactly one process applies");
            let (tables, indexes, ledger) = shape(&first).await;
            assert_eq!(tables, TABLES);
            assert_eq!(indexes, expected_indexes());
            assert_eq!(ledger.len(), MIGRATIONS.len());
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_migration_is_refused_and_a_newer_one_tolerated() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh().await;
        let client = database.pool().get().await.unwrap();
        client
            .execute(
                "UPDATE janitor_migrations SET checksum = 'edited' WHERE version = 1",
                &[],
            )
            .await
            .unwrap();
        match database.migrate().await {
            Err(MigrateError::ChecksumMismatch {
                name,
                recorded,
                current,
            }) => {
                assert_eq!(name, "0001_visitors.sql");
                assert_eq!(recorded, "edited");
                assert_eq!(current, MIGRATIONS[0].checksum());
            }
            other => panic!("expected a checksum refusal, got {other:?}"),
        }
        client
            .execute(
                "UPDATE janitor_migrations SET checksum = $1 WHERE version = 1",
                &[&MIGRATIONS[0].checksum()],
            )
            .await
            .unwrap();
        client
            .execute(
                "INSERT INTO janitor_migrations VALUES (99, '0099_future.sql', 'x', 0)",
                &[],
            )
            .await
            .unwrap();
        let report = database
            .migrate()
            .await
            .expect("a newer release's migration is tolerated");
        assert_eq!(report.newer, [99]);
        assert!(report.applied.is_empty());
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_created_by_another_implementation_are_adopted() {
    with_schemas(|schemas| async move {
        let database = schemas.unmigrated_with(|b| b);
        let schema = database.schema().unwrap().as_str().to_owned();
        {
            let client = database.pool().get().await.unwrap();
            // The visitor tables as an earlier Janitor release lays them out, with a row in them.
            client
                .batch_execute(&format!(
                    "CREATE SCHEMA {schema};
                     CREATE TABLE visitors (id TEXT PRIMARY KEY, created_at BIGINT NOT NULL, last_seen_at BIGINT NOT NULL);
                     CREATE TABLE observations (
                       id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                       visitor_id TEXT NOT NULL REFERENCES visitors(id) ON DELETE CASCADE,
                       seen_at BIGINT NOT NULL, platform TEXT, browser TEXT, timezone TEXT, webgl_renderer TEXT,
                       signals_json JSONB NOT NULL);
                     CREATE INDEX idx_observation_platform_browser ON observations(platform, browser, seen_at DESC);
                     INSERT INTO visitors VALUES ('vis_{hex}', 1, 1);
                     INSERT INTO observations (visitor_id, seen_at, signals_json) VALUES ('vis_{hex}', 1, '{{}}');",
                    hex = "ab".repeat(24)
                ))
                .await
                .unwrap();
        }
        let report = database.migrate().await.expect("adopts the existing tables");
        assert_eq!(report.applied, all_versions());
        let (tables, indexes, _) = shape(&database).await;
        assert_eq!(tables, TABLES);
        assert_eq!(indexes, expected_indexes());
        let client = database.pool().get().await.unwrap();
        let kept: i64 = client
            .query_one("SELECT count(*) FROM observations", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(kept, 1, "existing rows are kept");
        // The compared features of a row written before the migration are filled in by PostgreSQL.
        let features: Vec<Option<String>> = client
            .query_one("SELECT lookup_features FROM observations", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(features, vec![None; 14]);
        client
            .batch_execute(&format!(
                "INSERT INTO observations (visitor_id, seen_at, signals_json) \
                 VALUES ('vis_{hex}', 2, '{{\"platform\": \"a,b\", \"screen\": {{\"width\": 1.5}}}}')",
                hex = "ab".repeat(24)
            ))
            .await
            .unwrap();
        let features: Vec<Option<String>> = client
            .query_one("SELECT lookup_features FROM observations WHERE seen_at = 2", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(features[0].as_deref(), Some("a,b"), "a later insert gets them too");
        assert_eq!(features[4].as_deref(), Some("1.5"));
    })
    .await;
}
