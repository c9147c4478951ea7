//! `cargo xtask test`: every test of the repository on a machine as it comes. It provides what the tests use
//! (see [`crate::provision`]), then runs the test commands and the guide's application ([`crate::guide`]) in
//! order and stops at the first that fails; each step's name and time are printed as it ends, and all of them
//! again at the end.

use std::time::{Duration, Instant};

use crate::capacity::{status, workspace_root};
use crate::provision;

/// The packages the tests use, installed when missing.
pub const PACKAGES_STEP: &str = "packages: PostgreSQL, Chromium, ChromeDriver, PgBouncer, nginx";

/// The PostgreSQL server at `DATABASE_URL`, started when it is the machine's own and down.
pub const POSTGRES_STEP: &str = "PostgreSQL server";

/// The test commands, in the order they run: the library, janitor-axum on the in-memory stores alone (a build
/// the first one never makes), and the benchmarks, a workspace of their own built into the main target directory
/// so the crates both use are compiled once.
pub const CARGO_STEPS: &[&[&str]] = &[
    &["test", "--workspace"],
    &["test", "-p", "janitor-axum", "--no-default-features"],
    &[
        "test",
        "--manifest-path",
        "benchmarks/Cargo.toml",
        "--target-dir",
        "target",
    ],
];

/// The guide's application, built on its own, tested and walked through on both stores (`cargo xtask guide`).
pub const GUIDE_STEP: &str = "the guide's application (cargo xtask guide)";

/// How one step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It succeeded, taking this long.
    Passed(Duration),
    /// It failed, taking this long.
    Failed(Duration),
    /// An earlier step failed.
    NotRun,
}

/// The names of all steps, in order.
pub fn step_names() -> Vec<String> {
    let cargo = CARGO_STEPS
        .iter()
        .map(|args| format!("cargo {}", args.join(" ")));
    [PACKAGES_STEP.to_owned(), POSTGRES_STEP.to_owned()]
        .into_iter()
        .chain(cargo)
        .chain([GUIDE_STEP.to_owned()])
        .collect()
}

/// Provides, then tests; the error names the step that failed.
pub fn run() -> Result<(), String> {
    let started = Instant::now();
    let mut outcomes = Vec::new();
    let result = steps(&mut outcomes);
    let names = step_names();
    outcomes.resize(names.len(), Outcome::NotRun);
    println!("\n{}", summary(&names, &outcomes, started.elapsed()));
    result
}

fn steps(outcomes: &mut Vec<Outcome>) -> Result<(), String> {
    let names = step_names();
    let mut names = names.iter();
    let mut next = || names.next().expect("one name per step");
    let installed = timed(next(), outcomes, provision::packages)?;
    timed(next(), outcomes, || {
        provision::postgres(installed.contains(&provision::POSTGRESQL))
    })?;
    let root = workspace_root();
    for args in CARGO_STEPS {
        let name = next();
        timed(name, outcomes, || {
            status(
                crate::cargo::command().args(*args).current_dir(&root),
                "cargo",
            )
        })?;
    }
    timed(next(), outcomes, || crate::guide::run(&root))?;
    Ok(())
}

/// Runs step `name`, printing its name before and its outcome and time after, and records the outcome.
fn timed<T>(
    name: &str,
    outcomes: &mut Vec<Outcome>,
    step: impl FnOnce() -> Result<T, String>,
) -> Result<T, String> {
    println!("\n==> {name}");
    let start = Instant::now();
    let result = step();
    let took = start.elapsed();
    let outcome = match result {
        Ok(_) => Outcome::Passed(took),
        Err(_) => Outcome::Failed(took),
    };
    println!("==> {name}: {}", describe(outcome));
    outcomes.push(outcome);
    result.map_err(|problem| format!("step `{name}` failed: {problem}"))
}

/// One line per step and a total, for the end of the run.
pub fn summary(names: &[String], outcomes: &[Outcome], total: Duration) -> String {
    let failed = outcomes.iter().any(|o| matches!(o, Outcome::Failed(_)));
    let mut lines = vec![format!(
        "cargo xtask test: {} in {}",
        if failed { "FAILED" } else { "passed" },
        human(total)
    )];
    lines.extend(
        names
            .iter()
            .zip(outcomes)
            .map(|(name, outcome)| format!("  {:<22} {name}", describe(*outcome))),
    );
    lines.join("\n")
}

fn describe(outcome: Outcome) -> String {
    match outcome {
        Outcome::Passed(took) => format!("passed in {}", human(took)),
        Outcome::Failed(took) => format!("FAILED in {}", human(took)),
        Outcome::NotRun => "not run".to_owned(),
    }
}

/// A duration as people read it: `0.4 s`, `12.0 s`, `3 min 07 s`.
pub fn human(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds < 60 {
        format!("{:.1} s", duration.as_secs_f64())
    } else {
        format!("{} min {:02} s", seconds / 60, seconds % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_seconds_then_minutes() {
        assert_eq!(human(Duration::from_millis(420)), "0.4 s");
        assert_eq!(human(Duration::from_millis(59_940)), "59.9 s");
        assert_eq!(human(Duration::from_secs(187)), "3 min 07 s");
    }

    #[test]
    fn the_steps_are_the_provisioning_the_three_test_commands_then_the_guide() {
        assert_eq!(
            step_names(),
            [
                PACKAGES_STEP,
                POSTGRES_STEP,
                "cargo test --workspace",
                "cargo test -p janitor-axum --no-default-features",
                "cargo test --manifest-path benchmarks/Cargo.toml --target-dir target",
                GUIDE_STEP,
            ]
        );
    }

    #[test]
    fn the_summary_says_which_step_failed_and_what_did_not_run() {
        let names = step_names();
        let outcomes = [
            Outcome::Passed(Duration::from_millis(100)),
            Outcome::Passed(Duration::from_secs(2)),
            Outcome::Failed(Duration::from_secs(125)),
            Outcome::NotRun,
            Outcome::NotRun,
            Outcome::NotRun,
        ];
        let text = summary(&names, &outcomes, Duration::from_secs(128));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "cargo xtask test: FAILED in 2 min 08 s");
        assert!(lines[3].starts_with("  FAILED in 2 min 05 s"), "{text}");
        assert!(lines[3].ends_with("cargo test --workspace"), "{text}");
        assert!(lines[5].starts_with("  not run"), "{text}");
        assert_eq!(lines.len(), 7);
    }
}
