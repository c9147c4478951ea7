//! Why a request looks automated: one name per check, each with the weight it carries.

use std::fmt;

/// How much one reason says on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Weight {
    /// Seen on ordinary browsers too (a machine without a GPU, a kiosk window): two of them make a browser
    /// suspected.
    Hint,
    /// Rare on a person's browser (an extension that rewrites the user agent, DevTools left open): alone it
    /// makes a browser suspected, two make it automated.
    Telling,
    /// Only automation produces it as browsers ship: alone it makes a browser automated.
    Decisive,
}

impl Weight {
    /// Points toward a verdict: a hint 1, a telling reason 2, a decisive one 4 (4 is automated, 2 suspected).
    pub fn points(self) -> u32 {
        match self {
            Weight::Hint => 1,
            Weight::Telling => 2,
            Weight::Decisive => 4,
        }
    }
}

macro_rules! reasons {
    ($( $(#[$doc:meta])* $variant:ident = $name:literal, $weight:ident; )*) => {
        /// One check that fired. The names (`as_str`) are stable: logs, metrics and applications match on them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum AutomationReason {
            $( $(#[$doc])* $variant, )*
        }

        impl AutomationReason {
            /// Every reason, in the order verdicts list them.
            pub const ALL: &'static [AutomationReason] = &[ $( AutomationReason::$variant, )* ];

            /// The reason's stable name.
            pub fn as_str(self) -> &'static str {
                match self { $( AutomationReason::$variant => $name, )* }
            }

            /// How much the reason weighs.
            pub fn weight(self) -> Weight {
                match self { $( AutomationReason::$variant => Weight::$weight, )* }
            }
        }
    };
}

reasons! {
    /// `navigator.webdriver` is true (WebDriver, `--enable-automation`, a remote-debugging launch): in the
    /// payload's own `signals.automation` or in the automation evidence.
    Webdriver = "webdriver", Decisive;
    /// A driver's globals are on the page (ChromeDriver's `cdc_` keys, Selenium's, PhantomJS's, Playwright's
    /// or Puppeteer's bindings).
    DriverGlobals = "driver_globals", Decisive;
    /// The user agent or the brands say Headless (`HeadlessChrome` in the header, the payload, the client
    /// hints or `userAgentData`).
    Headless = "headless", Decisive;
    /// A dedicated worker sees a different user agent, platform, languages or core count than the page: an
    /// override made for the page only (evasion scripts; some extensions that rewrite the user agent).
    WorkerMismatch = "worker_mismatch", Telling;
    /// The page has `userAgentData` but no full version list: the user agent was replaced (`--user-agent`, the
    /// DevTools protocol's override) without the client hints' metadata a browser always carries.
    UserAgentOverride = "user_agent_override", Telling;
    /// No pointing device at all (`any-pointer: none`): headless modes have none, a person's browser has a
    /// mouse, a touchpad or a touch screen.
    NoPointer = "no_pointer", Telling;
    /// The `Sec-CH-UA*` client hints disagree with the user agent (another version, platform or mobility), or
    /// a Chromium user agent came without them where Chromium always sends them.
    ClientHintsMismatch = "client_hints_mismatch", Telling;
    /// The user agent's operating system is not the payload's `navigator.platform`.
    PlatformMismatch = "platform_mismatch", Telling;
    /// The header's user agent is not the page's `navigator.userAgent`.
    UserAgentMismatch = "user_agent_mismatch", Telling;
    /// A browser's user agent came without `Accept-Language` or `Accept-Encoding`, which its fetch always
    /// sends.
    MissingHeaders = "missing_headers", Telling;
    /// The notification permission is denied while the Permissions API says it was never asked (old headless
    /// mode).
    PermissionsMismatch = "permissions_mismatch", Telling;
    /// The page saw input events that a script dispatched (`isTrusted` false).
    UntrustedInput = "untrusted_input", Telling;
    /// A form was submitted with no pointer, key, mouse or scroll event at all.
    NoInteraction = "no_interaction", Telling;
    /// The window is exactly its viewport: no toolbar, no tab strip (new headless mode; a kiosk or fullscreen
    /// window too).
    NoWindowFrame = "no_window_frame", Hint;
    /// The window is larger than the screen it is on (a headless window sized past its virtual screen).
    WindowOverScreen = "window_over_screen", Hint;
    /// WebGL renders in software (SwiftShader, llvmpipe): headless and containers, and machines without a GPU.
    SoftwareRenderer = "software_renderer", Hint;
    /// `navigator.plugins` is empty where desktop browsers list their PDF viewer.
    PluginsEmpty = "plugins_empty", Hint;
    /// A Chrome user agent without `window.chrome`.
    ChromeMissing = "chrome_missing", Hint;
    /// `navigator.languages` is empty.
    LanguagesEmpty = "languages_empty", Hint;
}

impl serde::Serialize for AutomationReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl fmt::Display for AutomationReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
