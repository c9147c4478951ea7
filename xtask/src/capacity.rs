//! `cargo xtask benchmark-*`, `cargo xtask seed` and `cargo xtask soak`: build the capacity harness in release
//! mode and run it, or run the whole sequence in containers with the compose file's limits (`--docker`,
//! [`crate::docker`]).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The harness commands xtask knows, with the workload each runs.
pub const COMMANDS: &[(&str, &str)] = &[
    ("benchmark-capacity", "capacity"),
    ("benchmark-security", "security"),
    ("benchmark-lookup", "lookup"),
    ("benchmark-connections", "connections"),
    ("benchmark-throughput", "throughput"),
    ("seed", "seed"),
    ("benchmark-replica", "replica"),
    ("benchmark-growth", "growth"),
];

/// The compose file of the Docker path, relative to the workspace root.
pub const COMPOSE_FILE: &str = "docker/compose.yaml";

/// The compose service that runs the workloads; its exit code is the run's.
pub const COMPOSE_CLIENT: &str = "client";

/// The workspace root (xtask lives one folder below it).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits inside the workspace")
        .to_path_buf()
}

/// Runs harness `workload` natively, or in containers when `docker` says how (whole run only).
pub fn run(workload: &str, docker: Option<crate::docker::Options>) -> Result<(), String> {
    let root = workspace_root();
    if let Some(options) = docker {
        if workload != "capacity" {
            return Err("--docker runs the whole capacity sequence only".to_owned());
        }
        return crate::docker::run(&root, options);
    }
    let binary = build_harness(&root)?;
    status(
        Command::new(binary).arg(workload).current_dir(&root),
        "the harness",
    )
}

/// The soak's minutes, lowest and highest (the harness checks them again).
pub const SOAK_MINUTES: (u64, u64) = (1, 1_440);

/// The soak's offered rate in requests per second, lowest and highest.
pub const SOAK_RATE: (u64, u64) = (1, 50_000);

/// Checks `--minutes N --rate R` (both, once each, in either order) before the harness is built, and gives
/// the harness's arguments.
pub fn soak_args(args: &[String]) -> Result<Vec<String>, String> {
    let (mut minutes, mut rate) = (None, None);
    let mut rest = args.iter();
    while let Some(flag) = rest.next() {
        let (slot, name, (low, high)) = match flag.as_str() {
            "--minutes" => (&mut minutes, "minutes", SOAK_MINUTES),
            "--rate" => (&mut rate, "rate", SOAK_RATE),
            other => return Err(format!("soak: unexpected argument {other:?}")),
        };
        let value = rest
            .next()
            .ok_or_else(|| format!("soak: --{name} needs a value"))?;
        if slot.is_some() {
            return Err(format!("soak: --{name} is given twice"));
        }
        let n: u64 = value
            .parse()
            .map_err(|_| format!("soak: --{name} must be a whole number, got {value:?}"))?;
        if !(low..=high).contains(&n) {
            return Err(format!(
                "soak: --{name} must be from {low} to {high}, got {n}"
            ));
        }
        *slot = Some(n);
    }
    let required = |value: Option<u64>, name: &str, (low, high): (u64, u64)| {
        value.ok_or_else(|| format!("soak: --{name} is required (from {low} to {high})"))
    };
    let minutes = required(minutes, "minutes", SOAK_MINUTES)?;
    let rate = required(rate, "rate", SOAK_RATE)?;
    Ok(vec![
        "--minutes".to_owned(),
        minutes.to_string(),
        "--rate".to_owned(),
        rate.to_string(),
    ])
}

/// Builds the harness and runs its soak with `args` (from [`soak_args`]).
pub fn soak(args: &[String]) -> Result<(), String> {
    let root = workspace_root();
    let binary = build_harness(&root)?;
    status(
        Command::new(binary)
            .arg("soak")
            .args(args)
            .current_dir(&root),
        "the soak",
    )
}

/// The benchmarks' own workspace, relative to the repository root.
pub const BENCHMARKS_MANIFEST: &str = "benchmarks/Cargo.toml";

/// Builds `janitor-capacity` in release mode from the benchmarks' workspace, into the main workspace's target
/// directory (so the crates both use are compiled once), and returns the binary's path.
pub fn build_harness(root: &Path) -> Result<PathBuf, String> {
    build_benchmark(root, "janitor-capacity")
}

/// Builds benchmark binary `name` as [`build_harness`] builds the harness, and returns its path.
pub fn build_benchmark(root: &Path, name: &str) -> Result<PathBuf, String> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    status(
        crate::cargo::command()
            .args([
                "build",
                "--release",
                "--quiet",
                "--manifest-path",
                BENCHMARKS_MANIFEST,
            ])
            .arg("--target-dir")
            .arg(&target)
            .args(["--bin", name])
            .current_dir(root),
        &format!("building {name}"),
    )?;
    Ok(target.join("release").join(name))
}

/// Runs `command` with this process's terminal; `what` names it in the error when it cannot start or fails.
pub fn status(command: &mut Command, what: &str) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("{what}: could not start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn soak(text: &str) -> Result<Vec<String>, String> {
        soak_args(
            &text
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>(),
        )
    }

    #[test]
    fn the_soak_flags_are_checked_at_every_bound() {
        for (name, (low, high), other) in [
            ("minutes", SOAK_MINUTES, "--rate 100"),
            ("rate", SOAK_RATE, "--minutes 1"),
        ] {
            for ok in [low, low + 1, high - 1, high] {
                assert!(
                    soak(&format!("--{name} {ok} {other}")).is_ok(),
                    "{name}={ok}"
                );
            }
            for bad in [low - 1, high + 1] {
                let problem = soak(&format!("--{name} {bad} {other}")).unwrap_err();
                assert!(
                    problem.contains(&format!("--{name} must be from {low} to {high}, got {bad}")),
                    "{problem}"
                );
            }
        }
        assert_eq!(
            soak("--rate 300 --minutes 30").unwrap(),
            ["--minutes", "30", "--rate", "300"]
        );
        for (text, expected) in [
            ("", "--minutes is required (from 1 to 1440)"),
            ("--minutes 30", "--rate is required (from 1 to 50000)"),
            ("--minutes 30 --rate 3 --rate 4", "--rate is given twice"),
            ("--minutes 30 --rate", "--rate needs a value"),
            ("--minutes thirty --rate 3", "whole number"),
            (
                "--minutes 30 --rate 3 --docker",
                "unexpected argument \"--docker\"",
            ),
        ] {
            let problem = soak(text).unwrap_err();
            assert!(problem.contains(expected), "{text:?}: {problem}");
        }
    }

    #[test]
    fn the_docker_command_names_a_service_of_the_compose_file() {
        let compose = crate::docker::limits::compose_file(&workspace_root()).unwrap();
        let services = compose["services"].as_object().unwrap();
        assert!(services.contains_key(COMPOSE_CLIENT), "{services:?}");
        assert_eq!(
            compose["services"][COMPOSE_CLIENT]["command"][0],
            "capacity"
        );
        assert_eq!(compose["name"], "janitor-capacity");
    }
}
