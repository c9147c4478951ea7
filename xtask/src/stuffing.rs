//! `cargo xtask benchmark-stuffing [LOG] [--accounts N] [--days N] [--stores memory,postgres] [--json OUT] ...`:
//! builds the sign-in defence benchmark in release mode and runs it (docs/signin-defence.md).
//!
//! Without arguments it makes the two committed reports: the full run on the memory stores, on a population of
//! 10,000 devices made with the accuracy generator's network model (`benchmarks/accuracy/gen.py --networks`,
//! whose pinned packages must be installed; kept under `target/stuffing-log`), into
//! `docs/benchmarks/stuffing-current.json`; then both stores side by side on the committed 1,000-device CI
//! population over 10 days, into `docs/benchmarks/stuffing-postgres.json`. Options without a LOG apply to the
//! full run alone.

use std::path::Path;
use std::process::Command;

use crate::capacity::{build_benchmark, status, workspace_root};

/// The benchmark binary of the benchmarks' workspace.
pub const BINARY: &str = "janitor-stuffing";
/// The full run's population: devices and the generator's seed.
const DEVICES: &str = "10000";
const SEED: &str = "20261206";

/// Runs the benchmark with `args` (which it checks itself).
pub fn run(args: &[String]) -> Result<(), String> {
    let root = workspace_root();
    let binary = build_benchmark(&root, BINARY)?;
    let run = |args: &[String]| {
        status(
            Command::new(&binary).args(args),
            "the sign-in defence benchmark",
        )
    };
    if args.first().is_some_and(|a| !a.starts_with("--")) {
        return run(args);
    }
    let report = |name: &str| {
        root.join("docs/benchmarks")
            .join(name)
            .display()
            .to_string()
    };
    let mut full = vec![full_log(&root)?];
    full.extend(args.iter().cloned());
    if !args.iter().any(|a| a == "--stores") {
        full.extend(["--stores".to_owned(), "memory".to_owned()]);
    }
    if !args.iter().any(|a| a == "--json") {
        full.extend(["--json".to_owned(), report("stuffing-current.json")]);
    }
    run(&full)?;
    if !args.is_empty() {
        return Ok(());
    }
    let population = root.join("benchmarks/accuracy/ci-extended/visits.jsonl.gz");
    let both = [
        population.display().to_string(),
        "--accounts".into(),
        "1000".into(),
        "--days".into(),
        "10".into(),
        "--stores".into(),
        "memory,postgres".into(),
        "--json".into(),
        report("stuffing-postgres.json"),
    ];
    run(&both)
}

/// The full run's visit log, generated once.
fn full_log(root: &Path) -> Result<String, String> {
    let dir = root.join("target/stuffing-log");
    let log = dir.join("visits.jsonl.gz");
    if !log.exists() {
        println!(
            "generating the population: {DEVICES} devices with their networks (a few seconds)"
        );
        let generated = Command::new("python3")
            .arg(root.join("benchmarks/accuracy/gen.py"))
            .args(["--seed", SEED, "--devices", DEVICES, "--networks", "--out"])
            .arg(&dir)
            .status()
            .map_err(|e| format!("python3: {e}"))?;
        if !generated.success() {
            return Err(
                "the population generator failed; it needs its pinned packages: \
                 pip install -r benchmarks/accuracy/requirements.txt"
                    .to_owned(),
            );
        }
    }
    Ok(log.display().to_string())
}
