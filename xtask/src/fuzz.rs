//! `cargo xtask fuzz [--seconds N]`: every fuzz target of `fuzz/` (a cargo-fuzz package, libFuzzer under the
//! hood) for N seconds each, 60 by default.
//!
//! It installs cargo-fuzz when `cargo fuzz` is missing, builds every target once, then runs each on its seed
//! corpus `fuzz/corpus/<target>`. The inputs libFuzzer finds interesting go to a scratch directory given first
//! (libFuzzer writes new inputs into its first corpus directory), so the committed seeds never grow; the scratch
//! directory is removed at the end. A crashing input is written by libFuzzer under `fuzz/artifacts/<target>/`
//! (ignored by git). Each target's executions and final coverage line are printed as it ends, and again at the
//! end; the command fails when any target found a crash (or a timeout, an out-of-memory, a leak).
//!
//! cargo-fuzz passes flags only a nightly compiler takes (`-Zsanitizer=address`, sanitizer coverage options);
//! `RUSTC_BOOTSTRAP=1` lets the machine's stable toolchain accept them.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use xtask::capacity::{status, workspace_root};
use xtask::test::human;

/// Seconds each target runs for when `--seconds` is not given.
pub const DEFAULT_SECONDS: u64 = 60;
/// The cargo-fuzz package, relative to the repository root.
pub const FUZZ_DIR: &str = "fuzz";
/// Memory a target may use before libFuzzer reports it, in MiB.
pub const RSS_LIMIT_MB: u64 = 2048;
/// Seconds one input may take before libFuzzer reports a timeout (its default is 20 minutes, past any budget).
pub const INPUT_TIMEOUT_SECONDS: u64 = 30;
/// Lines of a failing target's output shown, from where the failure is reported.
const FAILURE_LINES: usize = 250;

/// The seconds per target from the command's arguments: none, `--seconds N` or `--seconds=N`, N at least 1.
pub fn parse_args(args: &[String]) -> Result<u64, String> {
    let value = match args {
        [] => return Ok(DEFAULT_SECONDS),
        [flag, value] if flag == "--seconds" => value.as_str(),
        [flag] if flag.starts_with("--seconds=") => &flag["--seconds=".len()..],
        other => return Err(format!("unexpected arguments {other:?}")),
    };
    match value.parse::<u64>() {
        Ok(seconds) if seconds >= 1 => Ok(seconds),
        _ => Err(format!(
            "--seconds takes a whole number of seconds from 1, got {value:?}"
        )),
    }
}

/// What one run of libFuzzer printed that the summary shows.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stats {
    /// Inputs executed (`stat::number_of_executed_units`, else the count of the final `#<n> DONE` line).
    pub executions: Option<u64>,
    /// The last coverage line: `#<n> DONE cov: .. ft: .. corp: ..`, or the last `#<n> ...` line when the run
    /// stopped before it was done.
    pub coverage: Option<String>,
    /// Every input libFuzzer wrote as an artifact (`crash-`, `timeout-`, `oom-`, `leak-`, `slow-unit-`...).
    pub artifacts: Vec<String>,
}

impl Stats {
    /// The input that made the run fail: the last artifact that is not merely a slow unit.
    pub fn finding(&self) -> Option<&str> {
        self.artifacts
            .iter()
            .rev()
            .map(String::as_str)
            .find(|path| !file_name(path).starts_with("slow-unit-"))
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Reads libFuzzer's output (with `-print_final_stats=1`).
pub fn parse_output(output: &str) -> Stats {
    let mut stats = Stats::default();
    let mut done_count = None;
    let mut units = None;
    for line in output.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("stat::number_of_executed_units:") {
            units = rest.trim().parse().ok();
        } else if let Some((_, path)) = line.split_once("Test unit written to ") {
            stats.artifacts.push(path.trim().to_owned());
        } else if let Some((count, event)) = status_line(line) {
            if event == "DONE" {
                done_count = Some(count);
                stats.coverage = Some(squeeze(line));
            } else if done_count.is_none() {
                stats.coverage = Some(squeeze(line));
            }
        }
    }
    stats.executions = units.or(done_count);
    stats
}

/// `#1234\tNEW    cov: ..` as its count and event (`NEW`, `REDUCE`, `pulse`, `INITED`, `DONE`...).
fn status_line(line: &str) -> Option<(u64, &str)> {
    let rest = line.strip_prefix('#')?;
    let digits = rest.find(|c: char| !c.is_ascii_digit())?;
    let count = rest[..digits].parse().ok()?;
    let event = rest[digits..].split_whitespace().next()?;
    event
        .chars()
        .all(|c| c.is_ascii_alphabetic())
        .then_some((count, event))
}

/// Runs of white space (libFuzzer aligns its columns with tabs and spaces) as one space.
fn squeeze(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The fuzz targets: the files of `fuzz/fuzz_targets`, sorted.
pub fn targets(root: &Path) -> Result<Vec<String>, String> {
    let dir = root.join(FUZZ_DIR).join("fuzz_targets");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            (path.extension()? == "rs").then(|| path.file_stem()?.to_str().map(str::to_owned))?
        })
        .collect();
    names.sort();
    if names.is_empty() {
        return Err(format!("no fuzz targets in {}", dir.display()));
    }
    Ok(names)
}

