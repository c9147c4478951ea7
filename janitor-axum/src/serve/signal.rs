//! What the accept loop tells its connections: that the server is at its connection limit (said again every
//! [`CAPACITY_TICK`] while it stays there), or that it is stopping. One watch channel carries both, so a
//! connection waiting for a request listens to one thing whatever it is told.

use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// How often the accept loop repeats that it is at capacity while no slot frees.
pub(super) const CAPACITY_TICK: Duration = Duration::from_millis(100);

/// The latest word of the accept loop. Every send wakes the connections waiting on it, equal or not; a
/// connection reads the word only when woken, so `AtCapacity` is not taken back once a slot frees (that would
/// wake them all once more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Signal {
    /// Nothing said yet.
    Serving,
    /// No connection slot was free when said: connections idle past `idle_at_capacity` should close.
    AtCapacity,
    Stopping,
}

/// The accept loop's end of the channel.
pub(super) fn channel() -> (watch::Sender<Signal>, watch::Receiver<Signal>) {
    watch::channel(Signal::Serving)
}

/// A connection's end of the channel.
pub(super) type Signals = watch::Receiver<Signal>;

/// Whether the server is stopping.
pub(super) fn stopping(signals: &Signals) -> bool {
    *signals.borrow() == Signal::Stopping
}

/// What a connection waiting for a request since `idle_since` does when woken by the accept loop: close
/// (`true`) when the server stops, its accept loop is gone, or it is at capacity and the connection has waited
/// for at least `idle_at_capacity`.
pub(super) fn idle_should_close(
    changed: Result<(), watch::error::RecvError>,
    signals: &Signals,
    idle_since: Instant,
    idle_at_capacity: Duration,
) -> bool {
    if changed.is_err() {
        return true;
    }
    match *signals.borrow() {
        Signal::Stopping => true,
        Signal::AtCapacity => idle_since.elapsed() >= idle_at_capacity,
        Signal::Serving => false,
    }
}

/// How long a closing connection waits for more of what its client still sends before closing: nginx's
/// `lingering_timeout`. Closing while a client still sends makes the kernel reset the connection, which throws
/// away the answers the client has not read yet, a pipelining client's among them.
const LINGER_IDLE: Duration = Duration::from_secs(5);
/// The longest a closing connection reads and drops what its client sends, whatever the pace: nginx's
/// `lingering_time`.
const LINGER_MOST: Duration = Duration::from_secs(30);

/// A closing connection's read-and-drop, whatever the driver: `read_some` polls for what the client sends and
/// drops it (`true` while bytes come), until the client has sent nothing for [`LINGER_IDLE`], for
/// [`LINGER_MOST`] at most, and no longer than an idle connection lasts at capacity. Nothing is read once the
/// server stops.
pub(super) async fn linger(
    mut read_some: impl FnMut(&mut Context<'_>) -> Poll<bool>,
    signals: &mut Signals,
    idle_at_capacity: Duration,
) {
    if stopping(signals) {
        return;
    }
    let since = Instant::now();
    loop {
        let deadline = (Instant::now() + LINGER_IDLE).min(since + LINGER_MOST);
        tokio::select! {
            more = tokio::time::timeout_at(deadline, std::future::poll_fn(&mut read_some)) => {
                if !more.unwrap_or(false) {
                    return;
                }
            }
            changed = signals.changed() => {
                if idle_should_close(changed, signals, since, idle_at_capacity) {
                    return;
                }
            }
        }
    }
}
