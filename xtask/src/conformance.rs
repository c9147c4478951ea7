//! Checks files in the format of the Janitor project's `conformance.json` against janitor-core.
//!
//! Sections checked: `vectors` (normalized object exactly, similarity score and cap within 1e-12, feature map,
//! contradiction), `jev` (the provider state and questions built for the `reference` observation), `subjects`,
//! `protectionLabels`, `evidenceLabels` and `identityKeys` (the identity directory's key digests), all with the
//! subjects' secret and namespace. Sections this version
//! does not check are reported as notes, never silently passed.

use std::sync::Arc;

use janitor_core::directory::{KeyInput, KeyType};
use janitor_core::identification::jev::JevRequest;
use janitor_core::identification::observation::Observation;
use janitor_core::identification::payload::Signals;
use janitor_core::identification::similarity::compare;
use janitor_core::label::compact_json;
use janitor_core::{EvaluationInput, EvidenceKey, LabelKey, ProtectionKey};
use serde_json::{json, Map, Value};

/// Largest difference allowed between two floats.
pub const TOLERANCE: f64 = 1e-12;

const CHECKED: &[&str] = &[
    "reference",
    "vectors",
    "jev",
    "subjects",
    "protectionLabels",
    "evidenceLabels",
    "identityKeys",
];

/// The outcome of checking one or more documents.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    /// Checks that passed.
    pub passed: usize,
    /// One line per failed check: the case and the difference.
    pub failures: Vec<String>,
    /// Sections present but not checked.
    pub notes: Vec<String>,
}

impl Report {
    fn check(&mut self, case: String, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.passed += 1,
            Err(difference) => self.failures.push(format!("{case}: {difference}")),
        }
    }

    /// Folds another report into this one.
    pub fn merge(&mut self, other: Report) {
        self.passed += other.passed;
        self.failures.extend(other.failures);
        self.notes.extend(other.notes);
    }
}

/// Reads and checks a file; an unreadable or unparsable file is an error.
pub fn check_file(path: &std::path::Path) -> Result<Report, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let doc: Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    let mut report = check_document(&doc);
    let name = path.display().to_string();
    report
        .failures
        .iter_mut()
        .for_each(|f| *f = format!("{name}: {f}"));
    report
        .notes
        .iter_mut()
        .for_each(|n| *n = format!("{name}: {n}"));
    Ok(report)
}

/// Checks every section of a parsed document.
pub fn check_document(doc: &Value) -> Report {
    let mut report = Report::default();
    let Some(sections) = doc.as_object() else {
        report.failures.push("document: not a JSON object".into());
        return report;
    };
    for key in sections.keys().filter(|k| !CHECKED.contains(&k.as_str())) {
        report
            .notes
            .push(format!("section `{key}` is not checked by this version"));
    }
    vectors(sections, &mut report);
    jev(sections, &mut report);
    labels(sections, &mut report);
    report
}

/// The `reference` observation, which `section` needs; a failure is reported once per section needing it.
fn reference(
    sections: &Map<String, Value>,
    section: &str,
    report: &mut Report,
) -> Option<Observation> {
    match sections
        .get("reference")
        .map(|r| serde_json::from_value::<Observation>(r.clone()))
    {
        Some(Ok(reference)) => Some(reference),
        Some(Err(e)) => {
            report
                .failures
                .push(format!("reference: not a normalized observation: {e}"));
            None
        }
        None => {
            report.failures.push(format!(
                "reference: missing, the `{section}` section needs it"
            ));
            None
        }
    }
}

