//! The `cargo` that xtask runs: the one that started it, without the variables `cargo run` set for xtask.
//!
//! `cargo run -p xtask` gives xtask `CARGO_MANIFEST_DIR`, `CARGO_PKG_NAME` and the rest of xtask's own package
//! variables. A cargo started with them passes them on to build scripts, and some build scripts (ring's, under
//! rustls) ask to be run again when they change. So every `cargo xtask test` after a plain `cargo test` (and the
//! reverse) rebuilt ring and everything above it: rustls, the PostgreSQL TLS connector, janitor-sql,
//! janitor-axum and every test binary. Without them, both commands see one environment and share one build.

use std::ffi::OsStr;
use std::process::Command;

/// `cargo` (the `CARGO` that runs xtask, or the one on the path) with xtask's package variables removed.
pub fn command() -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    for (name, _) in std::env::vars_os() {
        if is_package_variable(&name) {
            command.env_remove(name);
        }
    }
    command
}

/// The variables cargo sets for the package it runs, as opposed to those a user sets to configure cargo
/// (`CARGO_TARGET_DIR`, `CARGO_HOME`, `CARGO_TERM_COLOR`, …), which pass through.
fn is_package_variable(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    const PACKAGE: [&str; 6] = [
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_RUSTC_CURRENT_DIR",
    ];
    PACKAGE.iter().any(|prefix| name.starts_with(prefix)) || name == "OUT_DIR"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_variables_go_and_settings_stay() {
        for gone in [
            "CARGO_PKG_NAME",
            "CARGO_PKG_VERSION_MAJOR",
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_PRIMARY_PACKAGE",
            "OUT_DIR",
        ] {
            assert!(is_package_variable(OsStr::new(gone)), "{gone}");
        }
        for kept in [
            "CARGO",
            "CARGO_TARGET_DIR",
            "CARGO_HOME",
            "CARGO_TERM_COLOR",
            "CARGO_INCREMENTAL",
            "RUSTFLAGS",
            "DATABASE_URL",
        ] {
            assert!(!is_package_variable(OsStr::new(kept)), "{kept}");
        }
    }

    #[test]
    fn the_command_runs_cargo_without_xtasks_package_variables() {
        // Under `cargo test` this process has the test package's variables, as xtask has its own under
        // `cargo run`.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let command = command();
        let removed: Vec<_> = command
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_owned())
            .collect();
        assert!(removed.iter().any(|n| n == "CARGO_MANIFEST_DIR"));
        assert!(removed.iter().any(|n| n == "CARGO_PKG_NAME"));
        assert!(!removed.iter().any(|n| n == "CARGO"));
    }
}
