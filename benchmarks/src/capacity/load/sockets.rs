//! The sockets of a load process and what the commands do with them.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpSocket;
use tokio::task::{JoinError, JoinSet};

use super::{Command, Counters, Reply, Settings, FIRST_PORT};
use crate::capacity::report::rss_bytes;
use janitor_test_support::http1::{self, Connection, Response};

/// How long one socket may take to connect and be warmed up. A full accept queue makes the kernel drop the
/// handshake and the client retry after 1, 3, 7… s; past this the ramp is failing, not slow.
const OPEN_DEADLINE: Duration = Duration::from_secs(30);

/// A held socket: its number in the run and the request it identifies with.
struct Socket {
    number: u64,
    connection: Connection,
    request: Arc<[u8]>,
}

/// An identify request's exchange, done in its own task: the socket goes there and comes back.
type Exchange = (usize, Socket, io::Result<Response>);

/// The sockets of the process and its counters.
pub(super) struct Sockets {
    settings: Settings,
    requests: Vec<Arc<[u8]>>,
    /// Held sockets in the order of their numbers (the first ones serve the recovery).
    held: Vec<Socket>,
    /// Sockets this process tried to open, which numbers the next one.
    attempts: u64,
    /// The next local port to try on the source address.
    next_port: u32,
    tally: Counters,
    /// The first problem since the last reply.
    problem: Option<String>,
}

impl Sockets {
    pub(super) fn new(settings: Settings, requests: Vec<Arc<[u8]>>) -> Sockets {
        Sockets {
            settings,
            requests,
            held: Vec::new(),
            attempts: 0,
            next_port: u32::from(FIRST_PORT),
            tally: Counters::default(),
            problem: None,
        }
    }

    /// The counters now; the first problem is handed over once.
    pub(super) fn reply(&mut self) -> Reply {
        Reply {
            counters: Counters {
                open: self.held.len() as u64,
                rss_bytes: rss_bytes(std::process::id()).unwrap_or(0),
                ..self.tally.clone()
            },
            seconds: 0.0,
            problem: self.problem.take(),
        }
    }

    pub(super) async fn obey(&mut self, command: Command) {
        match command {
            Command::Open { sockets } => self.open(sockets).await,
            Command::Count => self.count(),
            Command::Steady { requests, seconds } => self.steady(requests, seconds).await,
            Command::Burst => self.burst().await,
            Command::Sequential { requests } => self.sequential(requests).await,
        }
    }

    fn problem(&mut self, text: String) {
        self.problem.get_or_insert(text);
    }

    async fn open(&mut self, target: u64) {
        let mut missing = target.saturating_sub(self.held.len() as u64);
        let mut connecting = JoinSet::new();
        while missing > 0 || !connecting.is_empty() {
            while missing > 0 && connecting.len() < self.settings.concurrency {
                let number = self.attempts * self.settings.processes + self.settings.index;
                self.attempts += 1;
                missing -= 1;
                let server = self.server(number);
                let socket = match self.bind_next() {
                    Ok(socket) => socket,
                    Err(e) => {
                        self.tally.errors += 1 + missing;
                        self.problem(format!("socket {number}: {e}"));
                        missing = 0;
                        break;
                    }
                };
                connecting.spawn(async move {
                    let opened = tokio::time::timeout(OPEN_DEADLINE, warm(socket, server)).await;
                    (number, server, opened)
                });
            }
            let Some(joined) = connecting.join_next().await else {
                break;
            };
            match joined {
                Ok((number, _, Ok(Ok(connection)))) => {
                    self.tally.warmed += 1;
                    let request =
                        self.requests[(number % self.requests.len() as u64) as usize].clone();
                    self.held.push(Socket {
                        number,
                        connection,
                        request,
                    });
                }
                Ok((number, server, Ok(Err(e)))) => {
                    self.tally.errors += 1;
                    self.problem(format!("socket {number} to {server}: {e}"));
                }
                Ok((number, server, Err(_))) => {
                    self.tally.errors += 1;
                    self.problem(format!(
                        "socket {number} to {server}: not connected and warmed up within {} s",
                        OPEN_DEADLINE.as_secs()
                    ));
                }
                Err(e) => self.lost(e),
            }
        }
        self.held.sort_by_key(|s| s.number);
    }

