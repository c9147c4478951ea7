//! The seven store suites of janitor-core, run unchanged on PostgreSQL: one test per case, each in a fresh
//! schema that is dropped afterwards.

use janitor_sql::testing::{with_schemas, Schemas};

janitor_sql::pg_store_suites!(
    around: with_schemas,
    database: |schemas: Schemas| schemas.fresh().await,
);