fn vectors(sections: &Map<String, Value>, report: &mut Report) {
    let Some(vectors) = sections.get("vectors") else {
        return;
    };
    let Some(reference) = reference(sections, "vectors", report) else {
        return;
    };
    let Some(vectors) = vectors.as_array() else {
        return report.failures.push("vectors: not an array".into());
    };
    for (i, vector) in vectors.iter().enumerate() {
        let case = |what: &str| format!("vectors[{i}].{what}");
        let current = match vector.get("raw").map(Signals::from_value_lenient) {
            Some(Ok(raw)) => Observation::normalize(&raw, None),
            Some(Err(e)) => {
                report
                    .failures
                    .push(format!("{}: unreadable: {e}", case("raw")));
                continue;
            }
            None => {
                report.failures.push(format!("{}: missing", case("raw")));
                continue;
            }
        };
        let normalized = serde_json::to_value(&current).expect("observations serialize");
        report.check(
            case("normalized"),
            same_json(vector.get("normalized"), &normalized, 0.0),
        );
        let comparison = compare(&reference, &current);
        let similarity = vector.get("similarity");
        report.check(
            case("similarity.score"),
            same_float(similarity.and_then(|s| s.get("score")), comparison.score),
        );
        let features = serde_json::to_value(&comparison.features).expect("features serialize");
        report.check(
            case("similarity.features"),
            same_json(
                similarity.and_then(|s| s.get("features")),
                &features,
                TOLERANCE,
            ),
        );
        report.check(case("cap"), same_float(vector.get("cap"), comparison.cap));
        report.check(
            case("contradiction"),
            same_json(
                vector.get("contradiction"),
                &json!(comparison.contradiction),
                0.0,
            ),
        );
    }
}

/// The reference's generator writes the provider request for one visit whose history is the reference
/// observation itself, at deterministic similarity 1; the file holds only the result, so that input is
/// rebuilt here.
fn jev(sections: &Map<String, Value>, report: &mut Report) {
    let Some(expected) = sections.get("jev") else {
        return;
    };
    let Some(reference) = reference(sections, "jev", report) else {
        return;
    };
    let history = [Arc::new(reference.clone())];
    let request = JevRequest::single(EvaluationInput {
        history: &history,
        current: &reference,
        deterministic_similarity: 1.0,
    });
    let actual = serde_json::to_value(&request).expect("requests serialize");
    if let Some(key) = expected
        .as_object()
        .and_then(|e| e.keys().find(|k| actual.get(k.as_str()).is_none()))
    {
        report.failures.push(format!(
            "jev.{key}: expected {}, got nothing",
            expected[key]
        ));
    }
    for part in ["state", "questions"] {
        report.check(
            format!("jev.{part}"),
            same_json(expected.get(part), &actual[part], 0.0),
        );
    }
}

fn labels(sections: &Map<String, Value>, report: &mut Report) {
    let subjects = sections
        .get("subjects")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let key_of = |entry: &Value| -> Result<LabelKey, String> {
        let secret = entry
            .get("secret")
            .and_then(Value::as_str)
            .ok_or("no `secret`")?;
        let namespace = entry
            .get("namespace")
            .and_then(Value::as_str)
            .ok_or("no `namespace`")?;
        LabelKey::new(secret, namespace).map_err(|e| e.to_string())
    };
    // Within one file every label shares the subjects' secret and namespace.
    let shared = subjects.first().map(key_of);
    for (i, subject) in subjects.iter().enumerate() {
        let outcome = key_of(subject).and_then(|key| {
            let id = subject.get("id").and_then(Value::as_str).ok_or("no `id`")?;
            same_label(subject.get("expected"), &key.subject(id))
        });
        report.check(format!("subjects[{i}]"), outcome);
    }
    for (section, kind) in [
        ("protectionLabels", LabelKind::Protection),
        ("evidenceLabels", LabelKind::Evidence),
        ("identityKeys", LabelKind::IdentityKey),
    ] {
        let Some(entries) = sections.get(section).and_then(Value::as_array) else {
            continue;
        };
        for (i, entry) in entries.iter().enumerate() {
            let outcome = match &shared {
                None => Err("no subject entry to take the secret and namespace from".to_owned()),
                Some(Err(e)) => Err(format!("subjects[0] key: {e}")),
                Some(Ok(key)) => match kind {
                    LabelKind::Protection => protection_label(key, entry),
                    LabelKind::Evidence => evidence_label(key, entry),
                    LabelKind::IdentityKey => identity_key_digest(key, entry),
                },
            };
            report.check(
                format!("{section}[{i}]"),
                outcome.and_then(|label| same_label(entry.get("expected"), &label)),
            );
        }
    }
}

/// The label sections after `subjects`, each checked with the subjects' key.
#[derive(Clone, Copy)]
enum LabelKind {
    Protection,
    Evidence,
    IdentityKey,
}

