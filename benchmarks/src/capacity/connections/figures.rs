//! What both sides counted at one moment, and the per-process figures of a stage between two moments.

use super::report::{LoadFigures, ServerAnswerTimes, StageFigures, StageTotals};
use crate::capacity::load::{Counters, Reply};
use crate::capacity::server::ServerStats;

/// Both sides' counters at one moment: every server process's stats and every load process's reply.
#[derive(Debug, Clone, Default)]
pub(super) struct Snapshot {
    pub servers: Vec<ServerStats>,
    pub loads: Vec<Reply>,
}

impl Snapshot {
    /// Sockets the servers count open.
    pub fn server_open(&self) -> u64 {
        self.servers.iter().map(|s| s.open).sum()
    }

    /// Sockets the load processes hold and have not found closed.
    pub fn client_open(&self) -> u64 {
        self.loads.iter().map(|l| l.counters.open).sum()
    }

    /// Resident memory of the server processes, summed.
    pub fn server_rss(&self) -> u64 {
        self.servers.iter().map(|s| s.rss_bytes).sum()
    }

    /// Resident memory of the load processes, summed.
    pub fn client_rss(&self) -> u64 {
        self.loads.iter().map(|l| l.counters.rss_bytes).sum()
    }
}

/// The figures of a stage from `before` to `after`: counters as differences, `open`, `peak_open` and memory
/// as they were at the end (the peak is the stage's own: it was reset when the stage began).
pub(super) fn stage(
    sources: &[String],
    before: &Snapshot,
    after: &Snapshot,
    seconds: f64,
) -> StageFigures {
    let servers = server_figures(before, after);
    let loads = load_figures(sources, before, after);
    let servers_sum = |field: fn(&ServerStats) -> u64| servers.iter().map(field).sum();
    let loads_sum = |field: fn(&Counters) -> u64| loads.iter().map(|l| field(&l.counters)).sum();
    let totals = StageTotals {
        server_open: servers_sum(|s| s.open),
        server_peak_open: servers_sum(|s| s.peak_open),
        completed: servers_sum(|s| s.completed),
        overloads: servers_sum(|s| s.overloads),
        failures: servers_sum(|s| s.failures),
        server_rss_bytes: after.server_rss(),
        client_open: loads_sum(|l| l.open),
        sent: loads_sum(|l| l.sent),
        ok: loads_sum(|l| l.ok),
        overloaded: loads_sum(|l| l.overloaded),
        errors: loads_sum(|l| l.errors),
        closes: loads_sum(|l| l.closes),
        client_rss_bytes: after.client_rss(),
    };
    StageFigures {
        seconds,
        totals,
        server_answer_times: ServerAnswerTimes::of(&servers),
        servers,
        loads,
    }
}

/// `now - then`, or 0 when a counter went back (a process that started again).
fn diff(now: u64, then: u64) -> u64 {
    now - then.min(now)
}

fn server_figures(before: &Snapshot, after: &Snapshot) -> Vec<ServerStats> {
    let old = |i: usize| before.servers.get(i).cloned().unwrap_or_default();
    let servers = after.servers.iter().enumerate();
    servers
        .map(|(i, s)| ServerStats {
            accepted: diff(s.accepted, old(i).accepted),
            ready: diff(s.ready, old(i).ready),
            completed: diff(s.completed, old(i).completed),
            overloads: diff(s.overloads, old(i).overloads),
            failures: diff(s.failures, old(i).failures),
            completed_times: s.completed_times.since(&old(i).completed_times),
            overload_times: s.overload_times.since(&old(i).overload_times),
            ..s.clone()
        })
        .collect()
}

fn load_figures(sources: &[String], before: &Snapshot, after: &Snapshot) -> Vec<LoadFigures> {
    let mut figures = Vec::with_capacity(after.loads.len());
    for (i, load) in after.loads.iter().enumerate() {
        let (now, old) = (
            &load.counters,
            before.loads.get(i).cloned().unwrap_or_default(),
        );
        let old = old.counters;
        figures.push(LoadFigures {
            source: sources.get(i).cloned(),
            counters: Counters {
                open: now.open,
                warmed: diff(now.warmed, old.warmed),
                sent: diff(now.sent, old.sent),
                ok: diff(now.ok, old.ok),
                overloaded: diff(now.overloaded, old.overloaded),
                errors: diff(now.errors, old.errors),
                closes: diff(now.closes, old.closes),
                rss_bytes: now.rss_bytes,
            },
        });
    }
    figures
}

/// Bytes as GiB with two decimals, for progress lines.
pub(super) fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// A bound in ms, or why there is none.
pub(super) fn shown(ms: Option<f64>) -> String {
    ms.map_or_else(|| "(none, or past 60 s)".to_owned(), |ms| format!("{ms}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_count_differences_and_keep_end_states() {
        let server = |open, completed, rss| ServerStats {
            pid: 7,
            port: 1,
            open,
            peak_open: open + 1,
            completed,
            rss_bytes: rss,
            ..ServerStats::default()
        };
        let load = |open, sent, closes| Reply {
            counters: Counters {
                open,
                sent,
                ok: sent,
                closes,
                rss_bytes: 10,
                ..Counters::default()
            },
            ..Reply::default()
        };
        let before = Snapshot {
            servers: vec![server(5, 3, 100)],
            loads: vec![load(5, 3, 0)],
        };
        let after = Snapshot {
            servers: vec![server(4, 10, 300)],
            loads: vec![load(4, 10, 1)],
        };
        assert_eq!((after.server_open(), after.client_open()), (4, 4));
        assert_eq!((after.server_rss(), after.client_rss()), (300, 10));
        let s = stage(&["127.0.0.10".to_owned()], &before, &after, 1.5);
        assert_eq!(s.servers[0].completed, 7);
        assert_eq!(s.servers[0].open, 4);
        assert_eq!(s.servers[0].peak_open, 5);
        assert_eq!(s.loads[0].counters.sent, 7);
        assert_eq!(s.loads[0].source.as_deref(), Some("127.0.0.10"));
        assert_eq!(s.totals.closes, 1);
        assert_eq!(s.totals.server_rss_bytes, 300);
        assert_eq!(gib(3 << 29), "1.50 GiB");
    }
}
