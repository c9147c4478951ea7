//! The planner's statistics of `observations`, gathered once when PostgreSQL has none.
//!
//! Without statistics (autovacuum off, a table restored or bulk-loaded and never analysed) PostgreSQL
//! estimates every `key = value` to match 0.5% of the rows, so the few rows it expects of a candidate probe
//! make sorting a whole bucket look as cheap as reading its newest 101 rows from the family's index, and a
//! crowded bucket is read whole. Once statistics exist, even old ones from a table a tenth the size, the
//! lookup's plans read each probe's range alone (docs/storage.md, "The candidate lookup's plan"). So the
//! migration and each maintenance step check, in one catalog read, and gather them when they are missing,
//! until the pool has once seen them.
//! Autovacuum, where it runs, keeps them fresh; nothing here runs again once they exist.

use janitor_core::StoreError;

use crate::database::Connection;
use crate::error::unreadable;

/// `observations`, schema-qualified, when it has a row and PostgreSQL holds no statistics of it; otherwise
/// nothing. `gathered` says whether it has statistics. The table is found through a row's `tableoid`, so the name is the one statements reach, with or
/// without a `search_path`.
pub(crate) const UNGATHERED: &str = "SELECT format('%I.%I', n.nspname, c.relname), \
       EXISTS (SELECT 1 FROM pg_stats s WHERE s.schemaname = n.nspname AND s.tablename = c.relname) \
     FROM (SELECT tableoid FROM observations LIMIT 1) AS o \
     JOIN pg_class c ON c.oid = o.tableoid JOIN pg_namespace n ON n.oid = c.relnamespace";

/// Gathers the statistics of `observations` when it has rows and none were ever gathered; returns whether it
/// did. `ANALYZE` reads a fixed sample (30,000 rows at PostgreSQL's default target), whatever the table's
/// size. A role that does not own the table is refused with only a warning from the server, so the statistics
/// are looked for again afterwards: when they are still missing, the pool says so once, naming the statement
/// the table's owner should run, and does not try again. Once the pool has seen statistics, or tried, it does
/// not look again: a maintenance step costs no extra round trip from then on.
pub(crate) async fn gather_if_missing(connection: &mut Connection<'_>) -> Result<bool, StoreError> {
    if connection.statistics_seen() {
        return Ok(false);
    }
    let rows = connection.query(UNGATHERED, &[]).await?;
    let Some(row) = rows.first() else {
        return Ok(false);
    };
    let read = |e| unreadable("the observations table's statistics", e);
    let (table, gathered): (&str, bool) =
        (row.try_get(0).map_err(read)?, row.try_get(1).map_err(read)?);
    if gathered {
        connection.mark_statistics_seen();
        return Ok(false);
    }
    // `format('%I.%I')` quoted both parts: the name is safe to splice.
    connection.batch(&format!("ANALYZE {table}")).await?;
    // One attempt per pool, whatever came of it: a role that may not analyse the table would only be refused
    // again at every maintenance step.
    connection.mark_statistics_seen();
    let rows = connection.query(UNGATHERED, &[]).await?;
    let gathered = match rows.first() {
        Some(row) => row.try_get(1).map_err(read)?,
        None => false,
    };
    if gathered {
        tracing::info!(
            table,
            "gathered the planner statistics of a table that had none"
        );
    } else {
        tracing::warn!(
            table,
            "the planner has no statistics of this table and this role could not gather them (ANALYZE needs \
             the table's owner): candidate lookups may read whole buckets until the owner runs ANALYZE {table} \
             (docs/storage.md, \"The candidate lookup's plan\")"
        );
    }
    Ok(gathered)
}
