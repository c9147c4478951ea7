//! Lending an admitted request's slot back while the request waits on its client.
//!
//! Admission comes before the body, as the contract asks, so a client that trickles its body would keep a slot
//! for the whole request timeout: 64 such clients hold every slot, forever, and every honest request gets 503.
//! A handler that waits on the client instead lends its slot: when the body is not in hand, or (with a
//! [`body_grace`](super::AdmissionConfig::body_grace) above 0) not in within it, the slot goes back to the pool
//! until the wait ends, and is then taken again as a new request takes one (waiting for it within the
//! admission's bounds), or the request is refused as busy like any other. A body sent at once, as browsers send
//! a payload, never notices. Any grace at all would let clients that send a head,
//! wait a little under it and reconnect hold every slot, which is why the default is none.

use std::future::{poll_fn, Future};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Weak;
use std::task::Poll;

use super::{Admission, Busy};

/// The shared state of one admitted request's slot: held or lent. The slot is counted in the admission's
/// semaphore only through this flag, so taking, lending and freeing it touch one cell and the semaphore.
pub(super) struct SlotCell {
    held: AtomicBool,
    pub(super) admission: Admission,
}

impl SlotCell {
    /// The cell of a slot `admission` has just given.
    pub(super) fn held(admission: Admission) -> Self {
        SlotCell {
            held: AtomicBool::new(true),
            admission,
        }
    }

    fn is_held(&self) -> bool {
        self.held.load(Ordering::Acquire)
    }

    fn lend(&self) {
        if self.held.swap(false, Ordering::AcqRel) {
            self.admission.give_back_slot();
        }
    }

    /// Takes the lent slot back as a new request takes one: at once when a slot is free, else after a wait
    /// within the admission's bounds, or [`Busy`].
    async fn take_back(&self) -> Result<(), Busy> {
        if self.is_held() {
            return Ok(());
        }
        self.admission.take_slot().await?;
        // Two handles taking the slot back at once must not hold two slots for one request.
        if self
            .held
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            self.admission.give_back_slot();
        }
        Ok(())
    }
}

impl Drop for SlotCell {
    fn drop(&mut self) {
        if *self.held.get_mut() {
            self.admission.give_back_slot();
        }
    }
}

/// A handle on the slot of the request that carries it (in its extensions, put there by the admission layer),
/// for a handler that must wait on its client. It does not keep the slot alive: the request's answer does.
#[derive(Clone)]
pub struct AdmissionSlot {
    pub(super) cell: Weak<SlotCell>,
}

impl AdmissionSlot {
    /// Runs `wait` (reading the request's body, say). If it is not done at once (within a yield of the task)
    /// nor within the admission's body grace, the slot is given back until it is, then taken again, waiting for
    /// one as a new request would: [`Busy`] when none comes free within that wait, which the caller answers like
    /// any refusal (the wait's result is dropped).
    pub async fn lend_while<F: Future>(&self, wait: F) -> Result<F::Output, Busy> {
        let Some(grace) = self
            .cell
            .upgrade()
            .map(|c| c.admission.config().body_grace())
        else {
            return Ok(wait.await);
        };
        tokio::pin!(wait);
        if let Some(done) = ready_within_a_turn(wait.as_mut()).await {
            return Ok(done);
        }
        if !grace.is_zero() {
            if let Ok(done) = tokio::time::timeout(grace, &mut wait).await {
                return Ok(done);
            }
        }
        if let Some(cell) = self.cell.upgrade() {
            cell.lend();
        }
        let done = wait.await;
        match self.cell.upgrade() {
            Some(cell) => cell.take_back().await.map(|()| done),
            None => Ok(done),
        }
    }

    /// Whether the slot is held now (not lent, and its request not finished).
    pub fn is_held(&self) -> bool {
        self.cell.upgrade().is_some_and(|cell| cell.is_held())
    }
}

/// `wait`'s output if it is ready now or after one yield of the task. The yield lets a connection that serves
/// its requests in the same task (hyper's) hand over a body it has already read.
async fn ready_within_a_turn<F: Future>(mut wait: Pin<&mut F>) -> Option<F::Output> {
    if let Poll::Ready(done) = poll_fn(|cx| Poll::Ready(wait.as_mut().poll(cx))).await {
        return Some(done);
    }
    tokio::task::yield_now().await;
    match poll_fn(|cx| Poll::Ready(wait.as_mut().poll(cx))).await {
        Poll::Ready(done) => Some(done),
        Poll::Pending => None,
    }
}

