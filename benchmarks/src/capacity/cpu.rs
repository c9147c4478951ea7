//! CPU time of a run's parts, read from `/proc` (clock ticks of 10 ms): the database cluster (its postmaster,
//! every process it started and those it has already reaped), the server processes, and this harness (with the
//! children it has reaped, such as pgbench). A part on another machine or in another container is not
//! visible here, and its figure is absent.

use std::time::Duration;

use super::Target;

/// Milliseconds in one clock tick of `/proc/<pid>/stat` (USER_HZ is 100 on Linux).
pub const TICK_MS: u64 = 10;

/// The utime, stime, cutime and cstime of a `/proc/<pid>/stat` line, and its parent pid.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    /// The parent pid (4th field).
    pub parent: u64,
    /// User and system ticks of the process itself (14th and 15th fields).
    pub own: u64,
    /// User and system ticks of the children it has waited for (16th and 17th fields).
    pub reaped: u64,
}

impl Stat {
    /// Reads a `/proc/<pid>/stat` line; the command name may hold spaces and parentheses, so the fields are
    /// counted from its last `)`.
    pub fn parse(line: &str) -> Option<Stat> {
        let (_, rest) = line.rsplit_once(')')?;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |i: usize| fields.get(i)?.parse::<u64>().ok();
        Some(Stat {
            parent: field(1)?,
            own: field(11)? + field(12)?,
            reaped: field(13)? + field(14)?,
        })
    }

    /// The process's own user and system time.
    pub fn own_time(&self) -> Duration {
        Duration::from_millis(self.own * TICK_MS)
    }

    /// The stat of process `pid`, if it still runs.
    pub fn of(pid: u64) -> Option<Stat> {
        Stat::parse(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
    }
}

/// CPU ticks of a cluster whose postmaster is `postmaster`: its own, its reaped children's, and its live
/// children's. `None` when the postmaster is not visible.
pub fn cluster_ticks(postmaster: u64) -> Option<u64> {
    let head = Stat::of(postmaster)?;
    let mut ticks = head.own + head.reaped;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        // A process may end between the listing and the read; its ticks then reach the postmaster's reaped
        // ones, which were read before, so a session ending mid-reading is missed once, never counted twice.
        if let Some(stat) = Stat::of(pid).filter(|s| s.parent == postmaster) {
            ticks += stat.own;
        }
    }
    Some(ticks)
}

/// The postmaster of the cluster `target` names, when it runs on this machine: the parent of the backend
/// serving one connection.
pub async fn postmaster_of(target: &Target) -> Option<u64> {
    let database = target.database(1).ok()?;
    let client = database.pool().get().await.ok()?;
    let row = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .ok()?;
    let backend = u64::try_from(row.try_get::<_, i32>(0).ok()?).ok()?;
    let postmaster = Stat::of(backend)?.parent;
    // Another machine's backend pid may name an unrelated local process: the postmaster must be a postgres.
    let name = std::fs::read_to_string(format!("/proc/{postmaster}/comm")).ok()?;
    (name.trim() == "postgres").then_some(postmaster)
}

/// What a reading covers: the cluster (when visible), the given server processes, and this process.
#[derive(Debug, Clone)]
pub struct Meter {
    postmaster: Option<u64>,
    servers: Vec<u64>,
}

/// One reading of a [`Meter`], in ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reading {
    database: Option<u64>,
    servers: Option<u64>,
    harness: u64,
    harness_children: u64,
}

/// CPU spent between two readings.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    /// The database cluster's, when visible.
    pub database: Option<Duration>,
    /// The server processes', when they are this harness's children.
    pub servers: Option<Duration>,
    /// This process's own (the load generator, when it ran).
    pub harness: Duration,
    /// The children this process reaped meanwhile (pgbench, when it ran).
    pub harness_children: Duration,
}

impl Meter {
    /// A meter of the cluster behind `postmaster` and of `servers` (empty when they are not this machine's
    /// children).
    pub fn new(postmaster: Option<u64>, servers: Vec<u64>) -> Meter {
        Meter {
            postmaster,
            servers,
        }
    }

