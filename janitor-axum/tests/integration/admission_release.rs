//! Every way an admitted request ends gives its slot back: a streamed body sent or dropped, a client that
//! disconnects, a panicking handler (caught or not), an inner service error, an unread response.

use crate::common;

use std::convert::Infallible;
use std::future::{poll_fn, Future};
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get as route_get;
use axum::Router;
use bytes::Bytes;
use common::wire::{
    admission_with, get, serve, wait_until, wait_until_free, within, Connection, SETTLE,
};
use http_body::Frame;
use http_body_util::{BodyExt, Full};
use janitor_axum::admission::Admission;
use tokio::sync::mpsc;
use tower::{service_fn, Layer, Service, ServiceExt};

/// A response body fed chunk by chunk by the test through a channel.
struct ChannelBody(mpsc::Receiver<Bytes>);

impl http_body::Body for ChannelBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|chunk| Ok(Frame::data(chunk))))
    }
}

/// `/stream` answers with a [`ChannelBody`] whose sender is handed to the test; `/fast` answers at once.
fn streaming_app(admission: &Admission) -> (Router, mpsc::UnboundedReceiver<mpsc::Sender<Bytes>>) {
    let (senders, received) = mpsc::unbounded_channel();
    let router = Router::new()
        .route(
            "/stream",
            route_get(move || async move {
                let (chunks, body) = mpsc::channel(4);
                let _ = senders.send(chunks);
                Response::new(Body::new(ChannelBody(body)))
            }),
        )
        .route("/fast", route_get(|| async { "fast" }))
        .layer(admission.layer());
    (router, received)
}

/// Serves a [`streaming_app`] and starts one `/stream` response on a client: the head and a first chunk have
/// arrived, the rest of the body waits on the returned sender.
async fn start_stream(admission: &Admission) -> (SocketAddr, Connection, mpsc::Sender<Bytes>) {
    let (router, mut streams) = streaming_app(admission);
    let address = serve(router).await;
    let mut client = Connection::open(address).await.unwrap();
    client.write(&get("/stream")).await.unwrap();
    let chunks = within("the handler", streams.recv()).await.unwrap();
    chunks.send(Bytes::from_static(b"first")).await.unwrap();
    let head = within("the head", client.read_head()).await.unwrap();
    assert_eq!(head.status, 200);
    let chunk = within("a chunk", client.read_chunk()).await.unwrap();
    assert_eq!(chunk.as_deref(), Some(&b"first"[..]));
    (address, client, chunks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_body_keeps_its_slot_until_fully_sent() {
    let admission = admission_with(1);
    let (address, mut client, chunks) = start_stream(&admission).await;
    // The handler has returned; only the body is still on its way.
    assert_eq!(admission.in_flight(), 1);
    let mut other = Connection::open(address).await.unwrap();
    let reply = within("refusal", other.exchange(&get("/fast")))
        .await
        .unwrap();
    assert_eq!(reply.status(), 503);

    chunks.send(Bytes::from_static(b"second")).await.unwrap();
    let chunk = within("a chunk", client.read_chunk()).await.unwrap();
    assert_eq!(chunk.as_deref(), Some(&b"second"[..]));
    assert_eq!(admission.in_flight(), 1);
    drop(chunks);
    assert_eq!(within("the end", client.read_chunk()).await.unwrap(), None);
    wait_until_free(&admission).await;
    let reply = within("after", client.exchange(&get("/fast")))
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_body_dropped_by_a_leaving_client_frees_its_slot() {
    let admission = admission_with(1);
    let (_, client, chunks) = start_stream(&admission).await;
    assert_eq!(admission.in_flight(), 1);

    drop(client);
    wait_until_free(&admission).await;
    within("the body is dropped", chunks.closed()).await;
}

#[tokio::test]
async fn an_unread_response_holds_its_slot_until_dropped_or_read() {
    let admission = admission_with(1);
    let app = Router::new()
        .route("/fast", route_get(|| async { "fast" }))
        .layer(admission.layer());
    let request = || Request::get("/fast").body(Body::empty()).unwrap();

    let response = app.clone().oneshot(request()).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(admission.in_flight(), 1);
    let refused = app.clone().oneshot(request()).await.unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    drop(response);
    assert_eq!(admission.in_flight(), 0);

    let response = app.clone().oneshot(request()).await.unwrap();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"fast");
    assert_eq!(admission.in_flight(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_while_the_handler_waits_frees_its_slot() {
    let admission = admission_with(1);
    let reached = Arc::new(AtomicUsize::new(0));
    let arrived = Arc::clone(&reached);
    let router = Router::new()
        .route(
            "/hang",
            route_get(move || async move {
                arrived.fetch_add(1, Ordering::SeqCst);
                std::future::pending::<()>().await;
                "never"
            }),
        )
        .route("/fast", route_get(|| async { "fast" }))
        .layer(admission.layer());
    let address = serve(router).await;

    for round in 1..=3 {
        let mut client = Connection::open(address).await.unwrap();
        client.write(&get("/hang")).await.unwrap();
        wait_until("the handler is reached", SETTLE, || {
            reached.load(Ordering::SeqCst) == round
        })
        .await;
        assert_eq!(admission.in_flight(), 1);
        drop(client);
        wait_until_free(&admission).await;
    }
    let mut client = Connection::open(address).await.unwrap();
    let reply = within("after", client.exchange(&get("/fast")))
        .await
        .unwrap();
    assert_eq!(reply.status(), 200);
}

/// A minimal stand-in for a catch-panic middleware: a panic while polling the inner future becomes a 500.
#[derive(Clone)]
struct CatchPanicLayer;

#[derive(Clone)]
struct CatchPanic<S>(S);

impl<S> Layer<S> for CatchPanicLayer {
    type Service = CatchPanic<S>;

    fn layer(&self, inner: S) -> CatchPanic<S> {
        CatchPanic(inner)
    }
}

impl<S> Service<Request<Body>> for CatchPanic<S>
where
    S: Service<Request<Body>, Response = axum::response::Response, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = axum::response::Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let mut inner = Box::pin(self.0.call(request));
        Box::pin(poll_fn(move |cx| {
            match catch_unwind(AssertUnwindSafe(|| inner.as_mut().poll(cx))) {
                Ok(poll) => poll,
                Err(_) => Poll::Ready(Ok(StatusCode::INTERNAL_SERVER_ERROR.into_response())),
            }
        }))
    }
}

fn panicking_routes() -> Router {
    Router::new()
        .route(
            "/panic",
            route_get(|| async {
                if std::hint::black_box(true) {
                    panic!("the handler failed");
                }
                "unreachable"
            }),
        )
        .route("/fast", route_get(|| async { "fast" }))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_handler_frees_its_slot_with_or_without_a_catch_panic_layer() {
    let uncaught = admission_with(1);
    let caught_inside = admission_with(1);
    let caught_outside = admission_with(1);
    let apps = [
        (&uncaught, panicking_routes().layer(uncaught.layer())),
        (
            &caught_inside,
            panicking_routes()
                .layer(CatchPanicLayer)
                .layer(caught_inside.layer()),
        ),
        (
            &caught_outside,
            panicking_routes()
                .layer(caught_outside.layer())
                .layer(CatchPanicLayer),
        ),
    ];
    for (index, (admission, router)) in apps.into_iter().enumerate() {
        let address = serve(router).await;
        for _ in 0..3 {
            let mut client = Connection::open(address).await.unwrap();
            let reply = within("the panic", client.exchange(&get("/panic"))).await;
            if index == 0 {
                // Nothing catches it: the connection's task dies and the socket closes.
                assert!(reply.is_err(), "{reply:?}");
            } else {
                assert_eq!(reply.unwrap().status(), 500);
            }
            wait_until_free(admission).await;
        }
        let mut client = Connection::open(address).await.unwrap();
        let reply = within("after", client.exchange(&get("/fast")))
            .await
            .unwrap();
        assert_eq!(reply.status(), 200, "app {index}");
    }
}

#[test]
fn a_panic_in_the_inner_future_frees_the_slot_while_unwinding() {
    let admission = admission_with(1);
    let inner = service_fn(|_request: Request<Full<Bytes>>| {
        poll_fn(|_| -> Poll<Result<Response<Full<Bytes>>, Infallible>> {
            panic!("the inner future failed")
        })
    });
    let mut service = admission.layer().layer(inner);
    let mut future = Box::pin(service.call(Request::new(Full::new(Bytes::new()))));
    assert_eq!(admission.in_flight(), 1);

    let mut cx = Context::from_waker(Waker::noop());
    assert!(catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx))).is_err());
    // The future itself is still alive, as it would be inside a catch-panic middleware.
    assert_eq!(admission.in_flight(), 0);
    drop(future);
    assert_eq!(admission.in_flight(), 0);
}

/// A response body whose first poll panics.
struct PanickingBody;

impl http_body::Body for PanickingBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        panic!("the body failed")
    }
}

