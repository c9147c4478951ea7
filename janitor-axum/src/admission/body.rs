//! The response body that carries an admitted request's slot until the answer has been sent.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use super::AdmissionPermit;

pin_project! {
    /// The body of an answer from an [`AdmissionService`](super::AdmissionService): the inner service's body,
    /// holding its request's slot until the body ends, fails or is dropped, or the fixed body of a refusal.
    pub struct AdmissionBody<B> {
        #[pin]
        kind: Kind<B>,
    }
}

pin_project! {
    #[project = KindProjection]
    enum Kind<B> {
        Admitted {
            #[pin]
            inner: B,
            permit: Option<AdmissionPermit>,
        },
        Busy {
            json: Option<Bytes>,
        },
    }
}

impl<B> AdmissionBody<B> {
    pub(super) fn admitted(inner: B, permit: Option<AdmissionPermit>) -> Self {
        AdmissionBody {
            kind: Kind::Admitted { inner, permit },
        }
    }

    pub(super) fn busy(json: Bytes) -> Self {
        AdmissionBody {
            kind: Kind::Busy { json: Some(json) },
        }
    }

    /// Whether this body still holds its request's slot.
    pub fn holds_slot(&self) -> bool {
        matches!(
            &self.kind,
            Kind::Admitted {
                permit: Some(_),
                ..
            }
        )
    }
}

impl<B> Body for AdmissionBody<B>
where
    B: Body,
    B::Data: From<Bytes>,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        match self.project().kind.project() {
            KindProjection::Admitted { inner, permit } => {
                // Held in a local while the inner body runs, so a panic there frees the slot while unwinding.
                let held = permit.take();
                let frame = inner.poll_frame(cx);
                match &frame {
                    Poll::Ready(None) | Poll::Ready(Some(Err(_))) => drop(held),
                    Poll::Ready(Some(Ok(_))) | Poll::Pending => *permit = held,
                }
                frame
            }
            KindProjection::Busy { json } => {
                Poll::Ready(json.take().map(|json| Ok(Frame::data(json.into()))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Admitted { inner, .. } => inner.is_end_stream(),
            Kind::Busy { json } => json.is_none(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Admitted { inner, .. } => inner.size_hint(),
            Kind::Busy { json } => {
                SizeHint::with_exact(json.as_ref().map_or(0, |json| json.len() as u64))
            }
        }
    }
}

impl<B> fmt::Debug for AdmissionBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Admitted { .. } => "admitted",
            Kind::Busy { .. } => "busy",
        };
        f.debug_struct("AdmissionBody")
            .field("kind", &kind)
            .field("holds_slot", &self.holds_slot())
            .finish()
    }
}
