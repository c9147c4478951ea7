//! The SQL of the visitor store, public so it can be reviewed, `EXPLAIN`ed and replayed by load tools. Each
//! runs as a prepared statement, cached per connection.
//!
//! Parameters, shared by the write statements: `$1` visitor id, `$2` now (ms), `$3`–`$6` platform, browser,
//! timezone, webgl renderer, `$7` the observation as JSON, then for `CREATE_AND_SAVE` `$8` the network digest
//! and `$9` the extended signals, and for `SAVE` `$8` retention cutoff, `$9` rows kept per visitor, `$10`
//! whether the save also touches the visitor, `$11` the network digest, `$12` the extended signals. The digest
//! and the extended signals are NULL unless the application enables them.

use std::fmt::Write;

use janitor_core::identification::candidates::{Probe, ProbeFamily, ROWS_PER_PROBE};

use super::lookup_rows::LookupRead;

macro_rules! insert_observation {
    () => {
        "INSERT INTO observations \
           (visitor_id, seen_at, platform, browser, timezone, webgl_renderer, signals_json, network_digest, \
            extended_signals) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
    };
}

macro_rules! touch {
    () => {
        "UPDATE visitors SET last_seen_at = GREATEST(last_seen_at, $2) WHERE id = $1"
    };
}

macro_rules! create {
    () => {
        "INSERT INTO visitors (id, created_at, last_seen_at) VALUES ($1, $2, $2)"
    };
}

/// Creates a visitor (`$1`, `$2`).
pub(crate) const CREATE: &str = create!();

/// Moves `last_seen_at` forward (`$1`, `$2`).
pub(crate) const TOUCH: &str = touch!();

/// Creates a visitor and saves its first observation (`$1`–`$9`). Nothing to prune: the visitor is new.
/// The foreign key is checked at the end of the statement, when the visitor row exists.
pub(crate) const CREATE_AND_SAVE: &str =
    concat!("WITH created AS (", create!(), ") ", insert_observation!());

/// Saves an observation and prunes the visitor (`$1`–`$9`, `$11`, `$12`); `$10` also touches it. One call of
/// the function of `migrations/0005_save_observation.sql` (with the digest since 0010, the extended signals
/// since 0011), which keeps the bound of `$9` rows under concurrent saves.
pub(crate) const SAVE: &str = "SELECT pruned FROM janitor_save_observation(\
     $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) AS pruned";

/// Up to `$3` retained observations of visitor `$1` at cutoff `$2`, newest first, with their network digests
/// and extended signals.
pub(crate) const HISTORY: &str =
    "SELECT signals_json, network_digest, extended_signals FROM observations \
     WHERE visitor_id = $1 AND seen_at >= $2 ORDER BY seen_at DESC, id DESC LIMIT $3";

/// A cookie visit's history read (`$1` visitor, `$3` cutoff, `$4` limit) that also records the visit when `$5`
/// allows it and the newest retained observation equals `$6` but for its behaviour summary, and came from the
/// network `$8` with the extended signals `$9` (each NULL when its option is off): that row takes
/// `$6` (the visit's behaviour) with `seen_at` `$2`, and the visitor's `last_seen_at` moves to `$2`, each only when
/// older than `$2 - $7`. Returns the history as it was before, newest first, each row with whether the visit was
/// recorded. One statement: its updates see the snapshot the read saw, and a concurrent refresh of the same row
/// re-checks the age on the row it waited for, so it writes once.
pub(crate) const RETURNING_VISIT: &str = "WITH history AS ( \
       SELECT id, seen_at, signals_json, network_digest, extended_signals FROM observations \
       WHERE visitor_id = $1 AND seen_at >= $3 ORDER BY seen_at DESC, id DESC LIMIT $4 \
     ), identical AS ( \
       SELECT newest.id, newest.seen_at FROM ( \
         SELECT id, seen_at, signals_json, network_digest, extended_signals FROM history \
         ORDER BY seen_at DESC, id DESC LIMIT 1 \
       ) AS newest WHERE $5 AND newest.signals_json - CAST('behavior' AS text) = $6 - CAST('behavior' AS text) \
         AND newest.network_digest IS NOT DISTINCT FROM CAST($8 AS text) \
         AND newest.extended_signals IS NOT DISTINCT FROM CAST($9 AS jsonb) \
     ), refreshed AS ( \
       UPDATE observations o SET seen_at = $2, signals_json = $6 FROM identical i \
       WHERE o.id = i.id AND o.seen_at < CAST($2 AS int8) - CAST($7 AS int8) RETURNING o.id \
     ), touched AS ( \
       UPDATE visitors SET last_seen_at = $2 \
       WHERE id = $1 AND last_seen_at < CAST($2 AS int8) - CAST($7 AS int8) AND EXISTS (SELECT 1 FROM identical) RETURNING id \
     ) \
     SELECT h.signals_json, EXISTS (SELECT 1 FROM identical) AS recorded, h.network_digest, \
       h.extended_signals \
     FROM history h ORDER BY h.seen_at DESC, h.id DESC";

