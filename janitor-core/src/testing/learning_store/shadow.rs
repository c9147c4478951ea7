//! Shadow predictions: when the predictor is called, what is recorded, and what never changes.

use super::*;

/// Without verified examples the predictor is not called and the snapshot is recorded as abstained.
pub async fn shadow_abstains_without_examples<F: Fresh<(), Store = S>, S: LearningStore + Clone>(
    fresh: F,
) {
    let predictor = Scripted::new(Script::Answer(Some(subject(1)), Some(0.9)));
    let learning = shadow(fresh.store(()).await, predictor.clone());
    let o = snapshot("en-us", "Europe/Paris");
    let (_, _, prediction) = set(visit(&learning, None, None, &Login::Anonymous, &o, T0).await);
    assert_eq!(prediction, Prediction::status(PredictionStatus::Abstained));
    assert_eq!(predictor.calls(), 0);
    // Examples in other buckets (another language and timezone) are not this snapshot's.
    labelled_flow(&learning, &snapshot("ja-jp", "Asia/Tokyo"), &subject(1), T0).await;
    let (_, _, prediction) =
        set(visit(&learning, None, None, &Login::Anonymous, &o, T0 + 10).await);
    assert_eq!(prediction.status, PredictionStatus::Abstained);
    assert_eq!(predictor.calls(), 0);
}

/// A guess naming an example's subject with a score in [0, 1] is recorded as suggested, in the row and in
/// the later report; the predictor never receives more than 100 examples, and a crowded bucket abstains.
pub async fn shadow_records_a_valid_guess<F: Fresh<(), Store = S>, S: LearningStore + Clone>(
    fresh: F,
) {
    let store = fresh.store(()).await;
    let predictor = Scripted::new(Script::Answer(Some(subject(1)), Some(0.75)));
    let learning = shadow(store.clone(), predictor.clone());
    let o = snapshot("en-us", "Europe/Paris");
    labelled_flow(&learning, &o, &subject(1), T0).await;
    let (id, _, prediction) =
        set(visit(&learning, None, None, &Login::Anonymous, &o, T0 + 10).await);
    assert_eq!(prediction.status, PredictionStatus::Suggested);
    assert_eq!(
        (prediction.subject_id.clone(), prediction.score),
        (Some(subject(1)), Some(0.75))
    );
    let row = store.session(learning.scope(), &id).await.unwrap().unwrap();
    assert_eq!(row.prediction, prediction);
    visit(
        &learning,
        Some(&id),
        None,
        &Login::VerifiedSelf(subject(2)),
        &o,
        T0 + 11,
    )
    .await;
    let reports = learning.at(T0 + 12).reports(100).await.unwrap();
    assert_eq!(reports[0].prediction, prediction);
    assert_eq!(reports[0].example.subject_id, subject(2));
    // 100 examples are handed over whole; 101 in one bucket saturate it, and the service abstains.
    for n in 3..101 {
        labelled_flow(&learning, &o, &subject(n), T0 + 20 + i64::from(n)).await;
    }
    let calls = predictor.calls();
    let (_, _, prediction) =
        set(visit(&learning, None, None, &Login::Anonymous, &o, T0 + 500).await);
    assert_eq!(prediction.status, PredictionStatus::Suggested);
    assert_eq!(predictor.most_examples(), 100);
    labelled_flow(&learning, &o, &subject(101), T0 + 600).await;
    let (_, _, prediction) =
        set(visit(&learning, None, None, &Login::Anonymous, &o, T0 + 700).await);
    assert_eq!(prediction.status, PredictionStatus::Abstained);
    assert!(predictor.calls() > calls);
    assert_eq!(predictor.most_examples(), 100);
}

/// A timeout, an error, a subject outside the examples or a score outside [0, 1] is recorded as
/// unavailable; naming nobody is an abstention. The cookie and the flow go on either way.
pub async fn shadow_failures_change_nothing<F: Fresh<(), Store = S>, S: LearningStore + Clone>(
    fresh: F,
) {
    let store = fresh.store(()).await;
    let o = snapshot("en-us", "Europe/Paris");
    let seed = shadow(store.clone(), Scripted::new(Script::Answer(None, None)));
    labelled_flow(&seed, &o, &subject(1), T0).await;
    let cases = [
        (
            Script::Fail(PredictorError::Timeout),
            PredictionStatus::Unavailable,
        ),
        (
            Script::Fail(PredictorError::Failed("down".into())),
            PredictionStatus::Unavailable,
        ),
        (
            Script::Answer(Some(subject(9)), Some(0.5)),
            PredictionStatus::Unavailable,
        ),
        (
            Script::Answer(Some(subject(1)), Some(1.5)),
            PredictionStatus::Unavailable,
        ),
        (
            Script::Answer(Some(subject(1)), Some(f64::NAN)),
            PredictionStatus::Unavailable,
        ),
        (
            Script::Answer(Some(subject(1)), None),
            PredictionStatus::Unavailable,
        ),
        (Script::Answer(None, Some(0.5)), PredictionStatus::Abstained),
        (
            Script::Answer(Some(subject(1)), Some(1.0)),
            PredictionStatus::Suggested,
        ),
        (
            Script::Answer(Some(subject(1)), Some(0.0)),
            PredictionStatus::Suggested,
        ),
    ];
    for (i, (script, expected)) in cases.into_iter().enumerate() {
        let predictor = Scripted::new(script);
        let learning = shadow(store.clone(), predictor.clone());
        let at = T0 + 100 + i as i64;
        let (id, age, prediction) =
            set(visit(&learning, None, None, &Login::Anonymous, &o, at).await);
        assert_eq!(prediction.status, expected, "case {i}");
        assert_eq!(predictor.calls(), 1, "case {i}");
        assert_eq!(age, 30 * 60);
        let row = store.session(learning.scope(), &id).await.unwrap().unwrap();
        assert_eq!((row.subject_id, row.prediction.status), (None, expected));
    }
}
