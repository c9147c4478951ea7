//! The read buffers of the pooled driver: a connection borrows one when the first byte of a request arrives and
//! gives it back once the answer is written and nothing more is buffered, so a waiting connection holds none.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Size of a pooled buffer, in bytes. A head larger than this grows its buffer (up to `max_header_bytes`);
/// a grown buffer is freed, not kept, so the pool holds only buffers of this size.
pub const BUFFER_BYTES: usize = 8 * 1024;

/// Free buffers a pool keeps by default (8 MiB of them): enough for a burst on many connections at once, and
/// a bound on what an earlier burst leaves behind.
pub const BUFFERS_KEPT: usize = 1_024;

/// A bounded free list of fixed-size read buffers shared by the connections of one [`serve`](super::serve).
#[derive(Debug)]
pub struct BufferPool {
    free: Mutex<Vec<Vec<u8>>>,
    kept_at_most: usize,
    lent: AtomicUsize,
    returned: AtomicU64,
}

impl Default for BufferPool {
    fn default() -> Self {
        BufferPool::new(BUFFERS_KEPT)
    }
}

impl BufferPool {
    /// A pool keeping at most `kept_at_most` free buffers; buffers given back past that are freed.
    pub fn new(kept_at_most: usize) -> BufferPool {
        BufferPool {
            free: Mutex::new(Vec::new()),
            kept_at_most,
            lent: AtomicUsize::new(0),
            returned: AtomicU64::new(0),
        }
    }

    /// Buffers lent to connections now.
    pub fn lent(&self) -> usize {
        self.lent.load(Ordering::Relaxed)
    }

    /// Buffers given back since the pool was made.
    pub fn returned(&self) -> u64 {
        self.returned.load(Ordering::Relaxed)
    }

    /// Free buffers the pool holds now.
    pub fn kept(&self) -> usize {
        self.free_list().len()
    }

    fn free_list(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        // A panic while the list is locked leaves it valid: it is only ever pushed to or popped.
        self.free.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Lends a buffer of [`BUFFER_BYTES`], a kept one when there is one.
    pub(super) fn borrow(self: &Arc<Self>) -> Buffer {
        let bytes = self
            .free_list()
            .pop()
            .unwrap_or_else(|| vec![0; BUFFER_BYTES]);
        self.lent.fetch_add(1, Ordering::Relaxed);
        Buffer {
            bytes,
            start: 0,
            end: 0,
            pool: Arc::clone(self),
        }
    }

    fn give_back(&self, bytes: Vec<u8>) {
        self.lent.fetch_sub(1, Ordering::Relaxed);
        self.returned.fetch_add(1, Ordering::Relaxed);
        if bytes.len() == BUFFER_BYTES {
            let mut free = self.free_list();
            if free.len() < self.kept_at_most {
                free.push(bytes);
            }
        }
    }
}

/// A lent buffer: bytes read and not yet consumed are `bytes[start..end]`. Dropping it gives it back.
#[derive(Debug)]
pub(super) struct Buffer {
    bytes: Vec<u8>,
    start: usize,
    end: usize,
    pool: Arc<BufferPool>,
}

impl Buffer {
    /// The bytes read and not yet consumed.
    pub(super) fn filled(&self) -> &[u8] {
        &self.bytes[self.start..self.end]
    }

    pub(super) fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Marks the first `count` filled bytes consumed.
    pub(super) fn consume(&mut self, count: usize) {
        self.start = (self.start + count).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Room to read into after the filled bytes, moving them to the front first when the end is reached.
    pub(super) fn spare(&mut self) -> &mut [u8] {
        if self.end == self.bytes.len() && self.start > 0 {
            self.bytes.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        &mut self.bytes[self.end..]
    }

    /// Records `count` bytes read into [`spare`](Self::spare).
    pub(super) fn advance(&mut self, count: usize) {
        self.end = (self.end + count).min(self.bytes.len());
    }

    /// Appends one byte (the first of a request, read while no buffer was held).
    pub(super) fn push(&mut self, byte: u8) {
        if let Some(room) = self.spare().first_mut() {
            *room = byte;
            self.advance(1);
        }
    }

    /// Grows the buffer to hold up to `limit` bytes (a head larger than a pooled buffer).
    pub(super) fn grow_to(&mut self, limit: usize) {
        if self.bytes.len() < limit {
            let size = (self.bytes.len() * 2).min(limit);
            self.bytes.resize(size, 0);
        }
    }

    /// Bytes the buffer can hold.
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        self.bytes.len()
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        self.pool.give_back(std::mem::take(&mut self.bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_goes_back_and_is_lent_again_and_the_pool_keeps_at_most_its_bound() {
        let pool = Arc::new(BufferPool::new(1));
        let (a, b) = (pool.borrow(), pool.borrow());
        assert_eq!((pool.lent(), pool.kept()), (2, 0));
        drop(a);
        drop(b);
        assert_eq!((pool.lent(), pool.kept(), pool.returned()), (0, 1, 2));
        let c = pool.borrow();
        assert_eq!((pool.lent(), pool.kept()), (1, 0));
        drop(c);
        assert_eq!(pool.kept(), 1);
    }

    #[test]
    fn a_grown_buffer_is_freed_and_filled_bytes_survive_compaction() {
        let pool = Arc::new(BufferPool::new(4));
        let mut buffer = pool.borrow();
        let room = buffer.spare().len();
        assert_eq!(room, BUFFER_BYTES);
        buffer.spare().fill(7);
        buffer.advance(room);
        buffer.consume(room - 2);
        assert_eq!(buffer.filled(), &[7, 7]);
        assert_eq!(buffer.spare().len(), BUFFER_BYTES - 2);
        assert_eq!(buffer.filled(), &[7, 7]);
        buffer.grow_to(BUFFER_BYTES * 4);
        assert_eq!(buffer.capacity(), BUFFER_BYTES * 2);
        drop(buffer);
        assert_eq!((pool.kept(), pool.returned()), (0, 1));
    }
}
