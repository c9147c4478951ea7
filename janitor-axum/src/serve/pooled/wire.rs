//! The connection's socket and read buffer, shared by the connection (heads, answers) and the body of the
//! request in flight (which reads only when the application asks for more).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{ready, Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::framing::{Decoder, Step};
use crate::serve::pool::{Buffer, BufferPool};
use crate::serve::signal::{self, Signals};

/// What an interim `100 Continue` answer is, on the wire.
const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// `step`, failed with [`io::ErrorKind::TimedOut`] when it has waited `stall`.
async fn within<T>(stall: Duration, step: impl Future<Output = io::Result<T>>) -> io::Result<T> {
    tokio::time::timeout(stall, step)
        .await
        .unwrap_or_else(|_| Err(io::ErrorKind::TimedOut.into()))
}

/// A connection's socket, the buffer it holds while a request is read (none while it waits), and where the
/// body of the request in flight is.
pub(super) struct Wire<Io> {
    io: Io,
    pool: Arc<BufferPool>,
    buffer: Option<Buffer>,
    body: Decoder,
    /// Bytes of `100 Continue` still to send before the body is read, when the client asked for it.
    continue_left: Option<usize>,
    /// The task reading the body, when it waits for bytes: woken when the connection reads some for it.
    body_waker: Option<Waker>,
    /// Longest a write may wait for the client to take a byte (the keep-alive wait).
    send_stall: Duration,
}

/// The shared handle to a [`Wire`]. Locked only inside a poll, never across an await.
pub(super) struct Link<Io>(Arc<Mutex<Wire<Io>>>);

impl<Io> Clone for Link<Io> {
    fn clone(&self) -> Self {
        Link(Arc::clone(&self.0))
    }
}

impl<Io: AsyncRead + AsyncWrite + Unpin> Link<Io> {
    pub(super) fn new(io: Io, pool: Arc<BufferPool>, send_stall: Duration) -> Link<Io> {
        Link(Arc::new(Mutex::new(Wire {
            io,
            pool,
            buffer: None,
            body: Decoder::Done,
            continue_left: None,
            body_waker: None,
            send_stall,
        })))
    }

    /// Whether the request's body has been read in full, decoding what is already buffered when the
    /// application has let go of the body (a body it still holds is its own to read).
    pub(super) fn body_settled(&self) -> bool {
        let held = Arc::strong_count(&self.0) > 1;
        let mut wire = self.lock();
        if held {
            wire.body.is_done()
        } else {
            wire.drain_buffered()
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Wire<Io>> {
        // Every field stays valid between polls, so a panic elsewhere leaves nothing half-done here.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for one byte without holding a buffer; `Ok(false)` when the peer closed.
    pub(super) async fn first_byte(&self) -> io::Result<bool> {
        let mut byte = [0u8; 1];
        let read = std::future::poll_fn(|cx| {
            let mut wire = self.lock();
            let mut into = ReadBuf::new(&mut byte);
            ready!(Pin::new(&mut wire.io).poll_read(cx, &mut into))?;
            Poll::Ready(Ok::<_, io::Error>(into.filled().len()))
        })
        .await?;
        if read == 0 {
            return Ok(false);
        }
        self.lock().buffer().push(byte[0]);
        Ok(true)
    }

    /// Reads more bytes into the buffer, growing it up to `limit` when it is full; 0 at the end of the stream.
    pub(super) async fn fill(&self, limit: usize) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.lock().poll_fill(cx, limit)).await
    }

    /// Resolves when the client has gone (end of stream or an error) while its request is answered, so that
    /// the answer is dropped and its admission slot freed. Bytes read meanwhile stay buffered, for the body
    /// or as pipelined requests; it reads while the buffer has room, and the caller polls it again whenever
    /// the answer makes progress.
    pub(super) async fn peer_gone(&self) {
        std::future::poll_fn(|cx| self.lock().poll_peer_gone(cx)).await;
    }

    /// Writes all of `bytes` and flushes. A write the client takes no byte of for the send stall bound fails
    /// with [`io::ErrorKind::TimedOut`]: a client that stops reading cannot hold the connection.
    pub(super) async fn write_all(&self, bytes: &[u8]) -> io::Result<()> {
        let stall = self.lock().send_stall;
        let mut written = 0;
        while written < bytes.len() {
            let n = within(
                stall,
                std::future::poll_fn(|cx| {
                    Pin::new(&mut self.lock().io).poll_write(cx, &bytes[written..])
                }),
            )
            .await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            written += n;
        }
        within(
            stall,
            std::future::poll_fn(|cx| Pin::new(&mut self.lock().io).poll_flush(cx)),
        )
        .await
    }

    /// Ends the sending side, then reads and drops what the client still sends for as long as
    /// [`signal::linger`] says, so that closing with unread bytes does not reset the connection before the
    /// client has read the answers.
    pub(super) async fn linger(&self, signals: &mut Signals, idle_at_capacity: Duration) {
        let _ = std::future::poll_fn(|cx| Pin::new(&mut self.lock().io).poll_shutdown(cx)).await;
        self.drop_buffered();
        let read_some = |cx: &mut Context<'_>| {
            let mut wire = self.lock();
            let read = ready!(wire.poll_fill(cx, 0));
            if let Some(buffer) = wire.buffer.as_mut() {
                let all = buffer.filled().len();
                buffer.consume(all);
            }
            Poll::Ready(matches!(read, Ok(n) if n > 0))
        };
        signal::linger(read_some, signals, idle_at_capacity).await;
    }

