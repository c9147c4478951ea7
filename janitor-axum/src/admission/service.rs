//! The service that admits or refuses each request.

use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use tower::Service;

use super::future::ResponseFuture;
use super::{Admission, AdmissionBody};

/// A service admitting at most [`Admission::max_in_flight`] requests at once into `S` and answering the rest
/// `503`, at once or after the configured slot wait. Made by [`AdmissionLayer`](super::AdmissionLayer).
#[derive(Debug)]
pub struct AdmissionService<S> {
    inner: S,
    admission: Admission,
}

impl<S> AdmissionService<S> {
    /// `inner` behind `admission`'s slots.
    pub fn new(inner: S, admission: Admission) -> Self {
        AdmissionService { inner, admission }
    }

    /// The bound this service draws from.
    pub fn admission(&self) -> &Admission {
        &self.admission
    }
}

impl<S: Clone> Clone for AdmissionService<S> {
    fn clone(&self) -> Self {
        AdmissionService {
            inner: self.inner.clone(),
            admission: self.admission.clone(),
        }
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for AdmissionService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>> + Clone,
    ReqBody: Body,
    ResBody: Body,
    ResBody::Data: From<Bytes>,
{
    type Response = Response<AdmissionBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S, ReqBody>;

    /// Always ready: waiting for the inner service here would hold requests in a queue before admission has
    /// decided, and a refusal must not wait for anything.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let config = self.admission.config();
        // The clone is driven to readiness and called by `Oneshot`, after the slot is already held.
        if let Some(permit) = self.admission.try_take_quietly() {
            return ResponseFuture::admitted(self.inner.clone(), request, permit);
        }
        match self.admission.wait_for_slot() {
            Some(wait) => ResponseFuture::waiting(self.inner.clone(), request, wait, config),
            None => {
                self.admission.refused_for_overload();
                ResponseFuture::refused(request, config)
            }
        }
    }
}
