//! The stages of the connection workload: ramp, steady, burst, recovery.

use std::time::{Duration, Instant};

use super::figures::{gib, shown, stage, Snapshot};
use super::loads::Loads;
use super::report::{Burst, Ramp, Steady, Step};
use super::{Record, RECOVERY_REQUESTS, STEADY_RATE};
use crate::capacity::load::{Command, Reply};
use crate::capacity::server::Fleet;

/// The ramp's steps below the target; the target is the last step.
const STEPS: [u64; 3] = [10_000, 50_000, 100_000];

/// How long a step may take to open its sockets.
const OPEN_DEADLINE: Duration = Duration::from_secs(600);

/// How long the burst may take to be answered.
const BURST_DEADLINE: Duration = Duration::from_secs(600);

/// How long a load process may take to count its sockets.
const COUNT_DEADLINE: Duration = Duration::from_secs(60);

/// Counts that disagree are asked again this many times, half a second apart (closes and accepts take a
/// moment to reach the other side), before the run fails.
const SETTLE_ATTEMPTS: u32 = 10;

/// The ramp's steps for `target` connections: the fixed steps below it, then the target.
pub(super) fn steps(target: u64) -> Vec<u64> {
    STEPS
        .iter()
        .copied()
        .filter(|&s| s < target)
        .chain([target])
        .collect()
}

/// `total` split over `parts` as evenly as possible, the first ones taking the remainder. With socket `j` of
/// process `i` being socket `j·parts + i` of the run, these shares hold exactly the run's sockets
/// `0..total`.
pub(super) fn shares(total: u64, parts: u64) -> Vec<u64> {
    (0..parts)
        .map(|i| total / parts + u64::from(i < total % parts))
        .collect()
}

/// Runs every stage, recording as it goes.
pub(super) async fn drive(
    fleet: &Fleet,
    loads: &mut Loads,
    steady_seconds: u64,
    record: &mut Record,
) -> Result<(), String> {
    let before = agree(fleet, loads, record, "the start").await?;
    record.summary.server_rss_before_bytes = Some(before.server_rss());
    println!(
        "connections: servers ready, {} resident",
        gib(before.server_rss())
    );
    let after_ramp = ramp(fleet, loads, record, &before).await?;
    let after_steady = steady(fleet, loads, record, &after_ramp, steady_seconds).await?;
    let after_burst = burst(fleet, loads, record, &after_steady).await?;
    let after = recovery(fleet, loads, record, &after_burst).await?;
    record.summary.held = Some(after.client_open());
    record.summary.counts_agreed = Some(true);
    Ok(())
}

