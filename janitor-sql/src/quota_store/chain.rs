//! A sign-in's chain of counters in one statement: one data-modifying `WITH` query per link, each running only
//! when its condition holds (known browser or not) and every link before it that applied was claimed. A link's
//! conditional upsert is the same as a single claim's, so concurrent chains never claim past a limit.

use std::fmt::Write;

use janitor_core::protection::quota::{
    gcra_interval, ChainOutcome, ChainSettle, ClaimChain, ClaimOutcome, ClaimWhen, QuotaAlgorithm,
    QuotaClaim,
};
use janitor_core::StoreError;

use crate::database::Database;
use crate::error::unreadable;
use crate::params::Param;

/// The values one link binds, four per link after the mark (`$1`) and now (`$2`).
struct LinkParams {
    id: String,
    a: i64,
    b: i64,
    c: i64,
}

/// Fixed window: `a` reset of a fresh window, `b` window start, `c` limit. GCRA: `a` now, `b` interval, `c`
/// window.
fn link_params(claim: &QuotaClaim) -> LinkParams {
    match claim.algorithm {
        QuotaAlgorithm::FixedWindow => LinkParams {
            id: claim.id.clone(),
            a: claim.reset_at(),
            b: claim.window_start,
            c: i64::from(claim.limit),
        },
        QuotaAlgorithm::Gcra => LinkParams {
            id: claim.id.clone(),
            a: claim.window_start,
            b: gcra_interval(claim.limit, claim.window_ms),
            c: claim.window_ms,
        },
    }
}

/// The upsert of link `i` (its parameters from `$p`), gated by `gate`.
fn link_sql(out: &mut String, i: usize, p: usize, algorithm: QuotaAlgorithm, gate: &str) {
    let (id, a, b, c) = (p, p + 1, p + 2, p + 3);
    let (fresh, set, allow) = match algorithm {
        QuotaAlgorithm::FixedWindow => (
            format!("${a}::bigint"),
            format!(
                "used = CASE WHEN q.reset_at <= ${b}::bigint THEN 1 ELSE q.used + 1 END, \
                 reset_at = CASE WHEN q.reset_at <= ${b}::bigint THEN ${a}::bigint ELSE q.reset_at END"
            ),
            format!("q.reset_at <= ${b}::bigint OR q.used < ${c}::bigint"),
        ),
        QuotaAlgorithm::Gcra => (
            format!("${a}::bigint + ${b}::bigint"),
            format!(
                "used = CASE WHEN q.reset_at <= ${a}::bigint THEN 1 ELSE LEAST(q.used, 2147483646) + 1 END, \
                 reset_at = GREATEST(q.reset_at, ${a}::bigint) + ${b}::bigint"
            ),
            format!("GREATEST(q.reset_at, ${a}::bigint) + ${b}::bigint - ${a}::bigint <= ${c}::bigint"),
        ),
    };
    let _ = write!(
        out,
        ", c{i} AS (INSERT INTO protection_quotas AS q (id, used, reset_at) \
         SELECT ${id}::text, 1, {fresh} FROM k, w WHERE {gate} \
         ON CONFLICT (id) DO UPDATE SET {set} WHERE {allow} RETURNING 1)"
    );
}

/// Whether link `i` (its parameters from `$p`) has room, as the statement's snapshot reads it.
fn room_sql(p: usize, algorithm: QuotaAlgorithm) -> String {
    let (id, a, b, c) = (p, p + 1, p + 2, p + 3);
    let full = match algorithm {
        QuotaAlgorithm::FixedWindow => format!("reset_at > ${b}::bigint AND used >= ${c}::bigint"),
        QuotaAlgorithm::Gcra => {
            format!("GREATEST(reset_at, ${a}::bigint) + ${b}::bigint - ${a}::bigint > ${c}::bigint")
        }
    };
    format!("NOT EXISTS (SELECT 1 FROM protection_quotas WHERE id = ${id}::text AND {full})")
}

fn condition(when: ClaimWhen) -> &'static str {
    match when {
        ClaimWhen::Always => "true",
        ClaimWhen::Known => "k.known",
        ClaimWhen::Unknown => "NOT k.known",
    }
}

/// The statement of `chain`: `k` reads the mark, `c0..cn` claim, and the one row returned says whether the mark
/// was live, which links wrote, and each link's `reset_at` as of the statement's snapshot (for a denial).
fn chain_sql(chain: &ClaimChain) -> String {
    let mut sql = String::from(
        "WITH k AS (SELECT EXISTS (SELECT 1 FROM protection_quotas \
         WHERE id = $1::text AND reset_at > $2::bigint) AS known), w AS (SELECT true AS r",
    );
    for (i, link) in chain.links.iter().enumerate() {
        let _ = write!(
            sql,
            ", {} AS r{i}",
            room_sql(3 + 4 * i, link.claim.algorithm)
        );
    }
    sql.push(')');
    // All or nothing: every link that applies must have room before any is claimed.
    let mut all_room = String::new();
    if chain.all_or_nothing {
        for (j, link) in chain.links.iter().enumerate() {
            let _ = write!(all_room, " AND (NOT ({}) OR w.r{j})", condition(link.when));
        }
    }
    for (i, link) in chain.links.iter().enumerate() {
        let mut gate = condition(link.when).to_owned();
        gate.push_str(&all_room);
        for (j, before) in chain.links[..i].iter().enumerate() {
            let _ = write!(
                gate,
                " AND (NOT ({}) OR EXISTS (SELECT 1 FROM c{j}))",
                condition(before.when)
            );
        }
        link_sql(&mut sql, i, 3 + 4 * i, link.claim.algorithm, &gate);
    }
    sql.push_str(" SELECT (SELECT known FROM k)");
    for i in 0..chain.links.len() {
        let id = 3 + 4 * i;
        let _ = write!(
            sql,
            ", EXISTS (SELECT 1 FROM c{i}), \
             (SELECT reset_at FROM protection_quotas WHERE id = ${id}::text), (SELECT r{i} FROM w)"
        );
    }
    sql
}

