//! The evidence statements under `pgbench`, ours beside the reference's, in the same run and on the same
//! fixture as the library's points: recording an event, the sparse velocity read and the hot one.
//!
//! The reference's statements are written here in our own words with the same SQL shape as its PostgreSQL
//! storage at the version of its published optimized run (Holy-Coders/doorman, commit 7bb6445,
//! `packages/storage/postgres/src/evidence.ts`, `putEvent` and `recentEvents`; the Elixir package's
//! `packages/elixir/lib/janitor/evidence.ex` sends the same two): one plain insert whose subject row must exist,
//! and a read of `record->>'type'`. The tables are shared, so both run against the same schema and indexes.
//!
//! pgbench opens one connection per client and cannot pool, so each point runs `min(c, POOL)` clients: the
//! connections the database serves while the library runs c callers over its pool of 8 (the reference's pool
//! was 8 as well). pgbench cannot compute labels either: the sparse and insert scripts first pick a fixture
//! subject in the helper table `capacity_subjects` (one primary-key lookup, the same in both scripts, which
//! also reads the clock for the insert); the hot script needs none.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use janitor_core::evidence::{
    Action, ActivityColumn, EventInput, EventType, IMPLICIT_SUBJECT_KIND,
};
use janitor_sql::testing::statements::{recent_event_types, statement};
use serde::{Deserialize, Serialize};

use super::points::{sign_ins, Workload, EVENT_INSERT, EVENT_INSERT_GROUPED};
use super::POOL;
use crate::capacity::pgbench::{self, with_arguments, Argument, Round};
use crate::capacity::seed::{self, HOT_ACCOUNT, SPARSE_SUBJECTS};

/// The pgbench variables an event insert binds, in the order of our statement's parameters; the reference's
/// statement takes the first 11 (it has no subject kind, the subject must exist already).
const EVENT: [Argument<'static>; 12] = {
    use Argument::{Null, Variable as V};
    [
        V("id"),
        V("scope"),
        V("digest"),
        V("subject_id"),
        Null,
        Null,
        Null,
        V("action"),
        V("now_ms"),
        V("expires_at"),
        V("record"),
        V("kind"),
    ]
};
use crate::capacity::throughput::samples::{round1, Latency, LatencyReport};
use crate::capacity::Target;
use crate::closed_loop::Point;

/// The helper table the scripts pick subjects from.
pub const HELPER_TABLE: &str = "capacity_subjects";

/// Seconds of each pgbench run (each side runs twice per point, A B B A): 3 per 1,000 operations of a library
/// point (`JANITOR_BENCHMARK_SAMPLES`), from 1 to 3 (3 at the default 1,000), so a small run stays small.
pub fn seconds(samples: u64) -> u64 {
    (samples * 3 / 1_000).clamp(1, 3)
}

/// The reference's event insert (its `putEvent`): `$1` id … `$11` record, as ours without the subject rows.
pub const REFERENCE_INSERT_EVENT: &str = "\
INSERT INTO application_events \
  (id, scope, digest, subject_id, session_id, actor_id, visitor_id, action, occurred_at, expires_at, record) \
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb) \
ON CONFLICT (id) DO NOTHING RETURNING id";

/// The reference's activity read by subject and action (its `recentEvents`): `$1` scope, `$2` subject, `$3`
/// window start, `$4` now, `$5` row limit, `$6` action.
pub const REFERENCE_RECENT_TYPES: &str = "\
SELECT record->>'type' AS type FROM application_events \
WHERE scope = $1 AND subject_id = $2 AND occurred_at >= $3 AND occurred_at <= $4 AND expires_at > $4 \
AND action = $6 ORDER BY occurred_at DESC, id DESC LIMIT $5";

/// The three workloads compared, by the name of the library's point.
pub const WORKLOADS: [&str; 3] = [EVENT_INSERT, "velocity-sparse", "velocity-hot"];

/// Whose statements a script runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The library's statements.
    Ours,
    /// The reference's.
    Reference,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Ours => "ours",
            Side::Reference => "reference",
        }
    }
}

