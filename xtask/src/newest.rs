//! `cargo xtask newest`: the library crates against the newest versions of their dependencies that their
//! manifests allow, as a user without our lockfile builds them. The committed `Cargo.lock` keeps every other step
//! reproducible; this one is where a release upstream shows first. A deprecation or any other warning in the
//! project's own code becomes one line (file, line, message), a dependency that no longer builds a short error,
//! and either fails the check.
//!
//! The checkout's files are copied to a scratch directory, where the lockfile is made anew and the three library
//! crates are checked with all their features and targets into a target directory of their own
//! (`target/newest`), so the main build is left as it was.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::scratch::ScratchDir;

/// The crates a user depends on.
pub const LIBRARY_CRATES: [&str; 3] = ["janitor-core", "janitor-sql", "janitor-axum"];

/// One warning of the project's own code.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Warning {
    /// The file, from the workspace root.
    pub file: String,
    /// Its line.
    pub line: u64,
    /// The compiler's message.
    pub message: String,
}

/// Copies the checkout, resolves the newest versions and checks the library crates.
pub fn run(root: &Path) -> Result<(), String> {
    let scratch = Scratch::copy_of(root)?;
    crate::capacity::status(
        crate::cargo::command()
            .args(["generate-lockfile", "--quiet"])
            .current_dir(&scratch.dir),
        "cargo generate-lockfile",
    )?;
    let committed = std::fs::read_to_string(root.join("Cargo.lock")).map_err(|e| e.to_string())?;
    let fresh =
        std::fs::read_to_string(scratch.dir.join("Cargo.lock")).map_err(|e| e.to_string())?;
    let newer = newer_versions(&committed, &fresh);
    println!(
        "newest: {} dependencies resolve newer than Cargo.lock{}{}",
        newer.len(),
        if newer.is_empty() { "" } else { ": " },
        newer.join(", ")
    );
    let mut check = crate::cargo::command();
    check
        .args([
            "check",
            "--all-targets",
            "--all-features",
            "--message-format=json",
        ])
        .args(LIBRARY_CRATES.iter().flat_map(|name| ["-p", name]))
        .env("CARGO_TARGET_DIR", root.join("target").join("newest"))
        .current_dir(&scratch.dir)
        .stderr(Stdio::inherit());
    let output = check.output().map_err(|e| format!("cargo check: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let (warnings, errors) = own_diagnostics(&stdout);
    for warning in &warnings {
        println!(
            "newest: warning in {}:{}: {}",
            warning.file, warning.line, warning.message
        );
    }
    for error in &errors {
        println!("newest: error: {error}");
    }
    if !output.status.success() || !errors.is_empty() {
        return Err("the library crates do not build with the newest dependencies".into());
    }
    if !warnings.is_empty() {
        return Err(format!(
            "{} warning(s) in the project's code with the newest dependencies",
            warnings.len()
        ));
    }
    println!("newest: the library crates build without a warning");
    Ok(())
}

/// The warnings (deduplicated, in file order) and the errors of the project's own packages in the JSON lines
/// of `cargo check --message-format=json`. Dependencies from a registry never warn: cargo caps their lints.
pub fn own_diagnostics(json_lines: &str) -> (Vec<Warning>, Vec<String>) {
    let mut warnings = Vec::new();
    let mut errors = Vec::new();
    for line in json_lines.lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let own = value["package_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("path+"));
        if value["reason"] != "compiler-message" || !own {
            continue;
        }
        let message = &value["message"];
        let text = message["message"].as_str().unwrap_or_default().to_owned();
        let primary = message["spans"]
            .as_array()
            .and_then(|spans| spans.iter().find(|s| s["is_primary"] == true));
        let place = primary.map(|span| {
            (
                span["file_name"].as_str().unwrap_or_default().to_owned(),
                span["line_start"].as_u64().unwrap_or_default(),
            )
        });
        match (message["level"].as_str(), place) {
            (Some("warning"), Some((file, line))) => warnings.push(Warning {
                file,
                line,
                message: text,
            }),
            // A summary ("3 warnings emitted") has no span and says nothing new.
            (Some("warning"), None) => {}
            (Some("error"), Some((file, line))) => errors.push(format!("{file}:{line}: {text}")),
            (Some("error"), None) if !text.starts_with("aborting") => errors.push(text),
            _ => {}
        }
    }
    warnings.sort();
    warnings.dedup();
    (warnings, errors)
}

/// `name old → new` for each package whose version in `fresh` is not the one `committed` locks.
pub fn newer_versions(committed: &str, fresh: &str) -> Vec<String> {
    let (old, new) = (locked(committed), locked(fresh));
    new.iter()
        .filter_map(|(name, version)| match old.get(name) {
            Some(before) if before != version => Some(format!("{name} {before} → {version}")),
            _ => None,
        })
        .collect()
}

/// Each package's newest version in a lockfile, by name.
fn locked(lockfile: &str) -> BTreeMap<String, String> {
    let mut packages = BTreeMap::new();
    let mut name = None;
    for line in lockfile.lines() {
        if let Some(value) = line.strip_prefix("name = ") {
            name = Some(value.trim_matches('"').to_owned());
        } else if let (Some(value), Some(n)) = (line.strip_prefix("version = "), name.take()) {
            packages.insert(n, value.trim_matches('"').to_owned());
        }
    }
    packages
}

/// A copy of the checkout's files (those git tracks or would track) in a temporary directory, removed when
/// dropped.
struct Scratch {
    dir: ScratchDir,
}

impl Scratch {
    fn copy_of(root: &Path) -> Result<Scratch, String> {
        let listed = Command::new("git")
            .args([
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ])
            .current_dir(root)
            .output()
            .map_err(|e| format!("git ls-files: {e}"))?;
        if !listed.status.success() {
            return Err("git ls-files failed: the check copies a git checkout".into());
        }
        let scratch = Scratch {
            dir: ScratchDir::new("newest")?,
        };
        for file in listed.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
            let relative = Path::new(std::str::from_utf8(file).map_err(|e| e.to_string())?);
            copy_entry(&root.join(relative), &scratch.dir.join(relative))?;
        }
        Ok(scratch)
    }
}

/// Copies one file git lists: a symbolic link as the same link (`janitor-sql/migrations`, a link to the
/// folder at the root, which git lists as one entry and whose files it lists on their own), anything else as
/// its content. An entry deleted in the work tree and not yet in the index is skipped.
fn copy_entry(from: &Path, to: &Path) -> Result<(), String> {
    let Ok(metadata) = std::fs::symlink_metadata(from) else {
        return Ok(());
    };
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    if metadata.file_type().is_symlink() {
        let target = std::fs::read_link(from).map_err(|e| format!("{}: {e}", from.display()))?;
        std::os::unix::fs::symlink(&target, to).map_err(|e| format!("{}: {e}", to.display()))
    } else if metadata.is_file() {
        std::fs::copy(from, to)
            .map(drop)
            .map_err(|e| format!("{}: {e}", from.display()))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPRECATED: &str = r#"{"reason":"compiler-message","package_id":"path+file:///tmp/x/janitor-sql#0.1.0","message":{"level":"warning","message":"use of deprecated function `rustls::crypto::ring::default_provider`: no support for post-quantum algorithms","spans":[{"file_name":"janitor-sql/src/tls/mod.rs","line_start":18,"is_primary":true}]}}"#;

    #[test]
    fn a_deprecation_in_our_code_is_one_warning_however_many_targets_report_it() {
        let registry = DEPRECATED.replace(
            "path+file:///tmp/x/janitor-sql",
            "registry+https://x#rustls",
        );
        let summary = r#"{"reason":"compiler-message","package_id":"path+file:///tmp/x/janitor-sql#0.1.0","message":{"level":"warning","message":"1 warning emitted","spans":[]}}"#;
        let lines = [DEPRECATED, DEPRECATED, &registry, summary, "not json"].join("\n");
        let (warnings, errors) = own_diagnostics(&lines);
        assert_eq!(
            warnings,
            [Warning {
                file: "janitor-sql/src/tls/mod.rs".into(),
                line: 18,
                message: "use of deprecated function `rustls::crypto::ring::default_provider`: no \
                          support for post-quantum algorithms"
                    .into(),
            }]
        );
        assert!(errors.is_empty());
    }

    #[test]
    fn an_error_in_our_code_is_reported_with_its_place() {
        let error = DEPRECATED.replace(r#""level":"warning""#, r#""level":"error""#);
        let (warnings, errors) = own_diagnostics(&error);
        assert!(warnings.is_empty());
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("janitor-sql/src/tls/mod.rs:18: use of deprecated"));
    }

    #[test]
    fn a_symbolic_link_is_copied_as_the_link_and_a_file_as_its_content() {
        let from = ScratchDir::new("newest-copy-from").expect("scratch");
        let to = ScratchDir::new("newest-copy-to").expect("scratch");
        std::fs::create_dir_all(from.join("migrations")).expect("folder");
        std::fs::write(from.join("migrations/0001_a.sql"), "SELECT 1;").expect("file");
        std::fs::create_dir_all(from.join("crate")).expect("folder");
        std::os::unix::fs::symlink("../migrations", from.join("crate/migrations")).expect("link");
        for entry in ["migrations/0001_a.sql", "crate/migrations", "gone.rs"] {
            copy_entry(&from.join(entry), &to.join(entry)).expect("copied");
        }
        assert_eq!(
            std::fs::read_link(to.join("crate/migrations")).expect("a link"),
            Path::new("../migrations")
        );
        assert_eq!(
            std::fs::read_to_string(to.join("crate/migrations/0001_a.sql"))
                .expect("read through it"),
            "SELECT 1;"
        );
        assert!(!to.join("gone.rs").exists());
    }

    #[test]
    fn newer_versions_name_each_package_that_moved() {
        let committed = "[[package]]\nname = \"rustls\"\nversion = \"0.23.46\"\n\n[[package]]\nname = \"ring\"\nversion = \"0.17.14\"\n";
        let fresh = committed.replace("0.23.46", "0.23.48");
        assert_eq!(
            newer_versions(committed, &fresh),
            ["rustls 0.23.46 → 0.23.48"]
        );
        assert!(newer_versions(committed, committed).is_empty());
    }
}