/// The digest a verified key `{type, issuer, value}` is stored under, normalized as the directory does.
fn identity_key_digest(key: &LabelKey, entry: &Value) -> Result<String, String> {
    let text = |field: &str| {
        entry
            .get(field)
            .and_then(Value::as_str)
            .ok_or(format!("no string `{field}`"))
    };
    let key_type: KeyType = serde_json::from_value(json!(text("type")?))
        .map_err(|_| "`type` is not email, external or public-key".to_owned())?;
    KeyInput::new(key_type, text("issuer")?, text("value")?)
        .digest(key)
        .map_err(|e| e.to_string())
}

/// Labels through the typed builders where the value is one they produce, else through the generic rule.
fn protection_label(key: &LabelKey, entry: &Value) -> Result<String, String> {
    let value = entry
        .get("value")
        .and_then(Value::as_str)
        .ok_or("no string `value`")?;
    let parsed: Option<Value> = serde_json::from_str(value).ok();
    let number = |v: &Value| v.as_u64().and_then(|n| u32::try_from(n).ok());
    let typed = match (
        value,
        parsed.as_ref().and_then(Value::as_array).map(Vec::as_slice),
    ) {
        ("global", _) => Some(ProtectionKey::Global),
        ("evaluator", _) => Some(ProtectionKey::Evaluator),
        (_, Some([kind, Value::String(id)])) if kind == "account" => {
            Some(ProtectionKey::Account(id))
        }
        (_, Some([kind, Value::String(id)])) if kind == "session" => {
            Some(ProtectionKey::Session(id))
        }
        (_, Some([kind, shards, shard])) if kind == "global-shard-v1" => number(shards)
            .zip(number(shard))
            .map(|(shards, shard)| ProtectionKey::GlobalShard { shards, shard }),
        _ => None,
    };
    let generic = compact_json(&json!(["protection-v1", value]));
    Ok(match typed.filter(|k| k.value() == generic) {
        Some(k) => key.protection(&k),
        None => key.label(&generic),
    })
}

fn evidence_label(key: &LabelKey, entry: &Value) -> Result<String, String> {
    let purpose = entry
        .get("purpose")
        .and_then(Value::as_str)
        .ok_or("no string `purpose`")?;
    let value = entry.get("value").ok_or("no `value`")?;
    let typed = match (purpose, value) {
        ("scope", Value::String(v)) => EvidenceKey::Scope(v),
        ("event", Value::String(v)) => EvidenceKey::Event(v),
        ("event-payload", Value::String(v)) => EvidenceKey::EventPayload(v),
        ("session", Value::String(v)) => EvidenceKey::Session(v),
        ("device-payload", Value::String(v)) => EvidenceKey::DevicePayload(v),
        ("verification" | "revocation", Value::Array(pair)) => match pair.as_slice() {
            [Value::String(issuer), Value::String(event_id)] if purpose == "verification" => {
                EvidenceKey::Verification { issuer, event_id }
            }
            [Value::String(issuer), Value::String(event_id)] => {
                EvidenceKey::Revocation { issuer, event_id }
            }
            _ => EvidenceKey::Other { purpose, value },
        },
        _ => EvidenceKey::Other { purpose, value },
    };
    Ok(key.evidence(&typed))
}

fn same_label(expected: Option<&Value>, actual: &str) -> Result<(), String> {
    match expected.and_then(Value::as_str) {
        Some(e) if e == actual => Ok(()),
        Some(e) => Err(format!("expected {e}, got {actual}")),
        None => Err("no string `expected`".into()),
    }
}

fn same_float(expected: Option<&Value>, actual: f64) -> Result<(), String> {
    match expected.and_then(Value::as_f64) {
        Some(e) if (e - actual).abs() <= TOLERANCE => Ok(()),
        Some(e) => Err(format!(
            "expected {e}, got {actual} (difference {:e})",
            (e - actual).abs()
        )),
        None => Err("expected value missing or not a number".into()),
    }
}

/// Structural equality: same keys (absent stays absent), same array lengths, numbers within `tolerance`.
fn same_json(expected: Option<&Value>, actual: &Value, tolerance: f64) -> Result<(), String> {
    let Some(expected) = expected else {
        return Err("expected value missing".into());
    };
    diff(expected, actual, "", tolerance).map_or(Ok(()), Err)
}

