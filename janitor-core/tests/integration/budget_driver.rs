//! The inference budget over a store: the compare-and-swap loop's limits, and the budgeted evaluator (the
//! store suite runs in `store_suites.rs`).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use janitor_core::protection::budget::{
    BatchCost, BudgetConfig, BudgetDenial, BudgetRow, BudgetStore, BudgetedEvaluator,
    BudgetedEvaluatorConfig, CallOutcome, InferenceBudget, MemoryBudgetStore, CAS_ATTEMPTS,
};
use janitor_core::{
    Evaluation, EvaluationInput, Evaluator, EvaluatorError, LabelKey, Observation, ProtectionKey,
    StoreError,
};

use janitor_core::testing::{label_key, T0};

/// A memory store that loses the first `lose` compare-and-swaps, or fails reads or writes.
#[derive(Default)]
struct Flaky {
    inner: MemoryBudgetStore,
    lose: usize,
    fail_reads: bool,
    fail_writes: bool,
    swaps: AtomicUsize,
}

impl BudgetStore for Flaky {
    async fn read(&self, id: &str) -> Result<Option<BudgetRow>, StoreError> {
        if self.fail_reads {
            return Err(StoreError::Unavailable("down".into()));
        }
        self.inner.read(id).await
    }

    async fn compare_and_swap(
        &self,
        id: &str,
        expected_version: i64,
        next: &BudgetRow,
    ) -> Result<bool, StoreError> {
        let attempt = self.swaps.fetch_add(1, Ordering::SeqCst);
        if self.fail_writes {
            return Err(StoreError::Unavailable("down".into()));
        }
        if attempt < self.lose {
            return Ok(false);
        }
        self.inner
            .compare_and_swap(id, expected_version, next)
            .await
    }

    async fn cleanup(&self, batch: usize, now_ms: i64) -> Result<usize, StoreError> {
        self.inner.cleanup(batch, now_ms).await
    }
}

fn budget<S: BudgetStore>(store: S, config: BudgetConfig) -> InferenceBudget<S> {
    InferenceBudget::new(store, config, &label_key("driver"))
}

#[tokio::test]
async fn the_row_id_is_the_evaluator_protection_label() {
    // The published vector (contract/conformance.json, protectionLabels "evaluator"): every instance of the
    // namespace, in any language, updates this same row.
    let key = LabelKey::new(&"a".repeat(64), "fixture").unwrap();
    let b = InferenceBudget::new(MemoryBudgetStore::new(), BudgetConfig::default(), &key);
    assert_eq!(
        b.id(),
        "sub_ef231cbd96d67a6db34458bf37b7f3ba045d3b2df8b2d743ce6106c69238d619"
    );
    assert_eq!(b.id(), key.protection(&ProtectionKey::Evaluator));
}

#[tokio::test]
async fn contention_gives_up_after_eight_attempts() {
    assert_eq!(CAS_ATTEMPTS, 8);
    let lost = Flaky {
        lose: 8,
        ..Flaky::default()
    };
    let b = budget(lost, BudgetConfig::default());
    assert_eq!(b.reserve(T0, 1, 1_000).await, Err(BudgetDenial::Storage));
    assert_eq!(b.store().swaps.load(Ordering::SeqCst), 8);
    assert_eq!(b.store().inner.row_count(), 0, "nothing was admitted");

    let seven = Flaky {
        lose: 7,
        ..Flaky::default()
    };
    let b = budget(seven, BudgetConfig::default());
    let lease = b
        .reserve(T0, 1, 1_000)
        .await
        .expect("the eighth attempt wins");
    assert_eq!(b.store().swaps.load(Ordering::SeqCst), 8);
    let row = b.store().read(b.id()).await.unwrap().unwrap();
    assert_eq!(row.record.leases, vec![lease.record().clone()]);
}

#[tokio::test]
async fn finish_reports_contention_as_unavailable() {
    let b = budget(Flaky::default(), BudgetConfig::default());
    let lease = b.reserve(T0, 1, 1_000).await.unwrap();
    let contended = InferenceBudget::new(
        Flaky {
            lose: usize::MAX,
            ..Flaky::default()
        },
        BudgetConfig::default(),
        &label_key("driver"),
    );
    // The same row in a store where every compare-and-swap loses.
    let row = b.store().read(b.id()).await.unwrap().unwrap();
    assert!(contended
        .store()
        .inner
        .compare_and_swap(b.id(), 0, &row)
        .await
        .unwrap());
    let result = contended.finish(&lease, CallOutcome::Success, T0 + 1).await;
    assert!(
        matches!(result, Err(StoreError::Unavailable(_))),
        "{result:?}"
    );
    assert_eq!(contended.store().swaps.load(Ordering::SeqCst), 8);
}

