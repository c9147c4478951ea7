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
