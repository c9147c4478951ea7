//! One served connection: its clock (waiting for a request, reading a head, or busy with one), the socket that
//! tells the clock when a request's first byte arrives, and the answer body that tells it when a request ends.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

const WAITING: u8 = 0;
const READING_HEAD: u8 = 1;
const BUSY: u8 = 2;

/// Where a connection is in its request cycle, and since when (milliseconds from the connection's start).
/// Written by the socket, the service and the answer body, read by the watchdog, all in the connection's task.
pub(super) struct Clock {
    started: Instant,
    phase: AtomicU8,
    since_ms: AtomicU64,
    /// Since when a write has waited for the client to take a byte, in milliseconds from the start plus one
    /// (0: no write waits).
    write_waits_ms: AtomicU64,
}

impl Clock {
    pub(super) fn new() -> Arc<Clock> {
        Arc::new(Clock {
            started: Instant::now(),
            phase: AtomicU8::new(WAITING),
            since_ms: AtomicU64::new(0),
            write_waits_ms: AtomicU64::new(0),
        })
    }

    fn write_polled<T>(&self, write: &Poll<T>) {
        if write.is_ready() {
            self.write_waits_ms.store(0, Ordering::Relaxed);
        } else if self.write_waits_ms.load(Ordering::Relaxed) == 0 {
            let now = self.started.elapsed().as_millis() as u64;
            self.write_waits_ms.store(now + 1, Ordering::Relaxed);
        }
    }

    /// When a write waiting for the client to take a byte has waited `stall`, if one waits.
    pub(super) fn stalled_at(&self, stall: Duration) -> Option<Instant> {
        let since = self.write_waits_ms.load(Ordering::Relaxed).checked_sub(1)?;
        Some(self.started + Duration::from_millis(since) + stall)
    }

    fn set(&self, phase: u8) {
        let now = self.started.elapsed().as_millis() as u64;
        self.since_ms.store(now, Ordering::Relaxed);
        self.phase.store(phase, Ordering::Relaxed);
    }

    /// A request's head has been read and its answer is being made: no deadline until it has been sent.
    pub(super) fn busy(self: &Arc<Self>) -> BusyGuard {
        self.set(BUSY);
        BusyGuard {
            clock: Arc::clone(self),
        }
    }

    fn first_byte(&self) {
        if self.phase.load(Ordering::Relaxed) == WAITING {
            self.set(READING_HEAD);
        }
    }

    /// Since when the connection has waited for a request's first byte, if it is waiting.
    pub(super) fn idle_since(&self) -> Option<Instant> {
        let since = self.started + Duration::from_millis(self.since_ms.load(Ordering::Relaxed));
        (self.phase.load(Ordering::Relaxed) == WAITING).then_some(since)
    }

    /// When the connection must be closed if nothing changes, or `None` while a request is being answered.
    pub(super) fn deadline(&self, header_read: Duration, keep_alive: Duration) -> Option<Instant> {
        let since = self.started + Duration::from_millis(self.since_ms.load(Ordering::Relaxed));
        match self.phase.load(Ordering::Relaxed) {
            WAITING => Some(since + keep_alive),
            READING_HEAD => Some(since + header_read),
            _ => None,
        }
    }
}

/// Held by a request from its head to the end of its answer; dropping it starts the keep-alive wait.
pub(super) struct BusyGuard {
    clock: Arc<Clock>,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        self.clock.set(WAITING);
    }
}

/// The connection's socket: reports the first byte of each request head to the clock.
pub(super) struct Watched<T> {
    pub(super) inner: T,
    pub(super) clock: Arc<Clock>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let read = Pin::new(&mut this.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.clock.first_byte();
        }
        read
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let write = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.clock.write_polled(&write);
        write
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let flush = Pin::new(&mut this.inner).poll_flush(cx);
        this.clock.write_polled(&flush);
        flush
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let write = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.clock.write_polled(&write);
        write
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// An answer's body, keeping its request busy until the body has been sent in full or dropped.
pub(super) struct GuardedBody {
    pub(super) inner: axum::body::Body,
    pub(super) guard: Option<BusyGuard>,
}

impl Body for GuardedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.get_mut();
        let frame = Pin::new(&mut this.inner).poll_frame(cx);
        if matches!(frame, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            this.guard = None;
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
