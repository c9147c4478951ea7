//! The client's automation evidence: what the browser client's `janitor-automation.js` part reports about the
//! page it runs in, as booleans and small counts.
//!
//! It never travels in the payload, whose schema every Janitor server enforces: the client sends it, only when
//! the page enables it, in its own request header ([`AUTOMATION_EVIDENCE_HEADER`]), base64url JSON such as
//!
//! ```json
//! {"webdriver": false, "driverGlobals": 0, "headless": false, "workerMismatch": false,
//!  "emptyVersionList": false, "noPointer": false, "pluginsEmpty": false, "chromeMissing": false,
//!  "noFrame": false, "windowOverScreen": false, "permissionsMismatch": false, "untrustedInput": 0}
//! ```
//!
//! Every field is optional. Nothing in it tells one person from another: a driver's globals are counted, never
//! named, and no value of the page is sent.

use serde::{Deserialize, Serialize};

/// The request header that carries the evidence: its JSON, base64url-encoded without padding.
pub const AUTOMATION_EVIDENCE_HEADER: &str = "janitor-automation-evidence";
/// Longest header value read, in bytes: twice the longest the client writes.
pub const MAX_EVIDENCE_HEADER: usize = 512;
/// Most driver globals counted.
pub const MAX_DRIVER_GLOBALS: u16 = 32;
/// Most untrusted input events counted.
pub const MAX_UNTRUSTED_INPUT: u16 = 1000;

/// The automation evidence of one page, validated: unknown keys, other types and counts past their bounds are
/// refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AutomationEvidence {
    /// `navigator.webdriver` is true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webdriver: Option<bool>,
    /// How many driver globals are on `window` and `document` (0–32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_globals: Option<u16>,
    /// The user agent or the `userAgentData` brands say Headless.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headless: Option<bool>,
    /// A dedicated worker's user agent, platform, languages or core count differ from the page's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_mismatch: Option<bool>,
    /// `userAgentData.getHighEntropyValues` gives no `fullVersionList`: the user agent was overridden
    /// (`--user-agent`, the DevTools protocol) without its client-hint metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub empty_version_list: Option<bool>,
    /// `(any-pointer: none)` matches: no pointing device at all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_pointer: Option<bool>,
    /// `navigator.plugins` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins_empty: Option<bool>,
    /// A Chrome user agent without `window.chrome`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chrome_missing: Option<bool>,
    /// The outer window is exactly the viewport.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_frame: Option<bool>,
    /// The outer window is larger than the screen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_over_screen: Option<bool>,
    /// Notifications denied while never asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions_mismatch: Option<bool>,
    /// How many input events a script dispatched (0–1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted_input: Option<u16>,
}

/// Why a header's evidence was not read; the log says which, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvidenceError {
    /// Not JSON of the evidence's shape (an unknown key, a wrong type, a negative or fractional count).
    #[error("automation evidence is not valid: {0}")]
    Invalid(String),
    /// A count past its bound.
    #[error("automation evidence field {field} is over {max}")]
    OutOfRange {
        /// The field's JSON name.
        field: &'static str,
        /// Its largest value.
        max: u16,
    },
}

impl AutomationEvidence {
    /// Parses and validates the evidence's JSON text.
    pub fn from_slice(json: &[u8]) -> Result<AutomationEvidence, EvidenceError> {
        // serde's message can quote the value sent; the category and the column cannot.
        let invalid = |e: serde_json::Error| {
            EvidenceError::Invalid(format!("{:?} at column {}", e.classify(), e.column()))
        };
        let value: serde_json::Value = serde_json::from_slice(json).map_err(invalid)?;
        // A struct would also read from an array of its fields in order: only the object form is the wire's.
        if !value.is_object() {
            return Err(EvidenceError::Invalid("not an object".to_owned()));
        }
        let evidence: AutomationEvidence = serde_json::from_value(value).map_err(invalid)?;
        let counts = [
            ("driverGlobals", evidence.driver_globals, MAX_DRIVER_GLOBALS),
            (
                "untrustedInput",
                evidence.untrusted_input,
                MAX_UNTRUSTED_INPUT,
            ),
        ];
        for (field, value, max) in counts {
            if value.is_some_and(|v| v > max) {
                return Err(EvidenceError::OutOfRange { field, max });
            }
        }
        Ok(evidence)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_is_read_and_an_empty_object_is_no_evidence() {
        let all = br#"{"webdriver":true,"driverGlobals":2,"headless":false,"workerMismatch":true,
            "emptyVersionList":true,"noPointer":false,"pluginsEmpty":false,"chromeMissing":true,
            "noFrame":true,"windowOverScreen":false,"permissionsMismatch":false,"untrustedInput":3}"#;
        let evidence = AutomationEvidence::from_slice(all).unwrap();
        assert_eq!(evidence.driver_globals, Some(2));
        assert_eq!(evidence.untrusted_input, Some(3));
        assert_eq!(evidence.no_frame, Some(true));
        assert_eq!(
            AutomationEvidence::from_slice(b"{}").unwrap(),
            AutomationEvidence::default()
        );
    }

    #[test]
    fn counts_are_read_up_to_their_bounds_and_refused_one_past() {
        for (field, max) in [
            ("driverGlobals", MAX_DRIVER_GLOBALS),
            ("untrustedInput", MAX_UNTRUSTED_INPUT),
        ] {
            let at = format!(r#"{{"{field}":{max}}}"#);
            assert!(
                AutomationEvidence::from_slice(at.as_bytes()).is_ok(),
                "{at}"
            );
            let over = format!(r#"{{"{field}":{}}}"#, max + 1);
            assert_eq!(
                AutomationEvidence::from_slice(over.as_bytes()),
                Err(EvidenceError::OutOfRange { field, max })
            );
            let negative = format!(r#"{{"{field}":-1}}"#);
            assert!(AutomationEvidence::from_slice(negative.as_bytes()).is_err());
            let fraction = format!(r#"{{"{field}":1.5}}"#);
            assert!(AutomationEvidence::from_slice(fraction.as_bytes()).is_err());
        }
    }

    #[test]
    fn unknown_keys_other_types_and_non_objects_are_refused() {
        for bad in [
            &br#"{"userAgent":"x"}"#[..],
            br#"{"webdriver":"true"}"#,
            br#"{"webdriver":1}"#,
            br#"{"driverGlobals":true}"#,
            br#"[]"#,
            b"not json",
        ] {
            assert!(
                matches!(
                    AutomationEvidence::from_slice(bad),
                    Err(EvidenceError::Invalid(_))
                ),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
