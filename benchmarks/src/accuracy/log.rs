//! The visit log: one identification per line, in time order, as the population generator writes it
//! (`benchmarks/accuracy/README.md` gives every field).

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::net::IpAddr;
use std::path::Path;

use janitor_core::identification::payload::ExtendedSignals;
use janitor_core::VisitorPayload;
use serde::Deserialize;
use serde_json::Value;

/// One visit of the log.
#[derive(Debug, Clone)]
pub struct Visit {
    /// When it happened, epoch milliseconds.
    pub at_ms: i64,
    /// The device that made it.
    pub device: u64,
    /// Its device class (`ios`, `android`, `windows`, `macos`, `linux`).
    pub class: String,
    /// Which visit of this device it is; 0 is the first.
    pub index: u64,
    /// In the partial-loss scenario, this returning visit comes without its cookie.
    pub lost: bool,
    /// What changed since the device's previous visit.
    pub drift: Vec<String>,
    /// The identify payload the browser sent.
    pub payload: VisitorPayload,
    /// The address the visit came from, in logs made with the generator's network model.
    pub address: Option<IpAddr>,
    /// The extended client signals the browser would send, in logs made with the generator's `--extended`.
    pub extended: Option<ExtendedSignals>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    t: i64,
    d: u64,
    cls: String,
    i: u64,
    lost: bool,
    drift: Vec<String>,
    p: Value,
    #[serde(default)]
    ip: Option<IpAddr>,
    #[serde(default)]
    x: Option<Value>,
}

/// Reads a whole log, gzip-compressed when its name ends in `.gz`. A line that does not parse, a payload the
/// endpoint would refuse, or a visit out of time order is an error naming the line.
pub fn read(path: &Path) -> Result<Vec<Visit>, String> {
    let file = File::open(path).map_err(|e| format!("opening {}: {e}", path.display()))?;
    let reader: Box<dyn Read> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(flate2::read::GzDecoder::new(file))
    } else {
        Box::new(file)
    };
    parse(BufReader::new(reader)).map_err(|e| format!("{}: {e}", path.display()))
}

/// Parses log lines from `reader` (blank lines are skipped).
pub fn parse(reader: impl BufRead) -> Result<Vec<Visit>, String> {
    let mut visits: Vec<Visit> = Vec::new();
    for (number, line) in reader.lines().enumerate() {
        let number = number + 1;
        let line = line.map_err(|e| format!("line {number}: {e}"))?;
        if line.trim().is_empty() {
            continue;
        }
        let raw: Line = serde_json::from_str(&line).map_err(|e| format!("line {number}: {e}"))?;
        let payload = VisitorPayload::from_value(&raw.p)
            .map_err(|e| format!("line {number}: invalid payload: {e}"))?;
        let extended = raw
            .x
            .as_ref()
            .map(ExtendedSignals::from_value)
            .transpose()
            .map_err(|e| format!("line {number}: invalid extended signals: {e}"))?;
        if visits.last().is_some_and(|last| last.at_ms > raw.t) {
            return Err(format!("line {number}: visits are not in time order"));
        }
        visits.push(Visit {
            at_ms: raw.t,
            device: raw.d,
            class: raw.cls,
            index: raw.i,
            lost: raw.lost,
            drift: raw.drift,
            payload,
            address: raw.ip,
            extended,
        });
    }
    if visits.is_empty() {
        return Err("the log holds no visit".to_owned());
    }
    Ok(visits)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: &str = r#"{"t":10,"d":3,"cls":"ios","i":0,"lost":false,"drift":[],"p":{"signals":{"timezone":"Europe/Paris"}}}"#;

    #[test]
    fn reads_lines_and_refuses_bad_ones() {
        let visits =
            parse(format!("{LINE}\n\n{}\n", LINE.replace(r#""t":10"#, r#""t":11"#)).as_bytes())
                .unwrap();
        assert_eq!(visits.len(), 2);
        assert_eq!((visits[0].device, visits[0].class.as_str()), (3, "ios"));
        assert_eq!(visits[0].address, None);
        let from = LINE.replace(r#""i":0"#, r#""i":0,"ip":"2a00:1:2::9""#);
        let visits = parse(from.as_bytes()).unwrap();
        assert_eq!(visits[0].address, Some("2a00:1:2::9".parse().unwrap()));
        let nowhere = LINE.replace(r#""i":0"#, r#""i":0,"ip":"300.1.1.1""#);
        assert!(parse(nowhere.as_bytes())
            .unwrap_err()
            .starts_with("line 1:"));
        let set_up = LINE.replace(r#""i":0"#, r#""i":0,"x":{"intl":{"hourCycle":"h23"}}"#);
        let visits = parse(set_up.as_bytes()).unwrap();
        let extended = visits[0].extended.as_ref().unwrap();
        assert_eq!(extended.hour_cycle.as_deref(), Some("h23"));
        let bad = LINE.replace(r#""i":0"#, r#""i":0,"x":{"intl":{"hourCycle":"h13"}}"#);
        assert!(parse(bad.as_bytes())
            .unwrap_err()
            .starts_with("line 1: invalid extended signals"));
        let late = format!("{LINE}\n{}", LINE.replace(r#""t":10"#, r#""t":9"#));
        assert!(parse(late.as_bytes())
            .unwrap_err()
            .contains("line 2: visits are not in time order"));
        let bad_payload = LINE.replace(r#""timezone""#, r#""nonsense""#);
        assert!(parse(bad_payload.as_bytes())
            .unwrap_err()
            .contains("line 1: invalid payload"));
        let extra = LINE.replace(r#""i":0"#, r#""i":0,"x":1"#);
        assert!(parse(extra.as_bytes()).unwrap_err().starts_with("line 1:"));
        assert_eq!(
            parse("\n".as_bytes()).unwrap_err(),
            "the log holds no visit"
        );
    }
}
