//! What both sides counted at one moment, and the per-process figures of a stage between two moments.

use serde_json::{json, Value};

use crate::capacity::load::Reply;
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
        self.loads.iter().map(|l| l.open).sum()
    }

    /// Resident memory of the server processes, summed.
    pub fn server_rss(&self) -> u64 {
        self.servers.iter().map(|s| s.rss_bytes).sum()
    }

    /// Resident memory of the load processes, summed.
    pub fn client_rss(&self) -> u64 {
        self.loads.iter().map(|l| l.rss_bytes).sum()
    }
}

/// The figures of a stage from `before` to `after`: counters as differences, `open`, `peak_open` and memory
/// as they were at the end (the peak is the stage's own: it was reset when the stage began).
pub(super) fn stage(
    sources: &[String],
    before: &Snapshot,
    after: &Snapshot,
    seconds: f64,
) -> Value {
    let servers: Vec<Value> = after
        .servers
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let old = before.servers.get(i).cloned().unwrap_or_default();
            json!({
                "port": s.port,
                "pid": s.pid,
                "open": s.open,
                "peak_open": s.peak_open,
                "accepted": s.accepted - old.accepted.min(s.accepted),
                "ready": s.ready - old.ready.min(s.ready),
                "completed": s.completed - old.completed.min(s.completed),
                "overloads": s.overloads - old.overloads.min(s.overloads),
                "failures": s.failures - old.failures.min(s.failures),
                "rss_bytes": s.rss_bytes,
            })
        })
        .collect();
    let loads: Vec<Value> = after
        .loads
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let old = before.loads.get(i).cloned().unwrap_or_default();
            let diff = |now: u64, then: u64| now - then.min(now);
            json!({
                "source": sources.get(i),
                "open": l.open,
                "warmed": diff(l.warmed, old.warmed),
                "sent": diff(l.sent, old.sent),
                "ok": diff(l.ok, old.ok),
                "overloaded": diff(l.overloaded, old.overloaded),
                "errors": diff(l.errors, old.errors),
                "closes": diff(l.closes, old.closes),
                "rss_bytes": l.rss_bytes,
            })
        })
        .collect();
    let sum = |list: &[Value], field: &str| -> u64 {
        list.iter().filter_map(|v| v[field].as_u64()).sum()
    };
    json!({
        "seconds": seconds,
        "totals": {
            "server_open": sum(&servers, "open"),
            "server_peak_open": sum(&servers, "peak_open"),
            "completed": sum(&servers, "completed"),
            "overloads": sum(&servers, "overloads"),
            "failures": sum(&servers, "failures"),
            "server_rss_bytes": after.server_rss(),
            "client_open": sum(&loads, "open"),
            "sent": sum(&loads, "sent"),
            "ok": sum(&loads, "ok"),
            "overloaded": sum(&loads, "overloaded"),
            "errors": sum(&loads, "errors"),
            "closes": sum(&loads, "closes"),
            "client_rss_bytes": after.client_rss(),
        },
        "servers": servers,
        "loads": loads,
    })
}

/// Bytes as GiB with two decimals, for progress lines.
pub(super) fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
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
            open,
            sent,
            ok: sent,
            closes,
            rss_bytes: 10,
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
        assert_eq!(s["servers"][0]["completed"], 7);
        assert_eq!(s["servers"][0]["open"], 4);
        assert_eq!(s["servers"][0]["peak_open"], 5);
        assert_eq!(s["loads"][0]["sent"], 7);
        assert_eq!(s["loads"][0]["source"], "127.0.0.10");
        assert_eq!(s["totals"]["closes"], 1);
        assert_eq!(s["totals"]["server_rss_bytes"], 300);
        assert_eq!(gib(3 << 29), "1.50 GiB");
    }
}