fn diff(expected: &Value, actual: &Value, at: &str, tolerance: f64) -> Option<String> {
    let here = if at.is_empty() { "(root)" } else { at };
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            if let Some(k) = e.keys().find(|k| !a.contains_key(*k)) {
                return Some(format!("{at}.{k}: expected {}, got nothing", e[k]));
            }
            if let Some(k) = a.keys().find(|k| !e.contains_key(*k)) {
                return Some(format!("{at}.{k}: expected nothing, got {}", a[k]));
            }
            e.iter()
                .find_map(|(k, v)| diff(v, &a[k], &format!("{at}.{k}"), tolerance))
        }
        (Value::Array(e), Value::Array(a)) if e.len() == a.len() => e
            .iter()
            .zip(a)
            .enumerate()
            .find_map(|(i, (e, a))| diff(e, a, &format!("{at}[{i}]"), tolerance)),
        (Value::Number(e), Value::Number(a)) => {
            let (e, a) = (e.as_f64()?, a.as_f64()?);
            ((e - a).abs() > tolerance).then(|| format!("{here}: expected {e}, got {a}"))
        }
        _ if expected == actual => None,
        _ => Some(format!("{here}: expected {expected}, got {actual}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_reports_missing_extra_and_numbers() {
        assert!(diff(&json!({"a": 2}), &json!({"a": 2.0}), "", 0.0).is_none());
        assert!(diff(&json!({"a": 1}), &json!({}), "", 0.0)
            .unwrap()
            .contains(".a: expected 1, got nothing"));
        assert!(diff(&json!({}), &json!({"b": {}}), "", 0.0)
            .unwrap()
            .contains("expected nothing"));
        assert!(diff(&json!({"s": {}}), &json!({"s": {}}), "", 0.0).is_none());
        assert!(diff(&json!([1, 2]), &json!([1]), "", 0.0).is_some());
        assert!(diff(&json!(0.1), &json!(0.1 + 1e-13), "", TOLERANCE).is_none());
        assert!(diff(&json!(0.1), &json!(0.1 + 1e-11), "", TOLERANCE).is_some());
    }

    #[test]
    fn a_wrong_expectation_fails_with_the_case() {
        let doc = json!({
            "subjects": [{"id": "x", "namespace": "fixture", "secret": "a".repeat(64), "expected": "sub_00"}],
            "protectionLabels": [{"value": "global", "expected": "sub_00"}],
            "other": {}
        });
        let report = check_document(&doc);
        assert_eq!(report.passed, 0);
        assert_eq!(report.failures.len(), 2);
        assert!(
            report.failures[0].starts_with("subjects[0]: expected sub_00, got sub_"),
            "{:?}",
            report.failures
        );
        assert_eq!(
            report.notes,
            ["section `other` is not checked by this version"]
        );
    }

    fn public_file() -> Value {
        let text = include_str!("../../janitor-core/contract/conformance.json");
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn jev_state_and_questions_are_checked() {
        let public = public_file();
        let mut doc = json!({"reference": public["reference"], "jev": public["jev"]});
        let report = check_document(&doc);
        assert_eq!((report.passed, report.failures.len()), (2, 0), "{report:?}");
        assert!(report.notes.is_empty());

        doc["jev"]["state"]["deterministicSimilarity"] = json!(0.5);
        doc["jev"]["state"]["current"]["userAgent"] = json!("Mozilla/5.0");
        doc["jev"]["questions"]["suspicious"]["instructions"] = json!("Judge it.");
        let report = check_document(&doc);
        assert_eq!(report.passed, 0);
        assert_eq!(report.failures.len(), 2, "{:?}", report.failures);
        assert!(
            report.failures[0].starts_with("jev.state: .current.userAgent: expected"),
            "{:?}",
            report.failures
        );
        assert!(report.failures[1].starts_with("jev.questions: .suspicious.instructions: expected"));

        doc["jev"]["extra"] = json!(1);
        assert!(check_document(&doc)
            .failures
            .iter()
            .any(|f| f.starts_with("jev.extra: expected 1, got nothing")));
    }

    #[test]
    fn jev_without_reference_fails_loudly() {
        let report = check_document(&json!({"jev": public_file()["jev"]}));
        assert_eq!(report.passed, 0);
        assert_eq!(
            report.failures,
            ["reference: missing, the `jev` section needs it"]
        );
    }

    #[test]
    fn labels_without_subjects_fail_loudly() {
        let report = check_document(
            &json!({"protectionLabels": [{"value": "global", "expected": "sub_00"}]}),
        );
        assert!(report.failures[0].contains("no subject entry"));
    }
}
