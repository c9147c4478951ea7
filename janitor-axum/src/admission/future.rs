//! The future of one request through the admission layer: a wait for a slot when one is configured, then the
//! admitted call, or a refusal that may first drain a small unread body.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use http::header::{CONNECTION, EXPECT};
use http::{HeaderValue, Request, Response, Version};
use http_body::Body;
use pin_project_lite::pin_project;
use tokio::time::Sleep;
use tower::util::Oneshot;
use tower::Service;

use super::wait::SlotWait;
use super::{AdmissionBody, AdmissionConfig, AdmissionPermit};
use crate::refusal::Refusal;

/// Frames read from a refused body in one poll before yielding, so that a body which never stops producing
/// ready frames cannot keep the drain from checking its deadline.
const DRAIN_FRAMES_PER_POLL: usize = 64;

pin_project! {
    /// The answer of an [`AdmissionService`](super::AdmissionService) to one request.
    pub struct ResponseFuture<S, ReqBody>
    where
        S: Service<Request<ReqBody>>,
    {
        #[pin]
        state: State<S, ReqBody>,
    }
}

pin_project! {
    #[project = StateProjection]
    enum State<S, ReqBody>
    where
        S: Service<Request<ReqBody>>,
    {
        Waiting {
            wait: SlotWait,
            pending: Option<(S, Request<ReqBody>)>,
            config: AdmissionConfig,
        },
        Admitted {
            #[pin]
            call: Oneshot<S, Request<ReqBody>>,
            permit: Option<AdmissionPermit>,
        },
        Refused {
            unread: UnreadBody<ReqBody>,
        },
        Done,
    }
}

/// What a refused request needs before its answer.
enum UnreadBody<B> {
    /// Answer now; `close` asks the client to drop the connection.
    Answer { close: bool },
    /// Read and discard a small body first so the connection can carry the next request.
    Drain(Drain<B>),
}

struct Drain<B> {
    body: Pin<Box<B>>,
    /// Bytes the body declared; more than this means it lied, and the connection is closed.
    left: u64,
    timeout: Duration,
    // Started on the first poll, which always runs inside the runtime.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<S, ReqBody> ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>>,
    ReqBody: Body,
{
    pub(super) fn admitted(inner: S, request: Request<ReqBody>, permit: AdmissionPermit) -> Self {
        ResponseFuture {
            state: State::admitted(inner, request, permit),
        }
    }

    pub(super) fn waiting(
        inner: S,
        request: Request<ReqBody>,
        wait: SlotWait,
        config: &AdmissionConfig,
    ) -> Self {
        ResponseFuture {
            state: State::Waiting {
                wait,
                pending: Some((inner, request)),
                config: *config,
            },
        }
    }

    pub(super) fn refused(request: Request<ReqBody>, config: &AdmissionConfig) -> Self {
        ResponseFuture {
            state: State::Refused {
                unread: UnreadBody::plan(request, config),
            },
        }
    }
}

impl<S, ReqBody> State<S, ReqBody>
where
    S: Service<Request<ReqBody>>,
{
    /// The call of `inner` on `request`, which carries a handle on its slot.
    fn admitted(inner: S, mut request: Request<ReqBody>, permit: AdmissionPermit) -> Self {
        request.extensions_mut().insert(permit.slot());
        State::Admitted {
            call: Oneshot::new(inner, request),
            permit: Some(permit),
        }
    }
}

impl<B: Body> UnreadBody<B> {
    fn plan(request: Request<B>, config: &AdmissionConfig) -> Self {
        // HTTP/2 and later end an unread stream on their own without harming the connection.
        if request.version() >= Version::HTTP_2 {
            return UnreadBody::Answer { close: false };
        }
        let expects_continue = request.headers().contains_key(EXPECT);
        let body = request.into_body();
        if body.is_end_stream() {
            return UnreadBody::Answer { close: false };
        }
        // A client waiting for `100 Continue` has not sent its body; draining would only invite it to.
        if expects_continue {
            return UnreadBody::Answer { close: true };
        }
        match body.size_hint().exact() {
            Some(length) if length <= config.max_drain_bytes() => UnreadBody::Drain(Drain {
                body: Box::pin(body),
                left: length,
                timeout: config.drain_timeout(),
                deadline: None,
            }),
            // Too large to be worth reading, or of unknown length: only closing is safe.
            _ => UnreadBody::Answer { close: true },
        }
    }

