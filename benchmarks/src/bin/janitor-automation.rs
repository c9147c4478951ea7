//! The automation benchmark: `janitor-automation [--tools a,b,..] [--runs N] [--human-runs N]
//! [--cost-rounds N] [--json OUT]`, usually through `cargo xtask benchmark-automation`. See docs/automation.md.

use std::path::PathBuf;
use std::process::ExitCode;

use janitor_benchmarks::automation::{run, tools, Options};
use janitor_benchmarks::{number, pairs, write_report};

const USAGE: &str = "usage: janitor-automation [--tools NAME,..] [--runs N] [--human-runs N] \
     [--cost-rounds N] [--json OUT]";

fn options(args: Vec<String>) -> Result<(Options, Option<PathBuf>), String> {
    let mut options = Options {
        tools: tools::TOOLS.iter().collect(),
        automated_runs: 100,
        human_runs: 200,
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        cost_rounds: 20,
    };
    let mut json = None;
    for (name, value) in pairs(args)? {
        match name.as_str() {
            "tools" => {
                options.tools = value
                    .split(',')
                    .map(|t| tools::find(t).ok_or(format!("unknown tool {t:?}\n{USAGE}")))
                    .collect::<Result<_, _>>()?;
            }
            "runs" => options.automated_runs = number(&name, &value, 1, 10_000)? as usize,
            "human-runs" => options.human_runs = number(&name, &value, 1, 10_000)? as usize,
            "cost-rounds" => options.cost_rounds = number(&name, &value, 0, 1_000)? as usize,
            "json" => json = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown option --{name}\n{USAGE}")),
        }
    }
    Ok((options, json))
}

// One thread: the cost measurement reads this thread's CPU time, and the page's server shares it.
#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (options, json) = match options(args) {
        Ok(parsed) => parsed,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::from(2);
        }
    };
    let report = match run(&options).await {
        Ok(report) => report,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(cost) = &report.cost {
        println!(
            "cost: {:.2} us CPU per identification with the verdict, {:.2} without ({:+.2}); client part {} bytes, {} gzipped",
            cost.cpu_us_on, cost.cpu_us_off, cost.cpu_us_added, cost.client_part_bytes, cost.client_part_gzip_bytes
        );
    }
    if let Some(path) = json {
        if let Err(message) = write_report(&path, &report) {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    }
    if report.targets_met {
        ExitCode::SUCCESS
    } else {
        eprintln!("some tool missed its target: see the report");
        ExitCode::FAILURE
    }
}