impl std::fmt::Debug for AdmissionSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionSlot")
            .field("held", &self.is_held())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::AdmissionConfig;
    use super::*;

    #[tokio::test]
    async fn lending_and_taking_back_count_one_slot_however_often_they_repeat() {
        let admission = Admission::new(
            AdmissionConfig::builder()
                .max_in_flight_requests(2)
                .max_waiting_requests(0)
                .slot_wait_ms(0)
                .build()
                .unwrap(),
        );
        let permit = admission.try_admit().unwrap();
        let cell = Arc::clone(&permit.cell);
        assert_eq!(admission.in_flight(), 1);
        cell.lend();
        cell.lend();
        assert_eq!(admission.in_flight(), 0);
        assert!(!permit.slot().is_held());
        cell.take_back().await.unwrap();
        cell.take_back().await.unwrap();
        assert_eq!(admission.in_flight(), 1);
        let other = admission.try_admit().unwrap();
        cell.lend();
        let third = admission.try_admit().unwrap();
        assert_eq!(cell.take_back().await, Err(Busy), "both slots are taken");
        drop((other, third));
        drop(cell);
        drop(permit);
        assert_eq!(admission.in_flight(), 0);
    }

    fn waiting_admission(slots: usize, wait_ms: u64) -> Admission {
        Admission::new(
            AdmissionConfig::builder()
                .max_in_flight_requests(slots)
                .max_waiting_requests(4)
                .slot_wait_ms(wait_ms)
                .build()
                .unwrap(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_lent_slot_is_taken_back_when_one_frees_within_the_wait() {
        let admission = waiting_admission(1, 100);
        let permit = admission.try_admit().unwrap();
        let slot = permit.slot();
        // The body arrives after 10 ms; by then another request holds the only slot, and frees it 30 ms later.
        let body = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            let other = admission.try_admit().expect("the lent slot is free");
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                drop(other);
            });
            "body"
        };
        let started = tokio::time::Instant::now();
        assert_eq!(slot.lend_while(body).await, Ok("body"));
        assert_eq!(started.elapsed(), Duration::from_millis(40));
        assert!(slot.is_held());
        assert_eq!((admission.in_flight(), admission.waiting()), (1, 0));
        drop(permit);
        assert_eq!(admission.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lent_slot_not_freed_within_the_wait_is_busy_and_holds_nothing() {
        let admission = waiting_admission(1, 100);
        let permit = admission.try_admit().unwrap();
        let slot = permit.slot();
        let mut other = None;
        let body = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            other = Some(admission.try_admit().expect("the lent slot is free"));
        };
        let started = tokio::time::Instant::now();
        assert_eq!(slot.lend_while(body).await, Err(Busy));
        assert_eq!(started.elapsed(), Duration::from_millis(110));
        assert!(!slot.is_held());
        assert_eq!((admission.in_flight(), admission.waiting()), (1, 0));
        drop(permit);
        assert_eq!(admission.in_flight(), 1, "only the other request's slot");
        drop(other);
        assert_eq!(admission.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_dropped_while_it_waits_to_take_its_slot_back_leaves_nothing_behind() {
        // The client goes away while its late body waits for a slot: the server drops the request's future.
        let admission = waiting_admission(1, 100);
        let permit = admission.try_admit().unwrap();
        let slot = permit.slot();
        let other = std::cell::Cell::new(None);
        let body = async {
            tokio::time::sleep(Duration::from_millis(10)).await;
            other.set(Some(admission.try_admit().expect("the lent slot is free")));
        };
        let cut = tokio::time::timeout(Duration::from_millis(50), slot.lend_while(body)).await;
        assert!(cut.is_err(), "still waiting for a slot when dropped");
        assert_eq!(
            admission.waiting(),
            0,
            "its place among the waiters is given back"
        );
        assert!(!slot.is_held());
        drop(permit);
        assert_eq!(admission.in_flight(), 1, "only the other request's slot");
        drop(other);
        assert_eq!(admission.in_flight(), 0);
    }
}
