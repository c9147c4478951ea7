//! The known visitors of the HTTP runs and their cookie file: browser `n` of the library's test population,
//! seeded by `COPY` with one observation, and a line `visitor-id<TAB>payload-json` that makes a request with
//! cookie `__visitor=<id>` and that payload a cookie-path identification of a known browser.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use janitor_sql::testing::population;
use serde_json::{json, Value};

use super::{guarded, now_ms, pg};
use crate::capacity::env::CapacityEnv;
use crate::capacity::Target;

/// Observations seeded per known visitor.
const OBSERVATIONS_PER_VISITOR: u64 = 1;

/// Seeds the visitors (or finds them, with `JANITOR_BENCHMARK_REUSE=1`) and writes the cookie file.
pub async fn visitors(target: &Target, env: &CapacityEnv, cookies: &Path) -> Result<Value, String> {
    let started = Instant::now();
    let database = target.database(2)?;
    let ids: Vec<String> = (1..=env.visitors)
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
    let reused = env.reuse && present as u64 == env.visitors;
    if !reused {
        if present > 0 {
            // Part of an earlier fixture (a reused schema with another visitor count): start again.
            client
                .execute("DELETE FROM visitors WHERE id = ANY($1)", &[&ids])
                .await
                .map_err(|e| format!("visitors: removing an incomplete fixture: {}", pg(&e)))?;
        }
        drop(client);
        let (db, count, now) = (database.clone(), env.visitors, now_ms());
        guarded("seeding the known visitors", async move {
            population::seed(&db, count, OBSERVATIONS_PER_VISITOR, now).await
        })
        .await?;
    }
    write_cookies(cookies, env.visitors)?;
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "visitors: {} known visitors {} in {seconds:.1} s; cookies in {}",
        env.visitors,
        if reused { "reused" } else { "seeded" },
        cookies.display()
    );
    Ok(json!({
        "visitors": env.visitors,
        "observations_per_visitor": OBSERVATIONS_PER_VISITOR,
        "seconds": (seconds * 100.0).round() / 100.0,
        "reused": reused,
    }))
}

/// Writes the cookie file of browsers `1..=visitors` of the test population: one line per visitor, its id, a
/// tab, and its payload as compact JSON.
pub fn write_cookies(path: &Path, visitors: u64) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("writing {}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(fail)?;
    let mut out = std::io::BufWriter::new(file);
    for n in 1..=visitors {
        writeln!(
            out,
            "{}\t{}",
            population::visitor(n).as_str(),
            population::payload_json(n)
        )
        .map_err(fail)?;
    }
    out.flush().map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_is_an_id_a_tab_and_the_seeded_payload() {
        let path = std::env::temp_dir().join(format!("cookies-test-{}.tsv", std::process::id()));
        write_cookies(&path, 3).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        for (n, line) in (1..).zip(lines) {
            let (id, payload) = line.split_once('\t').expect("a tab");
            assert_eq!(id, population::visitor(n).as_str());
            let parsed: Value = serde_json::from_str(payload).expect("JSON");
            assert_eq!(parsed, population::payload_json(n));
            assert!(!payload.contains('\t') && !payload.contains('\n'));
        }
    }
}
