//! A store on a schema that was never migrated: every statement's error says to run the migrations, and the
//! pool logs it at warn level, naming the schema, in both pool modes, whichever object is missing first —
//! a table (42P01), the schema (3F000) or one of the migrations' functions (42883).

use std::sync::{Arc, Mutex};

use janitor_core::testing::visitor_store::observation;
use janitor_core::testing::{visitor, T0};
use janitor_core::{Retention, StoreError, VisitorStore};
use janitor_sql::testing::with_schemas;
use janitor_sql::{PgVisitorStore, PoolMode};

use crate::common::Captured;

/// The data error `outcome` must be, with the migrations named in it and its SQLSTATE.
fn says_to_migrate(case: &str, outcome: Result<impl std::fmt::Debug, StoreError>, codes: &[&str]) {
    match outcome {
        Err(StoreError::Data(text)) => {
            assert!(text.contains("run the migrations"), "{case}: {text}");
            assert!(text.contains("Database::migrate"), "{case}: {text}");
            assert!(
                codes.iter().any(|code| text.contains(code)),
                "{case}: one of {codes:?} in {text}"
            );
        }
        other => panic!("{case}: expected a data error, got {other:?}"),
    }
}

// One runtime thread, so that the subscriber set for this thread sees the spawned test body too.
#[tokio::test(flavor = "current_thread")]
async fn an_unmigrated_schema_says_to_run_the_migrations() {
    let (captured, _guard) = Captured::on_this_thread(tracing::Level::WARN);

    let schemas_made = Arc::new(Mutex::new(Vec::new()));
    let names = Arc::clone(&schemas_made);
    with_schemas(|schemas| async move {
        for mode in [PoolMode::Session, PoolMode::Transaction] {
            let database = schemas.unmigrated_with(|b| b.pool_mode(mode));
            database.ping().await.expect("the server answers");
            names
                .lock()
                .unwrap()
                .push(database.schema().unwrap().to_string());
            let store = PgVisitorStore::new(database, Retention::default());
            says_to_migrate(
                &format!("{mode:?}: read"),
                store.recent_observations(&visitor(1), 5, T0).await,
                &["42P01"],
            );
            says_to_migrate(
                &format!("{mode:?}: save"),
                store
                    .save_observation(&visitor(1), &observation("a"), T0)
                    .await,
                &["42P01", "3F000", "42883"],
            );
        }
    })
    .await;

    let warnings: Vec<String> = captured
        .lines()
        .into_iter()
        .filter(|line| line.contains("WARN") && line.contains("run the migrations"))
        .collect();
    for schema in schemas_made.lock().unwrap().iter() {
        assert!(
            warnings.iter().any(|line| line.contains(schema.as_str())),
            "a warning naming {schema}: {warnings:#?}"
        );
    }
}
