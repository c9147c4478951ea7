use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::identification::evaluator::{Evaluation, EvaluationInput};
use crate::identification::observation::{Automation, Observation, Screen, Size};
use crate::identification::payload::Behavior;

fn conformance() -> Value {
    serde_json::from_str(include_str!("../../../contract/conformance.json")).unwrap()
}

fn reference() -> Observation {
    serde_json::from_value(conformance()["reference"].clone()).unwrap()
}

fn input<'a>(history: &'a [Arc<Observation>], current: &'a Observation) -> EvaluationInput<'a> {
    EvaluationInput {
        history,
        current,
        deterministic_similarity: 1.0,
    }
}

/// The conformance file's `jev.state`, minified with its keys in the order JavaScript wrote them.
const CONFORMANCE_STATE: &str = concat!(
    r#"{"history":[{"platform":"macos","browser":"chrome","timezone":"Asia/Jerusalem","languages":["en-us","he"],"#,
    r#""screen":"900x1440","colorDepth":24,"pixelRatio":2,"viewport":{"width":1280,"height":720},"#,
    r#""hardwareConcurrency":8,"deviceMemory":8,"maxTouchPoints":0,"webdriver":false,"webglVendor":"webkit","#,
    r#""webglRenderer":"webkit webgl"}],"current":{"platform":"macos","browser":"chrome","timezone":"Asia/Jerusalem","#,
    r#""languages":["en-us","he"],"screen":"900x1440","colorDepth":24,"pixelRatio":2,"#,
    r#""viewport":{"width":1280,"height":720},"hardwareConcurrency":8,"deviceMemory":8,"maxTouchPoints":0,"#,
    r#""webdriver":false,"webglVendor":"webkit","webglRenderer":"webkit webgl"},"deterministicSimilarity":1,"#,
    r#""evidence":[{"samePlatform":true,"sameBrowser":true,"sameTimezone":true,"sameLanguages":true,"#,
    r#""screenSimilarity":1,"viewportSimilarity":1,"sameHardwareConcurrency":true,"sameDeviceMemory":true,"#,
    r#""sameTouchCapabilities":true,"sameWebglVendor":true,"sameWebglRenderer":true}]}"#
);

#[test]
fn conformance_state_is_reproduced_byte_for_byte() {
    let reference = reference();
    assert!(
        reference.user_agent.is_some(),
        "the fixture carries a user agent"
    );
    let history = [Arc::new(reference.clone())];
    let request = JevRequest::single(input(&history, &reference));
    let expected = conformance()["jev"].clone();
    // Value equality also tells `1` from `1.0`.
    assert_eq!(serde_json::to_value(&request).unwrap(), expected);
    assert_eq!(
        serde_json::to_value(&request.state).unwrap(),
        expected["state"]
    );
    assert_eq!(
        serde_json::to_string(&request.state).unwrap(),
        CONFORMANCE_STATE
    );
    let body = String::from_utf8(request.to_body(DEFAULT_MODEL).unwrap()).unwrap();
    assert!(body.starts_with(&format!(
        r#"{{"model":"jev-latest","state":{CONFORMANCE_STATE},"questions":{{"sameVisitor":{{"type":"noul""#
    )));
    assert!(!body.contains("userAgent") && !body.contains("Mozilla"));
}

#[test]
fn compact_observation_keeps_js_shapes() {
    let o = Observation {
        user_agent: Some("Mozilla/5.0 secret".into()),
        screen: Some(Screen {
            width: Some(390.0),
            height: None,
            color_depth: None,
            pixel_ratio: Some(1.5),
        }),
        viewport: Some(Size::default()),
        automation: Some(Automation {
            webdriver: Some(true),
        }),
        behavior: Some(Behavior {
            page_age_ms: Some(1200),
            mouse_move_count: Some(0),
            ..Behavior::default()
        }),
        ..Observation::default()
    };
    let text = serde_json::to_string(&CompactObservation(&o)).unwrap();
    // A screen without both sides has no "WxH"; an emptied viewport stays `{}`; behaviour comes last.
    assert_eq!(
        text,
        r#"{"pixelRatio":1.5,"viewport":{},"webdriver":true,"behavior":{"pageAgeMs":1200,"mouseMoveCount":0}}"#
    );
    let screen = Observation {
        screen: Some(Screen {
            width: Some(375.5),
            height: Some(812.0),
            ..Screen::default()
        }),
        ..Observation::default()
    };
    assert_eq!(
        serde_json::to_string(&CompactObservation(&screen)).unwrap(),
        r#"{"screen":"375.5x812"}"#
    );
    assert_eq!(
        serde_json::to_string(&CompactObservation(&Observation::default())).unwrap(),
        "{}"
    );
}

