//! The admission layer: a bounded number of requests in flight per adapter instance, refusing the rest.
//!
//! One [`Admission`] owns one semaphore. Every clone of it, every [`AdmissionLayer`] it makes and every route
//! those layers wrap draw from that same semaphore, so the limit holds for the adapter instance as a whole
//! rather than per route or per service clone. A request that finds no free slot is answered
//! `503 {"error":"Visitor measurement is busy"}` with `Retry-After: 1`, before the inner service is polled and
//! before its body is handed to anyone, once it has waited for a slot in a bounded queue for a bounded time
//! (by default 128 requests for 20 ms at most, [`AdmissionConfigBuilder::max_waiting_requests`],
//! [`AdmissionConfigBuilder::slot_wait_ms`]; a short burst then costs a few milliseconds, not a 503), or at
//! once when both are 0. After such a refusal the instance counts as overloaded for [`OVERLOAD_WINDOW`] (one
//! second, the refusal's `Retry-After`): a request that finds every slot taken then is refused at once rather
//! than queued, so that under real overload refusals stay immediate.
//!
//! An admitted request keeps its slot until its response body has been sent in full or dropped, so a streamed
//! answer counts as work in flight. The slot is also given back when the inner service fails, when the handler
//! panics (during unwinding, even if something keeps the future alive afterwards) and when the client goes away
//! and the server drops the request's future.
//!
//! A refused request's body is never parsed, but it may still sit unread on a keep-alive connection. A body
//! whose declared `Content-Length` is at most [`AdmissionConfig::max_drain_bytes`] is read and discarded (for at
//! most [`AdmissionConfig::drain_timeout`]) before the answer, so the connection can carry the next request.
//! A larger body, a body of unknown length (chunked), a request waiting for `100 Continue`, or a small body
//! that does not arrive in time is answered with `Connection: close` instead. HTTP/2 requests are answered
//! at once: an unread stream there does not block the connection.
//!
//! The same layer serves the identify endpoint and any other route that needs the same boundary:
//!
//! ```
//! use axum::{routing::post, Router};
//! use janitor_axum::admission::{Admission, AdmissionConfig};
//!
//! # fn main() -> Result<(), janitor_core::ConfigError> {
//! let admission = Admission::new(AdmissionConfig::builder().max_in_flight_requests(32).build()?);
//! admission.on_overload(|| { /* count a refusal in your metrics */ });
//! let app: Router = Router::new()
//!     .route("/api/visitor", post(|| async { "identified" }))
//!     .route("/api/evidence", post(|| async { "recorded" }))
//!     .route_layer(admission.layer());
//! # let _ = app;
//! # Ok(())
//! # }
//! ```

mod body;
mod config;
mod future;
mod layer;
mod service;
mod slot;
mod wait;

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, PoisonError, RwLock};

use tokio::sync::Semaphore;

pub use body::AdmissionBody;
pub use config::{
    AdmissionConfig, AdmissionConfigBuilder, BODY_GRACE_MS, DRAIN_TIMEOUT_MS, MAX_DRAIN_BYTES,
    MAX_IN_FLIGHT_REQUESTS, MAX_WAITING_REQUESTS, SLOT_WAIT_MS,
};
pub(crate) use future::settle_unread;
pub use future::ResponseFuture;
pub use layer::AdmissionLayer;

use crate::refusal::Refusal;
pub use service::AdmissionService;
pub use slot::AdmissionSlot;
use slot::SlotCell;
use wait::OverloadWindow;
pub use wait::OVERLOAD_WINDOW;

/// The message of a refusal, as the client sees it in `{"error": ...}`.
pub const BUSY_MESSAGE: &str = Refusal::Busy.message();

type OverloadCallback = Arc<dyn Fn() + Send + Sync>;

/// The bound on requests in flight for one adapter instance. Cheap to clone; every clone shares the slots.
#[derive(Clone)]
pub struct Admission {
    // One allocation for the slots and the settings: an admitted request clones this handle into its slot, and
    // every shared counter it touches costs a cache line passed between cores.
    shared: Arc<Shared>,
}

struct Shared {
    semaphore: Semaphore,
    config: AdmissionConfig,
    on_overload: RwLock<Option<OverloadCallback>>,
    /// Requests waiting for a slot (see `wait.rs`).
    waiting: AtomicUsize,
    /// When requests may not start waiting (see `wait.rs`).
    overload: OverloadWindow,
}

/// One slot of an [`Admission`]; the slot is free again when this is dropped (or while it is lent, see
/// [`AdmissionSlot`]).
pub struct AdmissionPermit {
    cell: Arc<SlotCell>,
}

impl AdmissionPermit {
    /// A permit for a slot already taken from `admission`'s semaphore (and forgotten there).
    fn held(admission: &Admission) -> Self {
        AdmissionPermit {
            cell: Arc::new(SlotCell::held(admission.clone())),
        }
    }

    /// A handle that can lend this slot back while its holder waits on a client.
    pub fn slot(&self) -> AdmissionSlot {
        AdmissionSlot {
            cell: Arc::downgrade(&self.cell),
        }
    }
}

