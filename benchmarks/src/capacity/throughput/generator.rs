//! The load generator of the sweep, in the harness's own process: keep-alive connections opened with a
//! warm-up `GET /ready`, an open-loop schedule on the clock, a burst on every connection, and closed loops.
//!
//! Any status other than 200 or 503, a socket error, a server closing a connection or a request left
//! unanswered for [`ANSWER_DEADLINE`] fails the run: a figure measured over broken connections means nothing.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::samples::{due, Sample};
use janitor_test_support::http1::{self, Connection};

/// How long one request may wait for its answer before the run gives up.
pub const ANSWER_DEADLINE: Duration = Duration::from_secs(30);

/// Connections opened at once while warming up: enough to be quick, few enough not to overflow a backlog.
const OPENING_AT_ONCE: usize = 256;

/// The schedule starts this long after the scheduler is ready, so request 0 is not late by construction.
const LEAD: Duration = Duration::from_millis(20);

/// The requests a load cycles through, already encoded (request `n` is `requests[n % len]`).
pub type Requests = Arc<Vec<Vec<u8>>>;

/// Opens `count` connections, connection `i` to `servers[i % servers.len()]`, each answering a warm-up
/// `GET /ready` with 200 before it is used; in that order.
pub async fn open(servers: &[SocketAddr], count: usize) -> Result<Vec<Connection>, String> {
    if servers.is_empty() {
        return Err("no server to connect to".to_owned());
    }
    let mut opening = JoinSet::new();
    let mut opened = Vec::with_capacity(count);
    for i in 0..count {
        if opening.len() >= OPENING_AT_ONCE {
            opened.push(joined(opening.join_next().await)?);
        }
        let server = servers[i % servers.len()];
        opening.spawn(async move {
            let failed = |e: String| format!("warming up connection {i} to {server}: {e}");
            let mut connection = Connection::connect(server, None)
                .await
                .map_err(|e| failed(e.to_string()))?;
            let answer =
                tokio::time::timeout(ANSWER_DEADLINE, connection.send(&http1::get("/ready")))
                    .await
                    .map_err(|_| failed("no answer".to_owned()))?
                    .map_err(|e| failed(e.to_string()))?;
            if answer.status != 200 || answer.closing {
                return Err(failed(format!("status {}", answer.status)));
            }
            connection.release_buffer();
            Ok((i, connection))
        });
    }
    while let Some(result) = opening.join_next().await {
        opened.push(joined(Some(result))?);
    }
    opened.sort_unstable_by_key(|(i, _)| *i);
    Ok(opened.into_iter().map(|(_, c)| c).collect())
}

fn joined<T>(
    result: Option<Result<Result<T, String>, tokio::task::JoinError>>,
) -> Result<T, String> {
    match result {
        Some(Ok(outcome)) => outcome,
        Some(Err(e)) => Err(format!("a connection task failed: {e}")),
        None => Err("no connection task left".to_owned()),
    }
}

/// Sends one request and checks its answer; `begin` is the start its times are measured from, and a request
/// without a `scheduled` time counts as scheduled when sent.
async fn exchange(
    connection: &mut Connection,
    request: &[u8],
    begin: Instant,
    scheduled: Option<Duration>,
) -> Result<Sample, String> {
    let sent = begin.elapsed();
    let scheduled = scheduled.unwrap_or(sent);
    let answer = tokio::time::timeout(ANSWER_DEADLINE, connection.send(request))
        .await
        .map_err(|_| format!("no answer within {} s", ANSWER_DEADLINE.as_secs()))?
        .map_err(|e| format!("socket error: {e}"))?;
    let done = begin.elapsed();
    if answer.status != 200 && answer.status != 503 {
        let body = String::from_utf8_lossy(connection.body());
        return Err(format!(
            "unexpected status {}: {}",
            answer.status,
            body.chars().take(200).collect::<String>()
        ));
    }
    if answer.closing {
        return Err(format!(
            "the server closed a connection (status {})",
            answer.status
        ));
    }
    Ok(Sample {
        scheduled,
        sent,
        done,
        status: answer.status,
    })
}

/// A connection coming back to the scheduler: with the sample of the request it carried, if any.
type Returned = Result<(Connection, Option<Sample>), String>;