#[test]
fn evidence_flags_webdriver_and_history_stops_at_five() {
    let mut bot = reference();
    bot.automation = Some(Automation {
        webdriver: Some(true),
    });
    let history: Vec<_> = (0..7).map(|_| Arc::new(reference())).collect();
    let request = JevRequest::single(EvaluationInput {
        history: &history,
        current: &bot,
        deterministic_similarity: 0.9500000000000001,
    });
    let state = serde_json::to_value(&request.state).unwrap();
    assert_eq!(state["history"].as_array().unwrap().len(), 5);
    assert_eq!(state["evidence"].as_array().unwrap().len(), 5);
    assert_eq!(state["evidence"][0]["webdriverDetected"], json!(true));
    assert_eq!(state["current"]["webdriver"], json!(true));
    assert_eq!(state["deterministicSimilarity"], json!(0.9500000000000001));
    assert_eq!(request.expected_answers(), 1);
}

/// A request whose body is exactly `size` bytes, padding the current timezone.
fn padded(size: usize, current: &mut Observation) -> usize {
    current.timezone = Some(String::new());
    let base = JevRequest::single(input(&[], current))
        .to_body(DEFAULT_MODEL)
        .unwrap()
        .len();
    current.timezone = Some("x".repeat(size - base));
    size
}

#[test]
fn request_body_limit_bounds() {
    let mut current = Observation::default();
    padded(MAX_REQUEST_BYTES, &mut current);
    let body = JevRequest::single(input(&[], &current))
        .to_body(DEFAULT_MODEL)
        .unwrap();
    assert_eq!(body.len(), MAX_REQUEST_BYTES);
    padded(MAX_REQUEST_BYTES + 1, &mut current);
    assert_eq!(
        JevRequest::single(input(&[], &current)).to_body(DEFAULT_MODEL),
        Err(RequestError::TooLarge {
            bytes: MAX_REQUEST_BYTES + 1
        })
    );
}

#[test]
fn batch_requests_ask_once_per_candidate() {
    let current = reference();
    let long: Vec<_> = (0..6).map(|_| Arc::new(reference())).collect();
    let short = [Arc::new(reference())];
    let candidates = [
        EvaluationInput {
            history: &long,
            current: &current,
            deterministic_similarity: 0.8,
        },
        EvaluationInput {
            history: &short,
            current: &current,
            deterministic_similarity: 1.0,
        },
    ];
    let request = JevRequest::batch(&candidates).unwrap();
    assert_eq!(request.expected_answers(), 2);
    let value = serde_json::to_value(&request).unwrap();
    let state = &value["state"];
    assert_eq!(
        state.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["candidates", "current"]
    );
    assert_eq!(
        state["candidates"][0]["history"].as_array().unwrap().len(),
        5
    );
    assert_eq!(
        state["candidates"][0]["deterministicSimilarity"],
        json!(0.8)
    );
    assert_eq!(state["candidates"][1]["deterministicSimilarity"], json!(1));
    assert!(state["candidates"][1].get("evidence").is_none());
    assert_eq!(
        serde_json::to_value(CompactObservation(&current)).unwrap(),
        state["current"]
    );
    let asked = value["questions"].as_object().unwrap();
    assert_eq!(asked.len(), 4);
    assert!(asked["candidate1"]["instructions"]
        .as_str()
        .unwrap()
        .contains("candidates[1]"));
    assert_eq!(asked["automation"], json!(questions().automation));
}

#[test]
fn batch_size_bounds_and_shared_current() {
    let current = reference();
    let one = EvaluationInput {
        history: &[],
        current: &current,
        deterministic_similarity: 0.7,
    };
    assert_eq!(
        JevRequest::batch(&[]).unwrap_err(),
        RequestError::CandidateCount { count: 0 }
    );
    assert!(JevRequest::batch(&[one]).is_ok());
    assert!(JevRequest::batch(&[one; MAX_BATCH_CANDIDATES]).is_ok());
    assert_eq!(
        JevRequest::batch(&[one; MAX_BATCH_CANDIDATES + 1]).unwrap_err(),
        RequestError::CandidateCount {
            count: MAX_BATCH_CANDIDATES + 1
        }
    );
    // An equal observation elsewhere in memory is the same current; a different one is not.
    let copy = reference();
    let other = Observation::default();
    assert!(JevRequest::batch(&[
        one,
        EvaluationInput {
            current: &copy,
            ..one
        }
    ])
    .is_ok());
    assert_eq!(
        JevRequest::batch(&[
            one,
            EvaluationInput {
                current: &other,
                ..one
            }
        ])
        .unwrap_err(),
        RequestError::MixedCurrent
    );
}

fn answer(same: Value, automation: Value, suspicious: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "model": "jev-1.13.0",
        "answers": {
            "sameVisitor": {"type": "noul", "noul": same},
            "automation": {"type": "noul", "noul": automation},
            "suspicious": {"type": "noul", "noul": suspicious},
        },
        "usage": {"input_tokens": 500, "output_tokens": 40}
    }))
    .unwrap()
}

#[test]
fn answers_are_read_exactly() {
    assert_eq!(
        read_evaluation(&answer(json!(0.98), json!(0.12), json!(0.08))),
        Ok(Evaluation {
            same_visitor: 0.98,
            automation: 0.12,
            suspicious: 0.08
        })
    );
    // Both bounds are in range, integers included.
    assert_eq!(
        read_evaluation(&answer(json!(0), json!(1), json!(1.0))),
        Ok(Evaluation {
            same_visitor: 0.0,
            automation: 1.0,
            suspicious: 1.0
        })
    );
}