    /// Ready with whether the connection must be closed.
    fn poll_close(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        match self {
            UnreadBody::Answer { close } => Poll::Ready(*close),
            UnreadBody::Drain(drain) => drain.poll_drained(cx).map(|drained| !drained),
        }
    }
}

/// Settles the unread body of a request that is answered without reading it, under the same rules as a
/// refusal of the layer: drains a small declared body; returns whether the connection must be closed instead.
pub(crate) async fn settle_unread<B: Body>(request: Request<B>, config: &AdmissionConfig) -> bool {
    let mut unread = UnreadBody::plan(request, config);
    std::future::poll_fn(|cx| unread.poll_close(cx)).await
}

impl<B: Body> Drain<B> {
    /// Ready with `true` once the whole declared body was read, `false` when it failed, overran its length or
    /// did not arrive in time.
    fn poll_drained(&mut self, cx: &mut Context<'_>) -> Poll<bool> {
        let timeout = self.timeout;
        let deadline = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        if deadline.as_mut().poll(cx).is_ready() {
            return Poll::Ready(false);
        }
        for _ in 0..DRAIN_FRAMES_PER_POLL {
            match self.body.as_mut().poll_frame(cx) {
                Poll::Ready(None) => return Poll::Ready(true),
                Poll::Ready(Some(Err(_))) => return Poll::Ready(false),
                Poll::Ready(Some(Ok(frame))) => {
                    let read = frame.data_ref().map_or(0, |data| data.remaining() as u64);
                    match self.left.checked_sub(read) {
                        Some(left) => self.left = left,
                        None => return Poll::Ready(false),
                    }
                }
                // The deadline was polled above, so its timer will wake this task too.
                Poll::Pending => return Poll::Pending,
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl<S, ReqBody, ResBody> Future for ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    ReqBody: Body,
    ResBody: Body,
    ResBody::Data: From<Bytes>,
{
    type Output = Result<Response<AdmissionBody<ResBody>>, S::Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.project().state;
        if let StateProjection::Waiting {
            wait,
            pending,
            config,
        } = state.as_mut().project()
        {
            let waited = match wait.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(waited) => waited,
            };
            let (inner, request) = pending.take().expect("a waiting request is pending");
            let next = match waited {
                Ok(permit) => State::admitted(inner, request, permit),
                Err(_) => State::Refused {
                    unread: UnreadBody::plan(request, config),
                },
            };
            state.set(next);
        }
        let answer = match state.as_mut().project() {
            StateProjection::Admitted { call, permit } => {
                // Held in a local while the inner future runs, so a panic there frees the slot while unwinding,
                // even if whoever catches the panic keeps this future alive.
                let held = permit.take();
                match call.poll(cx) {
                    Poll::Pending => {
                        *permit = held;
                        return Poll::Pending;
                    }
                    // On an error `held` is dropped here; on a response it moves into the body.
                    Poll::Ready(result) => result
                        .map(|response| response.map(|body| AdmissionBody::admitted(body, held))),
                }
            }
            StateProjection::Refused { unread } => match unread.poll_close(cx) {
                Poll::Ready(close) => Ok(busy_response(close)),
                Poll::Pending => return Poll::Pending,
            },
            StateProjection::Done => panic!("admission response future polled after completion"),
            StateProjection::Waiting { .. } => unreachable!("a finished wait was replaced above"),
        };
        state.set(State::Done);
        Poll::Ready(answer)
    }
}

impl<S, ReqBody> fmt::Debug for ResponseFuture<S, ReqBody>
where
    S: Service<Request<ReqBody>>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Waiting { .. } => "waiting for a slot",
            State::Admitted { .. } => "admitted",
            State::Refused {
                unread: UnreadBody::Answer { .. },
            } => "refused",
            State::Refused {
                unread: UnreadBody::Drain(_),
            } => "draining refused body",
            State::Done => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish()
    }
}

/// The busy refusal: `503`, `Retry-After: 1` and the headers every JSON answer of the adapter carries.
fn busy_response<B>(close: bool) -> Response<AdmissionBody<B>> {
    let mut response = Response::new(AdmissionBody::busy(Refusal::Busy.body()));
    *response.status_mut() = Refusal::Busy.status();
    Refusal::Busy.write_headers(response.headers_mut());
    if close {
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
