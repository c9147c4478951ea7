//! The provider call: one bounded POST, no retries.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HOST};
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use janitor_core::identification::jev::{JevRequest, MAX_RESPONSE_BYTES};
use janitor_core::{Evaluation, EvaluationInput, Evaluator, EvaluatorError};

use super::config::JevConfig;
use super::tls::describe_failure;

/// How long an idle pooled connection to the provider is kept.
const POOL_IDLE: Duration = Duration::from_secs(30);

/// An [`Evaluator`] that asks a Jev provider over HTTPS (or plain HTTP to a loopback host).
///
/// Each evaluation is one `POST {model, state, questions}` with `Authorization: Bearer <key>` and `Host` the
/// endpoint's authority, bounded as a whole (connection, TLS handshake, request and the complete answer) by the
/// configured timeout, and never retried:
///
/// - a body over 65,536 bytes, or a batch of no or more than ten candidates, is refused before any connection
///   ([`EvaluatorError::Refused`]);
/// - the deadline passing is [`EvaluatorError::Timeout`];
/// - a connection error, a provider certificate that is not trusted (the reason says so), a status outside 2xx
///   (429 included), an answer over 65,536 bytes (the read stops there) or an answer that is not exactly the
///   expected shape is [`EvaluatorError::Failed`].
///
/// A batch is one request for every candidate, as the protocol allows. Wrap it in
/// [`BudgetedEvaluator`](janitor_core::protection::budget::BudgetedEvaluator) (batch cost `Fixed(1)`, the
/// default) so that every instance shares one call budget and circuit breaker.
#[derive(Clone)]
pub struct JevEvaluator {
    config: JevConfig,
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl fmt::Debug for JevEvaluator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JevEvaluator")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl JevEvaluator {
    /// An evaluator for `config`, with its own connection pool. Must be used within a Tokio runtime.
    pub fn new(config: JevConfig) -> Self {
        let mut tcp = HttpConnector::new();
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(Duration::from_millis(config.timeout_ms().into())));
        // The TLS layer above decides the scheme; left to itself the TCP connector refuses https:// URLs.
        tcp.enforce_http(false);
        let connector = HttpsConnector::from((tcp, Arc::clone(config.tls())));
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .build(connector);
        JevEvaluator { config, client }
    }

    /// The configuration.
    pub fn config(&self) -> &JevConfig {
        &self.config
    }

    /// Builds, sends and reads one request; the evaluations come back in candidate order.
    async fn ask(&self, request: JevRequest<'_>) -> Result<Vec<Evaluation>, EvaluatorError> {
        let body = match request.to_body(self.config.model()) {
            Ok(body) => body,
            Err(e) => {
                crate::telemetry::provider_call("refused");
                return Err(EvaluatorError::Refused(e.to_string()));
            }
        };
        let started = Instant::now();
        let deadline = Duration::from_millis(self.config.timeout_ms().into());
        let outcome = match tokio::time::timeout(deadline, self.exchange(body)).await {
            Ok(answer) => answer.and_then(|bytes| {
                request
                    .read_answer(&bytes)
                    .map_err(|e| EvaluatorError::Failed(format!("provider answer: {e}")))
            }),
            Err(_) => Err(EvaluatorError::Timeout),
        };
        let elapsed_ms = started.elapsed().as_millis();
        match &outcome {
            Ok(_) => tracing::debug!(elapsed_ms, "jev evaluation answered"),
            Err(e) => tracing::debug!(elapsed_ms, error = %e, "jev evaluation unavailable"),
        }
        crate::telemetry::provider_call(match &outcome {
            Ok(_) => "answered",
            Err(EvaluatorError::Timeout) => "timeout",
            Err(EvaluatorError::Refused(_)) => "refused",
            Err(EvaluatorError::Failed(_)) => "failed",
        });
        outcome
    }

    /// The HTTP exchange: POST the body and read at most [`MAX_RESPONSE_BYTES`] of a 2xx answer.
    async fn exchange(&self, body: Vec<u8>) -> Result<Bytes, EvaluatorError> {
        let request = Request::builder()
            .method(Method::POST)
            .uri(self.config.endpoint().clone())
            // hyper would derive it too, less a default port; the URL's own form is what the provider expects.
            .header(HOST, self.config.host().clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .header(AUTHORIZATION, self.config.authorization().clone())
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| EvaluatorError::Failed(format!("request: {e}")))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| EvaluatorError::Failed(describe_failure(&e)))?;
        answer_body(response).await
    }
}

/// The body of a successful answer, refused past [`MAX_RESPONSE_BYTES`] without reading further.
async fn answer_body(response: Response<Incoming>) -> Result<Bytes, EvaluatorError> {
    let status = response.status();
    if !status.is_success() {
        // The body is dropped unread: nothing in it would change the outcome.
        return Err(EvaluatorError::Failed(format!(
            "provider answered {status}"
        )));
    }
    let declared = response
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_RESPONSE_BYTES as u64) {
        return Err(too_large());
    }
    let limited = Limited::new(response.into_body(), MAX_RESPONSE_BYTES);
    match limited.collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Err(e) => Err(EvaluatorError::Failed(format!(
            "provider answer unreadable: {e}"
        ))),
    }
}

fn too_large() -> EvaluatorError {
    EvaluatorError::Failed(format!(
        "provider answer exceeds {MAX_RESPONSE_BYTES} bytes"
    ))
}

impl Evaluator for JevEvaluator {
    async fn evaluate(&self, input: EvaluationInput<'_>) -> Result<Evaluation, EvaluatorError> {
        let mut answers = self.ask(JevRequest::single(input)).await?;
        answers
            .pop()
            .ok_or_else(|| EvaluatorError::Failed("provider answer holds no evaluation".into()))
    }

    async fn evaluate_batch(
        &self,
        candidates: &[EvaluationInput<'_>],
    ) -> Result<Vec<Evaluation>, EvaluatorError> {
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let request =
            JevRequest::batch(candidates).map_err(|e| EvaluatorError::Refused(e.to_string()))?;
        self.ask(request).await
    }
}
