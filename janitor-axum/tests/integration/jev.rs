//! The Jev client against a provider on a real local socket: the exact request, every failure mode, the
//! deadline, both body limits, batches, and TLS with certificates made here.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::provider::{good, padded_answer, Provider, Reply, TestCa, KEY, PATH};
use janitor_axum::jev::{JevConfig, JevConfigBuilder, JevConfigError, JevEvaluator};
use janitor_core::identification::jev::{
    JevRequest, DEFAULT_MODEL, MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES,
};
use janitor_core::{
    Evaluation, EvaluationInput, Evaluator, EvaluatorError, Observation, VisitorPayload,
};
use serde_json::{json, Value};

const USER_AGENT: &str =
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/130.0.0.0 Safari/537.36";

fn observation(doc: Value) -> Observation {
    let payload = VisitorPayload::from_value(&doc).expect("valid payload");
    Observation::normalize(&payload.signals, payload.behavior.as_ref())
}

fn mac() -> Observation {
    observation(json!({
        "signals": {
            "userAgent": USER_AGENT,
            "platform": "MacIntel",
            "languages": ["en-US", "he"],
            "timezone": "Asia/Jerusalem",
            "screen": {"width": 1440, "height": 900, "colorDepth": 24, "pixelRatio": 2},
            "hardware": {"hardwareConcurrency": 8, "maxTouchPoints": 0},
            "automation": {"webdriver": false}
        },
        "behavior": {"pageAgeMs": 1500, "mouseMoveCount": 12, "pointerDownCount": 1, "keyDownCount": 0,
                     "scrollCount": 2, "visibilityChangeCount": 0}
    }))
}

fn input<'a>(history: &'a [Arc<Observation>], current: &'a Observation) -> EvaluationInput<'a> {
    EvaluationInput {
        history,
        current,
        deterministic_similarity: 0.75,
    }
}

/// What the provider's usual good answer evaluates to.
const ANSWERED: Evaluation = Evaluation {
    same_visitor: 0.875,
    automation: 0.25,
    suspicious: 0.125,
};

fn failed(result: Result<impl std::fmt::Debug, EvaluatorError>) -> String {
    match result {
        Err(EvaluatorError::Failed(why)) => why,
        other => panic!("expected Failed, got {other:?}"),
    }
}

