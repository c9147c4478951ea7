//! The database's own limit for the cookie path: `pgbench` running the statements of one cookie-path
//! identification, prepared, at the concurrency the database sees from the fleet, against the same schema and
//! visitors. Two scripts, run side by side: the current design's one statement (the history read that refreshes
//! an identical newest observation and touches the visitor) and the previous design's two (the history read, then
//! save + prune + touch), so the report can say what the change bought on the database alone.
//!
//! pgbench cannot read the cookie file, so the run's schema gets a helper table `capacity_cookies` (the
//! fixture's visitors and their observation columns). The two designs' scripts first pick a visitor there in a
//! round trip of their own (`Pick::RoundTrip`), which takes close to half of a one-statement transaction; a
//! third script runs the current statement alone (`Pick::InStatement`): pgbench draws a random key, and the
//! statement resolves it itself, in a primary-key read of the helper table inside the same round trip. That
//! third figure is the statement's own limit. The table is dropped afterwards.

use std::path::{Path, PathBuf};
use std::time::Duration;

use janitor_core::identification::config::HISTORY_LIMIT;
use janitor_core::identification::store::{history_limit, REFRESH_INTERVAL_MS};
use janitor_core::{Observation, Retention, VisitorPayload};
use janitor_sql::testing::statements::statement;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::samples::{round1, Latency, LatencyReport};
use crate::capacity::pgbench::{self, Argument};
// The shared pgbench plumbing, under the names this module has always given it.
pub use crate::capacity::pgbench::{log_latencies, parse, version, with_variables, Output, Round};
use crate::capacity::seed::{self, CookieLine};
use crate::capacity::Target;

/// The helper table pgbench picks visitors from.
pub const HELPER_TABLE: &str = "capacity_cookies";

/// How long a statement on the helper table may run: the statement timeout of the run's pools.
const HELPER_TIMEOUT: Duration = Duration::from_secs(120);

/// What each transaction does besides the identification's statements, said in the report.
pub const NOTE: &str = "one transaction = a primary-key lookup in capacity_cookies (a random fixture visitor, its \
     observation columns and the clock, which pgbench cannot provide) + the cookie path's statements with the \
     values the server would bind. pgbench gives each occurrence of a variable its own parameter number, so a \
     statement using $1 three times is prepared with three parameters of equal value.";

/// What the statement-alone script adds to each transaction, said in its report.
pub const NOTE_IN_STATEMENT: &str = "one transaction = the cookie path's statement alone: pgbench draws a random \
     fixture number, and the statement reads the visitor, its observation and the clock from capacity_cookies \
     by primary key in a CTE of its own, in the same round trip; the values it binds are the ones the server \
     would bind.";

/// How a transaction gets the visitor it identifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pick {
    /// A query of the helper table first, in a round trip of its own (`\gset`).
    #[default]
    RoundTrip,
    /// Inside the statement: a CTE reads the helper table by the random key pgbench drew.
    InStatement,
}

impl Pick {
    /// Whether this is the helper round trip, the reports' default (older reports do not name it).
    pub fn is_round_trip(&self) -> bool {
        *self == Pick::RoundTrip
    }
}

/// Which cookie-path statements a replay runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Design {
    /// One statement: the history read that refreshes an identical newest observation and touches the visitor
    /// at most once per refresh interval (the fixture's browsers send what they sent last time).
    Refreshing,
    /// The design before it: the history read, then save + prune + touch on every visit.
    Previous,
}

impl Design {
    /// The name used in file names and the report.
    pub fn as_str(self) -> &'static str {
        match self {
            Design::Refreshing => "refreshing",
            Design::Previous => "previous",
        }
    }
}

/// The visitors of the cookie file, with the columns an identification of each would bind.
#[derive(Debug, Clone, PartialEq)]
pub struct Visitor {
    /// The visitor id of the cookie.
    pub id: String,
    /// Platform, browser, timezone and WebGL renderer of the normalized observation.
    pub columns: [String; 4],
    /// The normalized observation as the store writes it.
    pub observation_json: String,
}

