//! A form field for the browser's payload that never fails the application's own form.

use janitor_core::VisitorPayload;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The `visitor` field of an application's form, read tolerantly: a payload that does not validate (a newer
/// browser client's, a tampered one) leaves the field [`Invalid`](VisitorField::Invalid) instead of failing
/// the whole form, so a sign-in still parses and goes on without an identity. The payload itself is validated
/// as strictly as on the endpoint.
///
/// Declare it with `#[serde(default)]`, so that a form without the field (scripts off, curl) reads as
/// [`Missing`](VisitorField::Missing):
///
/// ```
/// use janitor_axum::visitor::VisitorField;
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// #[serde(deny_unknown_fields)]
/// struct LoginForm {
///     username: String,
///     password: String,
///     #[serde(default)]
///     visitor: VisitorField,
/// }
///
/// let form: LoginForm =
///     serde_json::from_str(r#"{"username":"ada","password":"pw","visitor":{"signals":7}}"#).unwrap();
/// assert!(matches!(form.visitor, VisitorField::Invalid));
/// assert!(form.visitor.payload().is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub enum VisitorField {
    /// The form had no payload, or `null`.
    #[default]
    Missing,
    /// A payload that validated (boxed: a payload is large beside the other two).
    Valid(Box<VisitorPayload>),
    /// A payload that did not validate (why is left out: it would echo the client's input).
    Invalid,
}

impl VisitorField {
    /// The payload, when the form carried a valid one.
    pub fn payload(&self) -> Option<&VisitorPayload> {
        match self {
            VisitorField::Valid(payload) => Some(payload.as_ref()),
            _ => None,
        }
    }

    /// Reads the field from an already parsed JSON value.
    pub fn from_value(value: &Value) -> VisitorField {
        match value {
            Value::Null => VisitorField::Missing,
            value => VisitorPayload::from_value(value)
                .map_or(VisitorField::Invalid, |p| VisitorField::Valid(Box::new(p))),
        }
    }
}

impl From<VisitorPayload> for VisitorField {
    fn from(payload: VisitorPayload) -> Self {
        VisitorField::Valid(Box::new(payload))
    }
}

/// Never fails for any JSON value: what does not validate is [`VisitorField::Invalid`].
impl<'de> Deserialize<'de> for VisitorField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(VisitorField::from_value(&value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Form {
        #[allow(dead_code)]
        username: String,
        #[serde(default)]
        visitor: VisitorField,
    }

    fn read(body: Value) -> VisitorField {
        serde_json::from_value::<Form>(body)
            .expect("the form parses")
            .visitor
    }

    #[test]
    fn the_form_parses_whatever_the_payload() {
        let valid = json!({"signals": {"timezone": "Europe/Paris"}});
        assert!(read(json!({"username": "ada", "visitor": valid}))
            .payload()
            .is_some());
        assert!(matches!(
            read(json!({"username": "ada"})),
            VisitorField::Missing
        ));
        assert!(matches!(
            read(json!({"username": "ada", "visitor": null})),
            VisitorField::Missing
        ));
        for invalid in [
            json!("text"),
            json!([1, 2]),
            json!({"signals": {"screen": {"width": -1}}}),
            json!({"signals": {}, "newerClientField": true}),
        ] {
            assert!(
                matches!(
                    read(json!({"username": "ada", "visitor": invalid})),
                    VisitorField::Invalid
                ),
                "{invalid}"
            );
        }
    }
}