#[tokio::test]
async fn a_good_answer_is_read_and_the_request_is_exact() {
    let provider = Provider::start(good()).await;
    let current = mac();
    let history = [Arc::new(mac())];
    let evaluation = provider
        .evaluator(1200)
        .evaluate(input(&history, &current))
        .await
        .unwrap();
    assert_eq!(evaluation, ANSWERED);

    let received = provider.received();
    assert_eq!(received.len(), 1, "no retries, no extra calls");
    let request = &received[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, PATH);
    assert_eq!(request.headers["host"], provider.addr.to_string().as_str());
    assert_eq!(request.headers["authorization"], format!("Bearer {KEY}"));
    assert_eq!(request.headers["content-type"], "application/json");
    assert_eq!(
        request.headers["content-length"],
        request.body.len().to_string().as_str()
    );
    for absent in ["user-agent", "cookie", "x-forwarded-for", "forwarded"] {
        assert!(request.headers.get(absent).is_none(), "{absent}");
    }
    let compact = json!({
        "platform": "macos", "browser": "chrome", "timezone": "Asia/Jerusalem", "languages": ["en-us", "he"],
        "screen": "900x1440", "colorDepth": 24, "pixelRatio": 2, "hardwareConcurrency": 8, "maxTouchPoints": 0,
        "webdriver": false,
        "behavior": {"pageAgeMs": 1500, "mouseMoveCount": 12, "pointerDownCount": 1, "keyDownCount": 0,
                     "scrollCount": 2, "visibilityChangeCount": 0}
    });
    // The published file, as janitor-core embeds it (a path outside this crate would not be published with it).
    let questions: Value =
        serde_json::from_str(janitor_core::identification::jev::QUESTIONS_JSON).unwrap();
    assert_eq!(
        request.json(),
        json!({
            "model": "jev-latest",
            "state": {
                "history": [compact],
                "current": compact,
                "deterministicSimilarity": 0.75,
                "evidence": [{
                    "samePlatform": true, "sameBrowser": true, "sameTimezone": true, "sameLanguages": true,
                    "screenSimilarity": 1, "sameHardwareConcurrency": true, "sameTouchCapabilities": true
                }]
            },
            "questions": questions
        })
    );
    let text = request.text();
    assert!(text.starts_with(r#"{"model":"jev-latest","state":{"history":[{"platform":"macos""#));
    for absent in [
        USER_AGENT,
        "userAgent",
        "Mozilla",
        "vis_",
        "__visitor",
        "127.0.0.1",
    ] {
        assert!(!text.contains(absent), "{absent} was sent");
    }
}

#[tokio::test]
async fn a_slow_provider_times_out_near_the_deadline() {
    let provider = Provider::start(Reply::Slow(Duration::from_secs(5))).await;
    let current = mac();
    let started = Instant::now();
    let result = provider.evaluator(300).evaluate(input(&[], &current)).await;
    let elapsed = started.elapsed();
    assert_eq!(result, Err(EvaluatorError::Timeout));
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert!(elapsed < Duration::from_millis(1300), "{elapsed:?}");
    assert_eq!(provider.received().len(), 1, "no retry after a timeout");
}

#[tokio::test]
async fn the_deadline_covers_reading_the_answer() {
    // Headers come at once, the body only after the deadline.
    let provider = Provider::start(Reply::Drip {
        delay: Duration::from_secs(5),
        chunks: vec![padded_answer(200)],
    })
    .await;
    let current = mac();
    let started = Instant::now();
    let result = provider.evaluator(300).evaluate(input(&[], &current)).await;
    assert_eq!(result, Err(EvaluatorError::Timeout));
    assert!(started.elapsed() < Duration::from_millis(1300));
}

#[tokio::test]
async fn malformed_answers_fail() {
    let provider = Provider::start(good()).await;
    let evaluator = provider.evaluator(1200);
    let current = mac();
    let noul = |same: Value| {
        json!({"answers": {
            "sameVisitor": {"type": "noul", "noul": same},
            "automation": {"type": "noul", "noul": 0.5},
            "suspicious": {"type": "noul", "noul": 0.5}
        }})
        .to_string()
        .into_bytes()
    };
    let missing = json!({"answers": {
        "sameVisitor": {"type": "noul", "noul": 0.5},
        "automation": {"type": "noul", "noul": 0.5}
    }})
    .to_string()
    .into_bytes();
    let cases: [(Vec<u8>, &str); 8] = [
        (b"{\"answers\": {".to_vec(), "not JSON"),
        (b"<html>busy</html>".to_vec(), "not JSON"),
        (
            noul(json!(1.5)),
            "answers.sameVisitor.noul` must be a finite number within [0, 1], got 1.5",
        ),
        (noul(json!(-0.1)), "got -0.1"),
        (
            noul(json!("NaN")),
            "answers.sameVisitor.noul` must be a number, got a string",
        ),
        (noul(json!("0.9")), "must be a number, got a string"),
        (missing, "`answers.suspicious` is missing"),
        (
            b"{\"answers\":{\"sameVisitor\":{\"type\":\"noul\",\"noul\":NaN}}}".to_vec(),
            "not JSON",
        ),
    ];
    for (body, why) in cases {
        provider.set_reply(Reply::Raw { status: 200, body });
        let reason = failed(evaluator.evaluate(input(&[], &current)).await);
        assert!(reason.contains(why), "{reason:?} should say {why:?}");
    }
}

#[tokio::test]
async fn error_statuses_fail_without_retry() {
    let provider = Provider::start(Reply::Raw {
        status: 429,
        body: b"{\"error\":\"rate limited\"}".to_vec(),
    })
    .await;
    let evaluator = provider.evaluator(1200);
    let current = mac();
    let reason = failed(evaluator.evaluate(input(&[], &current)).await);
    assert!(reason.contains("429"), "{reason}");
    assert_eq!(provider.received().len(), 1, "a 429 is not retried");
    for status in [500, 503, 401, 302, 204] {
        provider.set_reply(Reply::Raw {
            status,
            body: Vec::new(),
        });
        let reason = failed(evaluator.evaluate(input(&[], &current)).await);
        if status != 204 {
            assert!(reason.contains(&status.to_string()), "{reason}");
        }
    }
    // A 2xx other than 200 is read like any answer.
    provider.set_reply(Reply::Raw {
        status: 201,
        body: padded_answer(200),
    });
    assert!(evaluator.evaluate(input(&[], &current)).await.is_ok());
}

#[tokio::test]
async fn answers_stop_at_the_size_limit() {
    let provider = Provider::start(good()).await;
    let evaluator = provider.evaluator(2000);
    let current = mac();
    // With a Content-Length: exactly the limit is read, one byte more is refused.
    provider.set_reply(Reply::Raw {
        status: 200,
        body: padded_answer(MAX_RESPONSE_BYTES),
    });
    assert_eq!(
        evaluator
            .evaluate(input(&[], &current))
            .await
            .unwrap()
            .same_visitor,
        0.5
    );
    provider.set_reply(Reply::Raw {
        status: 200,
        body: padded_answer(MAX_RESPONSE_BYTES + 1),
    });
    let reason = failed(evaluator.evaluate(input(&[], &current)).await);
    assert!(reason.contains("exceeds 65536 bytes"), "{reason}");

    // Streamed without a length: the same bounds, counted as the chunks arrive.
    let drip = |size: usize| {
        let body = padded_answer(size);
        Reply::Drip {
            delay: Duration::ZERO,
            chunks: body.chunks(10_000).map(<[u8]>::to_vec).collect(),
        }
    };
    provider.set_reply(drip(MAX_RESPONSE_BYTES));
    assert!(evaluator.evaluate(input(&[], &current)).await.is_ok());
    provider.set_reply(drip(MAX_RESPONSE_BYTES + 1));
    let reason = failed(evaluator.evaluate(input(&[], &current)).await);
    assert!(reason.contains("exceeds 65536 bytes"), "{reason}");
    // A huge answer is cut off, not read to its end.
    provider.set_reply(drip(10 * 1024 * 1024));
    let reason = failed(evaluator.evaluate(input(&[], &current)).await);
    assert!(reason.contains("exceeds 65536 bytes"), "{reason}");
}

/// An observation whose request body is exactly `size` bytes.
fn current_of_body_size(size: usize) -> Observation {
    let mut current = mac();
    current.timezone = Some(String::new());
    let base = JevRequest::single(input(&[], &current))
        .to_body(DEFAULT_MODEL)
        .unwrap()
        .len();
    current.timezone = Some("x".repeat(size - base));
    current
}

#[tokio::test]
async fn a_request_too_large_is_never_sent() {
    let provider = Provider::start(good()).await;
    let evaluator = provider.evaluator(1200);
    let over = current_of_body_size(MAX_REQUEST_BYTES + 1);
    let result = evaluator.evaluate(input(&[], &over)).await;
    match result {
        Err(EvaluatorError::Refused(why)) => assert!(why.contains("65537 bytes"), "{why}"),
        other => panic!("expected Refused, got {other:?}"),
    }
    assert_eq!(
        provider.connections(),
        0,
        "no connection for a refused request"
    );
    assert!(provider.received().is_empty());

    // Exactly the limit is sent, on the first connection.
    let at = current_of_body_size(MAX_REQUEST_BYTES);
    evaluator.evaluate(input(&[], &at)).await.unwrap();
    assert_eq!(provider.connections(), 1);
    assert_eq!(provider.last().body.len(), MAX_REQUEST_BYTES);
}

#[tokio::test]
async fn an_unreachable_provider_fails() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let evaluator = JevEvaluator::new(
        JevConfig::builder()
            .endpoint(format!("http://{addr}{PATH}"))
            .api_key(KEY)
            .build()
            .unwrap(),
    );
    let current = mac();
    let reason = failed(evaluator.evaluate(input(&[], &current)).await);
    assert!(reason.contains("unreachable"), "{reason}");
}

#[tokio::test]
async fn a_batch_is_one_request() {
    let provider = Provider::start(good()).await;
    let evaluator = provider.evaluator(1200);
    let current = mac();
    let a = [Arc::new(mac())];
    let b: Vec<_> = (0..7).map(|_| Arc::new(mac())).collect();
    let candidates = [
        input(&a, &current),
        EvaluationInput {
            history: &b,
            current: &current,
            deterministic_similarity: 1.0,
        },
        input(&[], &current),
    ];
    let answers = evaluator.evaluate_batch(&candidates).await.unwrap();
    assert_eq!(answers.len(), 3);
    assert!(answers.iter().all(|e| *e == ANSWERED));
    assert_eq!(provider.received().len(), 1, "one request for the batch");
    let body = provider.last().json();
    let state = &body["state"];
    assert_eq!(state["candidates"].as_array().unwrap().len(), 3);
    assert_eq!(
        state["candidates"][1]["history"].as_array().unwrap().len(),
        5
    );
    assert_eq!(state["candidates"][1]["deterministicSimilarity"], json!(1));
    assert!(state.get("evidence").is_none() && state.get("history").is_none());
    let names: Vec<_> = body["questions"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(
        names,
        [
            "automation",
            "candidate0",
            "candidate1",
            "candidate2",
            "suspicious"
        ]
    );

    // An answer missing one candidate fails the whole batch.
    provider.set_reply(Reply::Raw {
        status: 200,
        body: json!({"answers": {
            "candidate0": {"type": "noul", "noul": 0.5},
            "candidate1": {"type": "noul", "noul": 0.5},
            "automation": {"type": "noul", "noul": 0.5},
            "suspicious": {"type": "noul", "noul": 0.5}
        }})
        .to_string()
        .into_bytes(),
    });
    let reason = failed(evaluator.evaluate_batch(&candidates).await);
    assert!(reason.contains("answers.candidate2"), "{reason}");
}

#[tokio::test]
async fn batches_outside_the_protocol_are_refused_locally() {
    let provider = Provider::start(good()).await;
    let evaluator = provider.evaluator(1200);
    let current = mac();
    let other = Observation::default();
    assert_eq!(evaluator.evaluate_batch(&[]).await, Ok(Vec::new()));
    let eleven = [input(&[], &current); 11];
    assert!(matches!(
        evaluator.evaluate_batch(&eleven).await,
        Err(EvaluatorError::Refused(why)) if why.contains("got 11")
    ));
    let mixed = [input(&[], &current), input(&[], &other)];
    assert!(matches!(
        evaluator.evaluate_batch(&mixed).await,
        Err(EvaluatorError::Refused(_))
    ));
    assert_eq!(provider.connections(), 0);
    let ten = [input(&[], &current); 10];
    assert_eq!(evaluator.evaluate_batch(&ten).await.unwrap().len(), 10);
    assert_eq!(provider.received().len(), 1);
}

#[tokio::test]
async fn debug_output_hides_the_key() {
    let provider = Provider::start(good()).await;
    let text = format!("{:?}", provider.evaluator(1200));
    assert!(!text.contains(KEY), "{text}");
    assert!(text.contains(&provider.url()));
}

/// One evaluation of a first visit through an evaluator for `config`.
async fn call(config: JevConfig) -> Result<Evaluation, EvaluatorError> {
    let current = mac();
    JevEvaluator::new(config)
        .evaluate(input(&[], &current))
        .await
}

/// A TLS endpoint at `port` of this machine, trusting a CA that signed nothing.
fn https_to(port: u16) -> JevConfigBuilder {
    JevConfig::builder()
        .endpoint(format!("https://localhost:{port}{PATH}"))
        .api_key(KEY)
        .root_certificates_pem(TestCa::new("Unused CA").pem())
}

async fn tls_provider() -> Provider {
    Provider::start_tls(good(), TestCa::new("Jev test CA").server(&["localhost"])).await
}

#[tokio::test]
async fn https_is_answered_and_the_host_is_the_urls_authority() {
    let provider = tls_provider().await;
    let current = mac();
    let evaluator = provider.evaluator(2000);
    assert_eq!(evaluator.evaluate(input(&[], &current)).await, Ok(ANSWERED));
    let request = provider.last();
    let authority = format!("localhost:{}", provider.addr.port());
    assert_eq!(request.headers["host"], authority.as_str());
    assert_eq!(request.headers["authorization"], format!("Bearer {KEY}"));
    assert_eq!(request.path, PATH);
    // The pooled TLS connection carries the next call too.
    evaluator.evaluate(input(&[], &current)).await.unwrap();
    assert_eq!((provider.received().len(), provider.connections()), (2, 1));
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_not_trusted() {
    let provider = tls_provider().await;
    let other = TestCa::new("Someone else's CA");
    let config = provider
        .config_builder(2000)
        .root_certificates_pem(other.pem());
    let reason = failed(call(config.build().unwrap()).await);
    let untrusted =
        "the provider's TLS certificate was not trusted: it is not signed by a trusted CA";
    assert!(reason.starts_with(untrusted), "{reason}");
    assert!(provider.received().is_empty());

    // By default only the system's store is trusted, and a test CA is in no such store.
    match JevConfig::builder()
        .endpoint(provider.url())
        .api_key(KEY)
        .build()
    {
        Ok(config) => assert!(failed(call(config).await).starts_with(untrusted)),
        // A machine with no CA certificates at all refuses when built, saying how to give one.
        Err(JevConfigError::RootCertificates(why)) => assert!(why.contains("system's store")),
        Err(other) => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn a_certificate_for_another_host_is_not_trusted() {
    let provider = tls_provider().await;
    let config = provider
        .config_builder(2000)
        .endpoint(provider.url_at("127.0.0.1"));
    let reason = failed(call(config.build().unwrap()).await);
    let wrong_name =
        "the provider's TLS certificate was not trusted: it was not issued for the endpoint's host";
    assert!(reason.starts_with(wrong_name), "{reason}");
    assert!(reason.contains("127.0.0.1"), "{reason}");
    assert!(provider.received().is_empty());
}

#[tokio::test]
async fn https_to_a_plain_http_provider_fails_as_tls() {
    let plain = Provider::start(good()).await;
    let reason = failed(call(https_to(plain.addr.port()).build().unwrap()).await);
    assert!(
        reason.starts_with("TLS with the provider failed: "),
        "{reason}"
    );
}

#[tokio::test]
async fn the_deadline_covers_the_tls_handshake() {
    // A server that accepts the connection and never answers the handshake.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = listener.accept().await {
            held.push(stream);
        }
    });
    let started = Instant::now();
    let result = call(https_to(port).timeout_ms(300).build().unwrap()).await;
    assert_eq!(result, Err(EvaluatorError::Timeout));
    assert!(started.elapsed() < Duration::from_millis(1300));
    silent.abort();
}

#[tokio::test]
async fn plain_http_is_for_loopback_only() {
    let remote = JevConfig::builder()
        .endpoint("http://jev.example/v1/systemone")
        .api_key(KEY);
    let error = remote.build().unwrap_err();
    assert_eq!(
        error,
        JevConfigError::PlainHttpNotLoopback("jev.example".into())
    );
    assert!(error.to_string().contains("must use https://"), "{error}");

    // Loopback by name works as by address, with the scheme in any case, and the Host header follows the URL.
    let provider = Provider::start(good()).await;
    let port = provider.addr.port();
    let config = provider
        .config_builder(1200)
        .endpoint(format!("HTTP://localhost:{port}{PATH}"));
    assert_eq!(call(config.build().unwrap()).await, Ok(ANSWERED));
    let host = format!("localhost:{port}");
    assert_eq!(provider.last().headers["host"], host.as_str());
}