impl Visitor {
    /// The visitor of one line of the cookie file.
    pub fn of_cookie(line: &CookieLine) -> Result<Visitor, String> {
        let (id, payload) = (line.visitor.as_str(), line.payload.as_str());
        let value: Value =
            serde_json::from_str(payload).map_err(|e| format!("cookie payload of {id}: {e}"))?;
        let payload = VisitorPayload::from_value(&value)
            .map_err(|e| format!("cookie payload of {id}: {e}"))?;
        let o = Observation::normalize(&payload.signals, payload.behavior.as_ref());
        let column = |value: Option<&str>, name: &str| {
            value.map(str::to_owned).ok_or_else(|| {
                format!("visitor {id} has no {name}; the pgbench replay needs every column")
            })
        };
        Ok(Visitor {
            id: id.to_owned(),
            columns: [
                column(o.platform.as_deref(), "platform")?,
                column(o.browser.as_deref(), "browser")?,
                column(o.timezone.as_deref(), "timezone")?,
                column(o.webgl_renderer(), "WebGL renderer")?,
            ],
            observation_json: serde_json::to_string(&o).map_err(|e| format!("observation: {e}"))?,
        })
    }
}

/// Creates and fills the helper table in the run's schema; refuses when it exists.
pub async fn create_helper(target: &Target, visitors: &[Visitor]) -> Result<(), String> {
    let client = seed::connect(&target.url, &target.schema, HELPER_TIMEOUT).await?;
    let failed = |e: tokio_postgres::Error| format!("helper table {HELPER_TABLE}: {e}");
    client
        .batch_execute(&format!(
            "CREATE TABLE {HELPER_TABLE} (n int4 PRIMARY KEY, visitor_id text NOT NULL, \
             platform text NOT NULL, browser text NOT NULL, timezone text NOT NULL, \
             webgl_renderer text NOT NULL, signals_json text NOT NULL)"
        ))
        .await
        .map_err(failed)?;
    let n: Vec<i32> = (1..=visitors.len() as i32).collect();
    let ids: Vec<&str> = visitors.iter().map(|v| v.id.as_str()).collect();
    let column =
        |i: usize| -> Vec<&str> { visitors.iter().map(|v| v.columns[i].as_str()).collect() };
    let json: Vec<&str> = visitors
        .iter()
        .map(|v| v.observation_json.as_str())
        .collect();
    client
        .execute(
            &format!(
                "INSERT INTO {HELPER_TABLE} SELECT * FROM unnest($1::int4[], $2::text[], $3::text[], \
                 $4::text[], $5::text[], $6::text[], $7::text[])"
            ),
            &[&n, &ids, &column(0), &column(1), &column(2), &column(3), &json],
        )
        .await
        .map_err(failed)?;
    client
        .batch_execute(&format!("ANALYZE {HELPER_TABLE}"))
        .await
        .map_err(failed)?;
    Ok(())
}

/// Drops the helper table.
pub async fn drop_helper(target: &Target) -> Result<(), String> {
    let client = seed::connect(&target.url, &target.schema, HELPER_TIMEOUT).await?;
    client
        .batch_execute(&format!("DROP TABLE IF EXISTS {HELPER_TABLE}"))
        .await
        .map_err(|e| format!("dropping {HELPER_TABLE}: {e}"))
}