/// Claims `chain` in one statement.
pub(super) async fn claim(
    database: &Database,
    chain: &ClaimChain,
) -> Result<ChainOutcome, StoreError> {
    let links: Vec<LinkParams> = chain.links.iter().map(|l| link_params(&l.claim)).collect();
    let mut params: Vec<&dyn Param> = vec![&chain.known_mark, &chain.now_ms];
    for link in &links {
        params.extend([&link.id as &dyn Param, &link.a, &link.b, &link.c]);
    }
    let sql = chain_sql(chain);
    let mut connection = database.connection().await?;
    let rows = connection.query(&sql, &params).await?;
    let row = rows
        .first()
        .ok_or_else(|| StoreError::Unavailable("a chain claim returned no row".into()))?;
    let read = |e| unreadable("a chain claim", e);
    let known: bool = row.try_get(0).map_err(read)?;
    let mut written = Vec::with_capacity(chain.links.len());
    for i in 0..chain.links.len() {
        let wrote: bool = row.try_get(1 + 3 * i).map_err(read)?;
        let reset_at: Option<i64> = row.try_get(2 + 3 * i).map_err(read)?;
        let room: bool = row.try_get(3 + 3 * i).map_err(read)?;
        written.push((wrote, reset_at, room));
    }
    // All or nothing and a link without room: nothing was claimed; that link is the denial.
    let full = chain.all_or_nothing.then(|| {
        let mut links = chain.links.iter().zip(&written);
        links.position(|(link, (_, _, room))| link.applies(known) && !room)
    });
    if let Some(full) = full.flatten() {
        let reset_at = denied_reset(&chain.links[full].claim, written[full].1);
        return Ok(ChainOutcome::stopped_at(chain, known, full, reset_at));
    }
    Ok(ChainOutcome::from_claims(chain, known, |i, claim| {
        let (wrote, reset_at, _) = written[i];
        if wrote {
            ClaimOutcome::Allowed
        } else {
            ClaimOutcome::Denied {
                reset_at: denied_reset(claim, reset_at),
            }
        }
    }))
}

/// When a denied link's next claim fits, from its row as the statement's snapshot saw it.
fn denied_reset(claim: &QuotaClaim, reset_at: Option<i64>) -> Option<i64> {
    let reset_at = reset_at?;
    match claim.algorithm {
        QuotaAlgorithm::FixedWindow => (reset_at > claim.window_start).then_some(reset_at),
        QuotaAlgorithm::Gcra => Some(
            reset_at.max(claim.window_start) + gcra_interval(claim.limit, claim.window_ms)
                - claim.window_ms,
        ),
    }
}

/// Settles in one statement: one `UPDATE` per release, then the mark's upsert.
pub(super) async fn settle(database: &Database, settle: &ChainSettle) -> Result<(), StoreError> {
    if settle.is_empty() {
        return Ok(());
    }
    let mut sql = String::from("WITH ");
    let intervals: Vec<i64> = settle
        .releases
        .iter()
        .map(|claim| match claim.algorithm {
            QuotaAlgorithm::FixedWindow => 0,
            QuotaAlgorithm::Gcra => gcra_interval(claim.limit, claim.window_ms),
        })
        .collect();
    let mut params: Vec<&dyn Param> = Vec::new();
    let mut parts = Vec::new();
    for (i, claim) in settle.releases.iter().enumerate() {
        params.extend([&claim.id as &dyn Param, &intervals[i]]);
        let (id, interval) = (params.len() - 1, params.len());
        parts.push(format!(
            "r{i} AS (UPDATE protection_quotas SET used = GREATEST(used - 1, 0), \
             reset_at = reset_at - ${interval}::bigint WHERE id = ${id}::text RETURNING 1)"
        ));
    }
    if let Some((mark, until)) = &settle.mark {
        params.extend([mark as &dyn Param, until]);
        let (id, until) = (params.len() - 1, params.len());
        parts.push(format!(
            "m AS (INSERT INTO protection_quotas AS q (id, used, reset_at) VALUES (${id}::text, 1, ${until}::bigint) \
             ON CONFLICT (id) DO UPDATE SET reset_at = GREATEST(q.reset_at, EXCLUDED.reset_at) RETURNING 1)"
        ));
    }
    sql.push_str(&parts.join(", "));
    sql.push_str(" SELECT 1");
    let mut connection = database.connection().await?;
    connection.query(&sql, &params).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use janitor_core::protection::quota::ChainLink;

    #[test]
    fn each_link_waits_for_the_links_before_it_that_applied() {
        let link = |id: &str, when| ChainLink {
            claim: QuotaClaim::fixed(id.to_owned(), 5, 0, 60_000),
            when,
        };
        let chain = ClaimChain {
            all_or_nothing: false,
            known_mark: None,
            now_ms: 0,
            links: vec![
                link("a", ClaimWhen::Always),
                link("b", ClaimWhen::Known),
                link("c", ClaimWhen::Unknown),
            ],
        };
        let sql = chain_sql(&chain);
        assert!(
            sql.contains(
                "FROM k, w WHERE NOT k.known AND (NOT (true) OR EXISTS (SELECT 1 FROM c0)) \
             AND (NOT (k.known) OR EXISTS (SELECT 1 FROM c1))"
            ),
            "{sql}"
        );
        assert_eq!(sql.matches("INSERT INTO protection_quotas").count(), 3);
    }
}