/// One pgbench run's figures, as the report gives them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PgbenchPoint {
    /// Transactions per second, to one decimal.
    pub tps: f64,
    /// Transactions.
    pub transactions: u64,
    /// Failed transactions.
    pub failed: u64,
    /// Latency of every logged transaction.
    pub latency: Option<LatencyReport>,
    /// Each script line's average latency in ms (`-r`), with the line cut to 70 characters.
    pub statement_ms: Vec<(f64, String)>,
}

impl PgbenchPoint {
    /// The runs of one side together: tps averaged over them, latency over every logged transaction, each
    /// script line's latency averaged.
    fn of(rounds: Vec<Round>) -> PgbenchPoint {
        let count = rounds.len().max(1) as f64;
        let mut statement_ms: Vec<(f64, String)> = Vec::new();
        for round in &rounds {
            for (i, (ms, line)) in round.output.statements.iter().enumerate() {
                match statement_ms.get_mut(i) {
                    Some(total) => total.0 += ms / count,
                    None => statement_ms.push((ms / count, line.clone())),
                }
            }
        }
        let statement_ms = statement_ms
            .into_iter()
            .map(|(ms, line)| ((ms * 1000.0).round() / 1000.0, line))
            .collect();
        PgbenchPoint {
            tps: round1(rounds.iter().map(|r| r.output.tps).sum::<f64>() / count),
            transactions: rounds.iter().map(|r| r.output.transactions).sum(),
            failed: rounds.iter().map(|r| r.output.failed).sum(),
            latency: Latency::of(rounds.into_iter().flat_map(|r| r.latencies).collect())
                .map(Latency::report),
            statement_ms,
        }
    }
}

/// One workload at one concurrency: the library, and pgbench on both sides' statements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The workload (the library point's name).
    pub workload: String,
    /// Callers of the library's point.
    pub concurrency: u64,
    /// pgbench clients: `min(concurrency, pool)`.
    pub pgbench_clients: usize,
    /// The library's operations per second at this concurrency.
    pub ours: f64,
    /// pgbench on our statements.
    pub pgbench_ours: PgbenchPoint,
    /// pgbench on the reference's statements.
    pub pgbench_reference: PgbenchPoint,
    /// pgbench on ours ÷ pgbench on the reference's, to three decimals.
    pub statements_ratio: f64,
    /// The library ÷ pgbench on the reference's statements, to three decimals.
    pub library_ratio: f64,
    /// For the insert: the library with inserts grouped, operations per second at this concurrency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grouped: Option<f64>,
    /// For the insert: the library with inserts grouped ÷ pgbench on the reference's statement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grouped_ratio: Option<f64>,
}

/// The statement comparison of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatementsReport {
    /// pgbench's version line.
    pub version: String,
    /// The command of one run, the URL, the script and the `-D` values left out.
    pub command: String,
    /// Seconds of each run.
    pub seconds_per_run: u64,
    /// How the scripts differ from the library's work.
    pub note: String,
    /// Every script, by `<workload>/<side>`.
    pub scripts: BTreeMap<String, String>,
    /// Every workload at every concurrency.
    pub comparisons: Vec<Comparison>,
}

/// What the scripts say about how they were made.
const NOTE: &str = "pgbench clients = min(concurrency, 8): the connections the database serves while the \
     library runs that many callers over its pool of 8. The sparse and insert scripts first pick a random \
     fixture subject in capacity_subjects (a primary-key lookup, which also reads the clock), the same in \
     both scripts; the hot script binds constants only. Inserted events carry one representative record and \
     digest; ids are random integers. Each side runs twice per point, in the order A B B A, A changing \
     from one concurrency to the next; tps is the mean of a side's two runs.";

/// The scripts, written, and what each run binds.
pub struct Replay {
    version: String,
    scripts: BTreeMap<String, (PathBuf, String)>,
    defines: Vec<String>,
    scratch: PathBuf,
    seconds: u64,
}

