//! The accuracy benchmark: `janitor-accuracy LOG [--policy reference|precise] [--scenario lost|partial]
//! [--signals payload|network|extended|network+extended] [--json OUT]`, usually through `cargo xtask benchmark-accuracy`. See docs/accuracy.md.

use std::path::PathBuf;
use std::process::ExitCode;

use janitor_benchmarks::accuracy::{log, replay, Scenario, SignalSet};
use janitor_benchmarks::{pairs, write_report};
use janitor_core::identification::policy::MatchingPolicy;

const USAGE: &str =
    "usage: janitor-accuracy LOG[.gz] [--policy reference|precise] [--scenario lost|partial] \
     [--signals payload|network|extended|network+extended] [--json OUT]";

struct Options {
    log: PathBuf,
    policy: MatchingPolicy,
    scenario: Scenario,
    signals: SignalSet,
    json: Option<PathBuf>,
}

fn options(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let log = args.next().filter(|a| !a.starts_with("--")).ok_or(USAGE)?;
    let mut options = Options {
        log: PathBuf::from(log),
        policy: MatchingPolicy::Reference,
        scenario: Scenario::Lost,
        signals: SignalSet::default(),
        json: None,
    };
    for (name, value) in pairs(args)? {
        match name.as_str() {
            "policy" => options.policy = value.parse().map_err(|e| format!("--policy: {e}"))?,
            "scenario" => options.scenario = Scenario::parse(&value)?,
            "signals" => options.signals = SignalSet::parse(&value)?,
            "json" => options.json = Some(PathBuf::from(value)),
            other => return Err(format!("unknown option --{other}\n{USAGE}")),
        }
    }
    Ok(options)
}

fn run(options: Options) -> Result<(), String> {
    let visits = log::read(&options.log)?;
    let report = replay(&visits, options.policy, options.scenario, options.signals)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        options(args.iter().map(|a| (*a).to_owned()))
    }

    #[test]
    fn options_default_to_the_reference_with_every_cookie_lost() {
        let o = parse(&["log.jsonl.gz"]).unwrap();
        assert_eq!(o.log, PathBuf::from("log.jsonl.gz"));
        assert_eq!(
            (o.policy, o.scenario, o.json),
            (MatchingPolicy::Reference, Scenario::Lost, None)
        );
        let o = parse(&[
            "l",
            "--policy",
            "precise",
            "--scenario",
            "partial",
            "--signals",
            "network",
            "--json",
            "o.json",
        ])
        .unwrap();
        assert_eq!(
            (o.policy, o.scenario),
            (MatchingPolicy::Precise, Scenario::Partial)
        );
        assert!(o.signals.network);
        assert_eq!(o.json, Some(PathBuf::from("o.json")));
    }

    #[test]
    fn bad_options_are_refused_with_what_was_wrong() {
        let err = |args: &[&str]| parse(args).err().unwrap();
        assert_eq!(err(&[]), USAGE);
        assert_eq!(err(&["--policy", "precise"]), USAGE);
        assert!(err(&["l", "--policy", "strict"]).contains("must be one of reference, precise"));
        assert!(err(&["l", "--scenario", "half"]).contains("lost or partial"));
        assert!(err(&["l", "--signals", "gps"]).contains("extended or network+extended"));
        assert!(err(&["l", "--seed", "1"]).contains("unknown option --seed"));
        assert!(err(&["l", "--json"]).contains("--json needs a value"));
    }
}
