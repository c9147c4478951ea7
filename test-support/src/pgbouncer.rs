//! A PgBouncer of a test's own, in `pool_mode = transaction` (or `session`), in front of the PostgreSQL named by
//! `DATABASE_URL`, so that the stores are tried behind the kind of pooler managed platforms put before the
//! database.
//!
//! It listens on 127.0.0.1 at a port the kernel chose, trusts every connection (as the server behind it does),
//! and sets every server session's `search_path` to a schema that does not exist, so a statement that leans on
//! `search_path` instead of naming its schema fails instead of passing by luck. When this process is root the
//! bouncer switches to the postgres user, since PgBouncer refuses to run as root. [`PgBouncer`] stops it and removes its
//! directory when dropped; it runs under a shell that also stops it when this process is interrupted or killed
//! ([`tied`]).

use std::fs;
use std::net::{Ipv4Addr, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::time::{Duration, Instant};

use crate::tied::{self, Stop, Tied};

/// Where Debian's package puts the program.
pub const PROGRAM: &str = "/usr/sbin/pgbouncer";

/// The `search_path` every server session gets through the bouncer: nothing lives there.
pub const NOWHERE: &str = "janitor_nowhere";

/// The bouncer's `pool_mode`: how long a client keeps the server session it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BouncerMode {
    /// `session`: for the client's whole connection.
    Session,
    /// `transaction`: for one transaction.
    Transaction,
}

/// A running PgBouncer.
#[derive(Debug)]
pub struct PgBouncer {
    child: Tied,
    port: u16,
    dir: PathBuf,
}

impl PgBouncer {
    /// Starts one in `pool_mode = transaction` in front of the server of `upstream` (a `postgres://` URL of a
    /// server on this machine).
    ///
    /// # Errors
    /// When PgBouncer is not installed (with the command that installs it), or does not start.
    pub fn start(upstream: &str) -> Result<PgBouncer, String> {
        PgBouncer::start_in(upstream, BouncerMode::Transaction)
    }

    /// The same in the bouncer's `pool_mode` named by `mode` (`session` or `transaction`).
    ///
    /// # Errors
    /// As [`start`](Self::start).
    pub fn start_in(upstream: &str, mode: BouncerMode) -> Result<PgBouncer, String> {
        if !Path::new(PROGRAM).is_file() {
            return Err(format!(
                "{PROGRAM} is missing: install it with `apt-get install -y --no-install-recommends pgbouncer`"
            ));
        }
        let (host, port) = server_of(upstream)?;
        let listen = crate::cluster::free_port()?;
        let dir =
            std::env::temp_dir().join(format!("janitor-pgbouncer-{}-{listen}", std::process::id()));
        fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let config = format!(
            "[databases]\n* = host={host} port={port} connect_query='SET search_path = {NOWHERE}'\n\n\
             [pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {listen}\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = {auth}\npool_mode = {mode}\nmax_client_conn = 200\n\
             default_pool_size = 20\nlogfile = {log}\npidfile = {pid}\nignore_startup_parameters = \
             extra_float_digits\n",
            auth = dir.join("users.txt").display(),
            mode = match mode {
                BouncerMode::Session => "session",
                BouncerMode::Transaction => "transaction",
            },
            log = dir.join("pgbouncer.log").display(),
            pid = dir.join("pgbouncer.pid").display(),
        );
        fs::write(dir.join("users.txt"), "\"postgres\" \"\"\n")
            .and_then(|()| fs::write(dir.join("pgbouncer.ini"), config))
            .map_err(|e| format!("writing the configuration in {}: {e}", dir.display()))?;
        let mut command = program(&dir)?;
        command.arg(dir.join("pgbouncer.ini"));
        let child = tied::spawn(command).map_err(|e| format!("starting {PROGRAM}: {e}"))?;
        let bouncer = PgBouncer {
            child,
            port: listen,
            dir,
        };
        bouncer.wait_until_listening()?;
        Ok(bouncer)
    }

    /// The URL of `database` through the bouncer, as user postgres.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    fn wait_until_listening(&self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).is_err() {
            if Instant::now() > deadline {
                let log = fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default();
                return Err(format!(
                    "PgBouncer did not listen on 127.0.0.1:{} within 10 s\n{log}",
                    self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

impl Drop for PgBouncer {
    fn drop(&mut self) {
        self.child.end();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The host and port of the server a URL names.
fn server_of(url: &str) -> Result<(String, u16), String> {
    let config =
        tokio_postgres::Config::from_str(url).map_err(|e| format!("the upstream URL: {e}"))?;
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(host)) => host.clone(),
        _ => return Err("the upstream must be reached over TCP".to_owned()),
    };
    Ok((host, config.get_ports().first().copied().unwrap_or(5432)))
}

/// PgBouncer under the tying shell (its output to `pgbouncer.out`), switching to the postgres user itself (who
/// is then given the directory) when this process is root.
fn program(dir: &Path) -> Result<Command, String> {
    let mut command = tied::command(
        &[],
        &dir.join("pgbouncer.out"),
        Stop::Terminate,
        Path::new(PROGRAM),
    );
    let root = fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false);
    if root {
        let status = Command::new("chown")
            .args(["-R", "postgres"])
            .arg(dir)
            .status()
            .map_err(|e| format!("starting chown: {e}"))?;
        if !status.success() {
            return Err(format!(
                "cannot give {} to the postgres user",
                dir.display()
            ));
        }
        command.args(["-u", "postgres"]);
    }
    Ok(command)
}
