//! The capacity harness. Start it with `cargo xtask benchmark-capacity` (or one of the single workloads:
//! `benchmark-security`, `benchmark-lookup`, `benchmark-connections`, `benchmark-throughput`, `seed`); see
//! docs/CAPACITY.md.
//!
//! `janitor-capacity capacity|security|lookup|connections|throughput|seed|replica|growth` runs a workload, `janitor-capacity soak
//! --minutes N --rate R` the soak (`cargo xtask soak`);
//! `janitor-capacity serve …` and `janitor-capacity load …` are the server and load processes a run starts; the
//! server also runs by hand for HTTP load tools (docs/benchmarks/http.md).

use std::process::ExitCode;

use janitor_benchmarks::capacity::{self, load, server};

const USAGE: &str =
    "usage: janitor-capacity capacity|security|lookup|connections|throughput|seed|replica|growth \
                     | soak --minutes N --rate R \
                     (settings from JANITOR_BENCHMARK_* variables; see docs/CAPACITY.md)";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let command = args.next().unwrap_or_default();
    let rest: Vec<String> = args.collect();
    let outcome = match command.as_str() {
        "serve" => server::main(rest),
        "serve-fleet" => server::serve_fleet(rest),
        "load" => load::main(rest),
        "soak" => capacity::soak::main(rest),
        "replica" => capacity::replica::main(),
        "growth" => capacity::growth::main(),
        "capacity" | "security" | "lookup" | "connections" | "throughput" | "seed" => {
            capacity::run::main(&command)
        }
        _ => Err(USAGE.to_owned()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("janitor-capacity {command}: {problem}");
            ExitCode::FAILURE
        }
    }
}
