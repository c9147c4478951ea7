//! Lending an admitted request's slot back while the request waits on its client.
//!
//! Admission comes before the body, as the contract asks, so a client that trickles its body would keep a slot
//! for the whole request timeout: 64 such clients hold every slot, forever, and every honest request gets 503.
//! A handler that waits on the client instead lends its slot: when the wait outlasts the
//! [`body_grace`](super::AdmissionConfig::body_grace), the slot goes back to the pool until the wait ends, and is
//! then taken again, or the request is refused as busy like any other. A body sent at once, as browsers send a
//! payload, never notices.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::OwnedSemaphorePermit;

use super::{Admission, Busy};

/// The shared state of one admitted request's slot: held or lent.
pub(super) struct SlotCell {
    pub(super) permit: Mutex<Option<OwnedSemaphorePermit>>,
    pub(super) admission: Admission,
}

impl SlotCell {
    fn lend(&self) {
        // Dropping the permit frees the slot; a poisoned lock still holds a valid `Option`.
        drop(
            self.permit
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }

    fn take_back(&self) -> Result<(), Busy> {
        let mut held = self.permit.lock().unwrap_or_else(PoisonError::into_inner);
        if held.is_none() {
            match Arc::clone(&self.admission.semaphore).try_acquire_owned() {
                Ok(permit) => *held = Some(permit),
                Err(_) => {
                    drop(held);
                    self.admission.overloaded();
                    return Err(Busy);
                }
            }
        }
        Ok(())
    }
}

/// A handle on the slot of the request that carries it (in its extensions, put there by the admission layer),
/// for a handler that must wait on its client. It does not keep the slot alive: the request's answer does.
#[derive(Clone)]
pub struct AdmissionSlot {
    pub(super) cell: Weak<SlotCell>,
}

impl AdmissionSlot {
    /// Runs `wait` (reading the request's body, say). If it has not finished within the admission's body
    /// grace, the slot is given back until it does, then taken again: [`Busy`] when every slot is taken by
    /// then, which the caller answers like any refusal (the wait's result is dropped).
    pub async fn lend_while<F: Future>(&self, wait: F) -> Result<F::Output, Busy> {
        let Some(grace) = self
            .cell
            .upgrade()
            .map(|c| c.admission.config().body_grace())
        else {
            return Ok(wait.await);
        };
        tokio::pin!(wait);
        if let Ok(done) = tokio::time::timeout(grace, &mut wait).await {
            return Ok(done);
        }
        if let Some(cell) = self.cell.upgrade() {
            cell.lend();
        }
        let done = wait.await;
        match self.cell.upgrade() {
            Some(cell) => cell.take_back().map(|()| done),
            None => Ok(done),
        }
    }

    /// Whether the slot is held now (not lent, and its request not finished).
    pub fn is_held(&self) -> bool {
        self.cell.upgrade().is_some_and(|cell| {
            cell.permit
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_some()
        })
    }
}

impl std::fmt::Debug for AdmissionSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionSlot")
            .field("held", &self.is_held())
            .finish()
    }
}