    fn drop_buffered(&self) {
        if let Some(buffer) = self.lock().buffer.as_mut() {
            let all = buffer.filled().len();
            buffer.consume(all);
        }
    }
}

impl<Io: AsyncRead + AsyncWrite + Unpin> Wire<Io> {
    /// The buffer, borrowed from the pool if none is held.
    pub(super) fn buffer(&mut self) -> &mut Buffer {
        let pool = &self.pool;
        self.buffer.get_or_insert_with(|| pool.borrow())
    }

    /// Whether bytes of a next request are already buffered.
    pub(super) fn has_buffered(&self) -> bool {
        self.buffer.as_ref().is_some_and(|b| !b.is_empty())
    }

    /// Gives the buffer back to the pool if nothing is left in it.
    pub(super) fn release_if_empty(&mut self) {
        if self.buffer.as_ref().is_some_and(Buffer::is_empty) {
            self.buffer = None;
        }
    }

    /// Starts a request's body: its framing, and whether a `100 Continue` must precede its reading.
    pub(super) fn start_body(&mut self, body: Decoder, expects_continue: bool) {
        self.body = body;
        self.continue_left = (expects_continue && !body.is_done()).then_some(CONTINUE.len());
    }

    /// Ends the request: whether its body was read in full (decoding what is already buffered, not waiting
    /// for more). A body still held by the application reads nothing more afterwards.
    pub(super) fn finish_body(&mut self) -> bool {
        let done = self.drain_buffered();
        if !done {
            self.body = Decoder::Failed;
        }
        self.continue_left = None;
        done
    }

    /// Reads past what is left of an unread body as far as hyper does before it lets a connection carry the
    /// next request: the framing, and the data of one chunk, or of two when the client does not wait for
    /// `100 Continue` (hyper has read one ahead by then); the rest of a length ends with its data. A body
    /// longer than that closes the connection after the answer.
    fn drain_buffered(&mut self) -> bool {
        let pieces_allowed = if self.continue_left == Some(CONTINUE.len()) {
            1
        } else {
            2
        };
        let mut pieces = 0;
        loop {
            let Some(buffer) = self.buffer.as_mut() else {
                return self.body.is_done();
            };
            match self.body.step(buffer.filled()) {
                Step::Data(n) => {
                    buffer.consume(n);
                    pieces += 1;
                    if self.body.is_done() {
                        return true;
                    }
                    if pieces == pieces_allowed {
                        return false;
                    }
                }
                Step::Skip(n) => buffer.consume(n),
                Step::End => return true,
                Step::NeedMore | Step::Invalid => return false,
            }
        }
    }

