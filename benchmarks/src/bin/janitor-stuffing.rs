//! The sign-in defence benchmark: `janitor-stuffing LOG [--accounts N] [--days N] [--seed N]
//! [--stores memory|postgres|memory,postgres] [--scenarios a,b,..] [--compare-algorithms true] [--json OUT]`,
//! usually through `cargo xtask benchmark-stuffing`. See docs/signin-defence.md.

use std::path::PathBuf;
use std::process::ExitCode;

use janitor_benchmarks::accuracy::log;
use janitor_benchmarks::stuffing::attack::Scenario;
use janitor_benchmarks::stuffing::{population, run, Options};
use janitor_benchmarks::{number, pairs, write_report};

const USAGE: &str = "usage: janitor-stuffing LOG[.gz] [--accounts N] [--days N] [--seed N] \
     [--stores memory,postgres] [--scenarios one_network,botnet,spraying,lockout_abuse,replaying_bots] \
     [--compare-algorithms true|false] [--json OUT]";

fn options(args: Vec<String>) -> Result<(PathBuf, Options, Option<PathBuf>), String> {
    let mut args = args.into_iter();
    let log = args.next().filter(|a| !a.starts_with("--")).ok_or(USAGE)?;
    let mut options = Options {
        accounts: 10_000,
        days: 30,
        seed: 20_261_206,
        memory: true,
        postgres: true,
        scenarios: Scenario::ALL.to_vec(),
        compare_algorithms: true,
    };
    let mut json = None;
    for (name, value) in pairs(args)? {
        match name.as_str() {
            "accounts" => options.accounts = number(&name, &value, 10, 1_000_000)? as usize,
            "days" => options.days = number(&name, &value, 2, 90)? as i64,
            "seed" => options.seed = number(&name, &value, 0, u64::MAX)?,
            "stores" => {
                let stores: Vec<&str> = value.split(',').collect();
                if stores.iter().any(|s| !matches!(*s, "memory" | "postgres")) {
                    return Err(format!("--stores takes memory and postgres, not {value:?}"));
                }
                options.memory = stores.contains(&"memory");
                options.postgres = stores.contains(&"postgres");
            }
            "scenarios" => {
                options.scenarios = value
                    .split(',')
                    .map(|s| Scenario::parse(s).ok_or(format!("unknown scenario {s:?}\n{USAGE}")))
                    .collect::<Result<_, _>>()?;
            }
            "compare-algorithms" => options.compare_algorithms = value == "true",
            "json" => json = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown option --{name}\n{USAGE}")),
        }
    }
    Ok((PathBuf::from(log), options, json))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Paths under the directory the run started in are given relative to it: the report names no machine's
    // folders.
    let here = std::env::current_dir()
        .map(|d| format!("{}/", d.display()))
        .unwrap_or_default();
    let shown: Vec<&str> = args
        .iter()
        .map(|a| a.strip_prefix(here.as_str()).unwrap_or(a))
        .collect();
    let command = format!("janitor-stuffing {}", shown.join(" "));
    let (log, options, json) = match options(args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let outcome = runtime.block_on(async {
        let visits = log::read(&log)?;
        let population = population::build(&visits, options.accounts, options.days, options.seed)?;
        println!(
            "{} accounts, {} owners' sign-ins over {} days",
            population.accounts.len(),
            population.sign_ins.len(),
            options.days
        );
        let report = run(&population, &options, command).await;
        if let Some(json) = &json {
            write_report(json, &report)?;
        }
        Ok::<_, String>(report.targets.iter().all(|t| t.met))
    });
    match outcome {
        Ok(_) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{message}");
            ExitCode::FAILURE
        }
    }
}