/// One open-loop point: `rate · duration` requests, request `n` due at `n · 1000 / rate` ms, each sent on an
/// idle connection as soon as it is due — late when none is idle, never skipped. Gives the connections back
/// with one sample per request.
///
/// The schedule runs on a thread of its own with the system's sleep (tens of microseconds of slack), not on a
/// runtime timer (a millisecond's granularity would make every request past 1,000/s look late).
pub async fn open_loop(
    connections: Vec<Connection>,
    requests: Requests,
    rate: u64,
    duration: Duration,
) -> Result<(Vec<Connection>, Vec<Sample>), String> {
    let total = (u128::from(rate) * duration.as_millis() / 1_000) as u64;
    let handle = tokio::runtime::Handle::current();
    let (returns, mut returned) = mpsc::unbounded_channel::<Returned>();
    let count = connections.len();
    for connection in connections {
        let _ = returns.send(Ok((connection, None)));
    }
    let scheduler = move || {
        let mut samples = Vec::with_capacity(total as usize);
        let mut idle = Vec::with_capacity(count);
        let mut failure = None;
        let mut in_flight = 0usize;
        let mut take = |message: Returned, in_flight: &mut usize, failure: &mut Option<String>| {
            match message {
                Ok((connection, sample)) => {
                    if let Some(sample) = sample {
                        samples.push(sample);
                        *in_flight -= 1;
                    }
                    Some(connection)
                }
                Err(problem) => {
                    *in_flight -= 1;
                    failure.get_or_insert(problem);
                    None
                }
            }
        };
        let begin = Instant::now() + LEAD;
        'schedule: for n in 0..total {
            let scheduled = due(n, rate);
            let wait = (begin + scheduled).saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
            // The oldest idle connection; when none is, the request waits for one and goes out late.
            let mut connection = loop {
                let Some(message) = returned.blocking_recv() else {
                    break 'schedule;
                };
                if let Some(connection) = take(message, &mut in_flight, &mut failure) {
                    break connection;
                }
                if failure.is_some() {
                    break 'schedule;
                }
            };
            in_flight += 1;
            let (requests, returns) = (requests.clone(), returns.clone());
            handle.spawn(async move {
                let request = &requests[(n % requests.len() as u64) as usize];
                let message = exchange(&mut connection, request, begin, Some(scheduled))
                    .await
                    .map(|sample| (connection, Some(sample)));
                let _ = returns.send(message);
            });
        }
        while in_flight > 0 {
            match returned.blocking_recv() {
                Some(message) => idle.extend(take(message, &mut in_flight, &mut failure)),
                None => break,
            }
        }
        while let Ok(message) = returned.try_recv() {
            idle.extend(take(message, &mut in_flight, &mut failure));
        }
        match failure {
            Some(problem) => Err(problem),
            None => Ok((idle, samples)),
        }
    };
    tokio::task::spawn_blocking(scheduler)
        .await
        .map_err(|e| format!("the scheduler failed: {e}"))?
}

/// One request on every connection at once (all due at the start). Gives the connections back with the
/// samples.
pub async fn burst(
    connections: Vec<Connection>,
    requests: Requests,
) -> Result<(Vec<Connection>, Vec<Sample>), String> {
    let begin = Instant::now();
    let mut tasks = JoinSet::new();
    for (n, mut connection) in connections.into_iter().enumerate() {
        let requests = requests.clone();
        tasks.spawn(async move {
            let request = &requests[n % requests.len()];
            let sample = exchange(&mut connection, request, begin, Some(Duration::ZERO)).await?;
            Ok((connection, sample))
        });
    }
    let mut back = Vec::with_capacity(tasks.len());
    let mut samples = Vec::with_capacity(tasks.len());
    while let Some(result) = tasks.join_next().await {
        let (connection, sample) = joined(Some(result))?;
        back.push(connection);
        samples.push(sample);
    }
    Ok((back, samples))
}