impl Replay {
    /// Writes the six scripts into `scratch` and checks pgbench is installed.
    pub async fn new(workload: &Workload, scratch: &Path) -> Result<Replay, String> {
        let version = pgbench::version().await?;
        let mut scripts = BTreeMap::new();
        for name in WORKLOADS {
            for side in [Side::Ours, Side::Reference] {
                let text = script(name, side, workload)?;
                let path = scratch.join(format!("{name}-{}.pgbench", side.name()));
                std::fs::write(&path, &text)
                    .map_err(|e| format!("writing {}: {e}", path.display()))?;
                scripts.insert(format!("{name}/{}", side.name()), (path, text));
            }
        }
        Ok(Replay {
            version,
            scripts,
            defines: defines(workload)?,
            scratch: scratch.to_owned(),
            seconds: seconds(workload.samples),
        })
    }

    fn args(&self, script: &Path, clients: usize) -> Vec<String> {
        let mut args = command(clients, self.seconds);
        args.extend(
            self.defines
                .iter()
                .flat_map(|d| ["-D".to_owned(), d.clone()]),
        );
        args.push(format!(
            "--log-prefix={}",
            self.scratch.join("pgbench-evidence").display()
        ));
        args.extend(["-f".to_owned(), script.display().to_string()]);
        args
    }

    /// The three workloads at `concurrency`, ours and the reference's twice each in the order A B B A (A is the
    /// reference when `reference_first`), beside the library's `points` of the same concurrency.
    pub async fn compare(
        &self,
        target: &Target,
        concurrency: u64,
        points: &[Point],
        reference_first: bool,
    ) -> Result<Vec<Comparison>, String> {
        let clients = (concurrency as usize).clamp(1, POOL);
        let mut out = Vec::new();
        for name in WORKLOADS {
            // A B B A: a drift of the machine during the four runs weighs on both sides alike.
            let (a, b) = if reference_first {
                (Side::Reference, Side::Ours)
            } else {
                (Side::Ours, Side::Reference)
            };
            let mut rounds: BTreeMap<&str, Vec<Round>> = BTreeMap::new();
            for side in [a, b, b, a] {
                let (path, _) = &self.scripts[&format!("{name}/{}", side.name())];
                let args = self.args(path, clients);
                let round =
                    pgbench::run(&args, target, &self.scratch.join("pgbench-evidence")).await?;
                rounds.entry(side.name()).or_default().push(round);
            }
            let mut figures: BTreeMap<&str, PgbenchPoint> = rounds
                .into_iter()
                .map(|(side, r)| (side, PgbenchPoint::of(r)))
                .collect();
            let (Some(ours_pg), Some(reference)) =
                (figures.remove("ours"), figures.remove("reference"))
            else {
                return Err(format!("{name}: a pgbench side did not run"));
            };
            let rate = |name: &str| points.iter().find(|p| p.name == name).map(|p| p.per_second);
            let library = rate(name).unwrap_or(0.0);
            let grouped = if name == EVENT_INSERT {
                rate(EVENT_INSERT_GROUPED)
            } else {
                None
            };
            let comparison = Comparison {
                workload: name.to_owned(),
                concurrency,
                pgbench_clients: clients,
                ours: round1(library),
                statements_ratio: ratio(ours_pg.tps, reference.tps),
                library_ratio: ratio(library, reference.tps),
                grouped: grouped.map(round1),
                grouped_ratio: grouped.map(|g| ratio(g, reference.tps)),
                pgbench_ours: ours_pg,
                pgbench_reference: reference,
            };
            print(&comparison);
            out.push(comparison);
        }
        Ok(out)
    }

    /// The report of `comparisons`.
    pub fn report(&self, comparisons: Vec<Comparison>) -> StatementsReport {
        StatementsReport {
            version: self.version.clone(),
            command: format!(
                "pgbench {} --log-prefix=<scratch> -D <name>=<value>… -f <script> <url>",
                command(POOL, self.seconds).join(" ")
            ),
            seconds_per_run: self.seconds,
            note: NOTE.to_owned(),
            scripts: self
                .scripts
                .iter()
                .map(|(k, (_, text))| (k.clone(), text.clone()))
                .collect(),
            comparisons,
        }
    }
}

