//! The opt-in covering indexes of the candidate lookup: one per probe family, keyed like the family's index of
//! `migrations/0001_visitors.sql` and carrying `visitor_id` and `lookup_features`, so that each probe is an
//! index-only scan of a few leaf pages instead of up to 101 reads of scattered heap pages.
//!
//! They are not a migration: they cost every insert (six more index entries of about 350 bytes) and more disk
//! than the table itself, which a deployment whose lookups are rare should not pay. Measured figures and how to
//! choose are in docs/storage.md, "Covering lookup indexes".

use janitor_core::StoreError;

use crate::database::Database;

/// Name and key of each covering index, in the order of [`ProbeFamily::ALL`]. The screen and hardware keys read
/// the generated `lookup_features` array (positions 5, 6 and 9 are `{screen,width}`, `{screen,height}` and
/// `{hardware,hardwareConcurrency}`) rather than `signals_json`: PostgreSQL answers from the index alone only
/// when every column the query names is in it, and `signals_json` is far too large to include.
///
/// [`ProbeFamily::ALL`]: janitor_core::identification::candidates::ProbeFamily::ALL
pub const COVERING_LOOKUP_INDEXES: [(&str, &str); 6] = [
    (
        "janitor_cover_screen_hardware",
        "platform, browser, (lookup_features[5]), (lookup_features[6]), (lookup_features[9]), seen_at DESC",
    ),
    (
        "janitor_cover_screen_timezone",
        "platform, browser, (lookup_features[5]), (lookup_features[6]), timezone, seen_at DESC",
    ),
    (
        "janitor_cover_graphics_timezone",
        "platform, browser, webgl_renderer, timezone, seen_at DESC",
    ),
    (
        "janitor_cover_platform_browser",
        "platform, browser, seen_at DESC",
    ),
    ("janitor_cover_webgl_renderer", "webgl_renderer, seen_at DESC"),
    ("janitor_cover_timezone_browser", "timezone, browser, seen_at DESC"),
];

/// The statement that builds covering index `name` with `key` on the observations of `schema` (or of the
/// `search_path` when `None`), without blocking writes.
fn create_statement(schema: Option<&str>, name: &str, key: &str) -> String {
    let table = match schema {
        // A validated plain identifier (see SchemaName): nothing to quote.
        Some(schema) => format!("{schema}.observations"),
        None => "observations".to_owned(),
    };
    format!(
        "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} ({key}) \
         INCLUDE (visitor_id, lookup_features)"
    )
}

impl Database {
    /// Builds the covering lookup indexes that are missing, one after the other with `CREATE INDEX
    /// CONCURRENTLY` (reads and writes go on meanwhile), then returns once all six are valid. Run it once, on a
    /// direct session (not through a transaction pooler), before a store reads with
    /// [`LookupRead::CoveringIndexes`](crate::LookupRead::CoveringIndexes). The connection it used leaves the
    /// pool afterwards, with its session settings.
    ///
    /// A build that failed half-way leaves an invalid index, which `IF NOT EXISTS` would keep: this call then
    /// fails and names it, to be dropped (`DROP INDEX CONCURRENTLY`) and built again.
    pub async fn create_covering_lookup_indexes(&self) -> Result<(), StoreError> {
        let mut connection = self.connection().await?;
        // The session's timeout changes below: it does not go back to the pool.
        connection.discard();
        let schema = self.schema().map(|s| s.as_str().to_owned());
        let client = connection.client_mut();
        // An index over a large table outlasts any statement timeout; each runs alone, outside a transaction.
        let built = async {
            client.batch_execute("SET statement_timeout = 0").await?;
            for (name, key) in COVERING_LOOKUP_INDEXES {
                client
                    .batch_execute(&create_statement(schema.as_deref(), name, key))
                    .await?;
            }
            Ok::<_, tokio_postgres::Error>(())
        }
        .await;
        if let Err(e) = built {
            return Err(connection.fail(&e));
        }
        drop(connection);
        match self.missing_covering_lookup_indexes().await?.as_slice() {
            [] => Ok(()),
            missing => Err(StoreError::Data(format!(
                "covering lookup indexes not valid after building them: {}; drop them \
                 (DROP INDEX CONCURRENTLY) and build them again",
                missing.join(", ")
            ))),
        }
    }

    /// The covering lookup indexes that are absent or not valid on the observations table (empty when a
    /// store may read with [`LookupRead::CoveringIndexes`](crate::LookupRead::CoveringIndexes)).
    pub async fn missing_covering_lookup_indexes(&self) -> Result<Vec<&'static str>, StoreError> {
        let mut connection = self.connection().await?;
        let schema = self.schema().map(|s| s.as_str().to_owned());
        let valid = connection
            .client_mut()
            .query(
                "SELECT i.relname FROM pg_index x \
                 JOIN pg_class i ON i.oid = x.indexrelid \
                 JOIN pg_class t ON t.oid = x.indrelid \
                 JOIN pg_namespace n ON n.oid = t.relnamespace \
                 WHERE t.relname = 'observations' AND x.indisvalid AND x.indisready \
                   AND n.nspname = coalesce($1, current_schema())",
                &[&schema],
            )
            .await;
        let valid = valid.map_err(|e| connection.fail(&e))?;
        let valid: Vec<String> = valid.iter().map(|row| row.get(0)).collect();
        Ok(COVERING_LOOKUP_INDEXES
            .iter()
            .map(|(name, _)| *name)
            .filter(|name| !valid.iter().any(|v| v == name))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_name_the_schema_and_include_the_read_columns() {
        assert_eq!(
            create_statement(Some("tenant"), "janitor_cover_webgl_renderer", "webgl_renderer, seen_at DESC"),
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS janitor_cover_webgl_renderer ON tenant.observations \
             (webgl_renderer, seen_at DESC) INCLUDE (visitor_id, lookup_features)"
        );
        assert!(create_statement(None, "a", "b").contains(" ON observations (b) "));
    }
}