#[tokio::test]
async fn store_errors_deny_with_storage() {
    let reads = budget(
        Flaky {
            fail_reads: true,
            ..Flaky::default()
        },
        BudgetConfig::default(),
    );
    assert_eq!(
        reads.reserve(T0, 1, 1_000).await,
        Err(BudgetDenial::Storage)
    );
    let writes = budget(
        Flaky {
            fail_writes: true,
            ..Flaky::default()
        },
        BudgetConfig::default(),
    );
    assert_eq!(
        writes.reserve(T0, 1, 1_000).await,
        Err(BudgetDenial::Storage)
    );
    assert_eq!(
        writes.store().swaps.load(Ordering::SeqCst),
        1,
        "errors are not retried"
    );
}

#[tokio::test]
async fn denials_write_nothing() {
    let config = BudgetConfig::builder().max_calls(1).build().unwrap();
    let b = budget(MemoryBudgetStore::new(), config);
    b.reserve(T0, 1, 1_000).await.unwrap();
    let before = b.store().read(b.id()).await.unwrap();
    assert_eq!(b.reserve(T0 + 1, 1, 1_000).await, Err(BudgetDenial::Budget));
    assert_eq!(b.store().read(b.id()).await.unwrap(), before);
    // A denial on a namespace with no row creates none.
    let empty = budget(
        MemoryBudgetStore::new(),
        BudgetConfig::builder().max_concurrent(1).build().unwrap(),
    );
    assert_eq!(
        empty.reserve(T0, 2, 1_000).await,
        Err(BudgetDenial::Concurrency)
    );
    assert_eq!(empty.store().row_count(), 0);
}

#[tokio::test]
async fn lease_timeouts_are_clamped() {
    let b = budget(MemoryBudgetStore::new(), BudgetConfig::default());
    let short = b.reserve(T0, 1, 0).await.unwrap();
    assert_eq!(
        (short.timeout_ms(), short.expires_at()),
        (1, T0 + 1 + 5_000)
    );
    let long = b.reserve(T0, 1, 9_999).await.unwrap();
    assert_eq!((long.timeout_ms(), long.expires_at()), (5_000, T0 + 10_000));
    assert_ne!(short.id(), long.id());
}

// ---- the budgeted evaluator ----

#[test]
fn evaluator_config_bounds() {
    let d = BudgetedEvaluatorConfig::builder().build().unwrap();
    assert_eq!(d, BudgetedEvaluatorConfig::default());
    assert_eq!(
        (d.timeout_ms(), d.evaluate_cost(), d.batch_cost()),
        (1_200, 1, BatchCost::Fixed(1))
    );
    for ok in [1, 5_000] {
        assert!(BudgetedEvaluatorConfig::builder()
            .timeout_ms(ok)
            .build()
            .is_ok());
    }
    for bad in [0, 5_001] {
        let err = BudgetedEvaluatorConfig::builder()
            .timeout_ms(bad)
            .build()
            .unwrap_err();
        assert_eq!(err.field, "timeout_ms");
        assert!(err.to_string().contains("from 1 to 5000"), "{err}");
    }
    for ok in [1, 16] {
        assert!(BudgetedEvaluatorConfig::builder()
            .evaluate_cost(ok)
            .batch_cost(BatchCost::Fixed(ok))
            .build()
            .is_ok());
    }
    for bad in [0, 17] {
        assert_eq!(
            BudgetedEvaluatorConfig::builder()
                .evaluate_cost(bad)
                .build()
                .unwrap_err()
                .field,
            "evaluate_cost"
        );
        assert_eq!(
            BudgetedEvaluatorConfig::builder()
                .batch_cost(BatchCost::Fixed(bad))
                .build()
                .unwrap_err()
                .field,
            "batch_cost"
        );
    }
}

const GOOD: Evaluation = Evaluation {
    same_visitor: 0.9,
    automation: 0.1,
    suspicious: 0.2,
};

/// An evaluator answering from a script, counting its calls.
#[derive(Default)]
struct Scripted {
    answers: Mutex<VecDeque<Result<Evaluation, EvaluatorError>>>,
    calls: AtomicUsize,
    batch_calls: AtomicUsize,
}

impl Scripted {
    fn with(answers: Vec<Result<Evaluation, EvaluatorError>>) -> Self {
        Scripted {
            answers: Mutex::new(answers.into()),
            ..Scripted::default()
        }
    }

    fn next(&self) -> Result<Evaluation, EvaluatorError> {
        self.answers.lock().unwrap().pop_front().unwrap_or(Ok(GOOD))
    }
}