/// The same for every visitor of the array `$1`, in one statement: one index range read per visitor.
pub(crate) const HISTORY_BATCH: &str =
    "SELECT wanted.id, history.signals_json, history.network_digest, history.extended_signals \
     FROM unnest($1::text[]) WITH ORDINALITY AS wanted (id, position) \
     CROSS JOIN LATERAL ( \
       SELECT o.signals_json, o.network_digest, o.extended_signals, o.seen_at, o.id AS row_id \
       FROM observations o \
       WHERE o.visitor_id = wanted.id AND o.seen_at >= $2 \
       ORDER BY o.seen_at DESC, o.id DESC LIMIT $3 \
     ) AS history \
     ORDER BY wanted.position, history.seen_at DESC, history.row_id DESC";

/// Deletes a visitor; observations follow by cascade.
pub(crate) const DELETE_VISITOR: &str = "DELETE FROM visitors WHERE id = $1";

/// Deletes up to `$2` observations older than `$1`, oldest first, returning their owners.
pub(crate) const EXPIRE: &str = "DELETE FROM observations WHERE id IN ( \
       SELECT id FROM observations WHERE seen_at < $1 ORDER BY seen_at LIMIT $2) \
     RETURNING visitor_id";

/// The next `$2` visitor ids after `$1`.
pub(crate) const VISITOR_PAGE: &str = "SELECT id FROM visitors WHERE id > $1 ORDER BY id LIMIT $2";

/// Deletes all but the `$2` newest observations of each visitor in `$1`.
pub(crate) const PRUNE_VISITORS: &str = "DELETE FROM observations WHERE id IN ( \
       SELECT id FROM ( \
         SELECT id, row_number() OVER (PARTITION BY visitor_id ORDER BY seen_at DESC, id DESC) AS rank \
         FROM observations WHERE visitor_id = ANY($1) \
       ) AS ranked WHERE rank > $2)";

/// Deletes the visitors of `$1` that have no observation left and were last seen before `$2`.
pub(crate) const REMOVE_EMPTY_STALE: &str = "DELETE FROM visitors v \
     WHERE v.id = ANY($1) AND v.last_seen_at < $2 \
       AND NOT EXISTS (SELECT 1 FROM observations o WHERE o.visitor_id = v.id)";

/// The `WHERE` terms of a family, in the order of [`ProbeFamily::keys`]. Each family has an index whose
/// leading columns are exactly these terms followed by `seen_at DESC` (see `migrations/0001_visitors.sql`;
/// for [`LookupRead::CoveringIndexes`], [`COVERING_LOOKUP_INDEXES`](super::covering::COVERING_LOOKUP_INDEXES),
/// whose screen and hardware keys read the generated `lookup_features`, computed from the same paths).
fn terms(family: ProbeFamily, read: LookupRead) -> [&'static str; 5] {
    const PLATFORM: &str = "platform";
    const BROWSER: &str = "browser";
    const TIMEZONE: &str = "timezone";
    const RENDERER: &str = "webgl_renderer";
    let [width, height, cores] = if read == LookupRead::CoveringIndexes {
        [
            "(lookup_features[5])",
            "(lookup_features[6])",
            "(lookup_features[9])",
        ]
    } else {
        [
            "(signals_json #>> '{screen,width}')",
            "(signals_json #>> '{screen,height}')",
            "(signals_json #>> '{hardware,hardwareConcurrency}')",
        ]
    };
    // Unused places are empty; a family has as many terms as keys.
    match family {
        ProbeFamily::ScreenHardware => [PLATFORM, BROWSER, width, height, cores],
        ProbeFamily::ScreenTimezone => [PLATFORM, BROWSER, width, height, TIMEZONE],
        ProbeFamily::RendererTimezone => [PLATFORM, BROWSER, RENDERER, TIMEZONE, ""],
        ProbeFamily::PlatformBrowser => [PLATFORM, BROWSER, "", "", ""],
        ProbeFamily::Renderer => [RENDERER, "", "", "", ""],
        ProbeFamily::TimezoneBrowser => [TIMEZONE, BROWSER, "", "", ""],
    }
}

