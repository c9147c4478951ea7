//! The run's side of the load processes: starting them and asking them (see [`crate::capacity::load`] for
//! the protocol).

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::capacity::load::{self, Reply};

/// One started load process.
struct LoadProcess {
    source: Ipv4Addr,
    child: Child,
    stdin: ChildStdin,
    replies: Lines<BufReader<ChildStdout>>,
}

/// The load processes of a run, in the order of their index.
pub(super) struct Loads {
    processes: Vec<LoadProcess>,
}

impl Loads {
    /// Starts `count` load processes, the `i`-th on source address `first_source + i`, each spreading its
    /// sockets over all of `servers`.
    pub async fn start(
        binary: &Path,
        cookies: &Path,
        servers: &[SocketAddr],
        count: u64,
        first_source: Ipv4Addr,
    ) -> Result<Loads, String> {
        let list = servers
            .iter()
            .map(SocketAddr::to_string)
            .collect::<Vec<_>>()
            .join(",");
        let mut processes = Vec::new();
        for i in 0..count {
            let source = source(first_source, i)?;
            let mut child = Command::new(binary)
                .arg("load")
                .args(["--source", &source.to_string()])
                .args(["--servers", &list])
                .args(["--cookies", &cookies.to_string_lossy()])
                .args(["--index", &i.to_string()])
                .args(["--processes", &count.to_string()])
                .args(["--concurrency", &load::CONCURRENCY.to_string()])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| format!("starting load process {i}: {e}"))?;
            let stdin = child.stdin.take().expect("stdin was piped");
            let stdout = child.stdout.take().expect("stdout was piped");
            processes.push(LoadProcess {
                source,
                child,
                stdin,
                replies: BufReader::new(stdout).lines(),
            });
        }
        Ok(Loads { processes })
    }

    /// The source address of each process.
    pub fn sources(&self) -> Vec<String> {
        self.processes
            .iter()
            .map(|p| p.source.to_string())
            .collect()
    }

    /// How many processes there are.
    pub fn len(&self) -> usize {
        self.processes.len()
    }

    /// Gives each process its command at once, then waits for every reply (within `deadline` in all): the
    /// processes work side by side.
    pub async fn ask_all(
        &mut self,
        commands: &[load::Command],
        deadline: Duration,
    ) -> Result<Vec<Reply>, String> {
        let until = tokio::time::Instant::now() + deadline;
        for (process, command) in self.processes.iter_mut().zip(commands) {
            process.send(command).await?;
        }
        let mut replies = Vec::with_capacity(self.processes.len());
        for process in &mut self.processes {
            replies.push(process.reply(until, deadline).await?);
        }
        Ok(replies)
    }

    /// The same command to every process.
    pub async fn ask_each(
        &mut self,
        command: load::Command,
        deadline: Duration,
    ) -> Result<Vec<Reply>, String> {
        let commands = vec![command; self.processes.len()];
        self.ask_all(&commands, deadline).await
    }

    /// One command to process `index` alone.
    pub async fn ask(
        &mut self,
        index: usize,
        command: &load::Command,
        deadline: Duration,
    ) -> Result<Reply, String> {
        let until = tokio::time::Instant::now() + deadline;
        let process = &mut self.processes[index];
        process.send(command).await?;
        process.reply(until, deadline).await
    }

    /// Closes their stdin, which ends them, and waits a little; what lingers is killed when dropped.
    pub async fn stop(self) {
        for mut process in self.processes {
            drop(process.stdin);
            let _ = tokio::time::timeout(Duration::from_secs(10), process.child.wait()).await;
        }
    }
}

impl LoadProcess {
    async fn send(&mut self, command: &load::Command) -> Result<(), String> {
        let line = serde_json::to_string(command).map_err(|e| format!("command: {e}"))? + "\n";
        let sent = async {
            self.stdin.write_all(line.as_bytes()).await?;
            self.stdin.flush().await
        };
        match sent.await {
            Ok(()) => Ok(()),
            Err(e) => Err(format!(
                "{}: {e}",
                self.ended("could not be told what to do")
            )),
        }
    }

    async fn reply(
        &mut self,
        until: tokio::time::Instant,
        deadline: Duration,
    ) -> Result<Reply, String> {
        match tokio::time::timeout_at(until, self.replies.next_line()).await {
            Err(_) => Err(format!(
                "the load process on {} did not answer within {} s",
                self.source,
                deadline.as_secs()
            )),
            Ok(Err(e)) => Err(format!("{}: {e}", self.ended("could not be read"))),
            Ok(Ok(None)) => Err(self.ended("ended")),
            Ok(Ok(Some(line))) => serde_json::from_str(&line)
                .map_err(|e| format!("the load process on {} answered {line:?}: {e}", self.source)),
        }
    }

    fn ended(&mut self, what: &str) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(status)) => format!(" ({status})"),
            _ => String::new(),
        };
        format!("the load process on {} {what}{status}", self.source)
    }
}

/// The source address of load process `index`: `first + index`, within 127.0.0.0/8 and short of its
/// broadcast address.
pub(super) fn source(first: Ipv4Addr, index: u64) -> Result<Ipv4Addr, String> {
    let address = u64::from(u32::from(first)) + index;
    let last = u64::from(u32::from(Ipv4Addr::new(127, 255, 255, 254)));
    if !first.is_loopback() || address > last {
        return Err(format!(
            "load process {index} would have no loopback source address after {first}"
        ));
    }
    Ok(Ipv4Addr::from(address as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_are_consecutive_loopback_addresses() {
        let first = Ipv4Addr::new(127, 0, 0, 10);
        assert_eq!(source(first, 0).unwrap(), first);
        assert_eq!(source(first, 250).unwrap(), Ipv4Addr::new(127, 0, 1, 4));
        assert!(source(Ipv4Addr::new(10, 0, 0, 1), 0).is_err());
        assert!(source(Ipv4Addr::new(127, 255, 255, 250), 5).is_err());
    }
}
