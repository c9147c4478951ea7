//! Arbitrary bytes as a Jev provider's answer, through `read_evaluation` and `read_batch`.
//!
//! The first byte chooses how many candidates a batch asked about (0 to `MAX_BATCH_CANDIDATES`); the rest is
//! the body. An accepted answer holds only finite probabilities within [0, 1], each exactly the number the body
//! gave; a batch has one evaluation per candidate, all sharing the one `automation` and `suspicious`; a batch
//! that is read for `n` candidates is read, as the same prefix, for fewer; a refused value is named with the
//! number that broke the range.

#![no_main]

use janitor_core::identification::jev::{
    candidate_key, noul, read_batch, read_evaluation, AnswerError, MAX_BATCH_CANDIDATES,
};
use janitor_core::Evaluation;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&first, body)) = data.split_first() else {
        return;
    };
    let candidates = usize::from(first) % (MAX_BATCH_CANDIDATES + 1);
    // What the body says, read independently of the reader: `answers.<name>.noul` as a float.
    let document: Option<Value> = serde_json::from_slice(body).ok();
    let given = |name: &str| {
        document
            .as_ref()?
            .get("answers")?
            .get(name)?
            .get("noul")?
            .as_f64()
    };

    match read_evaluation(body) {
        Ok(evaluation) => {
            check(&evaluation);
            assert_eq!(Some(evaluation.same_visitor), given("sameVisitor"));
            assert_eq!(Some(evaluation.automation), given("automation"));
            assert_eq!(Some(evaluation.suspicious), given("suspicious"));
            // The shared answers are there, so a batch of no candidates reads.
            assert_eq!(read_batch(body, 0), Ok(Vec::new()));
        }
        Err(error) => check_error(&error, document.is_some()),
    }

    match read_batch(body, candidates) {
        Ok(batch) => {
            assert_eq!(batch.len(), candidates);
            for (i, evaluation) in batch.iter().enumerate() {
                check(evaluation);
                assert_eq!(Some(evaluation.same_visitor), given(&candidate_key(i)));
                assert_eq!(Some(evaluation.automation), given("automation"));
                assert_eq!(Some(evaluation.suspicious), given("suspicious"));
            }
            for fewer in 0..candidates {
                assert_eq!(
                    read_batch(body, fewer).as_deref(),
                    Ok(&batch[..fewer]),
                    "{fewer} of {candidates}"
                );
            }
            // `noul` on the answers object agrees with the batch.
            let answers = document.as_ref().unwrap()["answers"].as_object().unwrap();
            assert_eq!(
                noul(answers, "automation"),
                Ok(given("automation").unwrap())
            );
        }
        Err(error) => check_error(&error, document.is_some()),
    }
});

fn check(evaluation: &Evaluation) {
    assert!(evaluation.is_valid(), "{evaluation:?}");
    for p in [
        evaluation.same_visitor,
        evaluation.automation,
        evaluation.suspicious,
    ] {
        assert!(p.is_finite() && (0.0..=1.0).contains(&p), "{evaluation:?}");
    }
}

fn check_error(error: &AnswerError, is_json: bool) {
    match error {
        AnswerError::NotJson(_) => assert!(!is_json, "JSON refused as not JSON"),
        AnswerError::OutOfRange { path, value } => {
            assert!(is_json);
            assert!(!(0.0..=1.0).contains(value), "{value} refused at {path}");
            assert!(
                path.starts_with("answers.") && path.ends_with(".noul"),
                "{path}"
            );
        }
        AnswerError::Missing { path } | AnswerError::NotNoul { path } => {
            assert!(is_json);
            assert!(path.starts_with("answers"), "{path}");
        }
        AnswerError::WrongType { path, .. } => {
            assert!(is_json);
            assert!(path == "(root)" || path.starts_with("answers"), "{path}");
        }
    }
    // Every error can be shown.
    assert!(!error.to_string().is_empty());
}