/// The arguments of `cargo fuzz run` for `target`: new inputs into `scratch`, the committed seeds read only.
pub fn run_args(target: &str, scratch: &Path, seconds: u64) -> Vec<String> {
    vec![
        "fuzz".into(),
        "run".into(),
        target.into(),
        scratch.display().to_string(),
        format!("{FUZZ_DIR}/corpus/{target}"),
        "--".into(),
        format!("-max_total_time={seconds}"),
        format!("-rss_limit_mb={RSS_LIMIT_MB}"),
        format!("-timeout={INPUT_TIMEOUT_SECONDS}"),
        "-print_final_stats=1".into(),
    ]
}

/// How one target's run ended.
struct Outcome {
    target: String,
    took: Duration,
    status: ExitStatus,
    stats: Stats,
}

impl Outcome {
    fn failed(&self) -> bool {
        !self.status.success() || self.stats.finding().is_some()
    }

    /// `N executions in T  <coverage line>`, and where the failing input went.
    fn describe(&self) -> String {
        let executions = self
            .stats
            .executions
            .map_or_else(|| "? executions".to_owned(), |n| format!("{n} executions"));
        let verdict = match (self.failed(), self.stats.finding()) {
            (false, _) => String::new(),
            (true, Some(input)) => format!("  FAILED, input written to {input}"),
            (true, None) => format!("  FAILED ({})", self.status),
        };
        format!(
            "{executions} in {}  {}{verdict}",
            human(self.took),
            self.stats
                .coverage
                .as_deref()
                .unwrap_or("(no coverage line)")
        )
    }
}

/// Builds and runs every target for `seconds` each; the error names the targets that failed.
pub fn run(seconds: u64) -> Result<(), String> {
    let started = Instant::now();
    let root = workspace_root();
    install_cargo_fuzz(&root)?;
    let targets = targets(&root)?;

    println!("\n==> cargo fuzz build ({})", targets.join(", "));
    let build_started = Instant::now();
    status(
        fuzz_command(&root).args(["fuzz", "build"]),
        "cargo fuzz build",
    )?;
    let build_took = build_started.elapsed();
    println!("==> cargo fuzz build: done in {}", human(build_took));

    let scratch = std::env::temp_dir().join(format!("janitor-fuzz-{}", std::process::id()));
    let outcomes = run_all(&root, &scratch, &targets, seconds);
    let _ = std::fs::remove_dir_all(&scratch);
    let outcomes = outcomes?;

    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| o.failed()).collect();
    println!(
        "\ncargo xtask fuzz: {} in {} (build {}, {seconds} s per target)",
        if failed.is_empty() {
            "passed"
        } else {
            "FAILED"
        },
        human(started.elapsed()),
        human(build_took)
    );
    for outcome in &outcomes {
        println!("  {:<14} {}", outcome.target, outcome.describe());
    }
    if failed.is_empty() {
        return Ok(());
    }
    let problems: Vec<String> = failed
        .iter()
        .map(|o| match o.stats.finding() {
            Some(input) => format!(
                "{} found a failing input, written to {input} (reproduce with \
                 `RUSTC_BOOTSTRAP=1 cargo fuzz run {} {input}`)",
                o.target, o.target
            ),
            None => format!(
                "{} failed ({}) without writing an input",
                o.target, o.status
            ),
        })
        .collect();
    Err(problems.join("; "))
}

