//! The three yes/no questions asked of the provider, kept as data in `contract/jev-questions.json`.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};

/// The question texts, exactly as published in `contract/jev-questions.json` (the Janitor 0.7 wording, the
/// same as the `jev.questions` section of the conformance file).
pub const QUESTIONS_JSON: &str = include_str!("../../../contract/jev-questions.json");

/// The only question type this protocol uses: a yes/no judgment answered as a probability.
pub const NOUL: &str = "noul";

/// One typed question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The question type; always [`NOUL`].
    #[serde(rename = "type")]
    pub kind: String,
    /// What to judge, and what to ignore.
    pub instructions: String,
    /// What a yes and a no mean.
    pub criteria: Criteria,
}

/// The meaning of each answer of a yes/no question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criteria {
    /// What a yes means.
    #[serde(rename = "true")]
    pub yes: String,
    /// What a no means.
    #[serde(rename = "false")]
    pub no: String,
}

/// The three questions of one identification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JevQuestions {
    /// Does the current observation fit the history?
    pub same_visitor: Question,
    /// Is the session browser automation?
    pub automation: Question,
    /// Are the current signals manipulated or inconsistent?
    pub suspicious: Question,
}

/// The embedded questions, read once.
pub fn questions() -> &'static JevQuestions {
    static QUESTIONS: OnceLock<JevQuestions> = OnceLock::new();
    // The text is compiled in and checked by this module's tests, so a failure here is a broken build, not
    // bad input.
    QUESTIONS.get_or_init(|| {
        serde_json::from_str(QUESTIONS_JSON).expect("contract/jev-questions.json is well formed")
    })
}

/// The `sameVisitor` question for candidate `index` of a batch: the same question, told which candidate to
/// judge.
pub fn candidate_question(index: usize) -> Question {
    let same = &questions().same_visitor;
    Question {
        instructions: format!(
            "{} Answer for candidates[{index}] only: compare candidates[{index}].history with current, and read \
             candidates[{index}].deterministicSimilarity as supporting evidence.",
            same.instructions
        ),
        ..same.clone()
    }
}

/// The name under which candidate `index`'s answer comes back.
pub fn candidate_key(index: usize) -> String {
    format!("candidate{index}")
}

/// An ordered set of named questions, serialized as one JSON object in that order.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionSet(pub(crate) Vec<(Cow<'static, str>, Cow<'static, Question>)>);

impl QuestionSet {
    /// The questions of a single evaluation: `sameVisitor`, `automation`, `suspicious`.
    pub fn single() -> Self {
        let q = questions();
        QuestionSet(vec![
            (Cow::Borrowed("sameVisitor"), Cow::Borrowed(&q.same_visitor)),
            (Cow::Borrowed("automation"), Cow::Borrowed(&q.automation)),
            (Cow::Borrowed("suspicious"), Cow::Borrowed(&q.suspicious)),
        ])
    }

    /// The questions of a batch: `candidate0`…`candidate{n-1}`, then `automation` and `suspicious`, asked
    /// once for the shared current observation.
    pub fn batch(candidates: usize) -> Self {
        let q = questions();
        let mut set: Vec<_> = (0..candidates)
            .map(|i| {
                (
                    Cow::Owned(candidate_key(i)),
                    Cow::Owned(candidate_question(i)),
                )
            })
            .collect();
        set.push((Cow::Borrowed("automation"), Cow::Borrowed(&q.automation)));
        set.push((Cow::Borrowed("suspicious"), Cow::Borrowed(&q.suspicious)));
        QuestionSet(set)
    }

    /// The question names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(name, _)| name.as_ref())
    }
}

impl Serialize for QuestionSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, question) in &self.0 {
            map.serialize_entry(name.as_ref(), question.as_ref())?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_questions_are_the_conformance_questions() {
        let conformance: serde_json::Value =
            serde_json::from_str(include_str!("../../../contract/conformance.json")).unwrap();
        let single = serde_json::to_value(QuestionSet::single()).unwrap();
        assert_eq!(single, conformance["jev"]["questions"]);
        assert_eq!(
            serde_json::to_value(questions()).unwrap(),
            conformance["jev"]["questions"]
        );
        for q in [
            &questions().same_visitor,
            &questions().automation,
            &questions().suspicious,
        ] {
            assert_eq!(q.kind, NOUL);
        }
    }

    #[test]
    fn questions_keep_their_order() {
        let text = serde_json::to_string(&QuestionSet::single()).unwrap();
        let at = |key: &str| text.find(&format!("\"{key}\":{{\"type\"")).unwrap();
        assert!(at("sameVisitor") < at("automation") && at("automation") < at("suspicious"));
        let names: Vec<_> = QuestionSet::batch(2).names().map(str::to_owned).collect();
        assert_eq!(
            names,
            ["candidate0", "candidate1", "automation", "suspicious"]
        );
    }

    #[test]
    fn candidate_questions_name_their_candidate() {
        let q = candidate_question(7);
        assert!(q
            .instructions
            .starts_with(&questions().same_visitor.instructions));
        assert!(q.instructions.contains("candidates[7].history"));
        assert!(!q.instructions.contains("candidates[6]"));
        assert_eq!(q.criteria, questions().same_visitor.criteria);
        assert_eq!(q.kind, NOUL);
    }
}