    fn poll_fill(&mut self, cx: &mut Context<'_>, limit: usize) -> Poll<io::Result<usize>> {
        let buffer = self.buffer.get_or_insert_with(|| self.pool.borrow());
        if buffer.spare().is_empty() {
            buffer.grow_to(limit);
        }
        let spare = buffer.spare();
        if spare.is_empty() {
            return Poll::Ready(Err(io::Error::other("the read buffer is full")));
        }
        let mut into = ReadBuf::new(spare);
        ready!(Pin::new(&mut self.io).poll_read(cx, &mut into))?;
        let read = into.filled().len();
        buffer.advance(read);
        Poll::Ready(Ok(read))
    }

    fn poll_peer_gone(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            let buffer = self.buffer.get_or_insert_with(|| self.pool.borrow());
            let spare = buffer.spare();
            if spare.is_empty() {
                return Poll::Pending;
            }
            let mut into = ReadBuf::new(spare);
            match ready!(Pin::new(&mut self.io).poll_read(cx, &mut into)) {
                Ok(()) if into.filled().is_empty() => return Poll::Ready(()),
                Ok(()) => {
                    let read = into.filled().len();
                    buffer.advance(read);
                    // The socket wakes one reader: the body's, if it waits elsewhere, learns of the bytes here.
                    if let Some(waker) = self.body_waker.take() {
                        waker.wake();
                    }
                }
                Err(_) => return Poll::Ready(()),
            }
        }
    }

    fn poll_continue(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some(left) = self.continue_left {
            if left == 0 || self.has_buffered() {
                // Sent, or not needed: the client sends its body without waiting for it.
                self.continue_left = None;
                break;
            }
            let from = CONTINUE.len() - left;
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &CONTINUE[from..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.continue_left = Some(left - n);
            if left == n {
                ready!(Pin::new(&mut self.io).poll_flush(cx))?;
            }
        }
        Poll::Ready(Ok(()))
    }

    fn poll_body(&mut self, cx: &mut Context<'_>) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        loop {
            if let Err(error) = ready!(self.poll_continue(cx)) {
                self.body = Decoder::Failed;
                return Poll::Ready(Some(Err(error)));
            }
            let buffer = self.buffer.get_or_insert_with(|| self.pool.borrow());
            match self.body.step(buffer.filled()) {
                Step::Data(n) => {
                    let data = Bytes::copy_from_slice(&buffer.filled()[..n]);
                    buffer.consume(n);
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Step::Skip(n) => buffer.consume(n),
                Step::End => return Poll::Ready(None),
                Step::Invalid => {
                    let broken =
                        io::Error::new(io::ErrorKind::InvalidData, "a malformed request body");
                    return Poll::Ready(Some(Err(broken)));
                }
                Step::NeedMore => {
                    // A trailer line needs at most this much room; anything else any room at all.
                    let limit = super::framing::MAX_TRAILER_BYTES + 2;
                    let filled = self.poll_fill(cx, limit);
                    if filled.is_pending() {
                        self.body_waker = Some(cx.waker().clone());
                    }
                    match ready!(filled) {
                        Ok(0) => {
                            self.body = Decoder::Failed;
                            let cut = io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "the request body was cut short",
                            );
                            return Poll::Ready(Some(Err(cut)));
                        }
                        Ok(_) => {}
                        Err(error) => {
                            self.body = Decoder::Failed;
                            return Poll::Ready(Some(Err(error)));
                        }
                    }
                }
            }
        }
    }
}

/// The body of the request in flight, read from the connection as the application polls it.
pub(super) struct RequestBody<Io> {
    pub(super) link: Link<Io>,
}

impl<Io: AsyncRead + AsyncWrite + Unpin> http_body::Body for RequestBody<Io> {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<io::Result<Frame<Bytes>>>> {
        self.link.lock().poll_body(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.link.lock().body.is_done()
    }

    fn size_hint(&self) -> SizeHint {
        match self.link.lock().body.exact_remaining() {
            Some(left) => SizeHint::with_exact(left),
            None => SizeHint::default(),
        }
    }
}
