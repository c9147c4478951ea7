//! The checks that need no client help: the request's headers against the user agent they claim, and the
//! payload against both.

use super::reason::AutomationReason;
use crate::VisitorPayload;

/// What the checks read of a request's headers; the HTTP edge fills it in. Header values that are not text
/// count as absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestFacts<'a> {
    /// `User-Agent`.
    pub user_agent: Option<&'a str>,
    /// `Sec-CH-UA`: the brands and their major versions.
    pub client_hints: Option<&'a str>,
    /// `Sec-CH-UA-Platform`.
    pub client_hints_platform: Option<&'a str>,
    /// `Sec-CH-UA-Mobile`.
    pub client_hints_mobile: Option<&'a str>,
    /// Whether `Accept-Language` was sent.
    pub accept_language: bool,
    /// Whether `Accept-Encoding` was sent.
    pub accept_encoding: bool,
    /// Whether `Sec-Fetch-Mode` was sent: browsers send it, and the client hints, to the same (secure or
    /// local) origins, so its presence says the hints were due.
    pub fetch_metadata: bool,
}

/// The browser family a user agent claims, with its major version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Chromium(u32),
    Firefox,
    Other,
}

/// The operating system a user agent or `navigator.platform` names, as far as the two can be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum System {
    Windows,
    Mac,
    /// Linux, Android and ChromeOS all report a `Linux …` platform.
    LinuxLike,
    Ios,
}

fn family(user_agent: &str) -> Family {
    let major = |after: &str| {
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    };
    let version_after = |marker: &str| {
        user_agent
            .find(marker)
            .and_then(|at| major(&user_agent[at + marker.len()..]))
    };
    if let Some(v) = version_after("Chrome/").or_else(|| version_after("Chromium/")) {
        Family::Chromium(v)
    } else if user_agent.contains("Firefox/") {
        Family::Firefox
    } else {
        Family::Other
    }
}

fn system_of_agent(user_agent: &str) -> Option<System> {
    if user_agent.contains("iPhone") || user_agent.contains("iPad") {
        Some(System::Ios)
    } else if user_agent.contains("Windows") {
        Some(System::Windows)
    } else if user_agent.contains("Macintosh") {
        Some(System::Mac)
    } else if user_agent.contains("Linux") || user_agent.contains("CrOS") {
        Some(System::LinuxLike)
    } else {
        None
    }
}

fn system_of_platform(platform: &str) -> Option<System> {
    if platform.starts_with("Win") {
        Some(System::Windows)
    } else if platform.starts_with("Mac") {
        Some(System::Mac)
    } else if platform.starts_with("Linux") {
        Some(System::LinuxLike)
    } else if ["iPhone", "iPad", "iPod"]
        .iter()
        .any(|p| platform.starts_with(p))
    {
        Some(System::Ios)
    } else {
        None
    }
}

/// `Sec-CH-UA-Platform`'s value, unquoted, as a system.
fn system_of_hint(platform: &str) -> Option<System> {
    match platform.trim().trim_matches('"') {
        "Windows" => Some(System::Windows),
        "macOS" => Some(System::Mac),
        "Linux" | "Android" | "Chrome OS" | "Chromium OS" => Some(System::LinuxLike),
        "iOS" => Some(System::Ios),
        _ => None,
    }
}

/// The brands of a `Sec-CH-UA` value: `"Chromium";v="156", "Not-A.Brand";v="24"` gives
/// `[("Chromium", "156"), ("Not-A.Brand", "24")]`.
fn brands(hints: &str) -> impl Iterator<Item = (&str, &str)> {
    hints.split(',').filter_map(|entry| {
        let (brand, version) = entry.split_once(";v=")?;
        Some((
            brand.trim().trim_matches('"'),
            version.trim().trim_matches('"'),
        ))
    })
}

