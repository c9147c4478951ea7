//! `cargo xtask benchmark-*` and `cargo xtask seed`: build the capacity harness in release mode and run it, or
//! hand the whole run to Docker Compose with the reference's resource limits (`--docker`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The harness commands xtask knows, with the workload each runs.
pub const COMMANDS: &[(&str, &str)] = &[
    ("benchmark-capacity", "capacity"),
    ("benchmark-security", "security"),
    ("benchmark-connections", "connections"),
    ("benchmark-throughput", "throughput"),
    ("seed", "seed"),
];

/// The compose file of the Docker path, relative to the workspace root.
pub const COMPOSE_FILE: &str = "docker/compose.yaml";

/// The workspace root (xtask lives one folder below it).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits inside the workspace")
        .to_path_buf()
}

/// Runs harness `workload` natively, or through Docker Compose when `docker` is set (whole run only).
pub fn run(workload: &str, docker: bool) -> Result<(), String> {
    let root = workspace_root();
    if docker {
        if workload != "capacity" {
            return Err("--docker runs the whole capacity sequence only".to_owned());
        }
        return status(
            Command::new("docker")
                .args(["compose", "-f", COMPOSE_FILE, "up", "--build"])
                .args(["--abort-on-container-exit", "--exit-code-from", "client"])
                .current_dir(&root),
            "docker compose (needs a running Docker engine)",
        );
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    status(
        Command::new(cargo)
            .args(["build", "--release", "--quiet", "-p", "janitor-benchmarks"])
            .args(["--bin", "janitor-capacity"])
            .current_dir(&root),
        "building the harness",
    )?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    status(
        Command::new(target.join("release").join("janitor-capacity"))
            .arg(workload)
            .current_dir(&root),
        "the harness",
    )
}

fn status(command: &mut Command, what: &str) -> Result<(), String> {
    let status = command
        .status()
        .map_err(|e| format!("{what}: could not start: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{what} failed ({status})"))
    }
}
