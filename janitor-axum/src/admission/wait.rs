//! Waiting for a slot: at most [`max_waiting_requests`](super::AdmissionConfig::max_waiting_requests) requests
//! at once, each for at most [`slot_wait`](super::AdmissionConfig::slot_wait), in arrival order (the
//! semaphore's queue is first in, first out). A wait that ends without a slot is a refusal like any other.
//!
//! A wait is for a burst shorter than the wait, not for overload. Under overload every waiter ends refused, and
//! each of them later than a refusal at once: the time-out itself, and then its turn to run among the
//! runtime's ready tasks, which a flood of requests makes long (a fifth of a 200,000-request burst's refusals
//! came after a wait, most of them 75–250 ms after the request reached the app; docs/CAPACITY.md). So a
//! refusal on this path opens an [`OverloadWindow`]: for [`OVERLOAD_WINDOW`] after the latest such refusal, a
//! request that finds every slot taken is refused at once instead of joining the waiters. Requests already
//! waiting keep their places, and a request that finds a free slot takes it as always.
//!
//! The window is as long as the `Retry-After: 1` the refused client was told, not one slot wait: a window of
//! one slot wait closed whenever the process went without a refusal for 20 ms, which an overloaded process
//! sharing its cores does whenever it is not scheduled, and the burst's waiters were as many as without it
//! (50 ms still left 7.5 % of the refusals waiting; 200 ms held, and 1 s leaves room for a busier machine).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

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

/// How long after a refusal new requests that find every slot taken are refused at once rather than waiting:
/// the `Retry-After` of the refusal.
pub const OVERLOAD_WINDOW: Duration = Duration::from_secs(1);

/// When waiting for a slot is off because requests were refused lately: from each such refusal until
/// [`OVERLOAD_WINDOW`] after it.
pub(super) struct OverloadWindow {
    origin: Instant,
    /// The end of the window, in microseconds after `origin`; 0 before any refusal.
    until_micros: AtomicU64,
}

impl OverloadWindow {
    pub(super) fn new() -> Self {
        OverloadWindow {
            origin: Instant::now(),
            until_micros: AtomicU64::new(0),
        }
    }

    fn micros_since_origin(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// True while the window is open: a refusal came less than [`OVERLOAD_WINDOW`] ago.
    fn is_open(&self) -> bool {
        self.micros_since_origin() < self.until_micros.load(Ordering::Acquire)
    }

    /// Opens the window, or keeps it open, until [`OVERLOAD_WINDOW`] from now.
    fn extend(&self) {
        let window = OVERLOAD_WINDOW.as_micros() as u64;
        let until = self.micros_since_origin().saturating_add(window);
        self.until_micros.fetch_max(until, Ordering::AcqRel);
    }
}

impl Admission {
    /// Refuses a request that found every slot taken (its wait ran out, the waiters were full, or requests were
    /// refused lately): counts the refusal and, where the configuration allows waits, keeps new requests from
    /// waiting for [`OVERLOAD_WINDOW`].
    pub(super) fn refused_for_overload(&self) {
        if self.shared.config.max_waiting_requests() > 0 {
            self.shared.overload.extend();
        }
        self.overloaded();
    }

    /// A slot now without counting a refusal, or `None`.
    pub(super) fn try_take_quietly(&self) -> Option<AdmissionPermit> {
        self.take_slot_quietly()
            .then(|| AdmissionPermit::held(self))
    }

    /// A wait for a slot, when the configuration allows one, no refusal came within the last [`OVERLOAD_WINDOW`]
    /// and there is room among the waiters; `None` means refuse at once.
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
        if max == 0 || self.shared.overload.is_open() {
            return None;
        }
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
                    admission.refused_for_overload();
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
                self.refused_for_overload();
                Err(Busy)
            }
        }
    }

    /// Requests waiting for a slot right now.
    pub fn waiting(&self) -> usize {
        self.shared.waiting.load(Ordering::Acquire)
    }

    /// A slot, waiting for one as the configuration allows (at once when it allows none, or within
    /// [`OVERLOAD_WINDOW`] of a refusal), or [`Busy`]: for work that does not go through the layer, under the
    /// same rules.
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

    /// How long `admission.admit()` took and whether it got a slot.
    async fn timed_admit(admission: &Admission) -> (Duration, bool) {
        let started = tokio::time::Instant::now();
        let outcome = admission.admit().await;
        (started.elapsed(), outcome.is_ok())
    }

    /// [`timed_admit`] on a task of its own, so that the test can act while the request waits.
    fn spawn_timed_admit(admission: &Admission) -> tokio::task::JoinHandle<(Duration, bool)> {
        let admission = admission.clone();
        tokio::spawn(async move { timed_admit(&admission).await })
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_wait_runs_out_requests_are_refused_at_once_for_the_window() {
        assert_eq!(
            OVERLOAD_WINDOW,
            Duration::from_secs(1),
            "the refusal's Retry-After"
        );
        let admission = admission(1, 2, 100);
        let held = admission.admit().await.unwrap();
        let out_of_time = (Duration::from_millis(100), false);
        assert_eq!(timed_admit(&admission).await, out_of_time);
        // The window runs from that refusal to 1 s after it: the request at 999 ms does not wait.
        tokio::time::sleep(Duration::from_millis(999)).await;
        assert_eq!(timed_admit(&admission).await, (Duration::ZERO, false));
        assert_eq!(admission.waiting(), 0);
        // That refusal kept it open: 999 ms after it, still refused at once; 1 s after it, a wait again.
        tokio::time::sleep(Duration::from_millis(999)).await;
        assert_eq!(timed_admit(&admission).await, (Duration::ZERO, false));
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        let waiter = spawn_timed_admit(&admission);
        tokio::time::sleep(Duration::from_millis(30)).await;
        assert_eq!(admission.waiting(), 1);
        drop(held);
        assert_eq!(waiter.await.unwrap(), (Duration::from_millis(30), true));
    }

    #[tokio::test(start_paused = true)]
    async fn a_refusal_because_the_waiters_are_full_also_stops_new_waits() {
        let admission = admission(1, 1, 100);
        let held = admission.admit().await.unwrap();
        let first = spawn_timed_admit(&admission);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(
            timed_admit(&admission).await,
            (Duration::ZERO, false),
            "no room to wait"
        );
        // The waiter already in place keeps its place and gets the slot.
        drop(held);
        assert_eq!(first.await.unwrap(), (Duration::from_millis(10), true));
        // Its slot is held; a request 500 ms after the refusal is refused at once, though there is room to wait.
        let _second = admission.try_admit().unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(timed_admit(&admission).await, (Duration::ZERO, false));
    }

    #[tokio::test(start_paused = true)]
    async fn a_direct_refusal_without_a_wait_does_not_stop_waits() {
        let admission = admission(1, 1, 100);
        let held = admission.admit().await.unwrap();
        assert_eq!(admission.try_admit().unwrap_err(), Busy);
        let waiter = spawn_timed_admit(&admission);
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(held);
        assert_eq!(waiter.await.unwrap(), (Duration::from_millis(20), true));
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
