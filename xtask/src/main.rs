//! `cargo xtask <command>`: development commands of Janitor for Rust.

use std::path::PathBuf;
use std::process::ExitCode;

use xtask::capacity;
use xtask::conformance::{check_file, Report};

const USAGE: &str = "usage: cargo xtask conformance FILE...
       cargo xtask benchmark-capacity [--docker]
       cargo xtask benchmark-security | benchmark-connections | benchmark-throughput | seed
       (harness settings come from JANITOR_BENCHMARK_* variables; see docs/CAPACITY.md)";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("conformance") => conformance(args.map(PathBuf::from).collect()),
        Some(name) if capacity::COMMANDS.iter().any(|(n, _)| *n == name) => {
            let workload = capacity::COMMANDS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, w)| *w)
                .expect("matched above");
            let rest: Vec<String> = args.collect();
            let docker = match rest.as_slice() {
                [] => false,
                [flag] if flag == "--docker" => true,
                other => {
                    eprintln!("unexpected arguments {other:?}\n{USAGE}");
                    return ExitCode::from(2);
                }
            };
            match capacity::run(workload, docker) {
                Ok(()) => ExitCode::SUCCESS,
                Err(problem) => {
                    eprintln!("cargo xtask {name}: {problem}");
                    ExitCode::FAILURE
                }
            }
        }
        Some("-h" | "--help") => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        other => {
            eprintln!("unknown command {other:?}\n{USAGE}");
            ExitCode::from(2)
        }
    }
}

fn conformance(files: Vec<PathBuf>) -> ExitCode {
    if files.is_empty() {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let mut total = Report::default();
    let mut unreadable = 0;
    for file in &files {
        match check_file(file) {
            Ok(report) => total.merge(report),
            Err(e) => {
                eprintln!("{e}");
                unreadable += 1;
            }
        }
    }
    for note in &total.notes {
        eprintln!("note: {note}");
    }
    for failure in &total.failures {
        println!("FAIL {failure}");
    }
    println!(
        "{} passed, {} failed",
        total.passed,
        total.failures.len() + unreadable
    );
    if total.failures.is_empty() && unreadable == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