/// The terms of `family` for `read`, without the unused places.
fn family_terms(
    family: ProbeFamily,
    read: LookupRead,
) -> impl Iterator<Item = &'static str> + Clone {
    terms(family, read)
        .into_iter()
        .take_while(|t| !t.is_empty())
}

/// The candidate lookup for `probes` as one statement: a `UNION ALL` of one bounded index read per probe,
/// each tagged with its position, selecting what `read` reads of a row. `$1` is the cutoff; the keys follow,
/// probe after probe. Returns `None` when a probe's key count does not fit its family.
///
/// Each probe reads one range of its family's index, newest first: `key = value` on every key but the last,
/// the pivot, which reads `(pivot, seen_at) >= (value, cutoff) AND pivot <= value`, ordered by the pivot, then
/// `seen_at DESC`. The same rows in the same order as `=` on every key with `ORDER BY seen_at DESC`, but
/// planned the same whatever the statistics hold (docs/storage.md, "The candidate lookup's plan"):
/// - With `=` on every key, PostgreSQL treats the keys as constants and looks for `seen_at DESC` alone, which
///   the backward scan of the expiry index `idx_observation_seen` also gives, filtering the keys. Where
///   observations are appended in time order that index's heap looks sequential to the planner, and custom
///   plans, or generic ones from small-table statistics, read thousands of rows through it.
/// - The pivot is no equality, so the order asked for names it, and only the family's own index gives it
///   (screen + timezone and renderer + timezone share theirs with timezone + browser, which would have to
///   filter the other keys, so it costs more). The keys before it are equalities, so the index range starts
///   at the newest row of the key and ends where the pivot changes.
/// - The cutoff is only in the row comparison, which PostgreSQL estimates by its first column alone: the
///   pivot's bounds count more rows than an equality and a separate `seen_at >= $1` would, which favours the
///   ordered scan that stops after 101 even on small tables.
pub(crate) fn lookup(probes: &[Probe], read: LookupRead) -> Option<String> {
    lookup_matching(probes, read, KeyMatch::PivotRange)
}

/// How a probe's statement matches its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyMatch {
    /// Equalities and the pivot's bounds, as [`lookup`] says.
    PivotRange,
    /// `key = value` on each key, ordered by `seen_at DESC` alone: the statement before, kept so that the
    /// plan benchmark can set it beside the current one on the same table.
    // Reached through `testing` only: a build without that feature never asks for it.
    #[cfg_attr(not(any(test, feature = "testing")), allow(dead_code))]
    Equality,
}

/// [`lookup`], matching the keys the way `matching` says.
pub(crate) fn lookup_matching(
    probes: &[Probe],
    read: LookupRead,
    matching: KeyMatch,
) -> Option<String> {
    let column = read.column();
    let mut sql = String::with_capacity((250 + column.len()) * probes.len());
    let mut parameter = 1;
    for (position, probe) in probes.iter().enumerate() {
        let terms = family_terms(probe.family, read);
        if terms.clone().count() != probe.keys.len() {
            return None;
        }
        if position > 0 {
            sql.push_str(" UNION ALL ");
        }
        let _ = write!(sql, "(SELECT visitor_id, seen_at, {column}, ");
        let _ = write!(sql, "{position}::int4 AS probe FROM observations WHERE ");
        let limit = ROWS_PER_PROBE + 1;
        let last = probe.keys.len() - 1;
        for (place, term) in terms.enumerate() {
            parameter += 1;
            match matching {
                // Equalities on every key but the last, the pivot: see the documentation of `lookup`.
                KeyMatch::PivotRange if place == last => {
                    let _ = write!(
                        sql,
                        "({term}, seen_at) >= (${parameter}, $1) AND {term} <= ${parameter} \
                         ORDER BY {term}, seen_at DESC LIMIT {limit})"
                    );
                }
                KeyMatch::Equality if place == last => {
                    let _ = write!(
                        sql,
                        "{term} = ${parameter} AND seen_at >= $1 ORDER BY seen_at DESC LIMIT {limit})"
                    );
                }
                _ => {
                    let _ = write!(sql, "{term} = ${parameter} AND ");
                }
            }
        }
    }
    Some(sql)
}

