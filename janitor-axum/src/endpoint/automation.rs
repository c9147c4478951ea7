//! The automation verdict of a request: its headers, its payload and the client's
//! `janitor-automation-evidence` header, read only when the application turns the verdict on.

use base64::Engine as _;
use http::header::{ACCEPT_ENCODING, ACCEPT_LANGUAGE, USER_AGENT};
use http::request::Parts;
use http::HeaderMap;
use janitor_core::automation::{
    assess, Automation, AutomationEvidence, AutomationInput, RequestFacts,
    AUTOMATION_EVIDENCE_HEADER, MAX_EVIDENCE_HEADER,
};
use janitor_core::VisitorPayload;

use super::extended::BASE64URL;

/// The verdict on a request of `parts` with `payload`; `form` when it submits a form of the application.
pub(crate) fn verdict(parts: &Parts, payload: Option<&VisitorPayload>, form: bool) -> Automation {
    let headers = &parts.headers;
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let evidence = evidence(headers);
    let input = AutomationInput {
        request: RequestFacts {
            user_agent: text(USER_AGENT.as_str()),
            client_hints: text("sec-ch-ua"),
            client_hints_platform: text("sec-ch-ua-platform"),
            client_hints_mobile: text("sec-ch-ua-mobile"),
            accept_language: headers.contains_key(ACCEPT_LANGUAGE),
            accept_encoding: headers.contains_key(ACCEPT_ENCODING),
            fetch_metadata: headers.contains_key("sec-fetch-mode"),
        },
        payload,
        evidence: evidence.as_ref(),
        form,
    };
    let automation = assess(&input);
    crate::telemetry::automation_assessed(&automation);
    automation
}

/// The client's evidence, or none: a missing, repeated, oversized or invalid header is no evidence (logged at
/// debug), never a refusal; the checks of the headers and the payload still run.
fn evidence(headers: &HeaderMap) -> Option<AutomationEvidence> {
    let mut values = headers.get_all(AUTOMATION_EVIDENCE_HEADER).iter();
    let value = values.next()?;
    if values.next().is_some() || value.len() > MAX_EVIDENCE_HEADER {
        tracing::debug!(
            "ignored automation evidence: repeated or over {MAX_EVIDENCE_HEADER} bytes"
        );
        return None;
    }
    let Ok(json) = BASE64URL.decode(value.as_bytes()) else {
        tracing::debug!("ignored automation evidence: not base64url");
        return None;
    };
    AutomationEvidence::from_slice(&json)
        .inspect_err(|error| tracing::debug!(%error, "ignored automation evidence"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;
    use janitor_core::automation::{AutomationReason, AutomationVerdict};

    fn parts(headers: &[(&str, &str)]) -> Parts {
        let mut request = http::Request::builder().uri("/login");
        for (name, value) in headers {
            request = request.header(*name, HeaderValue::from_str(value).unwrap());
        }
        request.body(()).unwrap().into_parts().0
    }

    fn encode(json: &str) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    #[test]
    fn the_evidence_header_is_read_and_a_bad_one_ignored() {
        let webdriver = encode(r#"{"webdriver":true}"#);
        let found = verdict(
            &parts(&[(AUTOMATION_EVIDENCE_HEADER, &webdriver)]),
            None,
            false,
        );
        assert_eq!(found.reasons(), [AutomationReason::Webdriver]);
        assert_eq!(found.verdict(), AutomationVerdict::Automated);
        // Spaces between JSON tokens size the value: at the bound it is read, one base64 step past it not.
        let sized = |chars: usize| {
            let padding = " ".repeat(chars / 4 * 3 - 18);
            encode(&format!(r#"{{"webdriver":true{padding}}}"#))
        };
        let at_bound = sized(MAX_EVIDENCE_HEADER);
        assert_eq!(at_bound.len(), MAX_EVIDENCE_HEADER);
        let read = verdict(
            &parts(&[(AUTOMATION_EVIDENCE_HEADER, &at_bound)]),
            None,
            false,
        );
        assert_eq!(read.reasons(), [AutomationReason::Webdriver]);
        let too_long = sized(MAX_EVIDENCE_HEADER + 4);
        assert_eq!(too_long.len(), MAX_EVIDENCE_HEADER + 4);
        for bad in [
            "not base64!".to_owned(),
            encode(r#"{"webdriver":"yes"}"#),
            encode(r#"{"driverGlobals":33}"#),
            too_long,
        ] {
            let found = verdict(&parts(&[(AUTOMATION_EVIDENCE_HEADER, &bad)]), None, false);
            assert_eq!(found.reasons(), [], "{bad}");
        }
        let repeated = parts(&[
            (AUTOMATION_EVIDENCE_HEADER, &webdriver),
            (AUTOMATION_EVIDENCE_HEADER, &webdriver),
        ]);
        assert_eq!(verdict(&repeated, None, false).reasons(), []);
    }

    #[test]
    fn the_request_headers_are_checked_without_evidence() {
        let headless = parts(&[
            (
                "user-agent",
                "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                 HeadlessChrome/156.0.0.0 Safari/537.36",
            ),
            ("accept-language", "en-US"),
            ("accept-encoding", "gzip"),
        ]);
        assert_eq!(
            verdict(&headless, None, false).reasons(),
            [AutomationReason::Headless]
        );
    }
}
