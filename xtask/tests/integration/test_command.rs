//! `cargo xtask test` takes no arguments: through the real binary, anything given is refused with the usage
//! before a package is looked at or a test runs.

use std::process::Command;

#[test]
fn arguments_are_refused_with_the_usage() {
    for args in [&["test", "--workspace"][..], &["test", "extra", "more"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .args(args)
            .output()
            .expect("xtask runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("usage: cargo xtask test"),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: nothing ran");
    }
}

/// The tests' debug setting is one value in three places: the workspace's config, what the guide's crate is
/// given, and what CI gives the packaged crates. Were one to differ, that build would compile every dependency
/// a second time instead of reusing the tests' builds.
#[test]
fn the_debug_setting_is_the_same_wherever_the_tests_build() {
    let root = xtask::capacity::workspace_root();
    let config = std::fs::read_to_string(root.join(".cargo/config.toml")).unwrap();
    let wanted = format!("[profile.dev]\ndebug = \"{}\"", xtask::guide::DEV_DEBUG);
    assert!(config.contains(&wanted), "{config}");
    let ci = std::fs::read_to_string(root.join(".ci/run")).unwrap();
    let passed = format!("CARGO_PROFILE_DEV_DEBUG={}", xtask::guide::DEV_DEBUG);
    assert!(ci.contains(&passed), "{passed} missing from .ci/run");
}
