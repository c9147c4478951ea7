//! `cargo xtask benchmark-automation [--short] [--tools a,b] [--runs N] [--human-runs N] [--json OUT]`: installs
//! the browsers and the automation tools (Debian's chromium, chromium-driver, chromium-headless-shell,
//! firefox-esr, xvfb and xdotool, with the language packs and locales the human side runs in; npm's packages
//! from benchmarks/automation/package-lock.json; PyPI's selenium), builds the automation benchmark and runs it
//! (docs/automation.md).
//!
//! Without arguments it is the full run (every tool, 100 runs each, 200 per human browser) into
//! `docs/benchmarks/automation-current.json`. `--short` is CI's check: plain headless Chromium and Puppeteer
//! flagged, two human runs in Chromium not, nothing written.

use std::path::Path;
use std::process::Command;

use crate::capacity::{build_benchmark, status, workspace_root};
use crate::provision;

/// The benchmark binary of the benchmarks' workspace.
pub const BINARY: &str = "janitor-automation";

/// The packages the drivers need, each with a file it provides.
const PACKAGES: &[(&str, &str)] = &[
    ("chromium", "/usr/bin/chromium"),
    ("chromium-driver", "/usr/bin/chromedriver"),
    // Chromium's old headless mode: from version 132 `chromium --headless=old` is the new mode.
    (
        "chromium-headless-shell",
        "/usr/bin/chromium-headless-shell",
    ),
    ("firefox-esr", "/usr/bin/firefox-esr"),
    ("xvfb", "/usr/bin/Xvfb"),
    ("xdotool", "/usr/bin/xdotool"),
    // The human side's languages: without them a browser keeps en-US whatever it is told.
    ("chromium-l10n", "/usr/lib/chromium/locales/de.pak"),
    (
        "firefox-esr-l10n-de",
        "/usr/lib/firefox-esr/browser/extensions/langpack-de@firefox-esr.mozilla.org.xpi",
    ),
    (
        "firefox-esr-l10n-fr",
        "/usr/lib/firefox-esr/browser/extensions/langpack-fr@firefox-esr.mozilla.org.xpi",
    ),
    (
        "firefox-esr-l10n-ja",
        "/usr/lib/firefox-esr/browser/extensions/langpack-ja@firefox-esr.mozilla.org.xpi",
    ),
    ("locales", "/usr/sbin/locale-gen"),
];

/// The locales the human side starts its browsers in, as /etc/locale.gen names them.
const LOCALES: &[&str] = &["en_US.UTF-8", "de_DE.UTF-8", "fr_FR.UTF-8", "ja_JP.UTF-8"];

/// CI's short run.
const SHORT: &[&str] = &[
    "--tools",
    "headless-new,puppeteer,human-chromium",
    "--runs",
    "3",
    "--human-runs",
    "2",
    "--cost-rounds",
    "0",
];

/// Runs the benchmark with `args` (which it checks itself), after installing what it drives.
pub fn run(args: &[String]) -> Result<(), String> {
    let root = workspace_root();
    provision::install(PACKAGES)?;
    generate_locales()?;
    install_drivers(&root)?;
    let binary = build_benchmark(&root, BINARY)?;
    let mut args: Vec<String> = args.to_vec();
    if args.first().map(String::as_str) == Some("--short") {
        args.remove(0);
        args.splice(0..0, SHORT.iter().map(|s| s.to_string()));
    } else if !args.iter().any(|a| a == "--json") && args.is_empty() {
        let report = root.join("docs/benchmarks/automation-current.json");
        args.extend(["--json".to_owned(), report.display().to_string()]);
    }
    status(
        Command::new(&binary).args(&args).current_dir(&root),
        "the automation benchmark",
    )
}

/// Generates the human side's locales that `locale -a` does not list yet.
fn generate_locales() -> Result<(), String> {
    let listed = Command::new("locale")
        .arg("-a")
        .output()
        .map_err(|e| format!("locale -a: {e}"))?;
    let listed = String::from_utf8_lossy(&listed.stdout).to_lowercase();
    // `locale -a` writes de_DE.UTF-8 as de_DE.utf8.
    let missing: Vec<&str> = LOCALES
        .iter()
        .copied()
        .filter(|l| !listed.contains(&l.to_lowercase().replace("utf-8", "utf8")))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let path = "/etc/locale.gen";
    let mut config = std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?;
    for locale in &missing {
        config.push_str(&format!("{locale} UTF-8\n"));
    }
    std::fs::write(path, config)
        .map_err(|e| format!("{path}: {e} (run as root, or generate {missing:?})"))?;
    status(&mut Command::new("locale-gen"), "locale-gen")
}

/// The npm and PyPI packages, at the versions the lock file and requirements pin, installed once.
fn install_drivers(root: &Path) -> Result<(), String> {
    let folder = root.join("benchmarks/automation");
    if !folder.join("node_modules/puppeteer-core").is_dir() {
        status(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                // The drivers use the system's browsers: nothing is downloaded.
                .env("PUPPETEER_SKIP_DOWNLOAD", "1")
                .current_dir(&folder),
            "npm ci (benchmarks/automation)",
        )?;
    }
    let selenium = Command::new("python3")
        .args(["-c", "import selenium"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !selenium {
        status(
            Command::new("python3")
                .args(["-m", "pip", "install", "--quiet", "-r"])
                .arg(folder.join("requirements.txt")),
            "pip install (benchmarks/automation/requirements.txt)",
        )?;
    }
    Ok(())
}
