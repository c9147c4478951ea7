//! The known visitors of the HTTP runs and their cookie file: browser `n` of the library's test population,
//! seeded by `COPY` with one observation, and a line `visitor-id<TAB>payload-json` that makes a request with
//! cookie `__visitor=<id>` and that payload a cookie-path identification of a known browser.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use janitor_core::identification::store::VisitWrite;
use janitor_core::VisitorStore;
use janitor_sql::testing::population;
use janitor_sql::Database;
use serde::{Deserialize, Serialize};

use super::{guarded, now_ms, pg};
use crate::capacity::env::CapacityEnv;
use crate::capacity::Target;

/// Observations seeded per known visitor.
const OBSERVATIONS_PER_VISITOR: u64 = 1;

/// The known visitors of a run, as seeded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VisitorFixture {
    /// Known visitors.
    pub visitors: u64,
    /// Observations seeded per visitor.
    pub observations_per_visitor: u64,
    /// Seconds the seeding (or finding) took, to two decimals.
    pub seconds: f64,
    /// They were found from an earlier run.
    pub reused: bool,
}

/// Seeds the visitors (or finds them, with `JANITOR_BENCHMARK_REUSE=1`) and writes the cookie file.
pub async fn visitors(
    target: &Target,
    env: &CapacityEnv,
    cookies: &Path,
) -> Result<VisitorFixture, String> {
    let started = Instant::now();
    let database = target.database(2)?;
    let reused = known_visitors(&database, env.visitors, env.reuse).await?;
    write_cookies(cookies, env.visitors)?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "visitors: {} known visitors {} in {seconds:.1} s; cookies in {}",
        env.visitors,
        if reused { "reused" } else { "seeded" },
        cookies.display()
    );
    Ok(VisitorFixture {
        visitors: env.visitors,
        observations_per_visitor: OBSERVATIONS_PER_VISITOR,
        seconds: (seconds * 100.0).round() / 100.0,
        reused,
    })
}

/// Seeds browsers `1..=count` of the test population in `database` by `COPY`, one observation each; with
/// `reuse`, keeps them when all are there already. Says whether they were kept.
pub async fn known_visitors(database: &Database, count: u64, reuse: bool) -> Result<bool, String> {
    let ids: Vec<String> = (1..=count)
        .map(|n| population::visitor(n).as_str().to_owned())
        .collect();
    let client = database
        .pool()
        .get()
        .await
        .map_err(|e| format!("visitors: a connection: {e}"))?;
    let present: i64 = client
        .query_one("SELECT count(*) FROM visitors WHERE id = ANY($1)", &[&ids])
        .await
        .map_err(|e| format!("visitors: counting known ones: {}", pg(&e)))?
        .get(0);
    if reuse && present as u64 == count {
        return Ok(true);
    }
    if present > 0 {
        // Part of an earlier fixture (a reused schema with another visitor count): start again.
        client
            .execute("DELETE FROM visitors WHERE id = ANY($1)", &[&ids])
            .await
            .map_err(|e| format!("visitors: removing an incomplete fixture: {}", pg(&e)))?;
    }
    drop(client);
    let (db, now) = (database.clone(), now_ms());
    guarded("seeding the known visitors", async move {
        population::seed(&db, count, OBSERVATIONS_PER_VISITOR, now).await
    })
    .await?;
    Ok(false)
}

/// Records browsers `1..=count` of the test population in `store`, one visit each: what [`known_visitors`]
/// seeds, for a store without `COPY` (the in-memory one).
pub async fn record_visitors(store: &impl VisitorStore, count: u64) -> Result<(), String> {
    let now = now_ms();
    for n in 1..=count {
        let observation = population::observation(n);
        let write = VisitWrite {
            visitor: &population::visitor(n),
            create: true,
            observation: Some(&observation),
            now_ms: now,
        };
        store
            .record_visit(write)
            .await
            .map_err(|e| format!("recording known visitor {n}: {e}"))?;
    }
    Ok(())
}

/// Writes the cookie file of browsers `1..=visitors` of the test population: one line per visitor, its id, a
/// tab, and its payload as compact JSON.
///
/// Another process waits for this file (a load tool, a test), so it is written under a temporary name beside
/// it and renamed once whole: whoever sees the file sees all of it.
pub fn write_cookies(path: &Path, visitors: u64) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("writing {}: {e}", path.display());
    let mut partial = path.as_os_str().to_owned();
    partial.push(format!(".partial-{}", std::process::id()));
    let partial = std::path::PathBuf::from(partial);
    let written = (|| {
        let mut out = std::io::BufWriter::new(std::fs::File::create(&partial)?);
        for n in 1..=visitors {
            writeln!(
                out,
                "{}\t{}",
                population::visitor(n).as_str(),
                population::payload_json(n)
            )?;
        }
        out.flush()?;
        std::fs::rename(&partial, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written.map_err(fail)
}

/// One line of the cookie file: a known visitor and the payload of its seeded observation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CookieLine {
    /// The visitor id its cookie carries.
    pub visitor: String,
    /// Its payload, compact JSON.
    pub payload: String,
}

/// Reads the cookie file [`write_cookies`] wrote; refuses a line without a tab and an empty file.
pub fn read_cookies(path: &Path) -> Result<Vec<CookieLine>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("reading the cookie file {}: {e}", path.display()))?;
    let mut lines = Vec::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.is_empty()) {
        let (visitor, payload) = line
            .split_once('\t')
            .ok_or_else(|| format!("{} line {}: no tab", path.display(), n + 1))?;
        lines.push(CookieLine {
            visitor: visitor.to_owned(),
            payload: payload.to_owned(),
        });
    }
    if lines.is_empty() {
        return Err(format!("the cookie file {} is empty", path.display()));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_never_sees_a_partly_written_cookie_file() {
        const VISITORS: u64 = 20_000;
        let dir = std::env::temp_dir().join(format!("cookies-whole-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cookies.tsv");
        let reader = {
            let path = path.clone();
            std::thread::spawn(move || loop {
                // As a waiting process does: the first moment the file is there, it is read.
                if path.exists() {
                    return read_cookies(&path).map(|lines| lines.len() as u64);
                }
                std::thread::yield_now();
            })
        };
        write_cookies(&path, VISITORS).unwrap();
        let seen = reader.join().unwrap();
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(seen, Ok(VISITORS));
        assert_eq!(left.len(), 1, "only the cookie file, no temporary one");
    }

    #[test]
    fn each_line_is_an_id_a_tab_and_the_seeded_payload() {
        let path = std::env::temp_dir().join(format!("cookies-test-{}.tsv", std::process::id()));
        write_cookies(&path, 3).unwrap();
        let lines = read_cookies(&path).unwrap();
        std::fs::write(&path, "vis_a\t{}\nno tab here\n").unwrap();
        let broken = read_cookies(&path).unwrap_err();
        std::fs::write(&path, "").unwrap();
        let empty = read_cookies(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!(lines.len(), 3);
        for (n, line) in (1..).zip(lines) {
            assert_eq!(line.visitor, population::visitor(n).as_str());
            let parsed: serde_json::Value = serde_json::from_str(&line.payload).expect("JSON");
            assert_eq!(parsed, population::payload_json(n));
            assert!(!line.payload.contains('\t') && !line.payload.contains('\n'));
        }
        assert!(broken.contains("line 2: no tab"), "{broken}");
        assert!(empty.contains("is empty"), "{empty}");
    }
}
