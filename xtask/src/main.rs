//! `cargo xtask <command>`: development commands of Janitor for Rust.

use std::path::PathBuf;
use std::process::ExitCode;

use xtask::conformance::{check_file, Report};
use xtask::{accuracy, automation, capacity, docker, guide, newest, stuffing, tables, test};

mod fuzz;

const USAGE: &str = "usage: cargo xtask test
       cargo xtask conformance FILE...
       cargo xtask guide   (builds janitor-axum's guide as a crate of its own and walks through it on both stores)
       cargo xtask newest  (the library crates against the newest compatible dependencies: any warning of ours fails)
       cargo xtask fuzz [--seconds N]   (every fuzz target of fuzz/, N seconds each, default 60)
       cargo xtask benchmark-capacity [--docker [--no-cpu-limits]]
       cargo xtask benchmark-accuracy LOG[.gz] [--policy reference|precise] [--scenario lost|partial]
           [--signals payload|network|extended|network+extended] [--json OUT]
       cargo xtask benchmark-stuffing [LOG[.gz]] [--accounts N] [--days N] [--stores memory,postgres]
           [--scenarios one_network,botnet,spraying,lockout_abuse,replaying_bots] [--json OUT]
           (the sign-in defence against credential stuffing; without LOG, the full 10,000-account run)
       cargo xtask benchmark-automation [--short] [--tools a,b] [--runs N] [--human-runs N] [--json OUT]
           (real browsers and automation tools against the automation verdict; without options, the full run)
       cargo xtask benchmark-security | benchmark-lookup | benchmark-connections | benchmark-throughput | seed
       cargo xtask benchmark-replica   (the cookieless lookup on a hot standby against the primary alone)
       cargo xtask benchmark-growth    (evidence at 10,000,000 events: bytes, cleanup, vacuum)
       cargo xtask soak --minutes N --rate R   (one server process, R requests/s for N minutes; 1-1440, 1-50000)
       cargo xtask capacity-tables [--check]   (docs/CAPACITY.md's result tables from the committed reports)
       (harness settings come from JANITOR_BENCHMARK_* variables; see docs/CAPACITY.md)";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    match args.next().as_deref() {
        Some("test") => match args.collect::<Vec<String>>().as_slice() {
            [] => report("test", test::run()),
            other => {
                eprintln!("unexpected arguments {other:?}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("conformance") => conformance(args.map(PathBuf::from).collect()),
        Some("guide") => report("guide", guide::run(&capacity::workspace_root())),
        Some("newest") => report("newest", newest::run(&capacity::workspace_root())),
        Some("fuzz") => match fuzz::parse_args(&args.collect::<Vec<String>>()) {
            Ok(seconds) => report("fuzz", fuzz::run(seconds)),
            Err(problem) => {
                eprintln!("{problem}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("capacity-tables") => match args.collect::<Vec<String>>().as_slice() {
            [] => report(
                "capacity-tables",
                tables::run(&capacity::workspace_root(), false),
            ),
            [flag] if flag == "--check" => report(
                "capacity-tables",
                tables::run(&capacity::workspace_root(), true),
            ),
            other => {
                eprintln!("unexpected arguments {other:?}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some("benchmark-accuracy") => report(
            "benchmark-accuracy",
            accuracy::run(&args.collect::<Vec<String>>()),
        ),
        Some("benchmark-automation") => report(
            "benchmark-automation",
            automation::run(&args.collect::<Vec<String>>()),
        ),
        Some("benchmark-stuffing") => report(
            "benchmark-stuffing",
            stuffing::run(&args.collect::<Vec<String>>()),
        ),
        Some("soak") => match capacity::soak_args(&args.collect::<Vec<String>>()) {
            Ok(flags) => report("soak", capacity::soak(&flags)),
            Err(problem) => {
                eprintln!("{problem}\n{USAGE}");
                ExitCode::from(2)
            }
        },
        Some(name) if capacity::COMMANDS.iter().any(|(n, _)| *n == name) => {
            let workload = capacity::COMMANDS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, w)| *w)
                .expect("matched above");
            let rest: Vec<String> = args.collect();
            let docker = match rest.as_slice() {
                [] => None,
                [flag] if flag == "--docker" => Some(docker::Options { cpu_limits: true }),
                [flag, off] if flag == "--docker" && off == "--no-cpu-limits" => {
                    Some(docker::Options { cpu_limits: false })
                }
                other => {
                    eprintln!("unexpected arguments {other:?}\n{USAGE}");
                    return ExitCode::from(2);
                }
            };
            report(name, capacity::run(workload, docker))
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

/// The exit code of command `name`, after printing its error if it failed.
fn report(name: &str, result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("cargo xtask {name}: {problem}");
            ExitCode::FAILURE
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
