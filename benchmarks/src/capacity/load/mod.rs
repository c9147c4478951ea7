//! One load process of the connection workload: `janitor-capacity load --source 127.0.0.X --servers
//! ADDR,ADDR,… --cookies FILE --index I --processes K [--concurrency N]`.
//!
//! It holds up to 18,000 keep-alive sockets, all bound to its own source address and spread evenly over the
//! server ports. It owns that address, so it picks the local ports itself, from [`FIRST_PORT`] up. The run drives it over stdin and
//! stdout, one JSON line per command and one JSON line per reply, in order:
//!
//! | command                                            | what the process does                                  |
//! |----------------------------------------------------|--------------------------------------------------------|
//! | `{"command":"open","sockets":N}`                   | opens sockets until it holds N, at most `--concurrency` connecting at once; each new socket does a warm-up `GET /ready` |
//! | `{"command":"count"}`                              | drops every socket found closed (each is a close) and reports |
//! | `{"command":"steady","requests":N,"seconds":S}`    | sends N identify requests evenly spaced over S seconds (open loop), round-robin over the free sockets |
//! | `{"command":"burst"}`                              | writes one identify request on every socket, then reads every answer |
//! | `{"command":"sequential","requests":N}`            | one identify request at a time on its first N sockets  |
//!
//! Every reply is a [`Reply`]: the counters since the process started, the sockets held, the process's
//! resident memory, how long the command took, and the first problem the command met (`null` when none).
//! Socket `j` of process `I` of `K` is socket `g = j·K + I` of the run: it connects to server `g mod servers`
//! and identifies with cookie `g mod cookies`, so the run's sockets `0..n` are spread evenly whatever the step.
//! The process ends as soon as its stdin closes, even in the middle of a command: the run ended or died.

mod sockets;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::server::client_requests;
use crate::{number, pairs};
use sockets::Sockets;

/// Connects in flight at once per process unless `--concurrency` says otherwise: enough to ramp quickly, few
/// enough that the servers' accept queues (`somaxconn` 4096) do not overflow.
pub const CONCURRENCY: usize = 500;

/// The first local port a load process binds on its source address; it takes the ports from there up, so
/// a process has 32,768 of them, more than the 18,000 sockets it may hold.
pub const FIRST_PORT: u16 = 32_768;

/// A command of the run to a load process (one JSON line).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Command {
    /// Hold `sockets` sockets, opening (and warming up) the missing ones.
    Open {
        /// Sockets to hold afterwards.
        sockets: u64,
    },
    /// Find and drop the sockets that were closed.
    Count,
    /// Open-loop identify requests at an even pace.
    Steady {
        /// Requests to send.
        requests: u64,
        /// Over how many seconds.
        seconds: f64,
    },
    /// One identify request on every socket at once.
    Burst,
    /// Identify requests one after another on the first sockets.
    Sequential {
        /// Requests to send (at most one per socket).
        requests: u64,
    },
}

/// The answer of a load process to one command (one JSON line); counters are totals since it started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// What the process counted.
    #[serde(flatten)]
    pub counters: Counters,
    /// Seconds the command took in the process.
    pub seconds: f64,
    /// The first problem met while doing the command.
    pub problem: Option<String>,
}

/// What a load process counts: in a [`Reply`] totals since it started, in a stage of the connection report the
/// differences over the stage (`open` and `rss_bytes` as they were at its end).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    /// Sockets held and not known to be closed.
    pub open: u64,
    /// Warm-up `GET /ready` answered 200 (one per socket opened).
    pub warmed: u64,
    /// Identify requests sent.
    pub sent: u64,
    /// Identify requests answered 200.
    pub ok: u64,
    /// Identify requests answered 503.
    pub overloaded: u64,
    /// Failures: connects and warm-ups that failed, other statuses, socket errors.
    pub errors: u64,
    /// Sockets the server closed (found closed, or ended while in use, or announced `Connection: close`).
    pub closes: u64,
    /// Resident memory of the load process.
    pub rss_bytes: u64,
}

/// Where a load process connects from and to.
#[derive(Debug, Clone)]
struct Settings {
    source: IpAddr,
    servers: Vec<SocketAddr>,
    cookies: PathBuf,
    index: u64,
    processes: u64,
    concurrency: usize,
}

fn settings(args: Vec<String>) -> Result<Settings, String> {
    let mut source = None;
    let mut servers = Vec::new();
    let mut cookies = None;
    let (mut index, mut processes, mut concurrency) = (0, 1, CONCURRENCY);
    for (name, value) in pairs(args)? {
        match name.as_str() {
            "source" => {
                let ip: IpAddr = value
                    .parse()
                    .map_err(|_| format!("--source must be an IP address, got {value:?}"))?;
                if !ip.is_loopback() {
                    return Err(format!("--source must be a loopback address, got {ip}"));
                }
                source = Some(ip);
            }
            "servers" => {
                for part in value.split(',') {
                    let addr: SocketAddr = part
                        .parse()
                        .map_err(|_| format!("--servers holds a bad address {part:?}"))?;
                    if !addr.ip().is_loopback() {
                        return Err(format!("--servers must be loopback addresses, got {addr}"));
                    }
                    servers.push(addr);
                }
            }
            "cookies" => cookies = Some(PathBuf::from(value)),
            "index" => index = number(&name, &value, 0, 1_000)?,
            "processes" => processes = number(&name, &value, 1, 1_000)?,
            "concurrency" => concurrency = number(&name, &value, 1, 10_000)? as usize,
            other => return Err(format!("unknown option --{other}")),
        }
    }
    let (Some(source), Some(cookies)) = (source, cookies) else {
        return Err("--source, --servers and --cookies are required".to_owned());
    };
    if servers.is_empty() {
        return Err("--servers names no server".to_owned());
    }
    if index >= processes {
        return Err(format!(
            "--index {index} must be below --processes {processes}"
        ));
    }
    Ok(Settings {
        source,
        servers,
        cookies,
        index,
        processes,
        concurrency,
    })
}