fn run_all(
    root: &Path,
    scratch: &Path,
    targets: &[String],
    seconds: u64,
) -> Result<Vec<Outcome>, String> {
    let mut outcomes = Vec::new();
    for target in targets {
        let corpus: PathBuf = scratch.join(target);
        std::fs::create_dir_all(&corpus).map_err(|e| format!("{}: {e}", corpus.display()))?;
        println!("\n==> fuzz {target} for {seconds} s");
        let start = Instant::now();
        let (status, output) = capture(
            fuzz_command(root).args(run_args(target, &corpus, seconds)),
            target,
        )?;
        let outcome = Outcome {
            target: target.clone(),
            took: start.elapsed(),
            status,
            stats: parse_output(&output),
        };
        if outcome.failed() {
            print_failure(&output);
        }
        println!("==> fuzz {target}: {}", outcome.describe());
        outcomes.push(outcome);
    }
    Ok(outcomes)
}

/// `cargo` in the repository root, allowed the nightly flags cargo-fuzz passes.
fn fuzz_command(root: &Path) -> Command {
    let mut command = xtask::cargo::command();
    command.current_dir(root).env("RUSTC_BOOTSTRAP", "1");
    command
}

/// Runs `command`, keeping what it printed on both streams (standard error first: libFuzzer's).
fn capture(command: &mut Command, what: &str) -> Result<(ExitStatus, String), String> {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{what}: could not start: {e}"))?;
    let mut stdout = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        bytes
    });
    let mut errors = Vec::new();
    let _ = child.stderr.take().expect("piped").read_to_end(&mut errors);
    let status = child
        .wait()
        .map_err(|e| format!("{what}: could not wait: {e}"))?;
    let out = reader.join().unwrap_or_default();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&errors),
        String::from_utf8_lossy(&out)
    );
    Ok((status, text))
}

/// A failed run's output from where the failure is reported (a panic, a sanitizer or libFuzzer error).
fn print_failure(output: &str) {
    let lines: Vec<&str> = output.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.contains("panicked at") || l.contains("ERROR:"))
        .unwrap_or(lines.len().saturating_sub(FAILURE_LINES));
    for line in lines.iter().skip(start).take(FAILURE_LINES) {
        eprintln!("{line}");
    }
}

