//! The body deadline of every route [`serve`](super::serve) serves: a request's body must have arrived in full
//! within [`body_read_timeout`](super::ServeConfig::body_read_timeout) of its head.
//!
//! Without it an application route that reads its body (a sign-in form) waited as long as the client chose: a
//! body trickled a byte at a time, or a `Content-Length` never sent, held the handler and the connection, and
//! ten thousand of them held every connection the server had. The bound sits in the body the handler reads,
//! so it costs nothing until the handler waits on the client, and the answer becomes 408 whatever the handler
//! made of the error.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::time::Sleep;

use crate::refusal::Refusal;

pin_project_lite::pin_project! {
    /// A request body that fails once its deadline passes while the handler waits for more of it.
    struct DeadlineBody {
        #[pin]
        inner: Body,
        #[pin]
        deadline: Sleep,
        passed: Arc<AtomicBool>,
    }
}

/// The body's deadline passed while a handler was reading it.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within its deadline")]
struct BodyTimedOut;

impl http_body::Body for DeadlineBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let this = self.project();
        match this.inner.poll_frame(cx) {
            Poll::Pending if this.deadline.poll(cx).is_ready() => {
                this.passed.store(true, Ordering::Relaxed);
                Poll::Ready(Some(Err(axum::Error::new(BodyTimedOut))))
            }
            frame => frame,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// `request` with its body bounded by `timeout` from now, and the flag that says whether the bound was hit.
/// A request without a body is left as it is.
pub(super) fn bound(
    request: http::Request<Body>,
    timeout: Duration,
) -> (http::Request<Body>, Option<Arc<AtomicBool>>) {
    if http_body::Body::is_end_stream(request.body()) {
        return (request, None);
    }
    let passed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&passed);
    let request = request.map(|inner| {
        Body::new(DeadlineBody {
            inner,
            deadline: tokio::time::sleep(timeout),
            passed,
        })
    });
    (request, Some(flag))
}

/// The answer to a request whose body's deadline passed while its handler read it: 408, and the connection
/// closes (the rest of the body may still be on its way).
pub(super) fn answer_if_passed(
    flag: Option<&AtomicBool>,
    response: axum::response::Response,
) -> axum::response::Response {
    match flag {
        Some(passed) if passed.load(Ordering::Relaxed) => {
            let mut refused = axum::response::IntoResponse::into_response(Refusal::TimedOut);
            refused.headers_mut().insert(
                http::header::CONNECTION,
                http::HeaderValue::from_static("close"),
            );
            refused
        }
        _ => response,
    }
}
