//! Server processes a test starts that end with the test process, however it ends.
//!
//! A guard that stops its server when dropped covers a test that passes or fails, but not a test process that
//! is interrupted (Ctrl-C, a timeout's SIGKILL): drop never runs. `pg_ctl start` also puts the server in a
//! session of its own, so not even a Ctrl-C reaches it, and it kept running, holding its port and directory.
//!
//! So the server runs under a small shell whose standard input is a pipe from this process. The kernel closes
//! that pipe when this process ends, whatever the signal; the shell then sends the server its stop signal
//! (SIGINT, PostgreSQL's fast shutdown; SIGTERM, PgBouncer's immediate one) and waits for it. The same happens
//! when the shell itself is interrupted. This needs no unsafe code (a parent-death signal would be set between fork and exec, and it
//! fires when the spawning *thread* ends, which a test's thread soon does).

use std::io;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};

/// `bash -c SCRIPT bash LOG SIGNAL PROGRAM ARGS…`: runs the program in the background with its output appended
/// to LOG, and beside it a reader of standard input that sends the program SIGNAL when the pipe closes; the
/// shell forwards SIGNAL when it is told to stop, and exits with the program's status once it has ended. (The
/// reader gets the pipe explicitly: a background job's standard input is otherwise /dev/null.) The shell waits
/// on the program's pid alone: `wait PID` returns a status bash already collected, where `wait -n` would miss a
/// program that ended before it was called and wait for the reader instead.
const SCRIPT: &str = r#"log=$1; signal=$2; shift 2
exec 3<&0
"$@" >>"$log" 2>&1 </dev/null &
server=$!
{ cat <&3 >/dev/null; kill -s "$signal" "$server" 2>/dev/null; } &
reader=$!
exec 3<&-
trap 'kill -s "$signal" "$server" 2>/dev/null' HUP INT TERM
while :; do
  wait "$server"; status=$?
  # A trapped signal ends the wait early; go on waiting while the program stops.
  kill -0 "$server" 2>/dev/null || break
done
kill "$reader" 2>/dev/null
exit "$status""#;

/// The signal that stops a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// SIGINT: PostgreSQL's fast shutdown. A program that sets no handler of its own ignores it here (a
    /// shell starts background programs with SIGINT ignored), so only for programs that do.
    Interrupt,
    /// SIGTERM.
    Terminate,
}

/// A server started by [`command`]'s shell. Dropping it closes the pipe, which stops the server, and waits
/// for the shell.
#[derive(Debug)]
pub struct Tied {
    shell: Child,
    pipe: Option<ChildStdin>,
}

/// The shell's command: `prefix` (empty, or e.g. `runuser -u postgres --`) then the shell, running `program`
/// with output to `log`, stopped with `stop`. The caller adds the program's arguments and calls [`spawn`].
pub fn command(prefix: &[&str], log: &Path, stop: Stop, program: &Path) -> Command {
    let mut command = match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg("bash");
            c
        }
        None => Command::new("bash"),
    };
    let signal = match stop {
        Stop::Interrupt => "INT",
        Stop::Terminate => "TERM",
    };
    command
        .args(["-c", SCRIPT, "bash"])
        .arg(log)
        .arg(signal)
        .arg(program);
    command
}

/// Starts `command` (from [`command`]) with the pipe on its standard input.
pub fn spawn(mut command: Command) -> io::Result<Tied> {
    let mut shell = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let pipe = shell.stdin.take();
    Ok(Tied { shell, pipe })
}

impl Tied {
    /// How the shell ended, if it has (the server exited or could not start).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.shell.try_wait().ok().flatten()
    }

    /// Closes the pipe (the shell stops the server if it still runs) and waits for the shell.
    pub fn end(&mut self) {
        self.pipe = None;
        let _ = self.shell.wait();
    }
}

impl Drop for Tied {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn alive(pid: &str) -> bool {
        Path::new("/proc").join(pid).exists()
            && !std::fs::read_to_string(Path::new("/proc").join(pid).join("stat"))
                .unwrap_or_default()
                .contains(") Z ")
    }

    /// The program's pid, once the shell's background job has written it.
    fn pid_of(file: &Path) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(pid) = std::fs::read_to_string(file) {
                if !pid.trim().is_empty() {
                    return pid.trim().to_owned();
                }
            }
            assert!(Instant::now() < deadline, "the program did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn started(dir: &Path) -> (Tied, String) {
        let pid_file = dir.join("pid");
        let mut c = command(&[], &dir.join("log"), Stop::Terminate, Path::new("sh"));
        c.arg("-c")
            .arg(format!("echo $$ > {}; exec sleep 600", pid_file.display()));
        let tied = spawn(c).unwrap();
        (tied, pid_of(&pid_file))
    }

    fn gone_soon(pid: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while alive(pid) {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    #[test]
    fn dropping_the_guard_ends_the_program() {
        let dir = std::env::temp_dir().join(format!("janitor-tied-{}-drop", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (tied, pid) = started(&dir);
        assert!(alive(&pid));
        drop(tied);
        assert!(gone_soon(&pid), "sleep {pid} outlived its guard");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_program_that_ends_by_itself_ends_the_shell() {
        let dir = std::env::temp_dir().join(format!("janitor-tied-{}-end", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut c = command(&[], &dir.join("log"), Stop::Interrupt, Path::new("sh"));
        c.args(["-c", "echo refused; exit 3"]);
        let mut tied = spawn(c).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = tied.exited() {
                break status;
            }
            assert!(Instant::now() < deadline, "the shell outlived its program");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(3));
        assert_eq!(
            std::fs::read_to_string(dir.join("log")).unwrap(),
            "refused\n"
        );
        drop(tied);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_killed_owner_still_ends_the_program() {
        // The owner here is the shell's parent as far as the pipe is concerned: closing our end without
        // waiting is what the kernel does when this process is killed.
        let dir = std::env::temp_dir().join(format!("janitor-tied-{}-kill", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (mut tied, pid) = started(&dir);
        tied.pipe = None;
        assert!(gone_soon(&pid), "sleep {pid} outlived the closed pipe");
        tied.end();
        assert!(tied.exited().is_some());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