#[cfg(test)]
mod tests {
    use super::super::covering::COVERING_LOOKUP_INDEXES;
    use super::super::lookup_rows::FEATURE_PATHS;
    use super::*;

    #[test]
    fn covering_terms_read_the_same_paths_and_lead_their_indexes() {
        for (family, (_, key)) in ProbeFamily::ALL.iter().zip(COVERING_LOOKUP_INDEXES) {
            let mut expected = String::new();
            for (plain, covering) in family_terms(*family, LookupRead::StoredFeatures)
                .zip(family_terms(*family, LookupRead::CoveringIndexes))
            {
                if plain != covering {
                    // `(signals_json #>> '{screen,width}')` becomes `(lookup_features[n])`, n counted from 1.
                    let path = plain
                        .trim_start_matches("(signals_json #>> '")
                        .trim_end_matches("')");
                    let at = FEATURE_PATHS.iter().position(|p| *p == path).unwrap() + 1;
                    assert_eq!(covering, format!("(lookup_features[{at}])"));
                }
                expected.push_str(covering);
                expected.push_str(", ");
            }
            expected.push_str("seen_at DESC");
            assert_eq!(key, expected, "{family:?}");
        }
    }

    #[test]
    fn lookup_numbers_parameters_over_the_probes_used() {
        let probes = [
            Probe {
                family: ProbeFamily::PlatformBrowser,
                keys: vec!["macos".into(), "chrome".into()],
            },
            Probe {
                family: ProbeFamily::Renderer,
                keys: vec!["r".into()],
            },
        ];
        assert_eq!(
            lookup(&probes, LookupRead::StoredFeatures).unwrap(),
            "(SELECT visitor_id, seen_at, lookup_features, 0::int4 AS probe FROM observations \
             WHERE platform = $2 AND (browser, seen_at) >= ($3, $1) AND browser <= $3 \
             ORDER BY browser, seen_at DESC LIMIT 101) \
             UNION ALL (SELECT visitor_id, seen_at, lookup_features, 1::int4 AS probe FROM observations \
             WHERE (webgl_renderer, seen_at) >= ($4, $1) AND webgl_renderer <= $4 \
             ORDER BY webgl_renderer, seen_at DESC LIMIT 101)"
        );
        assert_eq!(
            lookup_matching(&probes, LookupRead::StoredFeatures, KeyMatch::Equality).unwrap(),
            "(SELECT visitor_id, seen_at, lookup_features, 0::int4 AS probe FROM observations \
             WHERE platform = $2 AND browser = $3 AND seen_at >= $1 ORDER BY seen_at DESC LIMIT 101) \
             UNION ALL (SELECT visitor_id, seen_at, lookup_features, 1::int4 AS probe FROM observations \
             WHERE webgl_renderer = $4 AND seen_at >= $1 ORDER BY seen_at DESC LIMIT 101)"
        );
        let previous = lookup(&probes, LookupRead::SignalsJson).unwrap();
        assert!(
            previous.starts_with("(SELECT visitor_id, seen_at, signals_json, 0::int4 AS probe ")
        );
        let computed = lookup(&probes, LookupRead::ComputedFeatures).unwrap();
        assert!(computed
            .starts_with("(SELECT visitor_id, seen_at, ARRAY[signals_json #>> '{platform}', "));
        let covering = lookup(&probes, LookupRead::CoveringIndexes).unwrap();
        assert!(covering.starts_with(
            "(SELECT visitor_id, seen_at, lookup_features, 0::int4 AS probe FROM observations \
             WHERE platform = $2 AND (browser, seen_at) >= ($3, $1)"
        ));
        let wrong = [Probe {
            family: ProbeFamily::Renderer,
            keys: vec![],
        }];
        assert_eq!(lookup(&wrong, LookupRead::StoredFeatures), None);
    }
}