fn command(clients: usize, seconds: u64) -> Vec<String> {
    let threads = clients.min(crate::cores()).max(1);
    [
        "-n",
        "-M",
        "prepared",
        "-c",
        &clients.to_string(),
        "-j",
        &threads.to_string(),
        "-T",
        &seconds.to_string(),
        "-r",
        "-l",
    ]
    .map(str::to_owned)
    .to_vec()
}

fn ratio(ours: f64, reference: f64) -> f64 {
    if reference > 0.0 {
        (ours / reference * 1000.0).round() / 1000.0
    } else {
        0.0
    }
}

fn print(c: &Comparison) {
    println!(
        "{:<31} c={:<4} library {:>8.0}/s  pgbench ({} clients) ours {:>8.1}  reference {:>8.1}  \
         statements {:.3}x  library/reference {:.3}x",
        format!("pgbench {}", c.workload),
        c.concurrency,
        c.ours,
        c.pgbench_clients,
        c.pgbench_ours.tps,
        c.pgbench_reference.tps,
        c.statements_ratio,
        c.library_ratio
    );
    if let (Some(grouped), Some(ratio)) = (c.grouped, c.grouped_ratio) {
        println!(
            "{:<31} c={:<4} library, inserts grouped {grouped:>8.0}/s  grouped/reference {ratio:.3}x",
            "", c.concurrency
        );
    }
}

/// The values every script binds, as `-D name=value`: scope, action, kind, the window, the row limit, the hot
/// subject, and the digest and record of a representative event.
fn defines(workload: &Workload) -> Result<Vec<String>, String> {
    let evidence = &workload.evidence;
    let window = sign_ins(evidence.subject_id(HOT_ACCOUNT)).window();
    let input = EventInput::builder("capacity-pgbench", EventType::LoginAttempt)
        .action(Action::SignIn)
        .subject(seed::sparse_subject(evidence, 0))
        .build()
        .map_err(|e| format!("the representative event: {e}"))?;
    let event = evidence.event_record(&input, workload.fixture_now);
    let record = serde_json::to_string(&event).map_err(|e| format!("event record: {e}"))?;
    if record.contains('=') {
        // `-D name=value` splits at the first `=` only, but a record with one would be unusual enough to check.
        return Err("the representative record contains '='".to_owned());
    }
    Ok(vec![
        format!("scope={}", evidence.scope()),
        "action=sign-in".to_owned(),
        format!("kind={}", IMPLICIT_SUBJECT_KIND.as_str()),
        format!("since={}", workload.fixture_now - window),
        format!("until={}", workload.fixture_now),
        format!("row_limit={}", evidence.config().activity_rows()),
        format!("hot_subject={}", evidence.subject_id(HOT_ACCOUNT).as_str()),
        format!("retention_ms={}", event.expires_at - event.occurred_at),
        format!("digest={}", event.digest),
        format!("record={record}"),
    ])
}

/// The script of `workload` on `side`'s statements.
pub fn script(workload: &str, side: Side, w: &Workload) -> Result<String, String> {
    use Argument::Variable as V;
    let pick = |subjects: u64| {
        format!(
            "\\set n random(0, {})\n\
             SELECT subject_id, CAST(extract(epoch FROM clock_timestamp()) * 1000 AS bigint) AS now_ms \
             FROM {HELPER_TABLE} WHERE n = :n \\gset\n",
            subjects.max(1) - 1
        )
    };
    let read = |subject: &'static str| match side {
        Side::Ours => with_arguments(
            recent_event_types(ActivityColumn::Subject, true),
            &[
                V(subject),
                V("scope"),
                V("since"),
                V("until"),
                V("row_limit"),
                V("action"),
            ],
        ),
        Side::Reference => with_arguments(
            REFERENCE_RECENT_TYPES,
            &[
                V("scope"),
                V(subject),
                V("since"),
                V("until"),
                V("row_limit"),
                V("action"),
            ],
        ),
    };
    Ok(match workload {
        "event-insert" => {
            let insert = match side {
                Side::Ours => with_arguments(statement("evidence.insert_event"), &EVENT)?,
                Side::Reference => with_arguments(REFERENCE_INSERT_EVENT, &EVENT[..11])?,
            };
            format!(
                "{}\\set id random(1, 9000000000000000000)\n\\set expires_at :now_ms + :retention_ms\n{insert};\n",
                pick(SPARSE_SUBJECTS)
            )
        }
        "velocity-sparse" => format!("{}{};\n", pick(w.active_subjects()), read("subject_id")?),
        "velocity-hot" => format!("{};\n", read("hot_subject")?),
        other => return Err(format!("no pgbench script for {other}")),
    })
}

