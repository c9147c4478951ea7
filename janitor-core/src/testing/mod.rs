//! Shared test fixtures and the behaviour suites every store must pass (feature `testing`).
//!
//! Each store trait has one suite, written once here and run against every implementation: the memory stores
//! in this crate, the PostgreSQL stores in `janitor-sql`; the [`Stores`](crate::Stores) family has one too
//! (`stores`), for what crosses its stores (erasure). A suite is a list of cases; its macro expands to one
//! `#[tokio::test]` per case, so a failure names its case and never hides the others:
//!
//! ```ignore
//! // tests/visitor_store.rs of a crate with a store of its own
//! janitor_core::visitor_store_tests!(fresh: |retention| async move { MyStore::new(retention) });
//! ```
//!
//! A store that needs set-up and clean-up around each case (a database schema) names a runner with `around`;
//! the runner hands a context to the factory and cleans up after the case, whether it passed or panicked:
//!
//! ```ignore
//! janitor_core::visitor_store_tests!(
//!     around: janitor_sql::testing::with_schemas,
//!     fresh: |schemas: Schemas, retention| async move { PgVisitorStore::new(schemas.fresh().await, retention) },
//! );
//! ```
//!
//! The macros need `tokio` (with `macros` and `rt-multi-thread`) among the calling crate's dev-dependencies.

pub mod budget_store;
pub mod directory_store;
pub mod evidence_store;
pub mod learning_store;
pub mod quota_store;
pub mod stores;
pub mod visitor_store;

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use serde_json::{json, Value};

use crate::identification::payload::VisitorPayload;
use crate::label::LabelKey;
use crate::visitor::VisitorId;

/// The fixed time every fixture starts from: 2025-01-01T00:00:00Z in epoch milliseconds.
pub const T0: i64 = 1_735_689_600_000;

/// A fixed, well-formed visitor id: `vis_` + `n` as 48 hex digits.
pub fn visitor(n: u64) -> VisitorId {
    VisitorId::parse(&format!("vis_{n:048x}")).expect("well-formed test id")
}

/// A label key of the fixture secret in `namespace`.
pub fn label_key(namespace: &str) -> LabelKey {
    LabelKey::new(&"s".repeat(32), namespace).expect("valid fixture key")
}

/// What a MacBook's Chrome sends: every signal family present, in Jerusalem, in English and Hebrew.
pub fn mac_document() -> Value {
    json!({"signals": {
        "userAgent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 Chrome/130.0.0.0 Safari/537.36",
        "platform": "MacIntel",
        "languages": ["en-US", "he"],
        "timezone": "Asia/Jerusalem",
        "screen": {"width": 1440, "height": 900, "colorDepth": 24, "pixelRatio": 2},
        "viewport": {"width": 1280, "height": 720},
        "hardware": {"hardwareConcurrency": 8, "deviceMemory": 8, "maxTouchPoints": 0},
        "graphics": {"webglVendor": "WebKit", "webglRenderer": "WebKit WebGL"},
        "automation": {"webdriver": false}
    }})
}

/// [`mac_document`], validated.
pub fn mac_payload() -> VisitorPayload {
    VisitorPayload::from_value(&mac_document()).expect("valid fixture payload")
}

/// Polls every future to completion together, on the calling task, and returns their outputs in order: a store
/// that uses several connections sees them at the same time.
pub async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(value) => *output = Some(value),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs
        .into_iter()
        .map(|o| o.expect("every future finished"))
        .collect()
}

/// What a suite case is given: it makes the one empty store the case runs on, from the case's arguments (a
/// `Retention` for visitor stores, the visitors that must exist for evidence stores, `()` for the others).
///
/// Any `FnOnce(A) -> impl Future<Output = Store> + Send` is one.
pub trait Fresh<A> {
    /// The store made.
    type Store;

    /// Makes the store.
    fn store(self, args: A) -> impl Future<Output = Self::Store> + Send;
}

impl<A, F, Fut> Fresh<A> for F
where
    F: FnOnce(A) -> Fut,
    Fut: Future + Send,
{
    type Store = Fut::Output;

    fn store(self, args: A) -> impl Future<Output = Fut::Output> + Send {
        self(args)
    }
}

/// Runs a case with no context: what the suite macros use when no `around` runner is named.
pub async fn in_process<F, Fut>(case: F)
where
    F: FnOnce(()) -> Fut,
    Fut: Future<Output = ()>,
{
    case(()).await;
}

/// Expands a suite's case list into one test per case (used by the suite macros).
#[doc(hidden)]
#[macro_export]
macro_rules! __store_suite {
    ($suite:ident [$($case:ident),* $(,)?] fresh: $fresh:expr $(,)?) => {
        $crate::__store_suite!(
            $suite [$($case),*]
            around: $crate::testing::in_process,
            fresh: |(), args| ($fresh)(args),
        );
    };
    ($suite:ident [$($case:ident),* $(,)?] around: $around:expr, fresh: $fresh:expr $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                $around(|context| async move {
                    let fresh = $fresh;
                    $crate::testing::$suite::$case(move |args| fresh(context, args)).await;
                })
                .await;
            }
        )*
    };
}
