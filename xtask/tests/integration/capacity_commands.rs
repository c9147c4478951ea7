//! The capacity commands' arguments, through the real `xtask` binary: anything the commands do not take is
//! refused before the harness is built or Docker is called.

use std::process::Command;

fn xtask(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("xtask runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn unknown_arguments_are_refused_with_the_usage() {
    for args in [
        &["benchmark-security", "--bogus"][..],
        &["benchmark-lookup", "--bogus"],
        &["benchmark-capacity", "--docker", "--docker"],
        &["benchmark-capacity", "extra"],
    ] {
        let (code, stderr) = xtask(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("usage: cargo xtask"), "{args:?}: {stderr}");
    }
}

#[test]
fn docker_runs_only_the_whole_sequence() {
    for workload in [
        "benchmark-security",
        "benchmark-lookup",
        "benchmark-connections",
        "benchmark-throughput",
        "seed",
    ] {
        let (code, stderr) = xtask(&[workload, "--docker"]);
        assert_eq!(code, Some(1), "{workload}: {stderr}");
        assert!(
            stderr.contains("--docker runs the whole capacity sequence only"),
            "{workload}: {stderr}"
        );
    }
}