/// A closed loop: every connection sends its next request as soon as the last is answered, until `duration`
/// is over. Each sample's scheduled time is its send time (a closed loop has no schedule to fall behind).
pub async fn closed_loop(
    connections: Vec<Connection>,
    requests: Requests,
    duration: Duration,
) -> Result<(Vec<Connection>, Vec<Sample>), String> {
    let begin = Instant::now();
    let count = connections.len();
    let mut tasks = JoinSet::new();
    for (i, mut connection) in connections.into_iter().enumerate() {
        let requests = requests.clone();
        tasks.spawn(async move {
            let mut samples = Vec::new();
            let mut n = i;
            while begin.elapsed() < duration {
                let request = &requests[n % requests.len()];
                samples.push(exchange(&mut connection, request, begin, None).await?);
                n += count;
            }
            Ok((connection, samples))
        });
    }
    let mut back = Vec::with_capacity(count);
    let mut all = Vec::new();
    while let Some(result) = tasks.join_next().await {
        let (connection, mut samples) = joined(Some(result))?;
        back.push(connection);
        all.append(&mut samples);
    }
    Ok((back, all))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    /// A server answering every request on every connection with `reply`, after `delay`.
    async fn server(reply: &'static [u8], delay: Duration) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (mut socket, _) = listener.accept().await.unwrap();
                tokio::spawn(async move {
                    let mut scratch = [0u8; 4096];
                    loop {
                        match socket.read(&mut scratch).await {
                            Ok(0) | Err(_) => return,
                            Ok(_) => {}
                        }
                        tokio::time::sleep(delay).await;
                        if socket.write_all(reply).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        addr
    }

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn open_loop_sends_every_request_and_waits_for_idle_connections() {
        let addr = server(OK, Duration::from_millis(30)).await;
        let connections = open(&[addr], 2).await.unwrap();
        let requests: Requests = Arc::new(vec![http1::get("/plain")]);
        // 200/s for 100 ms on 2 connections answering in 30 ms: at most ~67/s get out on time, so requests
        // wait for a connection and go out late.
        let (back, samples) = open_loop(connections, requests, 200, Duration::from_millis(100))
            .await
            .unwrap();
        assert_eq!((back.len(), samples.len()), (2, 20));
        let late = samples
            .iter()
            .filter(|s| s.lateness() > Duration::from_millis(5))
            .count();
        assert!(late >= 10, "{late} late of {samples:?}");
        assert!(samples
            .iter()
            .all(|s| s.sent >= s.scheduled && s.done > s.sent));
        let mut scheduled: Vec<_> = samples.iter().map(|s| s.scheduled).collect();
        scheduled.sort();
        assert_eq!(scheduled, (0..20).map(|n| due(n, 200)).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn any_other_status_or_a_close_fails() {
        let requests: Requests = Arc::new(vec![http1::get("/")]);
        let addr = server(
            b"HTTP/1.1 500 Oops\r\ncontent-length: 4\r\n\r\nboom",
            Duration::ZERO,
        )
        .await;
        let connections = open(&[addr], 1).await;
        assert!(connections.unwrap_err().contains("status 500"));

        let addr = server(
            b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
            Duration::ZERO,
        )
        .await;
        let warm = Connection::connect(addr, None).await.unwrap();
        let problem = open_loop(vec![warm], requests.clone(), 100, Duration::from_millis(50))
            .await
            .unwrap_err();
        assert!(problem.contains("closed"), "{problem}");

        let addr = server(
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            Duration::ZERO,
        )
        .await;
        let c = Connection::connect(addr, None).await.unwrap();
        let problem = burst(vec![c], requests).await.unwrap_err();
        assert!(problem.contains("unexpected status 404"), "{problem}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn burst_and_closed_loop_use_every_connection() {
        let addr = server(OK, Duration::from_millis(2)).await;
        let connections = open(&[addr, addr], 8).await.unwrap();
        let requests: Requests = Arc::new(vec![http1::get("/plain")]);
        let (back, samples) = burst(connections, requests.clone()).await.unwrap();
        assert_eq!((back.len(), samples.len()), (8, 8));
        assert!(samples.iter().all(|s| s.scheduled.is_zero()));
        let (back, samples) = closed_loop(back, requests, Duration::from_millis(100))
            .await
            .unwrap();
        assert_eq!(back.len(), 8);
        assert!(samples.len() >= 8 * 10, "{}", samples.len());
        assert!(samples.iter().all(|s| s.lateness().is_zero()));
    }
}