#[test]
fn out_of_range_and_coerced_values_are_refused() {
    let path = "answers.sameVisitor.noul".to_owned();
    let out = |value: f64| AnswerError::OutOfRange {
        path: path.clone(),
        value,
    };
    let above = 1.0 + f64::EPSILON;
    for (given, error) in [
        (json!(1.5), out(1.5)),
        (json!(above), out(above)),
        (json!(-0.1), out(-0.1)),
        (json!(-1), out(-1.0)),
        (json!(2), out(2.0)),
    ] {
        assert_eq!(
            read_evaluation(&answer(given.clone(), json!(0), json!(0))),
            Err(error),
            "{given}"
        );
    }
    for (given, found) in [
        (json!("NaN"), "a string"),
        (json!("0.5"), "a string"),
        (json!(true), "a boolean"),
        (json!(null), "null"),
        (json!([0.5]), "an array"),
    ] {
        assert_eq!(
            read_evaluation(&answer(given.clone(), json!(0), json!(0))),
            Err(AnswerError::WrongType {
                path: path.clone(),
                expected: "a number",
                found
            }),
            "{given}"
        );
    }
    // JSON has no NaN or infinity: such bodies are not JSON at all.
    for text in [
        r#"{"answers":{"sameVisitor":{"type":"noul","noul":NaN}}}"#,
        r#"{"answers":{"sameVisitor":{"type":"noul","noul":1e999}}}"#,
        "not json",
        "",
    ] {
        assert!(
            matches!(
                read_evaluation(text.as_bytes()),
                Err(AnswerError::NotJson(_))
            ),
            "{text}"
        );
    }
}

#[test]
fn malformed_envelopes_name_what_is_wrong() {
    let read = |v: Value| read_evaluation(&serde_json::to_vec(&v).unwrap()).unwrap_err();
    assert_eq!(
        read(json!([])),
        AnswerError::WrongType {
            path: "(root)".into(),
            expected: "an object",
            found: "an array"
        }
    );
    assert_eq!(
        read(json!({"model": "x"})),
        AnswerError::Missing {
            path: "answers".into()
        }
    );
    assert_eq!(
        read(json!({"answers": "yes"})),
        AnswerError::WrongType {
            path: "answers".into(),
            expected: "an object",
            found: "a string"
        }
    );
    let good = json!({"type": "noul", "noul": 0.5});
    assert_eq!(
        read(json!({"answers": {"sameVisitor": good, "automation": good}})),
        AnswerError::Missing {
            path: "answers.suspicious".into()
        }
    );
    assert_eq!(
        read(json!({"answers": {"sameVisitor": {"type": "noul"}}})),
        AnswerError::Missing {
            path: "answers.sameVisitor.noul".into()
        }
    );
    assert_eq!(
        read(json!({"answers": {"sameVisitor": {"noul": 0.5}}})),
        AnswerError::Missing {
            path: "answers.sameVisitor.type".into()
        }
    );
    assert_eq!(
        read(json!({"answers": {"sameVisitor": {"type": "score", "noul": 0.5}}})),
        AnswerError::NotNoul {
            path: "answers.sameVisitor.type".into()
        }
    );
    assert_eq!(
        read(json!({"answers": {"sameVisitor": {"type": 1, "noul": 0.5}}})),
        AnswerError::WrongType {
            path: "answers.sameVisitor.type".into(),
            expected: "a string",
            found: "a number"
        }
    );
    assert_eq!(
        read(json!({"answers": {"sameVisitor": 0.5}})),
        AnswerError::WrongType {
            path: "answers.sameVisitor".into(),
            expected: "an object",
            found: "a number"
        }
    );
    assert!(read(json!({"answers": {"sameVisitor": 0.5}}))
        .to_string()
        .contains("answers.sameVisitor"));
}

#[test]
fn batch_answers_follow_candidate_order() {
    let q = |x: f64| json!({"type": "noul", "noul": x});
    let body = serde_json::to_vec(&json!({"answers": {
        "candidate1": q(0.25), "candidate0": q(0.75), "automation": q(0.5), "suspicious": q(0.125)
    }}))
    .unwrap();
    let read = read_batch(&body, 2).unwrap();
    assert_eq!(
        read,
        [
            Evaluation {
                same_visitor: 0.75,
                automation: 0.5,
                suspicious: 0.125
            },
            Evaluation {
                same_visitor: 0.25,
                automation: 0.5,
                suspicious: 0.125
            }
        ]
    );
    assert_eq!(
        read_batch(&body, 3),
        Err(AnswerError::Missing {
            path: "answers.candidate2".into()
        })
    );
    let current = reference();
    let one = EvaluationInput {
        history: &[],
        current: &current,
        deterministic_similarity: 0.7,
    };
    assert_eq!(
        JevRequest::batch(&[one, one])
            .unwrap()
            .read_answer(&body)
            .unwrap(),
        read
    );
    // A single request needs sameVisitor, which a batch answer does not hold.
    assert!(JevRequest::single(one).read_answer(&body).is_err());
}
