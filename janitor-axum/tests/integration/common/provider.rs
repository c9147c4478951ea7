//! A Jev provider on a real local socket, over plain HTTP or TLS with certificates made at test time: it records
//! what it receives, counts connections, and answers as each test tells it to.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::fmt::Debug;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::serve::{Listener, ListenerExt};
use axum::Router;
use bytes::Bytes;
use http_body::Frame;
use janitor_axum::jev::{JevConfig, JevConfigBuilder, JevEvaluator};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair, KeyUsagePurpose};
use serde_json::{json, Map, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::Sleep;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

/// The key every test configures.
pub const KEY: &str = "test-key-123";
/// The provider's path.
pub const PATH: &str = "/v1/systemone";

/// How the provider answers.
#[derive(Clone)]
pub enum Reply {
    /// Answers every question asked: `automation` and `suspicious` with their values, any other (sameVisitor,
    /// candidate0…) with `same`.
    Answer {
        same: f64,
        automation: f64,
        suspicious: f64,
    },
    /// A fixed status and body, with a Content-Length.
    Raw { status: u16, body: Vec<u8> },
    /// A 200 whose body arrives in chunks without a Content-Length, after `delay`.
    Drip {
        delay: Duration,
        chunks: Vec<Vec<u8>>,
    },
    /// Waits before answering like [`good`].
    Slow(Duration),
}

/// The usual good answer.
pub fn good() -> Reply {
    Reply::Answer {
        same: 0.875,
        automation: 0.25,
        suspicious: 0.125,
    }
}

/// One request as the provider received it.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: Method,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Received {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the client sends JSON")
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8(self.body.to_vec()).expect("the client sends UTF-8")
    }
}

#[derive(Clone)]
struct Shared {
    reply: Arc<Mutex<Reply>>,
    received: Arc<Mutex<Vec<Received>>>,
}

/// A CA of a test's own, which signs the provider's certificates.
pub struct TestCa(CertifiedIssuer<'static, KeyPair>);

impl TestCa {
    /// A new CA named `name`.
    pub fn new(name: &str) -> TestCa {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        TestCa(CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap())
    }

    /// The CA's certificate, PEM.
    pub fn pem(&self) -> String {
        self.0.pem()
    }

    /// A server certificate for `names` (DNS names or IP addresses), signed by this CA.
    pub fn server(&self, names: &[&str]) -> ServerTls {
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        let certificate = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &self.0)
            .unwrap();
        ServerTls {
            certificate_pem: certificate.pem(),
            key_pem: key.serialize_pem(),
            ca_pem: self.pem(),
        }
    }
}

/// What the provider presents over TLS, and the CA a client must trust for it.
#[derive(Clone)]
pub struct ServerTls {
    certificate_pem: String,
    key_pem: String,
    ca_pem: String,
}

impl ServerTls {
    fn acceptor(&self) -> TlsAcceptor {
        let chain = CertificateDer::pem_slice_iter(self.certificate_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes()).unwrap();
        let config = ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        TlsAcceptor::from(Arc::new(config))
    }
}

/// Accepts TCP connections and hands on those whose TLS handshake succeeded. Handshakes run side by side, so a
/// client that fails or stalls one holds up no other; they end with the listener.
struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshakes: JoinSet<Option<(TlsStream<TcpStream>, SocketAddr)>>,
}

