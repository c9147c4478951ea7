//! `cargo xtask benchmark-accuracy LOG [--policy reference|precise] [--scenario lost|partial]
//! [--signals payload|network|extended|network+extended] [--json OUT]`:
//! builds the accuracy benchmark in release mode and replays the visit log through it (docs/accuracy.md).

use std::process::Command;

use crate::capacity::{build_benchmark, status, workspace_root};

/// The benchmark binary of the benchmarks' workspace.
pub const BINARY: &str = "janitor-accuracy";

/// Runs the benchmark with `args`, which it checks itself (a bad option exits with its usage). Paths in `args`
/// are taken from the directory `cargo xtask` was started in.
pub fn run(args: &[String]) -> Result<(), String> {
    if args.is_empty() {
        return Err(
            "a visit log is needed: cargo xtask benchmark-accuracy LOG[.gz] \
                    [--policy reference|precise] [--scenario lost|partial] \
                    [--signals payload|network|extended|network+extended] [--json OUT]"
                .to_owned(),
        );
    }
    let binary = build_benchmark(&workspace_root(), BINARY)?;
    status(Command::new(binary).args(args), "the accuracy benchmark")
}
