//! The browsers and automation tools the benchmark drives, and how each is started.

use std::path::Path;
use std::process::Command;

/// Which side of the ledger a tool is on, and what the targets ask of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// A tool as it comes (headless, Selenium, Playwright, Puppeteer): `automated` in at least 99% of runs.
    Plain,
    /// A tool with the usual one-flag evasions (a desktop user agent, AutomationControlled off): reported,
    /// held to the plain tools' target.
    Evasive,
    /// The stealth plugin: `suspected` or `automated` in at least 90% of runs.
    Stealth,
    /// A person's browser: never `automated`, `suspected` in at most 1% of runs.
    Human,
}

/// One tool.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    /// Its name in the report and in run ids.
    pub name: &'static str,
    /// Its side.
    pub class: Class,
    /// The driver that starts it: `node` or `python3`, and the script under `benchmarks/automation/drivers/`.
    pub interpreter: &'static str,
    /// The driver script.
    pub script: &'static str,
}

impl Tool {
    /// The driver's command for `runs` runs against `url`, from the benchmarks folder `root`.
    pub fn command(&self, root: &Path, url: &str, runs: usize) -> Command {
        let mut command = Command::new(self.interpreter);
        command
            .arg(root.join("automation/drivers").join(self.script))
            .args([
                "--url",
                url,
                "--tool",
                self.name,
                "--runs",
                &runs.to_string(),
            ]);
        command
    }
}

const fn tool(
    name: &'static str,
    class: Class,
    interpreter: &'static str,
    script: &'static str,
) -> Tool {
    Tool {
        name,
        class,
        interpreter,
        script,
    }
}

/// Every tool, automated side first.
pub const TOOLS: &[Tool] = &[
    tool("headless-new", Class::Plain, "node", "headless.mjs"),
    tool("headless-old", Class::Plain, "node", "headless.mjs"),
    tool(
        "headless-desktop-ua",
        Class::Evasive,
        "node",
        "headless.mjs",
    ),
    tool(
        "headless-no-automation-controlled",
        Class::Evasive,
        "node",
        "headless.mjs",
    ),
    tool("selenium", Class::Plain, "python3", "selenium_run.py"),
    tool("playwright", Class::Plain, "node", "cdp.mjs"),
    tool("puppeteer", Class::Plain, "node", "cdp.mjs"),
    tool("puppeteer-stealth", Class::Stealth, "node", "cdp.mjs"),
    tool("firefox-headless", Class::Plain, "node", "cdp.mjs"),
    tool("human-chromium", Class::Human, "python3", "human.py"),
    tool("human-firefox", Class::Human, "python3", "human.py"),
];

/// The tool named `name`.
pub fn find(name: &str) -> Option<&'static Tool> {
    TOOLS.iter().find(|t| t.name == name)
}