    /// Reads every part now.
    pub fn read(&self) -> Reading {
        // Its own process is always readable on Linux; elsewhere every reading is 0 and so is the spending.
        let me = Stat::of(u64::from(std::process::id())).unwrap_or_default();
        let servers = (!self.servers.is_empty())
            .then(|| {
                self.servers
                    .iter()
                    .map(|&pid| Stat::of(pid).map(|s| s.own))
                    .sum::<Option<u64>>()
            })
            .flatten();
        Reading {
            database: self.postmaster.and_then(cluster_ticks),
            servers,
            harness: me.own,
            harness_children: me.reaped,
        }
    }
}

impl Reading {
    /// What was spent from `earlier` to this reading.
    pub fn since(&self, earlier: &Reading) -> Spent {
        let ms = |ticks: u64| Duration::from_millis(ticks * TICK_MS);
        let delta = |now: Option<u64>, then: Option<u64>| Some(ms(now?.saturating_sub(then?)));
        Spent {
            database: delta(self.database, earlier.database),
            servers: delta(self.servers, earlier.servers),
            harness: ms(self.harness.saturating_sub(earlier.harness)),
            harness_children: ms(self
                .harness_children
                .saturating_sub(earlier.harness_children)),
        }
    }
}

impl Spent {
    /// The sum of `parts`; a part absent from any of them is absent from the sum.
    pub fn total(parts: &[Spent]) -> Option<Spent> {
        let sum = |a: Option<Duration>, b: Option<Duration>| Some(a? + b?);
        let (first, rest) = parts.split_first()?;
        Some(rest.iter().fold(*first, |total, part| Spent {
            database: sum(total.database, part.database),
            servers: sum(total.servers, part.servers),
            harness: total.harness + part.harness,
            harness_children: total.harness_children + part.harness_children,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_gives_its_parent_and_both_kinds_of_ticks() {
        let line = "77 (postgres: a (b) c) S 42 77 77 0 -1 4194560 100 0 0 0 250 37 12 3 20 0 1 0";
        assert_eq!(
            Stat::parse(line),
            Some(Stat {
                parent: 42,
                own: 287,
                reaped: 15
            })
        );
        assert_eq!(
            Stat::parse(line).unwrap().own_time(),
            Duration::from_millis(2_870)
        );
        assert_eq!(Stat::parse("77 (x) S"), None);
        assert_eq!(Stat::parse("no parenthesis"), None);
    }

    #[test]
    fn a_reading_counts_the_time_spent_between_two_readings() {
        let me = u64::from(std::process::id());
        let meter = Meter::new(None, vec![me]);
        let before = meter.read();
        // Busy until the kernel has charged this process three more ticks (bounded, in case it never does).
        let start = Stat::of(me).expect("its own stat").own;
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut x = 0u64;
        while Stat::of(me).expect("its own stat").own < start + 3 {
            assert!(
                std::time::Instant::now() < deadline,
                "no CPU time was charged"
            );
            for i in 0..100_000u64 {
                x = x.wrapping_mul(31).wrapping_add(i);
            }
        }
        std::hint::black_box(x);
        let spent = meter.read().since(&before);
        assert_eq!(spent.database, None, "no cluster was named");
        // The same process is read as a server and as the harness: both saw the same three ticks at least.
        let at_least = Duration::from_millis(3 * TICK_MS);
        assert!(spent.servers >= Some(at_least), "{spent:?}");
        assert!(spent.harness >= at_least, "{spent:?}");
    }

    #[test]
    fn an_ended_server_leaves_the_servers_unread() {
        // Pid 0 never names a process under /proc.
        let spent = Meter::new(None, vec![0]).read().since(&Reading::default());
        assert_eq!(spent.servers, None);
    }

    #[test]
    fn a_part_absent_from_any_reading_is_absent_from_the_total() {
        let ms = Duration::from_millis;
        let seen = Spent {
            database: Some(ms(10)),
            servers: Some(ms(20)),
            harness: ms(30),
            harness_children: ms(40),
        };
        let total = Spent::total(&[seen, seen]).expect("two parts");
        assert_eq!(total.database, Some(ms(20)));
        assert_eq!(total.harness_children, ms(80));
        let unseen = Spent {
            database: None,
            ..seen
        };
        assert_eq!(Spent::total(&[seen, unseen]).unwrap().database, None);
        assert_eq!(Spent::total(&[]), None);
    }
}