/// Creates and fills the helper table: every sparse subject by its number.
pub async fn create_helper(target: &Target, workload: &Workload) -> Result<(), String> {
    let client = seed::connect(&target.url, &target.schema, Duration::from_secs(120)).await?;
    let failed =
        |e: tokio_postgres::Error| format!("helper table {HELPER_TABLE}: {}", seed::pg(&e));
    client
        .batch_execute(&format!(
            "CREATE TABLE {HELPER_TABLE} (n int4 PRIMARY KEY, subject_id text NOT NULL)"
        ))
        .await
        .map_err(failed)?;
    let n: Vec<i32> = (0..SPARSE_SUBJECTS as i32).collect();
    let subjects: Vec<String> = (0..SPARSE_SUBJECTS)
        .map(|i| {
            seed::sparse_subject(&workload.evidence, i)
                .as_str()
                .to_owned()
        })
        .collect();
    client
        .execute(
            &format!("INSERT INTO {HELPER_TABLE} SELECT * FROM unnest($1::int4[], $2::text[])"),
            &[&n, &subjects],
        )
        .await
        .map_err(failed)?;
    client
        .batch_execute(&format!("ANALYZE {HELPER_TABLE}"))
        .await
        .map_err(failed)
}

/// Drops the helper table.
pub async fn drop_helper(target: &Target) -> Result<(), String> {
    let client = seed::connect(&target.url, &target.schema, Duration::from_secs(120)).await?;
    client
        .batch_execute(&format!("DROP TABLE IF EXISTS {HELPER_TABLE}"))
        .await
        .map_err(|e| format!("dropping {HELPER_TABLE}: {}", seed::pg(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_statements_bind_like_ours() {
        use Argument::Variable as V;
        // The reference's insert binds the first 11 of ours: no subject kind.
        let insert = with_arguments(REFERENCE_INSERT_EVENT, &EVENT[..11]).unwrap();
        assert!(
            insert.contains(":subject_id, NULL, NULL, NULL, :action, :now_ms"),
            "{insert}"
        );
        assert!(insert.ends_with(":record::jsonb) ON CONFLICT (id) DO NOTHING RETURNING id"));
        let read = with_arguments(
            REFERENCE_RECENT_TYPES,
            &[
                V("scope"),
                V("s"),
                V("since"),
                V("until"),
                V("row_limit"),
                V("action"),
            ],
        )
        .unwrap();
        assert!(read.contains("scope = :scope AND subject_id = :s AND occurred_at >= :since"));
        assert!(read.contains("expires_at > :until AND action = :action"));
        assert!(read.ends_with("LIMIT :row_limit"));
        // Ours, as the library sends it, binds into pgbench the same way.
        let ours = with_arguments(statement("evidence.insert_event"), &EVENT).unwrap();
        assert!(
            ours.contains("ARRAY[:subject_id::text, NULL::text]"),
            "{ours}"
        );
        assert!(!ours.contains('$'));
    }

    #[test]
    fn ratios_round_and_survive_a_zero() {
        assert_eq!(ratio(1_500.0, 1_000.0), 1.5);
        assert_eq!(ratio(2.0, 3.0), 0.667);
        assert_eq!(ratio(1.0, 0.0), 0.0);
        assert_eq!(command(1, 5)[4], "1");
        assert_eq!(command(8, 5)[6], crate::cores().min(8).to_string());
        assert_eq!(command(8, 3)[8], "3");
        for (samples, expected) in [
            (100, 1),
            (256, 1),
            (666, 1),
            (667, 2),
            (1_000, 3),
            (10_000, 3),
        ] {
            assert_eq!(seconds(samples), expected, "{samples}");
        }
    }
}