/// The reasons the request's headers and the payload give.
pub(super) fn check(
    facts: &RequestFacts<'_>,
    payload: Option<&VisitorPayload>,
    reasons: &mut Vec<AutomationReason>,
) {
    let signals = payload.map(|p| &p.signals);
    let page_agent = signals.and_then(|s| s.user_agent.as_deref());
    let headless = |text: Option<&str>| text.is_some_and(|t| t.contains("Headless"));
    if headless(facts.user_agent) || headless(facts.client_hints) || headless(page_agent) {
        reasons.push(AutomationReason::Headless);
    }
    if let (Some(header), Some(page)) = (facts.user_agent, page_agent) {
        // The client cuts the page's copy at 512 characters.
        if !header.starts_with(page) {
            reasons.push(AutomationReason::UserAgentMismatch);
        }
    }
    let Some(agent) = facts.user_agent.or(page_agent) else {
        return;
    };
    let family = family(agent);
    if family != Family::Other && !(facts.accept_language && facts.accept_encoding) {
        reasons.push(AutomationReason::MissingHeaders);
    }
    if let Family::Chromium(major) = family {
        if client_hints_disagree(facts, agent, major) {
            reasons.push(AutomationReason::ClientHintsMismatch);
        }
    }
    let platform = signals.and_then(|s| s.platform.as_deref());
    if let (Some(said), Some(seen)) = (
        system_of_agent(agent),
        platform.and_then(system_of_platform),
    ) {
        // An iPad asking for the desktop site says Macintosh and reports an iPad or a Mac platform.
        let ipad = said == System::Mac && seen == System::Ios;
        if said != seen && !ipad {
            reasons.push(AutomationReason::PlatformMismatch);
        }
    }
}

