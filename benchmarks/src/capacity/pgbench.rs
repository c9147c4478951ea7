//! Running `pgbench` against the run's schema, for the workloads that compare the library with the database's
//! own limit: the script's variables, one run with its transaction log, and what pgbench printed. The cookie-path
//! replay (`throughput::pgbench`) and the evidence statements (`security::statements`) both use it.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use super::Target;

/// What one parameter of a statement becomes in a pgbench script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Argument<'a> {
    /// The pgbench variable of this name (`:name`).
    Variable(&'a str),
    /// SQL `NULL`: pgbench variables cannot hold one.
    Null,
    /// An SQL expression, written in place of the parameter (for a value the statement resolves itself).
    Sql(&'a str),
}

/// Rewrites `$1`, `$2`, … of `sql` as the pgbench variables `names[0]`, `names[1]`, …; refuses a statement
/// with a colon (pgbench would read it as a variable) or a parameter without a name.
pub fn with_variables(sql: &str, names: &[&str]) -> Result<String, String> {
    if sql.contains(':') {
        return Err(format!(
            "a statement with ':' cannot run in pgbench: {sql:.80}"
        ));
    }
    let arguments: Vec<Argument> = names.iter().map(|n| Argument::Variable(n)).collect();
    with_arguments(sql, &arguments)
}

/// Rewrites `$1`, `$2`, … of `sql` as `arguments[0]`, `arguments[1]`, …. Casts (`::`) stay, as pgbench reads
/// them as casts; a single colon is refused (pgbench would read it as a variable), and so is a parameter
/// without an argument.
pub fn with_arguments(sql: &str, arguments: &[Argument]) -> Result<String, String> {
    let mut out = String::with_capacity(sql.len() + 64);
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ':' {
            if chars.next_if_eq(&':').is_none() {
                return Err(format!(
                    "a statement with a lone ':' cannot run in pgbench: {sql:.80}"
                ));
            }
            out.push_str("::");
            continue;
        }
        if c != '$' || !chars.peek().is_some_and(char::is_ascii_digit) {
            out.push(c);
            continue;
        }
        let mut number = 0usize;
        while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
            number = number * 10 + d as usize;
            chars.next();
        }
        match number.checked_sub(1).and_then(|i| arguments.get(i)) {
            Some(Argument::Variable(name)) => {
                out.push(':');
                out.push_str(name);
            }
            Some(Argument::Null) => out.push_str("NULL"),
            Some(Argument::Sql(expression)) => out.push_str(expression),
            None => return Err(format!("parameter ${number} has no variable")),
        }
    }
    Ok(out)
}

/// What pgbench printed that the report uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    /// Transactions processed.
    pub transactions: u64,
    /// Failed transactions (PostgreSQL 15's pgbench prints them; 0 when not printed).
    pub failed: u64,
    /// Transactions per second, without the time to connect.
    pub tps: f64,
    /// Average latency in ms.
    pub latency_average_ms: Option<f64>,
    /// Average latency of each script line in ms, with the line (from `-r`).
    pub statements: Vec<(f64, String)>,
}

/// Reads pgbench's summary; fails, quoting it, when the figures it needs are missing.
pub fn parse(stdout: &str) -> Result<Output, String> {
    let value_after = |prefix: &str| {
        stdout.lines().find_map(|l| {
            l.trim()
                .strip_prefix(prefix)
                .and_then(|rest| rest.split_whitespace().next())
        })
    };
    let missing = |what: &str| format!("pgbench printed no {what}:\n{stdout}");
    let transactions = value_after("number of transactions actually processed:")
        .and_then(|v| v.split('/').next()?.parse().ok())
        .ok_or_else(|| missing("transaction count"))?;
    let failed = value_after("number of failed transactions:")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    // Older versions print two tps lines; the one without connection time is the comparable one.
    let tps_lines: Vec<&str> = stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("tps = "))
        .collect();
    let tps_line = tps_lines
        .iter()
        .find(|l| l.contains("without") || l.contains("excluding"))
        .or(tps_lines.first())
        .ok_or_else(|| missing("tps"))?;
    let tps = tps_line["tps = ".len()..]
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| missing("readable tps"))?;
    let latency_average_ms = value_after("latency average =").and_then(|v| v.parse().ok());
    let mut statements = Vec::new();
    let mut in_statements = false;
    for line in stdout.lines() {
        if line.starts_with("statement latencies in milliseconds") {
            in_statements = true;
            continue;
        }
        if !in_statements {
            continue;
        }
        let mut words = line.split_whitespace().peekable();
        let Some(ms) = words.next().and_then(|w| w.parse::<f64>().ok()) else {
            break;
        };
        // PostgreSQL 15 adds a failure count after the latency.
        if words.peek().is_some_and(|w| w.parse::<u64>().is_ok()) {
            words.next();
        }
        let command: String = words.collect::<Vec<_>>().join(" ");
        statements.push((ms, command.chars().take(70).collect()));
    }
    Ok(Output {
        transactions,
        failed,
        tps,
        latency_average_ms,
        statements,
    })
}

/// Latencies of a pgbench transaction log (`-l`): the third field of each line, in microseconds.
pub fn log_latencies(log: &str) -> Vec<Duration> {
    log.lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .map(Duration::from_micros)
        .collect()
}

