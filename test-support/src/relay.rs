//! A TCP relay in front of a server that a test can silence: the server as a lost machine looks to its
//! clients, its connections open and nothing coming back.
//!
//! Stopping a real server with SIGSTOP would look the same, but a test that fails while the server is stopped
//! leaves it stopped, since a stopped process does not act on the signal that would end it. The relay lives in
//! the test's process (threads only), listens on a port the kernel picks, and ends with its handle.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a relay thread waits on a socket before it looks at the relay's flags again.
const POLL: Duration = Duration::from_millis(10);

/// Relays connections from a port of its own to `upstream`, or, while [silenced](Relay::silence), holds
/// what either side sends. Dropping it closes every connection and joins its threads.
pub struct Relay {
    address: SocketAddr,
    shared: Arc<Shared>,
    accepting: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    silent: AtomicBool,
    closed: AtomicBool,
    /// Every socket of every relayed connection, shut down when the relay ends.
    sockets: Mutex<Vec<TcpStream>>,
    /// The threads copying between them, joined when the relay ends.
    copies: Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Relay")
            .field("address", &self.address)
            .field("silent", &self.shared.silent.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Relay {
    /// A relay to `upstream` on a port of 127.0.0.1 that the kernel picks.
    ///
    /// # Errors
    /// When no port can be bound.
    pub fn start(upstream: SocketAddr) -> io::Result<Relay> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let address = listener.local_addr()?;
        // Non-blocking, so the accepting thread sees the relay end instead of waiting for one more client.
        listener.set_nonblocking(true)?;
        let shared = Arc::new(Shared::default());
        let accepting = {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || accept(&listener, upstream, &shared))
        };
        Ok(Relay {
            address,
            shared,
            accepting: Some(accepting),
        })
    }

    /// Where clients connect.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// From now on nothing passes either way, and connections stay open: a server gone silent.
    pub fn silence(&self) {
        self.shared.silent.store(true, Ordering::SeqCst);
    }

    /// Lets everything pass again, what was held first.
    pub fn resume(&self) {
        self.shared.silent.store(false, Ordering::SeqCst);
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        for socket in self
            .shared
            .sockets
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .drain(..)
        {
            let _ = socket.shutdown(Shutdown::Both);
        }
        if let Some(accepting) = self.accepting.take() {
            let _ = accepting.join();
        }
        let copies =
            std::mem::take(&mut *self.shared.copies.lock().unwrap_or_else(|e| e.into_inner()));
        for copy in copies {
            let _ = copy.join();
        }
    }
}

fn accept(listener: &TcpListener, upstream: SocketAddr, shared: &Arc<Shared>) {
    while !shared.closed.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((client, _)) => {
                if let Err(error) = relay(client, upstream, shared) {
                    eprintln!("relay to {upstream}: {error}");
                }
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(error) => {
                eprintln!("relay accepting: {error}");
                return;
            }
        }
    }
}

/// Connects `client` to `upstream` with a copying thread each way.
fn relay(client: TcpStream, upstream: SocketAddr, shared: &Arc<Shared>) -> io::Result<()> {
    client.set_nonblocking(false)?;
    let server = TcpStream::connect(upstream)?;
    let mut sockets = shared.sockets.lock().unwrap_or_else(|e| e.into_inner());
    let mut copies = shared.copies.lock().unwrap_or_else(|e| e.into_inner());
    for (from, to) in [(&client, &server), (&server, &client)] {
        let (from, to) = (from.try_clone()?, to.try_clone()?);
        from.set_read_timeout(Some(POLL))?;
        sockets.push(from.try_clone()?);
        let shared = Arc::clone(shared);
        copies.push(std::thread::spawn(move || copy(from, to, &shared)));
    }
    Ok(())
}

/// Copies from `from` to `to` until either closes or the relay ends; while the relay is silent, reads
/// nothing, so what is sent waits in the kernel's buffers.
fn copy(mut from: TcpStream, mut to: TcpStream, shared: &Shared) {
    let mut buffer = [0u8; 16 * 1024];
    while may_pass(shared) {
        match from.read(&mut buffer) {
            Ok(0) => break,
            // Read before the relay went silent, perhaps, but not passed on while it is.
            Ok(n) => {
                if !may_pass(shared) || to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}

/// Waits while the relay is silent; whether it still runs.
fn may_pass(shared: &Shared) -> bool {
    while shared.silent.load(Ordering::SeqCst) && !shared.closed.load(Ordering::SeqCst) {
        std::thread::sleep(POLL);
    }
    !shared.closed.load(Ordering::SeqCst)
}