#[tokio::test]
async fn a_panic_in_the_response_body_frees_the_slot_while_unwinding() {
    let admission = admission_with(1);
    let inner = service_fn(|_request: Request<Full<Bytes>>| async {
        Ok::<_, Infallible>(Response::new(PanickingBody))
    });
    let response = admission
        .layer()
        .layer(inner)
        .oneshot(Request::new(Full::new(Bytes::new())))
        .await
        .unwrap();
    let mut body = Box::pin(response.into_body());
    assert!(body.holds_slot());
    assert_eq!(admission.in_flight(), 1);

    let mut cx = Context::from_waker(Waker::noop());
    assert!(catch_unwind(AssertUnwindSafe(|| {
        http_body::Body::poll_frame(body.as_mut(), &mut cx)
    }))
    .is_err());
    assert!(!body.holds_slot());
    assert_eq!(admission.in_flight(), 0);
}

#[tokio::test]
async fn an_inner_service_error_frees_the_slot() {
    let admission = admission_with(1);
    let inner = service_fn(|_request: Request<Full<Bytes>>| async {
        Err::<Response<Full<Bytes>>, _>(std::io::Error::other("storage is down"))
    });
    let mut service = admission.layer().layer(inner);
    let error = service
        .ready()
        .await
        .unwrap()
        .call(Request::new(Full::new(Bytes::new())))
        .await
        .unwrap_err();
    assert_eq!(error.to_string(), "storage is down");
    assert_eq!(admission.in_flight(), 0);
}

#[tokio::test]
async fn any_tower_service_gets_the_same_refusal_without_being_called() {
    let admission = admission_with(1);
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&calls);
    let inner = service_fn(move |_request: Request<Full<Bytes>>| {
        counted.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, Infallible>(Response::new(Full::new(Bytes::from_static(b"served")))) }
    });
    let service = admission.layer().layer(inner);
    let held = admission.try_admit().unwrap();

    let refused = service
        .clone()
        .oneshot(Request::new(Full::new(Bytes::from_static(b"{}"))))
        .await
        .unwrap();
    assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(refused.headers()["retry-after"], "1");
    assert!(!refused.body().holds_slot());
    let body = refused.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], br#"{"error":"Visitor measurement is busy"}"#);
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    drop(held);
    let served = service
        .oneshot(Request::new(Full::new(Bytes::new())))
        .await
        .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    let body = served.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], b"served");
    assert_eq!(admission.in_flight(), 0);
}
