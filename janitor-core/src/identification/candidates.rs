//! The cookieless candidate lookup: which index probes to run, and how their rows are ranked.
//!
//! A store runs the probes (each: rows whose keys equal the current observation's, within retention, newest
//! first, at most [`ROWS_PER_PROBE`] + 1) and hands every row back; ranking is done here, once, for every store.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use crate::identification::observation::Observation;
use crate::identification::similarity::compare;
use crate::js::js_number_string;
use crate::visitor::VisitorId;

/// Rows a probe may return before its bucket counts as crowded; stores fetch one more to detect that.
pub const ROWS_PER_PROBE: usize = 100;
/// Candidates kept after ranking (the ten-candidate limit).
pub const CANDIDATE_LIMIT: usize = 10;
/// Lowest similarity for a row, or a candidate, to count.
pub const CANDIDATE_FLOOR: f64 = 0.65;

/// The six probe families, in lookup order. Each names the keys it matches on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProbeFamily {
    /// platform + browser + screen width + screen height + hardwareConcurrency
    ScreenHardware,
    /// platform + browser + screen width + screen height + timezone
    ScreenTimezone,
    /// platform + browser + webgl renderer + timezone
    RendererTimezone,
    /// platform + browser
    PlatformBrowser,
    /// webgl renderer
    Renderer,
    /// timezone + browser
    TimezoneBrowser,
}

impl ProbeFamily {
    /// Every family, in lookup order.
    pub const ALL: [ProbeFamily; 6] = [
        ProbeFamily::ScreenHardware,
        ProbeFamily::ScreenTimezone,
        ProbeFamily::RendererTimezone,
        ProbeFamily::PlatformBrowser,
        ProbeFamily::Renderer,
        ProbeFamily::TimezoneBrowser,
    ];

    /// The key values of `observation` for this family, in the order the family names them, or `None` when a
    /// key is absent (the family is then skipped, or the row is not in that bucket). Numbers are spelled as
    /// JavaScript's `String(n)` spells them, which is how `signals_json #>> '{screen,width}'` reads them.
    pub fn keys(self, o: &Observation) -> Option<Vec<String>> {
        let text = |v: Option<&String>| v.filter(|s| !s.is_empty()).cloned();
        let number = |v: Option<f64>| v.filter(|n| *n != 0.0 && !n.is_nan()).map(js_number_string);
        let platform = || text(o.platform.as_ref());
        let browser = || text(o.browser.as_ref());
        let timezone = || text(o.timezone.as_ref());
        let renderer = || {
            o.webgl_renderer()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let width = || number(o.screen.as_ref().and_then(|s| s.width));
        let height = || number(o.screen.as_ref().and_then(|s| s.height));
        let keys = match self {
            ProbeFamily::ScreenHardware => {
                vec![
                    platform()?,
                    browser()?,
                    width()?,
                    height()?,
                    number(o.hardware_concurrency())?,
                ]
            }
            ProbeFamily::ScreenTimezone => {
                vec![platform()?, browser()?, width()?, height()?, timezone()?]
            }
            ProbeFamily::RendererTimezone => {
                vec![platform()?, browser()?, renderer()?, timezone()?]
            }
            ProbeFamily::PlatformBrowser => vec![platform()?, browser()?],
            ProbeFamily::Renderer => vec![renderer()?],
            ProbeFamily::TimezoneBrowser => vec![timezone()?, browser()?],
        };
        Some(keys)
    }
}

/// One probe: a family and the key values to match.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Probe {
    /// Which index family.
    pub family: ProbeFamily,
    /// Key values, in the family's order.
    pub keys: Vec<String>,
}

/// The probes to run for an observation, numbered consecutively by their position (probe 0, 1, …) over the
/// families that have every key. Empty when the observation has no usable key: then no query runs at all.
pub fn probes_for(observation: &Observation) -> Vec<Probe> {
    ProbeFamily::ALL
        .iter()
        .filter_map(|&family| family.keys(observation).map(|keys| Probe { family, keys }))
        .collect()
}

/// A row returned by a probe.
#[derive(Debug, Clone)]
pub struct LookupRow {
    /// Owner of the observation.
    pub visitor_id: VisitorId,
    /// When it was seen, epoch milliseconds.
    pub seen_at: i64,
    /// Position of the probe that returned it in the slice given to the store.
    pub probe: usize,
    /// The stored observation, or only its [`compared_part`](crate::identification::similarity::compared_part):
    /// ranking reads no more, so a store may leave out the rest to ship fewer bytes.
    pub observation: Arc<Observation>,
}

/// A visitor that survived ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The visitor.
    pub visitor_id: VisitorId,
    /// Latest `seen_at` among its qualifying rows.
    pub last_seen_at: i64,
    /// Best similarity among its qualifying rows.
    pub score: f64,
    /// Every row that qualified it came from a probe that returned more than [`ROWS_PER_PROBE`] rows: the
    /// bucket was crowded, so a better match may have been cut off. Never restored.
    pub saturated: bool,
}