    /// A socket bound to the source address at the next free port. The process owns its address, so it
    /// hands out ports itself, in order: asking the kernel for any port (port 0) scans the taken ones first,
    /// which grows to milliseconds a socket past 14,000 sockets on one address.
    fn bind_next(&mut self) -> io::Result<TcpSocket> {
        let source = self.settings.source;
        while let Ok(port) = u16::try_from(self.next_port) {
            self.next_port += 1;
            let socket = match source {
                IpAddr::V4(_) => TcpSocket::new_v4()?,
                IpAddr::V6(_) => TcpSocket::new_v6()?,
            };
            match socket.bind(SocketAddr::new(source, port)) {
                Ok(()) => return Ok(socket),
                // Another program listens on the port on every address: skip it.
                Err(e) if e.kind() == io::ErrorKind::AddrInUse => continue,
                Err(e) => return Err(e),
            }
        }
        Err(io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            format!("no port left on {source} from {FIRST_PORT} up"),
        ))
    }

    fn server(&self, number: u64) -> SocketAddr {
        let servers = &self.settings.servers;
        servers[(number % servers.len() as u64) as usize]
    }

    fn count(&mut self) {
        let held = std::mem::take(&mut self.held);
        for socket in held {
            if socket.connection.is_closed() {
                self.tally.closes += 1;
                self.problem(format!(
                    "socket {} to {} was closed by the server while idle",
                    socket.number,
                    self.server(socket.number)
                ));
            } else {
                self.held.push(socket);
            }
        }
    }

    async fn steady(&mut self, requests: u64, seconds: f64) {
        let mut slots: Vec<Option<Socket>> = self.held.drain(..).map(Some).collect();
        let mut in_flight: JoinSet<Exchange> = JoinSet::new();
        let started = tokio::time::Instant::now();
        let mut cursor = 0;
        for k in 0..requests {
            // Open loop: each request has its time, whatever happened to the ones before.
            let at = started + Duration::from_secs_f64(seconds * k as f64 / requests as f64);
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => break,
                    Some(joined) = in_flight.join_next() => self.settle(joined, &mut slots),
                }
            }
            let free = loop {
                let len = slots.len();
                if let Some(free) = (0..len)
                    .map(|d| (cursor + d) % len)
                    .find(|&p| slots[p].is_some())
                {
                    break Some(free);
                }
                match in_flight.join_next().await {
                    Some(joined) => self.settle(joined, &mut slots),
                    None => break None,
                }
            };
            let Some(position) = free else {
                self.problem("no socket left to send on".to_owned());
                break;
            };
            let socket = slots[position].take().expect("found free above");
            cursor = position + 1;
            self.tally.sent += 1;
            in_flight.spawn(exchange(position, socket));
        }
        while let Some(joined) = in_flight.join_next().await {
            self.settle(joined, &mut slots);
        }
        self.held = slots.into_iter().flatten().collect();
    }

    async fn burst(&mut self) {
        let held = std::mem::take(&mut self.held);
        let mut written = Vec::with_capacity(held.len());
        // Every request goes out before any answer is read: the servers see all of them at once.
        for mut socket in held {
            self.tally.sent += 1;
            let request = socket.request.clone();
            match socket.connection.write(&request).await {
                Ok(()) => written.push(socket),
                Err(e) => {
                    self.judge(&socket, Err(e));
                }
            }
        }
        let mut slots: Vec<Option<Socket>> = Vec::with_capacity(written.len());
        let mut reading = JoinSet::new();
        for (position, mut socket) in written.into_iter().enumerate() {
            slots.push(None);
            reading.spawn(async move {
                let answer = socket.connection.read_sole_response().await;
                socket.connection.release_buffer();
                (position, socket, answer)
            });
        }
        while let Some(joined) = reading.join_next().await {
            self.settle(joined, &mut slots);
        }
        self.held = slots.into_iter().flatten().collect();
    }

    async fn sequential(&mut self, requests: u64) {
        let held = std::mem::take(&mut self.held);
        for (position, mut socket) in held.into_iter().enumerate() {
            if (position as u64) < requests {
                self.tally.sent += 1;
                let request = socket.request.clone();
                let answer = socket.connection.send(&request).await;
                socket.connection.release_buffer();
                if !self.judge(&socket, answer) {
                    continue;
                }
            }
            self.held.push(socket);
        }
    }

    /// Counts an exchange's outcome and puts its socket back unless the socket is done for.
    fn settle(&mut self, joined: Result<Exchange, JoinError>, slots: &mut [Option<Socket>]) {
        match joined {
            Ok((position, socket, answer)) => {
                if self.judge(&socket, answer) {
                    slots[position] = Some(socket);
                }
            }
            Err(e) => self.lost(e),
        }
    }

    /// Counts one identify answer; false when the socket must be dropped.
    fn judge(&mut self, socket: &Socket, answer: io::Result<Response>) -> bool {
        let at =
            |this: &Sockets| format!("socket {} to {}", socket.number, this.server(socket.number));
        match answer {
            Ok(response) => {
                match response.status {
                    200 => self.tally.ok += 1,
                    503 => self.tally.overloaded += 1,
                    other => {
                        self.tally.errors += 1;
                        let text = format!("{}: status {other}", at(self));
                        self.problem(text);
                    }
                }
                if response.closing {
                    self.tally.closes += 1;
                    let text = format!(
                        "{}: the server closes the connection after status {}",
                        at(self),
                        response.status
                    );
                    self.problem(text);
                    return false;
                }
                true
            }
            Err(e) if closed_by_peer(&e) => {
                self.tally.closes += 1;
                let how = match e.kind() {
                    io::ErrorKind::UnexpectedEof => "end of stream",
                    io::ErrorKind::ConnectionReset => "reset",
                    io::ErrorKind::BrokenPipe => "broken pipe",
                    _ => "aborted",
                };
                let text = format!("{}: closed by the server ({how})", at(self));
                self.problem(text);
                false
            }
            Err(e) => {
                self.tally.errors += 1;
                let text = format!("{}: {e}", at(self));
                self.problem(text);
                false
            }
        }
    }

    /// A task that panicked or was cancelled took its socket with it.
    fn lost(&mut self, e: JoinError) {
        self.tally.errors += 1;
        self.problem(format!("a socket task failed: {e}"));
    }
}

/// Connects the bound `socket`, makes it reset on close, and does the warm-up `GET /ready`.
async fn warm(socket: TcpSocket, server: SocketAddr) -> io::Result<Connection> {
    let mut connection = Connection::connect_bound(socket, server).await?;
    connection.abort_on_drop()?;
    let response = connection.send(&http1::get("/ready")).await?;
    if response.status != 200 || response.closing {
        return Err(io::Error::other(format!(
            "warm-up answered status {}{}",
            response.status,
            if response.closing { " and closed" } else { "" }
        )));
    }
    connection.release_buffer();
    Ok(connection)
}

async fn exchange(position: usize, mut socket: Socket) -> Exchange {
    let request = socket.request.clone();
    let answer = socket.connection.send(&request).await;
    socket.connection.release_buffer();
    (position, socket, answer)
}

/// The errors that mean the other side ended the connection.
fn closed_by_peer(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
    )
}