/// pgbench's version line; a clear refusal when it is not installed.
pub async fn version() -> Result<String, String> {
    let output = Command::new("pgbench")
        .arg("--version")
        .output()
        .await
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "pgbench is not installed (it comes with the PostgreSQL \
                 client programs, e.g. the postgresql-client package); the database-limit comparison \
                 needs it"
                .to_owned(),
            _ => format!("running pgbench --version: {e}"),
        })?;
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// One pgbench run's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// What pgbench printed.
    pub output: Output,
    /// Every transaction's latency, from its log.
    pub latencies: Vec<Duration>,
}

/// Runs `pgbench` once with `args` against the run's schema and reads its summary and its transaction logs
/// (the `-l` files named `log_prefix*`, removed afterwards so the next run starts clean).
pub async fn run(args: &[String], target: &Target, log_prefix: &Path) -> Result<Round, String> {
    let output = Command::new("pgbench")
        .args(args)
        .arg(&target.url)
        .env("PGOPTIONS", format!("-c search_path={}", target.schema))
        .stdin(Stdio::null())
        .output()
        .await
        .map_err(|e| format!("running pgbench: {e}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(format!(
            "pgbench failed ({}):\n{}\n{stdout}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    let output = parse(&stdout)?;
    // One log per pgbench thread, named after the prefix.
    let dir = log_prefix.parent().unwrap_or(Path::new("."));
    let prefix = log_prefix
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let entries = std::fs::read_dir(dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    let mut latencies = Vec::new();
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let log = std::fs::read_to_string(entry.path()).unwrap_or_default();
            latencies.extend(log_latencies(&log));
            let _ = std::fs::remove_file(entry.path());
        }
    }
    Ok(Round { output, latencies })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_become_variables() {
        assert_eq!(
            with_variables(
                "SELECT $1, $2 WHERE a = $1 LIMIT $10",
                &["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
            ),
            Ok("SELECT :a, :b WHERE a = :a LIMIT :j".to_owned())
        );
        assert!(with_variables("SELECT $2", &["a"])
            .unwrap_err()
            .contains("$2"));
        assert!(with_variables("SELECT $0", &["a"]).is_err());
        assert!(with_variables("SELECT x::int", &[]).is_err());
        assert_eq!(
            with_variables("SELECT '$'", &[]),
            Ok("SELECT '$'".to_owned())
        );
    }

    #[test]
    fn arguments_keep_casts_and_write_nulls() {
        use Argument::{Null, Variable};
        assert_eq!(
            with_arguments(
                "SELECT $1::text, $2, ARRAY[$3::text] WHERE x = $1",
                &[Variable("a"), Null, Variable("c")]
            ),
            Ok("SELECT :a::text, NULL, ARRAY[:c::text] WHERE x = :a".to_owned())
        );
        assert!(with_arguments("SELECT $1 :x", &[Variable("a")])
            .unwrap_err()
            .contains("lone ':'"));
        assert!(with_arguments("SELECT 1:", &[]).is_err());
        assert!(with_arguments("SELECT $2", &[Null])
            .unwrap_err()
            .contains("$2"));
        // The stricter form still refuses every colon.
        assert!(with_variables("SELECT $1::text", &["a"]).is_err());
    }

    #[test]
    fn reads_pgbench_15_output() {
        let out = "pgbench (15.20 (Debian 15.20-0+deb12u1))\n\
            transaction type: identify.pgbench\n\
            scaling factor: 1\n\
            query mode: prepared\n\
            number of clients: 8\n\
            number of threads: 2\n\
            maximum number of tries: 1\n\
            duration: 2 s\n\
            number of transactions actually processed: 6843\n\
            number of failed transactions: 0 (0.000%)\n\
            latency average = 2.333 ms\n\
            initial connection time = 10.113 ms\n\
            tps = 3427.940785 (without initial connection time)\n\
            statement latencies in milliseconds and failures:\n\
            \x20        0.002           0  \\set n random(1, 10000)\n\
            \x20        0.480           0  SELECT visitor_id, platform FROM capacity_cookies WHERE n = :n\n\
            \x20        1.100           0  INSERT INTO observations\n";
        let o = parse(out).unwrap();
        assert_eq!((o.transactions, o.failed), (6843, 0));
        assert_eq!(o.tps, 3427.940785);
        assert_eq!(o.latency_average_ms, Some(2.333));
        assert_eq!(o.statements.len(), 3);
        assert_eq!(o.statements[1].0, 0.48);
        assert!(o.statements[1].1.starts_with("SELECT visitor_id"));
    }

    #[test]
    fn reads_older_output_and_refuses_garbage() {
        let out = "number of transactions actually processed: 100/100\n\
            tps = 90.0 (including connections establishing)\n\
            tps = 95.5 (excluding connections establishing)\n";
        let o = parse(out).unwrap();
        assert_eq!(
            (o.transactions, o.tps, o.latency_average_ms),
            (100, 95.5, None)
        );
        assert!(parse("connection refused")
            .unwrap_err()
            .contains("transaction count"));
        assert!(parse("number of transactions actually processed: 5\n")
            .unwrap_err()
            .contains("tps"));
        assert_eq!(
            log_latencies(
                "0 1 1534 0 1712345678 123\n1 1 failed 0 1712345678 124\n2 1 250 0 1 2\n"
            ),
            [Duration::from_micros(1534), Duration::from_micros(250)]
        );
    }
}