/// The one ranking order of candidates: a key (score or confidence) descending, then the latest `seen_at`,
/// then the id ascending. Ids are unique, so the order is total.
pub fn rank_order(a: (f64, &Candidate), b: (f64, &Candidate)) -> Ordering {
    b.0.total_cmp(&a.0)
        .then(b.1.last_seen_at.cmp(&a.1.last_seen_at))
        .then_with(|| a.1.visitor_id.cmp(&b.1.visitor_id))
}

/// Ranks probe rows: drops contradicted rows and rows below [`CANDIDATE_FLOOR`], keeps per visitor the best
/// score and latest `seen_at`, orders by score, then recency, then id, and keeps `limit`.
pub fn rank_lookup_rows(rows: &[LookupRow], current: &Observation, limit: usize) -> Vec<Candidate> {
    let mut per_probe = vec![0usize; rows.iter().map(|r| r.probe + 1).max().unwrap_or(0)];
    for row in rows {
        per_probe[row.probe] += 1;
    }
    let mut by_visitor: HashMap<&VisitorId, Candidate> = HashMap::new();
    for row in rows {
        let comparison = compare(&row.observation, current);
        if comparison.contradiction || comparison.score < CANDIDATE_FLOOR {
            continue;
        }
        let crowded = per_probe[row.probe] > ROWS_PER_PROBE;
        by_visitor
            .entry(&row.visitor_id)
            .and_modify(|c| {
                c.last_seen_at = c.last_seen_at.max(row.seen_at);
                c.score = c.score.max(comparison.score);
                c.saturated &= crowded;
            })
            .or_insert_with(|| Candidate {
                visitor_id: row.visitor_id.clone(),
                last_seen_at: row.seen_at,
                score: comparison.score,
                saturated: crowded,
            });
    }
    let order = |a: &Candidate, b: &Candidate| rank_order((a.score, a), (b.score, b));
    let mut ranked: Vec<Candidate> = by_visitor.into_values().collect();
    // The order is total (ids are unique), so selecting the first `limit` and sorting only those is exact.
    if limit == 0 {
        return Vec::new();
    }
    if ranked.len() > limit {
        ranked.select_nth_unstable_by(limit - 1, order);
        ranked.truncate(limit);
    }
    ranked.sort_by(order);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full() -> Observation {
        crate::identification::observation::test_observation("macos", "Asia/Jerusalem")
    }

    #[test]
    fn probes_skip_families_without_keys() {
        let all = probes_for(&full());
        assert_eq!(
            all.iter().map(|p| p.family).collect::<Vec<_>>(),
            ProbeFamily::ALL.to_vec()
        );
        assert_eq!(all[0].keys, ["macos", "chrome", "900", "1440", "8"]);
        let mut sparse = full();
        sparse.browser = None;
        let families: Vec<_> = probes_for(&sparse).into_iter().map(|p| p.family).collect();
        assert_eq!(families, [ProbeFamily::Renderer]);
        assert!(probes_for(&Observation::default()).is_empty());
    }

    fn id(name: &str) -> VisitorId {
        let n = u64::from(name.as_bytes()[name.len() - 1]);
        VisitorId::parse(&format!("vis_{n:048x}")).unwrap()
    }

    fn row(visitor: &str, seen_at: i64, probe: usize, o: &Observation) -> LookupRow {
        LookupRow {
            visitor_id: id(visitor),
            seen_at,
            probe,
            observation: Arc::new(o.clone()),
        }
    }

    #[test]
    fn ranking_orders_by_score_recency_id_and_marks_saturation() {
        let current = full();
        let mut weaker = full();
        weaker.timezone = Some("Europe/London".into());
        let mut rows = vec![
            row("vis_b", 10, 0, &current),
            row("vis_a", 10, 0, &current),
            row("vis_c", 20, 0, &weaker),
            row("vis_d", 30, 0, &current),
        ];
        // Probe 1 is crowded: 101 rows of one visitor.
        rows.extend((0..=ROWS_PER_PROBE as i64).map(|i| row("vis_e", i, 1, &current)));
        // vis_d also appears in the crowded probe; its row in probe 0 keeps it unsaturated.
        rows.push(row("vis_d", 5, 1, &current));
        let ranked = rank_lookup_rows(&rows, &current, 10);
        let ids: Vec<_> = ranked.iter().map(|c| c.visitor_id.clone()).collect();
        assert_eq!(ids, ["vis_e", "vis_d", "vis_a", "vis_b", "vis_c"].map(id));
        assert!(ranked[0].saturated);
        assert!(!ranked[1].saturated);
        assert_eq!(ranked[1].last_seen_at, 30);
        assert_eq!(rank_lookup_rows(&rows, &current, 2).len(), 2);
    }

    #[test]
    fn ranking_drops_contradicted_and_weak_rows() {
        let current = full();
        let mut other_platform = full();
        other_platform.platform = Some("windows".into());
        let sparse = Observation {
            timezone: current.timezone.clone(),
            ..Observation::default()
        };
        let rows = vec![
            row("vis_x", 1, 0, &other_platform),
            row("vis_y", 1, 0, &sparse),
        ];
        assert!(rank_lookup_rows(&rows, &current, 10).is_empty());
    }
}