/// The pgbench script of one cookie-path identification over `visitors` fixture visitors, the visitor picked
/// as `pick` says (in the statement: the current design only).
pub fn script(visitors: usize, design: Design, pick: Pick) -> Result<String, String> {
    let retention = Retention::default();
    if pick == Pick::InStatement {
        if design != Design::Refreshing {
            return Err(
                "only the current design's one statement resolves its visitor itself".to_owned(),
            );
        }
        return statement_alone(visitors, -retention.cutoff(0));
    }
    let pick = format!(
        "\\set n random(1, {visitors})\n\
         SELECT visitor_id, platform, browser, timezone, webgl_renderer, signals_json, \
         CAST(extract(epoch FROM clock_timestamp()) * 1000 AS bigint) AS now_ms \
         FROM {HELPER_TABLE} WHERE n = :n \\gset\n\
         \\set cutoff :now_ms - {retention_ms}\n\
         \\set history_limit {limit}\n",
        retention_ms = -retention.cutoff(0),
        limit = history_limit(HISTORY_LIMIT),
    );
    if design == Design::Refreshing {
        // Network evidence and extended signals off, as the benchmarked servers run: no digest, no signals.
        let visit = pgbench::with_arguments(
            statement("visitors.returning_visit"),
            &[
                Argument::Variable("visitor_id"),
                Argument::Variable("now_ms"),
                Argument::Variable("cutoff"),
                Argument::Variable("history_limit"),
                Argument::Variable("refresh"),
                Argument::Variable("signals_json"),
                Argument::Variable("refresh_interval"),
                Argument::Null,
                Argument::Null,
            ],
        )?;
        return Ok(format!(
            "{pick}\\set refresh 1\n\\set refresh_interval {REFRESH_INTERVAL_MS}\n{visit};\n"
        ));
    }
    let history = with_variables(
        statement("visitors.history"),
        &["visitor_id", "cutoff", "history_limit"],
    )?;
    let save = pgbench::with_arguments(
        statement("visitors.save"),
        &[
            Argument::Variable("visitor_id"),
            Argument::Variable("now_ms"),
            Argument::Variable("platform"),
            Argument::Variable("browser"),
            Argument::Variable("timezone"),
            Argument::Variable("webgl_renderer"),
            Argument::Variable("signals_json"),
            Argument::Variable("cutoff"),
            Argument::Variable("keep"),
            Argument::Variable("touch"),
            Argument::Null,
            Argument::Null,
        ],
    )?;
    Ok(format!(
        "{pick}\\set keep {keep}\n\\set touch 1\n{history};\n{save};\n",
        keep = retention.max_per_visitor(),
    ))
}

/// The current design's statement with its visitor, observation and clock resolved inside it.
fn statement_alone(visitors: usize, retention_ms: i64) -> Result<String, String> {
    let cutoff = format!("(SELECT now_ms - {retention_ms} FROM pick)");
    let visit = pgbench::with_arguments(
        statement("visitors.returning_visit"),
        &[
            Argument::Sql("(SELECT visitor_id FROM pick)"),
            Argument::Sql("(SELECT now_ms FROM pick)"),
            Argument::Sql(&cutoff),
            Argument::Variable("history_limit"),
            Argument::Variable("refresh"),
            Argument::Sql("(SELECT signals_json FROM pick)"),
            Argument::Variable("refresh_interval"),
            Argument::Null,
            Argument::Null,
        ],
    )?;
    let rest = visit
        .strip_prefix("WITH ")
        .ok_or("the cookie path's statement no longer starts with WITH")?;
    // The server binds the observation as jsonb and reads the clock once per visit.
    Ok(format!(
        "\\set n random(1, {visitors})\n\\set history_limit {limit}\n\\set refresh 1\n\
         \\set refresh_interval {REFRESH_INTERVAL_MS}\n\
         WITH pick AS MATERIALIZED (SELECT visitor_id, CAST(signals_json AS jsonb) AS signals_json, \
         CAST(extract(epoch FROM statement_timestamp()) * 1000 AS bigint) AS now_ms \
         FROM {HELPER_TABLE} WHERE n = :n), {rest};\n",
        limit = history_limit(HISTORY_LIMIT),
    ))
}

/// What the pgbench runs measured together, as the report gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgbenchReport {
    /// Which statements ran.
    pub design: Design,
    /// How each transaction picked its visitor (absent: a helper round trip, as in older reports).
    #[serde(default, skip_serializing_if = "Pick::is_round_trip")]
    pub pick: Pick,
    /// pgbench's version line.
    pub version: String,
    /// The command, the URL left out.
    pub command: String,
    /// Connections.
    pub clients: usize,
    /// Seconds of each run.
    pub seconds_per_run: u64,
    /// Runs.
    pub runs: usize,
    /// Fixture visitors the script picks from.
    pub visitors: usize,
    /// What each transaction does besides the identification's statements.
    pub note: String,
    /// The script.
    pub script: String,
    /// Transactions of every run.
    pub transactions: u64,
    /// Failed transactions of every run.
    pub failed: u64,
    /// Transactions per second, averaged over the runs, to one decimal.
    pub tps: f64,
    /// Each run's transactions per second.
    pub tps_per_run: Vec<f64>,
    /// Each run's average latency, when pgbench printed it.
    pub latency_average_ms_per_run: Vec<Option<f64>>,
    /// Latency of every logged transaction.
    pub latency_from_log: Option<LatencyReport>,
    /// Each script line's average latency over the runs.
    pub statement_average_ms: Vec<StatementAverage>,
}

