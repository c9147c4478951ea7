//! The accuracy benchmark: `janitor-accuracy LOG [--policy reference|precise] [--scenario lost|partial]
//! [--json OUT]`, usually through `cargo xtask benchmark-accuracy`. See docs/accuracy.md.

use std::path::PathBuf;
use std::process::ExitCode;

use janitor_benchmarks::accuracy::{log, replay, Scenario};
use janitor_benchmarks::{pairs, write_report};
use janitor_core::identification::policy::MatchingPolicy;

const USAGE: &str =
    "usage: janitor-accuracy LOG[.gz] [--policy reference|precise] [--scenario lost|partial] [--json OUT]";

struct Options {
    log: PathBuf,
    policy: MatchingPolicy,
    scenario: Scenario,
    json: Option<PathBuf>,
}

fn options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let log = args.next().filter(|a| !a.starts_with("--")).ok_or(USAGE)?;
    let mut options = Options {
        log: PathBuf::from(log),
        policy: MatchingPolicy::Reference,
        scenario: Scenario::Lost,
        json: None,
    };
    for (name, value) in pairs(args)? {
        match name.as_str() {
            "policy" => options.policy = value.parse().map_err(|e| format!("--policy: {e}"))?,
            "scenario" => options.scenario = Scenario::parse(&value)?,
            "json" => options.json = Some(PathBuf::from(value)),
            other => return Err(format!("unknown option --{other}\n{USAGE}")),
        }
    }
    Ok(options)
}

fn run(options: Options) -> Result<(), String> {
    let visits = log::read(&options.log)?;
    let report = replay(&visits, options.policy, options.scenario)?;
    print!("{}", report.table());
    if let Some(path) = &options.json {
        write_report(path, &report)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let options =
        janitor_benchmarks::options_or_exit("janitor-accuracy", options(std::env::args().skip(1)));
    match run(options) {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("janitor-accuracy: {problem}");
            ExitCode::FAILURE
        }
    }
}