impl Evaluator for Scripted {
    async fn evaluate(&self, _input: EvaluationInput<'_>) -> Result<Evaluation, EvaluatorError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.next()
    }

    async fn evaluate_batch(
        &self,
        candidates: &[EvaluationInput<'_>],
    ) -> Result<Vec<Evaluation>, EvaluatorError> {
        self.batch_calls.fetch_add(1, Ordering::SeqCst);
        let answer = self.next()?;
        // A NaN `automation` in the script stands for a short answer.
        if answer.automation.is_nan() {
            return Ok(vec![GOOD; candidates.len() - 1]);
        }
        Ok(vec![answer; candidates.len()])
    }
}

struct Harness {
    evaluator: BudgetedEvaluator<Arc<Scripted>, MemoryBudgetStore>,
    inner: Arc<Scripted>,
    store: MemoryBudgetStore,
    id: String,
    now: Arc<AtomicI64>,
}

impl Harness {
    fn new(script: Vec<Result<Evaluation, EvaluatorError>>, budget: BudgetConfig) -> Self {
        Harness::with(script, budget, BudgetedEvaluatorConfig::default())
    }

    fn with(
        script: Vec<Result<Evaluation, EvaluatorError>>,
        budget: BudgetConfig,
        config: BudgetedEvaluatorConfig,
    ) -> Self {
        let inner = Arc::new(Scripted::with(script));
        let store = MemoryBudgetStore::new();
        let b = InferenceBudget::new(store.clone(), budget, &label_key("evaluator"));
        let id = b.id().to_owned();
        let now = Arc::new(AtomicI64::new(T0));
        let clock = Arc::clone(&now);
        let evaluator = BudgetedEvaluator::new(Arc::clone(&inner), b, config)
            .with_clock(Arc::new(move || clock.load(Ordering::SeqCst)));
        Harness {
            evaluator,
            inner,
            store,
            id,
            now,
        }
    }

    async fn row(&self) -> BudgetRow {
        self.store.read(&self.id).await.unwrap().expect("a row")
    }
}

fn current() -> Observation {
    Observation {
        timezone: Some("Europe/Paris".into()),
        ..Observation::default()
    }
}

fn input(observation: &Observation) -> EvaluationInput<'_> {
    EvaluationInput {
        history: &[],
        current: observation,
        deterministic_similarity: 0.5,
    }
}

#[tokio::test]
async fn an_admitted_call_is_made_and_its_lease_released() {
    let h = Harness::new(vec![], BudgetConfig::default());
    let o = current();
    assert_eq!(h.evaluator.evaluate(input(&o)).await, Ok(GOOD));
    assert_eq!(h.inner.calls.load(Ordering::SeqCst), 1);
    let row = h.row().await;
    assert_eq!((row.version, row.record.used), (2, 1));
    assert!(row.record.leases.is_empty());
    // The lease was sized by the configured timeout: the row outlives timeout + grace twice over.
    assert_eq!(row.expires_at, T0 + 120_000);
}