/// A script line's average latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementAverage {
    /// Milliseconds, to three decimals.
    pub ms: f64,
    /// The line, cut to 70 characters.
    pub line: String,
}

/// The replay set up for a run: the script written, the command chosen, pgbench's version known.
#[derive(Debug, Clone)]
pub struct Replay {
    design: Design,
    pick: Pick,
    version: String,
    script: String,
    args: Vec<String>,
    log_prefix: PathBuf,
    visitors: usize,
    clients: usize,
    seconds: u64,
}

impl Replay {
    /// Writes the script for `visitors` visitors to `scratch` and checks pgbench is there; each run lasts
    /// `seconds` on `clients` connections.
    pub async fn new(
        (design, pick): (Design, Pick),
        visitors: usize,
        clients: usize,
        seconds: u64,
        scratch: &Path,
    ) -> Result<Replay, String> {
        let version = version().await?;
        let script = script(visitors, design, pick)?;
        let name = match pick {
            Pick::RoundTrip => design.as_str().to_owned(),
            Pick::InStatement => format!("{}-alone", design.as_str()),
        };
        let script_path = scratch.join(format!("identify-{name}.pgbench"));
        std::fs::write(&script_path, &script)
            .map_err(|e| format!("writing {}: {e}", script_path.display()))?;
        let log_prefix = scratch.join(format!("pgbench-identify-{name}"));
        let threads = clients.min(crate::cores()).max(1);
        let args = vec![
            "-n".to_owned(),
            "-M".to_owned(),
            "prepared".to_owned(),
            "-c".to_owned(),
            clients.to_string(),
            "-j".to_owned(),
            threads.to_string(),
            "-T".to_owned(),
            seconds.to_string(),
            "-r".to_owned(),
            "-l".to_owned(),
            format!("--log-prefix={}", log_prefix.display()),
            "-f".to_owned(),
            script_path.display().to_string(),
        ];
        Ok(Replay {
            design,
            pick,
            version,
            script,
            args,
            log_prefix,
            visitors,
            clients,
            seconds,
        })
    }

    /// Runs pgbench once against the run's schema (the helper table must exist).
    pub async fn run(&self, target: &Target) -> Result<Round, String> {
        pgbench::run(&self.args, target, &self.log_prefix).await
    }