impl fmt::Debug for AdmissionPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdmissionPermit")
            .field("held", &self.slot().is_held())
            .finish()
    }
}

/// Every slot is taken; the caller should answer at once and let the client retry later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{}", BUSY_MESSAGE)]
pub struct Busy;

impl Admission {
    /// A new bound with its own slots.
    pub fn new(config: AdmissionConfig) -> Self {
        Admission {
            shared: Arc::new(Shared {
                semaphore: Semaphore::new(config.max_in_flight_requests()),
                config,
                on_overload: RwLock::new(None),
                waiting: AtomicUsize::new(0),
                overload: OverloadWindow::new(),
            }),
        }
    }

    /// The options this bound was made with.
    pub fn config(&self) -> &AdmissionConfig {
        &self.shared.config
    }

    /// Requests allowed in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.shared.config.max_in_flight_requests()
    }

    /// Requests holding a slot right now, counted across every clone, layer and route.
    pub fn in_flight(&self) -> usize {
        self.max_in_flight()
            .saturating_sub(self.shared.semaphore.available_permits())
    }

    /// A layer drawing from this bound's slots. Make as many as needed; they all share the limit.
    pub fn layer(&self) -> AdmissionLayer {
        AdmissionLayer::new(self.clone())
    }

    /// Calls `callback` once for every refused request, from every clone and layer of this bound, replacing any
    /// callback set before. It gets no request data. A panic inside it is caught and never changes the answer.
    pub fn on_overload<F>(&self, callback: F)
    where
        F: Fn() + Send + Sync + 'static,
    {
        // A poisoned lock only means a writer panicked while swapping an `Arc`; the slot itself is intact.
        let mut slot = self
            .shared
            .on_overload
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        *slot = Some(Arc::new(callback));
    }

    /// A slot for work that does not go through the layer (direct calls from server code), or [`Busy`] at once
    /// when every slot is taken, whatever the slot wait ([`admit`](Self::admit) waits). A refusal here calls
    /// the overload callback like a refused request does.
    pub fn try_admit(&self) -> Result<AdmissionPermit, Busy> {
        self.try_take_slot()?;
        Ok(AdmissionPermit::held(self))
    }

    /// Takes a slot that only [`Admission::give_back_slot`] frees (the slot cell keeps the count), or refuses.
    fn try_take_slot(&self) -> Result<(), Busy> {
        if self.take_slot_quietly() {
            Ok(())
        } else {
            self.overloaded();
            Err(Busy)
        }
    }

    /// Takes a slot as [`try_take_slot`](Self::try_take_slot) does, without counting a refusal when there is
    /// none (the caller may still wait for one).
    fn take_slot_quietly(&self) -> bool {
        let taken = self.shared.semaphore.try_acquire();
        taken.map(|permit| permit.forget()).is_ok()
    }

    fn give_back_slot(&self) {
        self.shared.semaphore.add_permits(1);
    }

    fn overloaded(&self) {
        crate::telemetry::refused(Refusal::Busy);
        // Cloned out so the callback runs without the lock held.
        let callback = self
            .shared
            .on_overload
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(callback) = callback {
            // Metrics must never change what admission answers.
            if catch_unwind(AssertUnwindSafe(|| callback())).is_err() {
                tracing::warn!("the admission overload callback panicked");
            }
        }
    }
}

impl Default for Admission {
    fn default() -> Self {
        Admission::new(AdmissionConfig::default())
    }
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admission")
            .field("max_in_flight", &self.max_in_flight())
            .field("in_flight", &self.in_flight())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn admission(limit: usize) -> Admission {
        Admission::new(
            AdmissionConfig::builder()
                .max_in_flight_requests(limit)
                .build()
                .unwrap(),
        )
    }

    #[test]
    fn clones_share_one_limit() {
        let admission = admission(2);
        let clone = admission.clone();
        let first = admission.try_admit().unwrap();
        let second = clone.try_admit().unwrap();
        assert_eq!(admission.in_flight(), 2);
        assert_eq!(clone.in_flight(), 2);
        assert_eq!(admission.try_admit().unwrap_err(), Busy);
        drop(first);
        assert_eq!(clone.in_flight(), 1);
        drop(second);
        assert_eq!(admission.in_flight(), 0);
        assert_eq!(admission.max_in_flight(), 2);
    }

    #[test]
    fn refusals_call_the_callback_even_when_registered_on_a_clone() {
        let admission = admission(1);
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        admission.clone().on_overload(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        let _held = admission.try_admit().unwrap();
        for _ in 0..3 {
            assert!(admission.try_admit().is_err());
        }
        assert_eq!(calls.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_panicking_callback_still_refuses() {
        let admission = admission(1);
        admission.on_overload(|| panic!("metrics broke"));
        let _held = admission.try_admit().unwrap();
        assert_eq!(admission.try_admit().unwrap_err(), Busy);
        assert_eq!(admission.try_admit().unwrap_err(), Busy);
        assert_eq!(admission.in_flight(), 1);
    }

    #[test]
    fn busy_reads_as_the_wire_message() {
        assert_eq!(Busy.to_string(), "Visitor measurement is busy");
        assert_eq!(Refusal::Busy.message(), BUSY_MESSAGE);
    }
}