async fn ramp(
    fleet: &Fleet,
    loads: &mut Loads,
    record: &mut Record,
    before: &Snapshot,
) -> Result<Snapshot, String> {
    let target = record.layout.connections;
    let parts = loads.len() as u64;
    let started = Instant::now();
    for step in steps(target) {
        let step_started = Instant::now();
        let commands: Vec<Command> = shares(step, parts)
            .into_iter()
            .map(|sockets| Command::Open { sockets })
            .collect();
        let during = format!("the ramp to {step} connections");
        let replies = loads.ask_all(&commands, OPEN_DEADLINE).await?;
        record_all(record, &replies);
        check(&replies, &during)?;
        let last = agree(fleet, loads, record, &during).await?;
        if last.client_open() != step {
            return Err(format!(
                "after {during} the load processes hold {} sockets",
                last.client_open()
            ));
        }
        record.steps.push(Step {
            connections: step,
            client_open: last.client_open(),
            server_open: last.server_open(),
            server_rss_bytes: last.server_rss(),
            client_rss_bytes: last.client_rss(),
            step_seconds: step_started.elapsed().as_secs_f64(),
            ramp_seconds: started.elapsed().as_secs_f64(),
        });
        println!(
            "connections: {step} held (load processes {} = servers {}) after {:.1} s; servers {} \
             resident, load processes {}",
            last.client_open(),
            last.server_open(),
            started.elapsed().as_secs_f64(),
            gib(last.server_rss()),
            gib(last.client_rss()),
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    let end = agree(fleet, loads, record, "the ramp").await?;
    record.stages.ramp = Some(Ramp {
        figures: stage(&loads.sources(), before, &end, seconds),
        steps: record.steps.clone(),
    });
    let growth = end.server_rss() as i64 - before.server_rss() as i64;
    let summary = &mut record.summary;
    summary.ramp_seconds = Some(seconds);
    summary.server_rss_after_ramp_bytes = Some(end.server_rss());
    summary.client_rss_after_ramp_bytes = Some(end.client_rss());
    summary.bytes_per_connection = Some(growth as f64 / target as f64);
    Ok(end)
}

async fn steady(
    fleet: &Fleet,
    loads: &mut Loads,
    record: &mut Record,
    before: &Snapshot,
    seconds: u64,
) -> Result<Snapshot, String> {
    let total = STEADY_RATE * seconds;
    let commands: Vec<Command> = shares(total, loads.len() as u64)
        .into_iter()
        .map(|requests| Command::Steady {
            requests,
            seconds: seconds as f64,
        })
        .collect();
    println!("connections: steady, {STEADY_RATE} identify requests/s for {seconds} s");
    let started = Instant::now();
    let replies = loads
        .ask_all(&commands, Duration::from_secs(seconds + 60))
        .await?;
    let elapsed = started.elapsed().as_secs_f64();
    record_all(record, &replies);
    check(&replies, "the steady stage")?;
    let end = agree(fleet, loads, record, "the steady stage").await?;
    let figures = stage(&loads.sources(), before, &end, elapsed);
    let (ok, overloaded) = (figures.totals.ok, figures.totals.overloaded);
    println!("connections: steady done, {ok} answered 200 and {overloaded} answered 503");
    record.stages.steady = Some(Steady {
        figures,
        rate: STEADY_RATE,
        requests: total,
    });
    Ok(end)
}

async fn burst(
    fleet: &Fleet,
    loads: &mut Loads,
    record: &mut Record,
    before: &Snapshot,
) -> Result<Snapshot, String> {
    let held = before.client_open();
    println!("connections: burst, one identify request on each of {held} sockets");
    let started = Instant::now();
    let replies = loads.ask_each(Command::Burst, BURST_DEADLINE).await?;
    let seconds = started.elapsed().as_secs_f64();
    record_all(record, &replies);
    check(&replies, "the burst")?;
    let end = agree(fleet, loads, record, "the burst").await?;
    let figures = stage(&loads.sources(), before, &end, seconds);
    let (ok, overloaded) = (figures.totals.ok, figures.totals.overloaded);
    let times = figures.server_answer_times.clone();
    let refusal_p99 = times.as_ref().and_then(|t| t.overloaded.p99_ms_at_most);
    let success_p99 = times.as_ref().and_then(|t| t.completed.p99_ms_at_most);
    record.stages.burst = Some(Burst {
        figures,
        process_seconds: replies.iter().map(|r| r.seconds).collect(),
    });
    let summary = &mut record.summary;
    summary.burst_seconds = Some(seconds);
    summary.burst_answered = Some(ok + overloaded);
    summary.burst_successes = Some(ok);
    summary.burst_overloads = Some(overloaded);
    summary.burst_refusal_p99_ms_at_most = refusal_p99;
    summary.burst_success_p99_ms_at_most = success_p99;
    summary.server_rss_after_burst_bytes = Some(end.server_rss());
    summary.client_rss_after_burst_bytes = Some(end.client_rss());
    println!(
        "connections: burst answered in {seconds:.1} s: {ok} × 200, {overloaded} × 503; servers {} \
         resident; in the servers' apps p99 at most {} ms for the 503s and {} ms for the 200s",
        gib(end.server_rss()),
        shown(refusal_p99),
        shown(success_p99),
    );
    if ok + overloaded != held {
        return Err(format!(
            "the burst answered {} of {held} requests",
            ok + overloaded
        ));
    }
    Ok(end)
}

async fn recovery(
    fleet: &Fleet,
    loads: &mut Loads,
    record: &mut Record,
    before: &Snapshot,
) -> Result<Snapshot, String> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = Instant::now();
    // The run's first sockets are the first ones of each process (socket j of process i is j·K + i).
    for (index, requests) in shares(RECOVERY_REQUESTS, loads.len() as u64)
        .into_iter()
        .enumerate()
    {
        if requests == 0 {
            continue;
        }
        let command = Command::Sequential { requests };
        let reply = loads.ask(index, &command, COUNT_DEADLINE).await?;
        record.saw(index, &reply);
        check(std::slice::from_ref(&reply), "the recovery")?;
    }
    let seconds = started.elapsed().as_secs_f64();
    let end = agree(fleet, loads, record, "the recovery").await?;
    let figures = stage(&loads.sources(), before, &end, seconds);
    let (ok, overloaded) = (figures.totals.ok, figures.totals.overloaded);
    record.stages.recovery = Some(figures);
    record.summary.recovery = Some(format!("{ok}/{RECOVERY_REQUESTS}"));
    record.summary.recovery_ok = Some(ok);
    println!("connections: recovery {ok}/{RECOVERY_REQUESTS} answered 200");
    if ok != RECOVERY_REQUESTS {
        return Err(format!(
            "recovery: only {ok} of {RECOVERY_REQUESTS} sequential requests answered 200 \
             ({overloaded} answered 503)"
        ));
    }
    Ok(end)
}

/// Both sides' counts once they agree (asking again for a few seconds while they do not); any socket found
/// closed fails at once. Every call starts a new peak on the servers.
async fn agree(
    fleet: &Fleet,
    loads: &mut Loads,
    record: &mut Record,
    during: &str,
) -> Result<Snapshot, String> {
    let mut last = (0, 0);
    for attempt in 0..SETTLE_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let counted = loads.ask_each(Command::Count, COUNT_DEADLINE).await?;
        record_all(record, &counted);
        check(&counted, during)?;
        let servers = match fleet.stats(true).await {
            Ok(servers) => servers,
            Err(unreachable) => {
                // A server that is gone closed its sockets: say so when the clients can already tell.
                tokio::time::sleep(Duration::from_millis(200)).await;
                let counted = loads.ask_each(Command::Count, COUNT_DEADLINE).await?;
                record_all(record, &counted);
                check(&counted, during)?;
                return Err(unreachable);
            }
        };
        let snapshot = Snapshot {
            servers,
            loads: counted,
        };
        if snapshot.client_open() == snapshot.server_open() {
            return Ok(snapshot);
        }
        last = (snapshot.client_open(), snapshot.server_open());
    }
    Err(format!(
        "after {during} the load processes hold {} sockets but the servers count {} open (still after {:.1} \
         s)",
        last.0,
        last.1,
        f64::from(SETTLE_ATTEMPTS - 1) * 0.5
    ))
}