    /// What the runs measured together: transactions per second over all of them, latency over every
    /// transaction, each statement's average over the runs, and each run's own figures.
    pub fn report(&self, target: &Target, rounds: &[Round]) -> PgbenchReport {
        let count = rounds.len().max(1) as f64;
        let tps = rounds.iter().map(|r| r.output.tps).sum::<f64>() / count;
        let mut statements: Vec<(f64, String)> = Vec::new();
        for round in rounds {
            for (i, (ms, line)) in round.output.statements.iter().enumerate() {
                match statements.get_mut(i) {
                    Some(total) => total.0 += ms / count,
                    None => statements.push((ms / count, line.clone())),
                }
            }
        }
        let logged = rounds.iter().flat_map(|r| r.latencies.iter().copied());
        PgbenchReport {
            design: self.design,
            pick: self.pick,
            version: self.version.clone(),
            command: format!(
                "PGOPTIONS='-c search_path={}' pgbench {} <url>",
                target.schema,
                self.args.join(" ")
            ),
            clients: self.clients,
            seconds_per_run: self.seconds,
            runs: rounds.len(),
            visitors: self.visitors,
            note: match self.pick {
                Pick::RoundTrip => NOTE,
                Pick::InStatement => NOTE_IN_STATEMENT,
            }
            .to_owned(),
            script: self.script.clone(),
            transactions: rounds.iter().map(|r| r.output.transactions).sum(),
            failed: rounds.iter().map(|r| r.output.failed).sum(),
            tps: round1(tps),
            tps_per_run: rounds.iter().map(|r| round1(r.output.tps)).collect(),
            latency_average_ms_per_run: rounds
                .iter()
                .map(|r| r.output.latency_average_ms)
                .collect(),
            latency_from_log: Latency::of(logged.collect()).map(Latency::report),
            statement_average_ms: statements
                .into_iter()
                .map(|(ms, line)| StatementAverage {
                    ms: (ms * 1000.0).round() / 1000.0,
                    line,
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refreshing_script_replays_its_one_statement_with_every_parameter_named() {
        let s = script(10_000, Design::Refreshing, Pick::RoundTrip).unwrap();
        assert!(s.starts_with("\\set n random(1, 10000)\n"));
        assert!(
            s.contains("\\set refresh 1\n\\set refresh_interval 60000\n"),
            "{s}"
        );
        assert!(!s.contains('$'), "{s}");
        assert!(
            s.contains("= :signals_json - CAST('behavior' AS text)"),
            "{s}"
        );
        assert!(
            s.contains("last_seen_at < CAST(:now_ms AS int8) - CAST(:refresh_interval AS int8)"),
            "{s}"
        );
        assert_eq!(s.matches(";\n").count(), 1, "{s}");
    }

    #[test]
    fn the_previous_script_replays_both_statements_with_every_parameter_named() {
        let s = script(10_000, Design::Previous, Pick::RoundTrip).unwrap();
        assert!(s.starts_with("\\set n random(1, 10000)\n"));
        assert!(s.contains("\\set cutoff :now_ms - 7776000000\n"), "{s}");
        assert!(s.contains("\\set keep 10\n") && s.contains("\\set history_limit 5\n"));
        assert!(!s.contains('$'), "{s}");
        let history = with_variables(
            statement("visitors.history"),
            &["visitor_id", "cutoff", "history_limit"],
        )
        .unwrap();
        assert!(s.contains(&format!("{history};\n")));
        // The save is one call of the function of migration 0005, touch included.
        assert!(s.contains("\\set touch 1\n"), "{s}");
        assert!(
            s.contains(
                "janitor_save_observation(:visitor_id, :now_ms, :platform, :browser, :timezone, \
                 :webgl_renderer, :signals_json, :cutoff, :keep, :touch, NULL, NULL)"
            ),
            "{s}"
        );
        assert_eq!(s.matches(";\n").count(), 2);
    }

    #[test]
    fn the_statement_alone_resolves_its_visitor_in_one_round_trip() {
        let s = script(10_000, Design::Refreshing, Pick::InStatement).unwrap();
        assert!(s.starts_with("\\set n random(1, 10000)\n"), "{s}");
        // One statement, no helper query before it, and no variable pgbench would have to fill from one.
        assert_eq!(s.matches(";\n").count(), 1, "{s}");
        assert!(!s.contains("\\gset") && !s.contains('$'), "{s}");
        for variable in [":visitor_id", ":now_ms", ":cutoff", ":signals_json"] {
            assert!(!s.contains(variable), "{variable} in {s}");
        }
        assert!(
            s.contains("FROM capacity_cookies WHERE n = :n), history AS ("),
            "{s}"
        );
        assert!(
            s.contains("= (SELECT signals_json FROM pick) - CAST('behavior' AS text)"),
            "{s}"
        );
        assert!(s.contains("(SELECT now_ms - 7776000000 FROM pick)"), "{s}");
        assert!(script(10_000, Design::Previous, Pick::InStatement).is_err());
    }

    #[test]
    fn fixture_lines_give_every_column() {
        let n = 7;
        let line = CookieLine {
            visitor: janitor_sql::testing::population::visitor(n)
                .as_str()
                .to_owned(),
            payload: janitor_sql::testing::population::payload_json(n).to_string(),
        };
        let v = Visitor::of_cookie(&line).unwrap();
        let o = janitor_sql::testing::population::observation(n);
        assert_eq!(Some(v.columns[0].as_str()), o.platform.as_deref());
        assert_eq!(v.columns[3], o.webgl_renderer().unwrap());
        let back: Observation = serde_json::from_str(&v.observation_json).unwrap();
        assert_eq!(back.timezone, o.timezone);
        let bad = CookieLine {
            visitor: "vis_x".to_owned(),
            payload: "{\"signals\": 1}".to_owned(),
        };
        assert!(Visitor::of_cookie(&bad).is_err());
    }
}
