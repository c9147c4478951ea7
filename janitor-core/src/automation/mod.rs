//! The automation verdict: whether a browser is driven by a person or by a program, from checks a reader can
//! follow, with no paid model.
//!
//! Three sources feed it, each optional:
//! - the request's headers ([`RequestFacts`]): the user agent against the `Sec-CH-UA*` client hints and the
//!   headers every browser of that family sends;
//! - the payload: its `navigator.webdriver`, user agent, platform, WebGL renderer and languages, and on a form
//!   its behaviour counts;
//! - the client's automation evidence ([`AutomationEvidence`]), when the page turns it on.
//!
//! Each check that fires is an [`AutomationReason`] with a [`Weight`]; the points add up to a verdict
//! ([`AutomationVerdict`]). The verdict never changes the visitor id or the contract's `risk` fields: it sits
//! beside them, for the application and the sign-in decision. docs/automation.md says what each check reads,
//! why it works, how it is evaded and what it costs, and gives the benchmark against real automation tools.

mod evidence;
mod reason;
mod request;

use std::fmt;

use serde::Serialize;

use crate::identification::payload::{Behavior, Signals};
use crate::VisitorPayload;

pub use evidence::{
    AutomationEvidence, EvidenceError, AUTOMATION_EVIDENCE_HEADER, MAX_DRIVER_GLOBALS,
    MAX_EVIDENCE_HEADER, MAX_UNTRUSTED_INPUT,
};
pub use reason::{AutomationReason, Weight};
pub use request::RequestFacts;

/// Points from which a browser is automated: one decisive reason, or two telling ones.
pub const AUTOMATED_POINTS: u32 = 4;
/// Points from which a browser is suspected: one telling reason, or two hints.
pub const SUSPECTED_POINTS: u32 = 2;

/// What the checks conclude.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AutomationVerdict {
    /// Nothing, or one hint: a person's browser as far as the checks can tell.
    Human,
    /// Something a person's browser rarely shows: watch it, or challenge where a mistake is cheap.
    Suspected,
    /// What only automation shows as browsers ship.
    Automated,
}

impl AutomationVerdict {
    /// `human`, `suspected` or `automated`.
    pub fn as_str(self) -> &'static str {
        match self {
            AutomationVerdict::Human => "human",
            AutomationVerdict::Suspected => "suspected",
            AutomationVerdict::Automated => "automated",
        }
    }
}

impl fmt::Display for AutomationVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A verdict with the reasons that led to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Automation {
    verdict: AutomationVerdict,
    reasons: Vec<AutomationReason>,
}

impl Automation {
    /// The verdict.
    pub fn verdict(&self) -> AutomationVerdict {
        self.verdict
    }

    /// The checks that fired, in [`AutomationReason::ALL`]'s order; empty for a clean browser.
    pub fn reasons(&self) -> &[AutomationReason] {
        &self.reasons
    }

    /// The verdict of a set of reasons: their points against [`AUTOMATED_POINTS`] and [`SUSPECTED_POINTS`].
    pub fn from_reasons(mut reasons: Vec<AutomationReason>) -> Automation {
        reasons.sort_unstable();
        reasons.dedup();
        let points: u32 = reasons.iter().map(|r| r.weight().points()).sum();
        let verdict = if points >= AUTOMATED_POINTS {
            AutomationVerdict::Automated
        } else if points >= SUSPECTED_POINTS {
            AutomationVerdict::Suspected
        } else {
            AutomationVerdict::Human
        };
        Automation { verdict, reasons }
    }
}

/// What one request offers the checks.
#[derive(Debug, Clone, Copy, Default)]
pub struct AutomationInput<'a> {
    /// The request's headers.
    pub request: RequestFacts<'a>,
    /// The payload, when the request carried one.
    pub payload: Option<&'a VisitorPayload>,
    /// The client's evidence, when the page sent it and it was valid.
    pub evidence: Option<&'a AutomationEvidence>,
    /// The request submits a form of the application (a sign-in), where a person typed or clicked: its
    /// behaviour counts are read. The identify endpoint runs on page load, before anyone did anything.
    pub form: bool,
}

/// The verdict on one request.
pub fn assess(input: &AutomationInput<'_>) -> Automation {
    let mut reasons = Vec::new();
    request::check(&input.request, input.payload, &mut reasons);
    let signals = input.payload.map(|p| &p.signals);
    if let Some(signals) = signals {
        payload_reasons(signals, &mut reasons);
    }
    if input.form {
        let behavior = input.payload.and_then(|p| p.behavior.as_ref());
        if behavior.is_some_and(untouched) {
            reasons.push(AutomationReason::NoInteraction);
        }
    }
    if let Some(evidence) = input.evidence {
        evidence_reasons(evidence, &mut reasons);
    }
    Automation::from_reasons(reasons)
}

/// A renderer that draws on the CPU: Chromium's SwiftShader, Mesa's llvmpipe and softpipe.
fn software_renderer(renderer: &str) -> bool {
    ["SwiftShader", "llvmpipe", "softpipe", "Software"]
        .iter()
        .any(|name| renderer.contains(name))
}

fn payload_reasons(signals: &Signals, reasons: &mut Vec<AutomationReason>) {
    let webdriver = signals.automation.as_ref().and_then(|a| a.webdriver);
    if webdriver == Some(true) {
        reasons.push(AutomationReason::Webdriver);
    }
    let renderer = signals
        .graphics
        .as_ref()
        .and_then(|g| g.webgl_renderer.as_deref());
    if renderer.is_some_and(software_renderer) {
        reasons.push(AutomationReason::SoftwareRenderer);
    }
    if signals.languages.as_ref().is_some_and(Vec::is_empty) {
        reasons.push(AutomationReason::LanguagesEmpty);
    }
}

/// No pointer, key, mouse or scroll event since the page loaded.
fn untouched(behavior: &Behavior) -> bool {
    [
        behavior.mouse_move_count,
        behavior.pointer_down_count,
        behavior.key_down_count,
        behavior.scroll_count,
    ]
    .iter()
    .all(|count| count.unwrap_or(0) == 0)
}

fn evidence_reasons(evidence: &AutomationEvidence, reasons: &mut Vec<AutomationReason>) {
    let yes = |flag: Option<bool>| flag == Some(true);
    let some = |count: Option<u16>| count.is_some_and(|c| c > 0);
    let checks = [
        (yes(evidence.webdriver), AutomationReason::Webdriver),
        (
            some(evidence.driver_globals),
            AutomationReason::DriverGlobals,
        ),
        (yes(evidence.headless), AutomationReason::Headless),
        (
            yes(evidence.worker_mismatch),
            AutomationReason::WorkerMismatch,
        ),
        (
            yes(evidence.empty_version_list),
            AutomationReason::UserAgentOverride,
        ),
        (yes(evidence.no_pointer), AutomationReason::NoPointer),
        (
            yes(evidence.permissions_mismatch),
            AutomationReason::PermissionsMismatch,
        ),
        (
            some(evidence.untrusted_input),
            AutomationReason::UntrustedInput,
        ),
        (yes(evidence.no_frame), AutomationReason::NoWindowFrame),
        (
            yes(evidence.window_over_screen),
            AutomationReason::WindowOverScreen,
        ),
        (yes(evidence.plugins_empty), AutomationReason::PluginsEmpty),
        (
            yes(evidence.chrome_missing),
            AutomationReason::ChromeMissing,
        ),
    ];
    reasons.extend(checks.iter().filter(|(fired, _)| *fired).map(|(_, r)| *r));
}

#[cfg(test)]
mod tests;