/// The identify requests of the cookie fixture as janitor.js sends them: each line's signals with a new
/// behaviour summary on every visit.
fn requests(cookies: &std::path::Path) -> Result<Vec<Arc<[u8]>>, String> {
    let lines = crate::capacity::seed::read_cookies(cookies)?;
    let known = lines
        .iter()
        .map(|line| (line.visitor.as_str(), line.payload.as_str()));
    Ok(client_requests(known)?
        .into_iter()
        .map(Into::into)
        .collect())
}

/// Entry point of `janitor-capacity load …`.
pub fn main(args: Vec<String>) -> Result<(), String> {
    let settings = settings(args)?;
    let requests = requests(&settings.cookies)?;
    // One thread: the process mostly waits on sockets, and the machine's cores are shared with the servers.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?
        .block_on(serve_commands(Sockets::new(settings, requests)))
}

async fn serve_commands(mut sockets: Sockets) -> Result<(), String> {
    let (commands, mut next) = tokio::sync::mpsc::channel::<String>(4);
    // Read stdin on the side so a run that dies ends this process even in the middle of a command.
    tokio::spawn(async move {
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if commands.send(line).await.is_err() {
                break;
            }
        }
        std::process::exit(0);
    });
    while let Some(line) = next.recv().await {
        let started = Instant::now();
        let problem = match serde_json::from_str::<Command>(&line) {
            Ok(command) => {
                sockets.obey(command).await;
                None
            }
            Err(e) => Some(format!("not a command: {line:?} ({e})")),
        };
        let mut reply = sockets.reply();
        reply.seconds = started.elapsed().as_secs_f64();
        reply.problem = problem.or(reply.problem);
        let text = serde_json::to_string(&reply).map_err(|e| format!("reply: {e}"))?;
        // Stdout is line-buffered: the newline sends the reply.
        println!("{text}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::server::BEHAVIOR_VARIANTS;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn commands_and_replies_are_one_line_of_json() {
        let c: Command = serde_json::from_str(r#"{"command":"open","sockets":5}"#).unwrap();
        assert_eq!(c, Command::Open { sockets: 5 });
        let c: Command =
            serde_json::from_str(r#"{"command":"steady","requests":10,"seconds":1.5}"#).unwrap();
        assert_eq!(
            c,
            Command::Steady {
                requests: 10,
                seconds: 1.5
            }
        );
        assert_eq!(
            serde_json::to_string(&Command::Burst).unwrap(),
            r#"{"command":"burst"}"#
        );
        assert!(serde_json::from_str::<Command>(r#"{"command":"dance"}"#).is_err());
        let text = serde_json::to_string(&Reply::default()).unwrap();
        assert!(!text.contains('\n'));
        assert_eq!(
            serde_json::from_str::<Reply>(&text).unwrap(),
            Reply::default()
        );
    }

    #[test]
    fn settings_are_checked() {
        let s = settings(args(
            "--source 127.0.0.10 --servers 127.0.0.1:1,127.0.0.1:2 --cookies c --index 1 --processes 2",
        ))
        .unwrap();
        assert_eq!((s.servers.len(), s.index, s.processes), (2, 1, 2));
        assert_eq!(s.concurrency, CONCURRENCY);
        for bad in [
            "--source 10.0.0.1 --servers 127.0.0.1:1 --cookies c",
            "--source 127.0.0.10 --servers 10.0.0.1:1 --cookies c",
            "--source 127.0.0.10 --servers nowhere --cookies c",
            "--source 127.0.0.10 --cookies c",
            "--source 127.0.0.10 --servers 127.0.0.1:1 --cookies c --index 2 --processes 2",
            "--source 127.0.0.10 --servers 127.0.0.1:1 --cookies c --colour red",
        ] {
            assert!(settings(args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_cookie_file_becomes_identify_requests() {
        let path = std::env::temp_dir().join(format!("load-cookies-{}.tsv", std::process::id()));
        std::fs::write(&path, "vis_a\t{\"signals\":{}}\n\nvis_b\t{}\n").unwrap();
        let r = requests(&path).unwrap();
        // Each visitor in every behaviour variant, every visitor before a repeat.
        assert_eq!(r.len() as u64, 2 * BEHAVIOR_VARIANTS);
        let text = |i: usize| String::from_utf8(r[i].to_vec()).unwrap();
        let (first, again) = (text(0), text(2));
        assert!(first.contains("Cookie: __visitor=vis_a\r\n"), "{first}");
        assert!(again.contains("Cookie: __visitor=vis_a\r\n"), "{again}");
        assert!(first.contains("\"signals\":{}"), "{first}");
        assert!(first.contains("\"behavior\":{"), "{first}");
        assert_ne!(first, again, "another behaviour on the next visit");
        std::fs::write(&path, "no tab here\n").unwrap();
        assert!(requests(&path).unwrap_err().contains("no tab"));
        std::fs::write(&path, "").unwrap();
        assert!(requests(&path).unwrap_err().contains("empty"));
        let _ = std::fs::remove_file(&path);
    }
}
