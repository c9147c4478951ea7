//! Waiting for a slot: at most [`max_waiting_requests`](super::AdmissionConfig::max_waiting_requests) requests
//! at once, each for at most [`slot_wait`](super::AdmissionConfig::slot_wait), in arrival order (the
//! semaphore's queue is first in, first out). A wait that ends without a slot is a refusal like any other.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;

use super::{Admission, AdmissionPermit, Busy};

/// The wait of one request, boxed: it exists only while every slot is taken.
pub(super) type SlotWait = Pin<Box<dyn Future<Output = Result<AdmissionPermit, Busy>> + Send>>;

/// A place among the waiters, given back when the wait ends however it ends (a slot, the time, the client
/// going away).
struct WaitTicket(Admission);

impl Drop for WaitTicket {
    fn drop(&mut self) {
        self.0.shared.waiting.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Admission {
    /// A slot now without counting a refusal, or `None`.
    pub(super) fn try_take_quietly(&self) -> Option<AdmissionPermit> {
        self.take_slot_quietly()
            .then(|| AdmissionPermit::held(self))
    }

    /// A wait for a slot, when the configuration allows one and there is room among the waiters; `None` means
    /// refuse at once.
    pub(super) fn wait_for_slot(&self) -> Option<SlotWait> {
        let wait = self.wait_for_bare_slot()?;
        let admission = self.clone();
        Some(Box::pin(async move {
            wait.await?;
            Ok(AdmissionPermit::held(&admission))
        }))
    }

    /// As [`wait_for_slot`](Self::wait_for_slot), for a slot taken from the semaphore and forgotten there: the
    /// caller keeps the count (a permit, or a lent slot's cell). The place among the waiters is taken now.
    fn wait_for_bare_slot(
        &self,
    ) -> Option<impl Future<Output = Result<(), Busy>> + Send + 'static> {
        let config = self.shared.config;
        let max = config.max_waiting_requests();
        let joined = self
            .shared
            .waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            });
        if joined.is_err() {
            return None;
        }
        let ticket = WaitTicket(self.clone());
        Some(async move {
            let admission = &ticket.0;
            let wait =
                tokio::time::timeout(config.slot_wait(), admission.shared.semaphore.acquire());
            match wait.await {
                Ok(Ok(permit)) => {
                    permit.forget();
                    Ok(())
                }
                // The time ran out (the semaphore is never closed).
                _ => {
                    admission.overloaded();
                    Err(Busy)
                }
            }
        })
    }

    /// A slot taken from the semaphore and forgotten there, at once when one is free, else waiting for one as
    /// the configuration allows, or [`Busy`] (counted as a refusal).
    pub(super) async fn take_slot(&self) -> Result<(), Busy> {
        if self.take_slot_quietly() {
            return Ok(());
        }
        match self.wait_for_bare_slot() {
            Some(wait) => wait.await,
            None => {
                self.overloaded();
                Err(Busy)
            }
        }
    }

    /// Requests waiting for a slot right now.
    pub fn waiting(&self) -> usize {
        self.shared.waiting.load(Ordering::Acquire)
    }

    /// A slot, waiting for one as the configuration allows (at once when it allows none), or [`Busy`]: for work
    /// that does not go through the layer, under the same rules.
    pub async fn admit(&self) -> Result<AdmissionPermit, Busy> {
        self.take_slot().await?;
        Ok(AdmissionPermit::held(self))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::super::AdmissionConfig;
    use super::*;

    fn admission(slots: usize, waiting: usize, ms: u64) -> Admission {
        Admission::new(
            AdmissionConfig::builder()
                .max_in_flight_requests(slots)
                .max_waiting_requests(waiting)
                .slot_wait_ms(ms)
                .build()
                .unwrap(),
        )
    }

    #[tokio::test(start_paused = true)]
    async fn a_waiter_gets_the_next_free_slot() {
        let admission = admission(1, 2, 100);
        let held = admission.admit().await.unwrap();
        let waiter = tokio::spawn({
            let admission = admission.clone();
            async move { admission.admit().await.map(|_| tokio::time::Instant::now()) }
        });
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(admission.waiting(), 1);
        let freed = tokio::time::Instant::now();
        drop(held);
        let admitted = waiter
            .await
            .unwrap()
            .expect("admitted when the slot came free");
        assert_eq!(admitted, freed, "at once, not at the end of the wait");
        assert_eq!((admission.waiting(), admission.in_flight()), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_ends_in_a_refusal_at_its_bound() {
        let admission = admission(1, 2, 100);
        let _held = admission.admit().await.unwrap();
        let started = tokio::time::Instant::now();
        assert_eq!(admission.admit().await.unwrap_err(), Busy);
        assert_eq!(started.elapsed(), Duration::from_millis(100));
        assert_eq!((admission.waiting(), admission.in_flight()), (0, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_waiters_bound_a_request_is_refused_at_once() {
        let admission = admission(1, 2, 100);
        let _held = admission.admit().await.unwrap();
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let admission = admission.clone();
                tokio::spawn(async move { admission.admit().await.is_ok() })
            })
            .collect();
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(admission.waiting(), 2);
        let started = tokio::time::Instant::now();
        assert_eq!(admission.admit().await.unwrap_err(), Busy);
        assert_eq!(
            started.elapsed(),
            Duration::ZERO,
            "the third is refused at once"
        );
        for waiter in waiters {
            assert!(!waiter.await.unwrap(), "no slot came free within the wait");
        }
        assert_eq!(admission.waiting(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_wait_gives_back_its_place_and_takes_no_slot() {
        let admission = admission(1, 1, 100);
        let held = admission.admit().await.unwrap();
        let wait = admission.wait_for_slot().expect("room to wait");
        assert_eq!(admission.waiting(), 1);
        assert!(admission.wait_for_slot().is_none(), "one waiter at most");
        drop(wait);
        assert_eq!(admission.waiting(), 0);
        drop(held);
        assert_eq!(admission.in_flight(), 0);
        assert!(admission.admit().await.is_ok());
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_wait_a_request_is_refused_at_once() {
        let admission = admission(1, 0, 0);
        let _held = admission.admit().await.unwrap();
        assert!(admission.wait_for_slot().is_none());
        let started = tokio::time::Instant::now();
        assert_eq!(admission.admit().await.unwrap_err(), Busy);
        assert_eq!(started.elapsed(), Duration::ZERO);
    }
}