/// Installs cargo-fuzz with `cargo install --locked` unless `cargo fuzz --version` already works.
fn install_cargo_fuzz(root: &Path) -> Result<(), String> {
    let present = xtask::cargo::command()
        .args(["fuzz", "--version"])
        .current_dir(root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if present {
        return Ok(());
    }
    println!("\n==> cargo install cargo-fuzz --locked (cargo fuzz is missing)");
    status(
        xtask::cargo::command()
            .args(["install", "cargo-fuzz", "--locked"])
            .current_dir(root),
        "cargo install cargo-fuzz",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The end of a run that found nothing, as libFuzzer prints it with `-print_final_stats=1`.
    const CLEAN: &str = "INFO: Running with entropic power schedule (0xFF, 100).
INFO: Seed: 1234567
INFO: Loaded 1 modules   (23412 inline 8-bit counters): 23412 [0x5a, 0x5b),
INFO:       10 files found in fuzz/corpus/payload
#10\tINITED cov: 2477 ft: 4014 corp: 9/2603b exec/s: 0 rss: 43Mb
#11\tNEW    cov: 2480 ft: 4020 corp: 10/2700b lim: 1175 exec/s: 0 rss: 43Mb L: 97/1175 MS: 1 ChangeBit-
#262144\tpulse  cov: 2601 ft: 5120 corp: 310/40Kb lim: 1175 exec/s: 87381 rss: 210Mb
#1402336\tDONE   cov: 2650 ft: 5377 corp: 402/61Kb lim: 4096 exec/s: 22989 rss: 402Mb
Done 1402336 runs in 61 second(s)
stat::number_of_executed_units: 1402336
stat::average_exec_per_sec:     22989
stat::new_units_added:          1203
stat::slowest_unit_time_sec:    0
stat::peak_rss_mb:              402
";

    #[test]
    fn a_clean_run_gives_its_executions_and_final_coverage_line() {
        let stats = parse_output(CLEAN);
        assert_eq!(stats.executions, Some(1_402_336));
        assert_eq!(
            stats.coverage.as_deref(),
            Some("#1402336 DONE cov: 2650 ft: 5377 corp: 402/61Kb lim: 4096 exec/s: 22989 rss: 402Mb")
        );
        assert!(stats.artifacts.is_empty());
        assert_eq!(stats.finding(), None);
    }

    #[test]
    fn without_final_stats_the_done_line_counts_the_executions() {
        let text: String = CLEAN
            .lines()
            .filter(|l| !l.starts_with("stat::"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(parse_output(&text).executions, Some(1_402_336));
    }

    #[test]
    fn a_crash_names_its_input_and_keeps_the_last_coverage_line() {
        let text = "#10\tINITED cov: 235 ft: 327 corp: 6/452b exec/s: 0 rss: 36Mb
#2048\tpulse  cov: 240 ft: 400 corp: 8/500b lim: 125 exec/s: 1024 rss: 37Mb
thread '<unnamed>' panicked at fuzz_targets/cookie.rs:40:5:
malformed id
==4242== ERROR: libFuzzer: deadly signal
MS: 2 InsertByte-CopyPart-; base unit: 0123abcd
artifact_prefix='/src/janitor/fuzz/artifacts/cookie/'; Test unit written to /src/janitor/fuzz/artifacts/cookie/crash-5f3a
Base64: X192aXNpdG9yPQ==
stat::number_of_executed_units: 2111
stat::average_exec_per_sec:     1055
";
        let stats = parse_output(text);
        assert_eq!(stats.executions, Some(2111));
        assert_eq!(
            stats.coverage.as_deref(),
            Some("#2048 pulse cov: 240 ft: 400 corp: 8/500b lim: 125 exec/s: 1024 rss: 37Mb")
        );
        assert_eq!(
            stats.finding(),
            Some("/src/janitor/fuzz/artifacts/cookie/crash-5f3a")
        );
    }

    #[test]
    fn a_slow_unit_alone_is_no_finding() {
        let text = "artifact_prefix='fuzz/artifacts/payload/'; Test unit written to fuzz/artifacts/payload/slow-unit-9e
#99\tDONE   cov: 1 ft: 1 corp: 1/1b lim: 4 exec/s: 1 rss: 30Mb
";
        let stats = parse_output(text);
        assert_eq!(stats.artifacts, ["fuzz/artifacts/payload/slow-unit-9e"]);
        assert_eq!(stats.finding(), None);
        assert_eq!(stats.executions, Some(99));
        let text = format!("{text}artifact_prefix='x/'; Test unit written to x/timeout-77\n");
        assert_eq!(parse_output(&text).finding(), Some("x/timeout-77"));
    }

    #[test]
    fn no_libfuzzer_output_gives_nothing() {
        let stats = parse_output("error: could not compile `janitor-fuzz`\n#[derive(Debug)]\n");
        assert_eq!(stats, Stats::default());
    }

    #[test]
    fn seconds_come_from_the_arguments() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_args(&args(&[])), Ok(DEFAULT_SECONDS));
        assert_eq!(parse_args(&args(&["--seconds", "5"])), Ok(5));
        assert_eq!(parse_args(&args(&["--seconds=300"])), Ok(300));
        assert!(parse_args(&args(&["--seconds", "0"])).is_err());
        assert!(parse_args(&args(&["--seconds", "1.5"])).is_err());
        assert!(parse_args(&args(&["--seconds"])).is_err());
        assert!(parse_args(&args(&["payload"])).is_err());
    }

    #[test]
    fn new_inputs_go_to_the_scratch_directory_given_first() {
        let args = run_args("cookie", Path::new("/tmp/scratch/cookie"), 60);
        assert_eq!(
            args[..6],
            [
                "fuzz",
                "run",
                "cookie",
                "/tmp/scratch/cookie",
                "fuzz/corpus/cookie",
                "--"
            ]
        );
        assert!(args.contains(&"-max_total_time=60".to_owned()));
        assert!(args.contains(&"-rss_limit_mb=2048".to_owned()));
        assert!(args.contains(&"-print_final_stats=1".to_owned()));
    }

    #[test]
    fn every_target_has_a_seed_corpus() {
        let root = workspace_root();
        let names = targets(&root).unwrap();
        for expected in ["cookie", "jev_answer", "payload", "quota_config"] {
            assert!(names.iter().any(|n| n == expected), "{names:?}");
        }
        for name in names {
            let seeds = std::fs::read_dir(root.join(FUZZ_DIR).join("corpus").join(&name))
                .unwrap()
                .count();
            assert!((1..=20).contains(&seeds), "{name}: {seeds} seeds");
        }
    }
}