impl Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            tokio::select! {
                accepted = self.tcp.accept() => {
                    let Ok((stream, peer)) = accepted else { continue };
                    let acceptor = self.acceptor.clone();
                    self.handshakes
                        .spawn(async move { acceptor.accept(stream).await.ok().map(|tls| (tls, peer)) });
                }
                Some(done) = self.handshakes.join_next() => {
                    if let Ok(Some(connection)) = done {
                        return connection;
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.tcp.local_addr()
    }
}

/// A running provider; it stops when dropped.
pub struct Provider {
    pub addr: SocketAddr,
    /// The certificate it presents, when it speaks TLS.
    pub tls: Option<ServerTls>,
    shared: Shared,
    connections: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Provider {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Provider {
    /// Starts a plain HTTP provider on 127.0.0.1 at a free port.
    pub async fn start(reply: Reply) -> Provider {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        Provider::serve(listener, reply, None)
    }

    /// Starts a provider on 127.0.0.1 at a free port that speaks only TLS, presenting `tls`.
    pub async fn start_tls(reply: Reply, tls: ServerTls) -> Provider {
        let listener = TlsListener {
            tcp: TcpListener::bind("127.0.0.1:0").await.unwrap(),
            acceptor: tls.acceptor(),
            handshakes: JoinSet::new(),
        };
        Provider::serve(listener, reply, Some(tls))
    }

    fn serve<L>(listener: L, reply: Reply, tls: Option<ServerTls>) -> Provider
    where
        L: Listener<Addr = SocketAddr>,
    {
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let counter = connections.clone();
        let listener = listener.tap_io(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        let shared = Shared {
            reply: Arc::new(Mutex::new(reply)),
            received: Arc::default(),
        };
        let app = Router::new().fallback(handle).with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Provider {
            addr,
            tls,
            shared,
            connections,
            task,
        }
    }

    /// The endpoint URL: `http://127.0.0.1:port/…`, or for TLS `https://localhost:port/…`, the name a test
    /// certificate is usually issued for.
    pub fn url(&self) -> String {
        match self.tls {
            Some(_) => self.url_at("localhost"),
            None => format!("http://{}{PATH}", self.addr),
        }
    }

    /// The TLS endpoint URL with `host` for this provider's port.
    pub fn url_at(&self, host: &str) -> String {
        format!("https://{host}:{}{PATH}", self.addr.port())
    }

    /// An evaluator for this provider with `timeout_ms`.
    pub fn evaluator(&self, timeout_ms: u32) -> JevEvaluator {
        JevEvaluator::new(self.config(timeout_ms))
    }

    /// The configuration of [`evaluator`](Self::evaluator).
    pub fn config(&self, timeout_ms: u32) -> JevConfig {
        self.config_builder(timeout_ms).build().unwrap()
    }

    /// A builder for this provider's endpoint with [`KEY`] and `timeout_ms`, trusting the CA of its certificate.
    pub fn config_builder(&self, timeout_ms: u32) -> JevConfigBuilder {
        let builder = JevConfig::builder()
            .endpoint(self.url())
            .api_key(KEY)
            .timeout_ms(timeout_ms);
        match &self.tls {
            Some(tls) => builder.root_certificates_pem(tls.ca_pem.clone()),
            None => builder,
        }
    }

    /// Changes how the provider answers from now on.
    pub fn set_reply(&self, reply: Reply) {
        *self.shared.reply.lock().unwrap() = reply;
    }

    /// Every request received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// The last request received.
    pub fn last(&self) -> Received {
        self.received().pop().expect("a request was received")
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

async fn handle(State(shared): State<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    shared.received.lock().unwrap().push(Received {
        method: parts.method,
        path: parts.uri.path().to_owned(),
        headers: parts.headers,
        body: body.clone(),
    });
    let reply = shared.reply.lock().unwrap().clone();
    match reply {
        Reply::Answer {
            same,
            automation,
            suspicious,
        } => answer_all(&body, same, automation, suspicious),
        Reply::Slow(delay) => {
            tokio::time::sleep(delay).await;
            answer_all(&body, 0.875, 0.25, 0.125)
        }
        Reply::Raw { status, body } => {
            let status = StatusCode::from_u16(status).unwrap();
            let mut response = (status, body).into_response();
            if status == StatusCode::TOO_MANY_REQUESTS {
                response
                    .headers_mut()
                    .insert("retry-after", "1".parse().unwrap());
            }
            response
        }
        Reply::Drip { delay, chunks } => Response::new(Body::new(Drip {
            delay: Some(Box::pin(tokio::time::sleep(delay))),
            chunks: chunks.into_iter().map(Bytes::from).collect(),
        })),
    }
}

/// Answers each question the request asks.
fn answer_all(request: &[u8], same: f64, automation: f64, suspicious: f64) -> Response {
    let request: Value = serde_json::from_slice(request).unwrap_or(Value::Null);
    let mut answers = Map::new();
    if let Some(questions) = request["questions"].as_object() {
        for name in questions.keys() {
            let value = match name.as_str() {
                "automation" => automation,
                "suspicious" => suspicious,
                _ => same,
            };
            answers.insert(name.clone(), json!({"type": "noul", "noul": value}));
        }
    }
    let body = json!({
        "model": "jev-1.13.0",
        "answers": answers,
        "usage": {"input_tokens": 500, "output_tokens": 40}
    });
    (StatusCode::OK, axum::Json(body)).into_response()
}

/// A body sent in chunks after a delay, with no declared length.
struct Drip {
    delay: Option<Pin<Box<Sleep>>>,
    chunks: VecDeque<Bytes>,
}

impl http_body::Body for Drip {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if let Some(delay) = self.delay.as_mut() {
            if delay.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.delay = None;
        }
        Poll::Ready(self.chunks.pop_front().map(|c| Ok(Frame::data(c))))
    }
}

/// A valid answer padded with spaces to exactly `size` bytes.
pub fn padded_answer(size: usize) -> Vec<u8> {
    let mut body = serde_json::to_vec(&json!({"answers": {
        "sameVisitor": {"type": "noul", "noul": 0.5},
        "automation": {"type": "noul", "noul": 0.5},
        "suspicious": {"type": "noul", "noul": 0.5},
    }}))
    .unwrap();
    assert!(body.len() <= size);
    body.resize(size, b' ');
    body
}