/// Chromium 90 and later send the low-entropy client hints with every request that carries fetch metadata
/// (Android's WebView, `; wv)` in its user agent, only from a later version, so it is not held to them); their
/// brands carry the user agent's major version and their platform its system.
fn client_hints_disagree(facts: &RequestFacts<'_>, agent: &str, major: u32) -> bool {
    let Some(hints) = facts.client_hints else {
        return major >= 90 && facts.fetch_metadata && !agent.contains("; wv)");
    };
    let version = major.to_string();
    let chromium = brands(hints).find(|(brand, _)| *brand == "Chromium");
    if chromium.is_some_and(|(_, v)| v != version) {
        return true;
    }
    let platform = facts.client_hints_platform.and_then(system_of_hint);
    if let (Some(hinted), Some(said)) = (platform, system_of_agent(agent)) {
        if hinted != said {
            return true;
        }
    }
    let mobile_hint = facts.client_hints_mobile.map(|m| m.trim() == "?1");
    mobile_hint.is_some_and(|mobile| mobile != agent.contains("Mobile"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHROME: &str = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
                          Chrome/156.0.0.0 Safari/537.36";
    const HINTS: &str = r#""Chromium";v="156", "Not-A.Brand";v="24""#;

    fn chrome() -> RequestFacts<'static> {
        RequestFacts {
            user_agent: Some(CHROME),
            client_hints: Some(HINTS),
            client_hints_platform: Some("\"Linux\""),
            client_hints_mobile: Some("?0"),
            accept_language: true,
            accept_encoding: true,
            fetch_metadata: true,
        }
    }

    fn payload(agent: &str, platform: &str) -> VisitorPayload {
        let json = serde_json::json!({"signals": {"userAgent": agent, "platform": platform}});
        VisitorPayload::from_slice(json.to_string().as_bytes()).unwrap()
    }

    fn reasons(facts: RequestFacts<'_>, payload: Option<&VisitorPayload>) -> Vec<AutomationReason> {
        let mut found = Vec::new();
        check(&facts, payload, &mut found);
        found
    }

    #[test]
    fn a_consistent_chromium_request_gives_no_reason() {
        assert_eq!(
            reasons(chrome(), Some(&payload(CHROME, "Linux x86_64"))),
            []
        );
    }

    #[test]
    fn headless_in_the_agent_the_hints_or_the_page_is_decisive() {
        let agent = CHROME.replace("Chrome/", "HeadlessChrome/");
        let facts = RequestFacts {
            user_agent: Some(&agent),
            ..chrome()
        };
        assert!(reasons(facts, None).contains(&AutomationReason::Headless));
        let hints = r#""Chromium";v="156", "HeadlessChrome";v="156""#;
        let facts = RequestFacts {
            client_hints: Some(hints),
            ..chrome()
        };
        assert_eq!(reasons(facts, None), [AutomationReason::Headless]);
        let page = payload(&agent, "Linux x86_64");
        let found = reasons(chrome(), Some(&page));
        assert!(found.contains(&AutomationReason::Headless), "{found:?}");
        assert!(
            found.contains(&AutomationReason::UserAgentMismatch),
            "{found:?}"
        );
    }

    #[test]
    fn hints_that_disagree_with_the_agent_or_are_missing_where_due() {
        let older = RequestFacts {
            client_hints: Some(r#""Chromium";v="155""#),
            ..chrome()
        };
        let windows = RequestFacts {
            client_hints_platform: Some("\"Windows\""),
            ..chrome()
        };
        let mobile = RequestFacts {
            client_hints_mobile: Some("?1"),
            ..chrome()
        };
        let missing = RequestFacts {
            client_hints: None,
            ..chrome()
        };
        for facts in [older, windows, mobile, missing] {
            assert_eq!(
                reasons(facts, None),
                [AutomationReason::ClientHintsMismatch]
            );
        }
        // Without fetch metadata (a plain-HTTP origin) the hints were not due.
        let plain_http = RequestFacts {
            client_hints: None,
            fetch_metadata: false,
            ..chrome()
        };
        assert_eq!(reasons(plain_http, None), []);
        // Chromium 89 sent no hints, and neither did Android's WebView until later.
        let old = CHROME.replace("Chrome/156", "Chrome/89");
        let webview =
            "Mozilla/5.0 (Linux; Android 13; Pixel 7 Build/TQ3A; wv) AppleWebKit/537.36 (KHTML, \
                       like Gecko) Version/4.0 Chrome/110.0.5481.153 Mobile Safari/537.36";
        for agent in [old.as_str(), webview] {
            let facts = RequestFacts {
                user_agent: Some(agent),
                client_hints_platform: None,
                client_hints_mobile: None,
                ..missing
            };
            assert_eq!(reasons(facts, None), [], "{agent}");
        }
    }

    #[test]
    fn a_browser_agent_without_its_usual_headers() {
        for facts in [
            RequestFacts {
                accept_language: false,
                ..chrome()
            },
            RequestFacts {
                accept_encoding: false,
                ..chrome()
            },
        ] {
            assert_eq!(reasons(facts, None), [AutomationReason::MissingHeaders]);
        }
        // A client that claims no browser is not held to a browser's headers.
        let tool = RequestFacts {
            user_agent: Some("curl/8.5.0"),
            ..RequestFacts::default()
        };
        assert_eq!(reasons(tool, None), []);
    }

    #[test]
    fn the_agents_system_against_the_pages_platform() {
        let windows = CHROME.replace("X11; Linux x86_64", "Windows NT 10.0; Win64; x64");
        let facts = RequestFacts {
            user_agent: Some(&windows),
            client_hints_platform: Some("\"Windows\""),
            ..chrome()
        };
        let found = reasons(facts, Some(&payload(&windows, "Linux x86_64")));
        assert_eq!(found, [AutomationReason::PlatformMismatch]);
        assert_eq!(reasons(facts, Some(&payload(&windows, "Win32"))), []);
        let ipad =
            "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like \
                    Gecko) Version/17.0 Safari/605.1.15";
        let safari = RequestFacts {
            user_agent: Some(ipad),
            ..RequestFacts::default()
        };
        assert_eq!(reasons(safari, Some(&payload(ipad, "iPad"))), []);
    }
}