fn record_all(record: &mut Record, replies: &[Reply]) {
    for (index, reply) in replies.iter().enumerate() {
        record.saw(index, reply);
    }
}

/// Fails on any close, socket error or other problem the load processes reported.
fn check(replies: &[Reply], during: &str) -> Result<(), String> {
    let first = replies
        .iter()
        .find_map(|r| r.problem.clone())
        .unwrap_or_else(|| "no detail".to_owned());
    let closes: u64 = replies.iter().map(|r| r.counters.closes).sum();
    if closes > 0 {
        return Err(format!(
            "unexpected close during {during}: {closes} socket(s) closed by the servers (first: {first})"
        ));
    }
    let errors: u64 = replies.iter().map(|r| r.counters.errors).sum();
    if errors > 0 {
        return Err(format!(
            "socket errors during {during}: {errors} (first: {first})"
        ));
    }
    if let Some(problem) = replies.iter().find_map(|r| r.problem.as_ref()) {
        return Err(format!("problem during {during}: {problem}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::load::Counters;

    #[test]
    fn steps_stop_at_the_target() {
        assert_eq!(steps(1_000), [1_000]);
        assert_eq!(steps(10_000), [10_000]);
        assert_eq!(steps(60_000), [10_000, 50_000, 60_000]);
        assert_eq!(steps(200_000), [10_000, 50_000, 100_000, 200_000]);
    }

    #[test]
    fn shares_hold_exactly_the_first_sockets() {
        assert_eq!(shares(100, 12).iter().sum::<u64>(), 100);
        assert_eq!(shares(100, 12)[..5], [9, 9, 9, 9, 8]);
        assert_eq!(shares(1_000, 1), [1_000]);
        for (total, parts) in [(200_000, 12), (10_000, 12), (7, 3)] {
            let s = shares(total, parts);
            let mut numbers: Vec<u64> = (0..parts)
                .flat_map(|i| (0..s[i as usize]).map(move |j| j * parts + i))
                .collect();
            numbers.sort_unstable();
            assert_eq!(numbers, (0..total).collect::<Vec<_>>());
        }
        assert!(shares(200_000, 12).iter().all(|&s| s <= 18_000));
    }

    #[test]
    fn any_close_or_error_fails_with_the_first_detail() {
        let fine = Reply::default();
        assert!(check(&[fine.clone(), fine.clone()], "x").is_ok());
        let closed = Reply {
            counters: Counters {
                closes: 2,
                ..Counters::default()
            },
            problem: Some("socket 3 to 127.0.0.1:1: closed by the server".to_owned()),
            ..Reply::default()
        };
        let e = check(&[fine.clone(), closed], "the burst").unwrap_err();
        assert!(e.starts_with("unexpected close during the burst: 2"), "{e}");
        assert!(e.contains("socket 3"), "{e}");
        let failed = Reply {
            counters: Counters {
                errors: 1,
                ..Counters::default()
            },
            ..Reply::default()
        };
        assert!(check(&[failed], "x").unwrap_err().contains("socket errors"));
        let odd = Reply {
            problem: Some("not a command".to_owned()),
            ..Reply::default()
        };
        assert!(check(&[odd], "x").unwrap_err().contains("not a command"));
    }
}
