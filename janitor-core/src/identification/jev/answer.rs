//! Strict reading of a provider's answer: `{answers: {name: {type: "noul", noul: x}}}`.
//!
//! Every `x` must be a JSON number, finite and within [0, 1]. Nothing is coerced: a numeric string, a
//! boolean, a missing answer or another question type is an error naming where it was found. Other keys
//! (the provider's `model`, `usage`, answers to questions not asked) are ignored.

use serde_json::{Map, Value};

use super::questions::{candidate_key, NOUL};
use crate::identification::evaluator::Evaluation;

/// Why an answer was not read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerError {
    /// The body is not JSON.
    #[error("the answer is not JSON: {0}")]
    NotJson(String),
    /// A required key is absent.
    #[error("`{path}` is missing")]
    Missing {
        /// Where, e.g. `answers.sameVisitor.noul`.
        path: String,
    },
    /// A value has the wrong JSON type.
    #[error("`{path}` must be {expected}, got {found}")]
    WrongType {
        /// Where.
        path: String,
        /// The JSON type required.
        expected: &'static str,
        /// The JSON type found.
        found: &'static str,
    },
    /// An answer is of another question type than `"noul"`.
    #[error("`{path}` must be \"noul\"")]
    NotNoul {
        /// Where.
        path: String,
    },
    /// A probability outside [0, 1].
    #[error("`{path}` must be a finite number within [0, 1], got {value}")]
    OutOfRange {
        /// Where.
        path: String,
        /// What was given.
        value: f64,
    },
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn object<'v>(value: &'v Value, path: &str) -> Result<&'v Map<String, Value>, AnswerError> {
    value.as_object().ok_or_else(|| AnswerError::WrongType {
        path: path.to_owned(),
        expected: "an object",
        found: type_name(value),
    })
}

fn field<'v>(map: &'v Map<String, Value>, key: &str, at: &str) -> Result<&'v Value, AnswerError> {
    let path = if at.is_empty() {
        key.to_owned()
    } else {
        format!("{at}.{key}")
    };
    map.get(key).ok_or(AnswerError::Missing { path })
}

/// The `answers` object of a body.
fn answers(document: &Value) -> Result<&Map<String, Value>, AnswerError> {
    let top = object(document, "(root)")?;
    object(field(top, "answers", "")?, "answers")
}

fn parse(body: &[u8]) -> Result<Value, AnswerError> {
    serde_json::from_slice(body).map_err(|e| AnswerError::NotJson(e.to_string()))
}

/// The probability answered to question `name`.
pub fn noul(answers: &Map<String, Value>, name: &str) -> Result<f64, AnswerError> {
    let at = format!("answers.{name}");
    let answer = object(field(answers, name, "answers")?, &at)?;
    match field(answer, "type", &at)? {
        Value::String(kind) if kind == NOUL => {}
        Value::String(_) => {
            return Err(AnswerError::NotNoul {
                path: format!("{at}.type"),
            })
        }
        other => {
            return Err(AnswerError::WrongType {
                path: format!("{at}.type"),
                expected: "a string",
                found: type_name(other),
            })
        }
    }
    let path = format!("{at}.noul");
    let value = field(answer, "noul", &at)?;
    let number = match value {
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
    .ok_or_else(|| AnswerError::WrongType {
        path: path.clone(),
        expected: "a number",
        found: type_name(value),
    })?;
    if number.is_finite() && (0.0..=1.0).contains(&number) {
        Ok(number)
    } else {
        Err(AnswerError::OutOfRange {
            path,
            value: number,
        })
    }
}

/// Reads the answer to a single evaluation: `sameVisitor`, `automation` and `suspicious`.
pub fn read_evaluation(body: &[u8]) -> Result<Evaluation, AnswerError> {
    let document = parse(body)?;
    let answers = answers(&document)?;
    Ok(Evaluation {
        same_visitor: noul(answers, "sameVisitor")?,
        automation: noul(answers, "automation")?,
        suspicious: noul(answers, "suspicious")?,
    })
}

/// Reads the answer to a batch of `candidates`: `candidate0`… each with the shared `automation` and
/// `suspicious`, in candidate order.
pub fn read_batch(body: &[u8], candidates: usize) -> Result<Vec<Evaluation>, AnswerError> {
    let document = parse(body)?;
    let answers = answers(&document)?;
    let automation = noul(answers, "automation")?;
    let suspicious = noul(answers, "suspicious")?;
    (0..candidates)
        .map(|i| {
            Ok(Evaluation {
                same_visitor: noul(answers, &candidate_key(i))?,
                automation,
                suspicious,
            })
        })
        .collect()
}