#[tokio::test]
async fn a_refusal_never_reaches_the_inner_evaluator() {
    let h = Harness::new(
        vec![],
        BudgetConfig::builder().max_calls(1).build().unwrap(),
    );
    let o = current();
    h.evaluator.evaluate(input(&o)).await.unwrap();
    let refused = h.evaluator.evaluate(input(&o)).await;
    assert_eq!(
        refused,
        Err(EvaluatorError::Refused("inference budget: budget".into()))
    );
    assert_eq!(h.inner.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn outcomes_are_reported_to_the_budget() {
    let bad = Evaluation {
        same_visitor: f64::NAN,
        ..GOOD
    };
    let h = Harness::new(
        vec![
            Err(EvaluatorError::Timeout),
            Err(EvaluatorError::Failed("boom".into())),
            Ok(bad),
        ],
        BudgetConfig::builder()
            .failure_threshold(3)
            .build()
            .unwrap(),
    );
    let o = current();
    assert_eq!(
        h.evaluator.evaluate(input(&o)).await,
        Err(EvaluatorError::Timeout)
    );
    let row = h.row().await;
    assert_eq!(
        (row.record.failures, row.record.leases.len()),
        (1, 1),
        "a timed-out lease stays"
    );
    assert!(matches!(
        h.evaluator.evaluate(input(&o)).await,
        Err(EvaluatorError::Failed(_))
    ));
    assert_eq!(h.row().await.record.failures, 2);
    // An invalid answer is a failure too, and here the third in a row: the circuit opens.
    assert!(matches!(
        h.evaluator.evaluate(input(&o)).await,
        Err(EvaluatorError::Failed(_))
    ));
    let row = h.row().await;
    assert_eq!(
        (row.record.failures, row.record.open_until, row.record.epoch),
        (3, T0 + 30_000, 1)
    );
    assert_eq!(
        h.evaluator.evaluate(input(&o)).await,
        Err(EvaluatorError::Refused(
            "inference budget: circuit-open".into()
        ))
    );
    assert_eq!(h.inner.calls.load(Ordering::SeqCst), 3);
    // After the cooldown a probe goes through, and its success closes the circuit.
    h.now.store(T0 + 30_000, Ordering::SeqCst);
    assert_eq!(h.evaluator.evaluate(input(&o)).await, Ok(GOOD));
    let row = h.row().await;
    assert_eq!(
        (row.record.open_until, row.record.failures, row.record.epoch),
        (0, 0, 2)
    );
}

#[tokio::test]
async fn a_batch_reserves_one_call_by_default() {
    let h = Harness::new(vec![], BudgetConfig::default());
    let o = current();
    let ten: Vec<_> = (0..10).map(|_| input(&o)).collect();
    assert_eq!(h.evaluator.evaluate_batch(&ten).await, Ok(vec![GOOD; 10]));
    assert_eq!(
        h.row().await.record.used,
        1,
        "one request answers the whole batch"
    );
}

#[tokio::test]
async fn a_per_candidate_batch_cost_reserves_one_call_each() {
    let config = BudgetedEvaluatorConfig::builder()
        .batch_cost(BatchCost::PerCandidate)
        .build()
        .unwrap();
    let h = Harness::with(vec![], BudgetConfig::default(), config);
    let o = current();
    let three = [input(&o), input(&o), input(&o)];
    assert_eq!(h.evaluator.evaluate_batch(&three).await, Ok(vec![GOOD; 3]));
    assert_eq!(h.inner.batch_calls.load(Ordering::SeqCst), 1);
    assert_eq!(h.row().await.record.used, 3);
    // Five candidates cost more than max_concurrent (4): refused, not called.
    let five = [input(&o), input(&o), input(&o), input(&o), input(&o)];
    assert_eq!(
        h.evaluator.evaluate_batch(&five).await,
        Err(EvaluatorError::Refused(
            "inference budget: concurrency".into()
        ))
    );
    assert_eq!(h.inner.batch_calls.load(Ordering::SeqCst), 1);
    // An empty batch makes no call and reserves nothing.
    assert_eq!(h.evaluator.evaluate_batch(&[]).await, Ok(vec![]));
    assert_eq!(h.row().await.record.used, 3);
}

#[tokio::test]
async fn a_fixed_batch_cost_reserves_that_many_calls() {
    let config = BudgetedEvaluatorConfig::builder()
        .batch_cost(BatchCost::Fixed(1))
        .evaluate_cost(2)
        .build()
        .unwrap();
    let h = Harness::with(vec![], BudgetConfig::default(), config);
    let o = current();
    let five = [input(&o), input(&o), input(&o), input(&o), input(&o)];
    assert_eq!(h.evaluator.evaluate_batch(&five).await, Ok(vec![GOOD; 5]));
    assert_eq!(h.row().await.record.used, 1);
    h.evaluator.evaluate(input(&o)).await.unwrap();
    assert_eq!(h.row().await.record.used, 3);
}

#[tokio::test]
async fn a_short_batch_answer_is_a_failure() {
    let short = Evaluation {
        automation: f64::NAN,
        ..GOOD
    };
    let h = Harness::new(vec![Ok(short)], BudgetConfig::default());
    let o = current();
    let two = [input(&o), input(&o)];
    assert!(matches!(
        h.evaluator.evaluate_batch(&two).await,
        Err(EvaluatorError::Failed(_))
    ));
    let row = h.row().await;
    assert_eq!((row.record.failures, row.record.leases.len()), (1, 0));
}

#[tokio::test]
async fn unavailable_budget_storage_refuses_the_call() {
    let inner = Arc::new(Scripted::default());
    let b = InferenceBudget::new(
        Flaky {
            fail_reads: true,
            ..Flaky::default()
        },
        BudgetConfig::default(),
        &label_key("down"),
    );
    let evaluator = BudgetedEvaluator::new(Arc::clone(&inner), b, Default::default());
    let o = current();
    assert_eq!(
        evaluator.evaluate(input(&o)).await,
        Err(EvaluatorError::Refused("inference budget: storage".into()))
    );
    assert_eq!(inner.calls.load(Ordering::SeqCst), 0);
}
