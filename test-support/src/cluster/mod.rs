//! A disposable PostgreSQL cluster, made with the machine's own PostgreSQL binaries, for tests and benchmarks
//! that need a server of their own: other settings, TLS only, a port nobody else uses.
//!
//! The cluster lives in the directory its [`ClusterSpec`] names and listens only on 127.0.0.1 at the spec's
//! port, with its Unix socket in that directory (never the system's socket directory). It is initialised with
//! UTF8 encoding and the `C.UTF-8` locale, whatever the caller's locale; the spec's settings are written to an
//! included file at every start, and everything else keeps PostgreSQL's defaults, durability included.
//!
//! Safety: a start refuses when the port is taken or the directory already exists, unless the spec allows
//! reuse and the directory holds a cluster made for the same owner (it carries the owner's marker file), in
//! which case that cluster is started again. When dropped, [`Cluster`] stops the server (`pg_ctl stop -m fast`)
//! and removes the directory, or, with reuse, leaves it stopped for the next run. A reused directory is never
//! removed: the run did not create it.
//!
//! The server runs as a child of this process under a shell that stops it when this process ends, however it
//! ends (see [`tied`]): an interrupted or killed test leaves no server behind. It does leave the
//! directory, and the next start refuses; its message gives the commands that clean up:
//! `pg_ctl stop -D <dir>/data -m fast` (as the postgres user when root, for a server still stopping) and
//! `rm -rf <dir>`.
//!
//! initdb and postgres refuse to run as root; when this process is root, they run as the `postgres` user
//! through `runuser`, and the directory is handed to that user.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use crate::tied::{self, Stop, Tied};

mod standby;

/// How long the server may take to start or stop.
const DEADLINE: Duration = Duration::from_secs(60);

/// The settings file the cluster's postgresql.conf includes, rewritten at every start.
const SETTINGS_FILE: &str = "janitor-cluster.conf";

/// A port on 127.0.0.1 that nothing listens on right now, chosen by the kernel: for a cluster, a bouncer or a
/// server a test starts. Another process may take it before the caller binds it; the cluster's start refuses a
/// taken port with a message rather than adopting it.
pub fn free_port() -> Result<u16, String> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .map_err(|e| format!("a free port on 127.0.0.1: {e}"))
}

/// What cluster to make, and for whom.
#[derive(Debug, Clone)]
pub struct ClusterSpec {
    /// The directory: data, server log, socket and marker. Absolute, without quotes, backslashes or newlines.
    pub dir: PathBuf,
    /// The port on 127.0.0.1.
    pub port: u16,
    /// Start again a cluster this owner left in `dir`, and leave it stopped (not removed) afterwards.
    pub reuse: bool,
    /// Who makes it: the marker file is `<owner>.marker`, and messages name it.
    pub owner: String,
    /// Server settings besides the address and the socket, e.g. `("max_connections", "40")`.
    pub settings: Vec<(String, String)>,
    /// The whole `pg_hba.conf`, replacing initdb's (which trusts every local connection).
    pub hba: Option<String>,
    /// Files written into the data directory when it is made, readable by the server only (certificates, keys).
    pub files: Vec<(String, Vec<u8>)>,
    /// How to start a kept cluster again (quoted when one is refused).
    pub reuse_hint: String,
    /// What to do instead when the port is taken (quoted in that refusal).
    pub port_hint: String,
}

impl ClusterSpec {
    /// A spec for `owner` at `dir` and `port` with the defaults: no reuse, no settings, initdb's `pg_hba.conf`.
    pub fn new(owner: &str, dir: PathBuf, port: u16) -> ClusterSpec {
        ClusterSpec {
            dir,
            port,
            reuse: false,
            owner: owner.to_owned(),
            settings: Vec::new(),
            hba: None,
            files: Vec::new(),
            reuse_hint: "start it with reuse".to_owned(),
            port_hint: "stop whatever holds it, or choose another port".to_owned(),
        }
    }

    fn marker(&self) -> String {
        format!("{}.marker", self.owner)
    }
}

/// A cluster this process started. When dropped it is stopped, and its directory removed unless it is kept for
/// reuse or was reused from an earlier run.
#[derive(Debug)]
pub struct Cluster {
    spec: ClusterSpec,
    bin: PathBuf,
    /// Run the server programs as the postgres user (this process is root).
    as_postgres: bool,
    /// A server may be running (it was started).
    started: bool,
    /// The running server's shell, which stops it when this process ends.
    server: Option<Tied>,
    /// Leave the directory in place when dropped.
    keep: bool,
}

impl Cluster {
    /// Starts the cluster of `spec`: a new one, or with reuse the one an earlier run of the same owner left.
    pub fn start(spec: ClusterSpec) -> Result<Cluster, String> {
        Cluster::start_from(spec, None)
    }

    pub(super) fn start_from(
        spec: ClusterSpec,
        primary_port: Option<u16>,
    ) -> Result<Cluster, String> {
        let (dir, reuse) = (spec.dir.as_path(), spec.reuse);
        let plain = dir
            .to_str()
            .filter(|d| dir.is_absolute() && !d.contains(['\'', '\\', '\n']));
        if plain.is_none() {
            return Err(format!(
                "the cluster directory must be an absolute path without quotes, backslashes or newlines, \
                 got {dir:?}"
            ));
        }
        let reusing = reuse && dir.join(spec.marker()).is_file();
        if dir.exists() && !reusing {
            return Err(refusal_for_directory(&spec));
        }
        port_is_free(&spec)?;
        let bin = postgres_bin_dir()?;
        let as_postgres = effective_uid()? == 0;
        if reusing && !dir.join("data").join("PG_VERSION").is_file() {
            return Err(format!(
                "{} carries the marker of {} but holds no cluster; remove it with `rm -rf {}`",
                dir.display(),
                spec.owner,
                dir.display()
            ));
        }
        if !reusing {
            // create_dir (not create_dir_all) fails if the directory appeared meanwhile: never adopt one.
            fs::create_dir(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        }
        // From here on the guard owns the clean-up: a new directory is removed if the start fails, a reused
        // one never is.
        let mut cluster = Cluster {
            spec,
            bin,
            as_postgres,
            started: false,
            server: None,
            keep: reusing,
        };
        match primary_port {
            Some(port) => cluster.copy_primary(port)?,
            None if !reusing => cluster.initialise()?,
            None => {}
        }
        cluster.write_settings()?;
        cluster.run_server()?;
        cluster.keep = reuse;
        Ok(cluster)
    }

    /// The connection string of the cluster (superuser postgres, trusted on loopback).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.spec.port)
    }

    /// The cluster's directory: data, server log, socket and marker.
    pub fn dir(&self) -> &Path {
        &self.spec.dir
    }

    /// The port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.spec.port
    }

    pub(super) fn data(&self) -> PathBuf {
        self.spec.dir.join("data")
    }

    fn log(&self) -> PathBuf {
        self.spec.dir.join("server.log")
    }

    /// initdb into `<dir>/data`, the include line for our settings, then the marker.
    fn initialise(&mut self) -> Result<(), String> {
        self.secure_dir()?;
        let data = self.data();
        let output = self
            .server_program("initdb")
            .arg("-D")
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--locale=C.UTF-8",
            ])
            .output()
            .map_err(|e| format!("starting initdb: {e}"))?;
        checked(&output, "initdb")?;
        let conf = data.join("postgresql.conf");
        let mut file = OpenOptions::new()
            .append(true)
            .open(&conf)
            .map_err(|e| format!("opening {}: {e}", conf.display()))?;
        writeln!(
            file,
            "\n# Settings of {}.\ninclude '{SETTINGS_FILE}'",
            self.spec.owner
        )
        .map_err(|e| format!("writing {}: {e}", conf.display()))?;
        if let Some(hba) = &self.spec.hba {
            self.write_private(&data.join("pg_hba.conf"), hba.as_bytes())?;
        }
        for (name, contents) in &self.spec.files {
            self.write_private(&data.join(name), contents)?;
        }
        self.write_marker()
    }

    /// The directory, readable by the server's user only.
    pub(super) fn secure_dir(&self) -> Result<(), String> {
        fs::set_permissions(&self.spec.dir, fs::Permissions::from_mode(0o700))
            .map_err(|e| format!("securing {}: {e}", self.spec.dir.display()))?;
        self.hand_over(&self.spec.dir)
    }

    /// The owner's marker, which tells a later run whose directory this is.
    pub(super) fn write_marker(&self) -> Result<(), String> {
        fs::write(
            self.spec.dir.join(self.spec.marker()),
            format!(
                "A disposable PostgreSQL cluster made by {}, which removes this directory when it is done, or \
                 keeps it stopped for reuse.\n",
                self.spec.owner
            ),
        )
        .map_err(|e| format!("writing the marker in {}: {e}", self.spec.dir.display()))
    }

    /// Writes a file of the data directory that only the server may read.
    fn write_private(&self, path: &Path, contents: &[u8]) -> Result<(), String> {
        fs::write(path, contents).map_err(|e| format!("writing {}: {e}", path.display()))?;
        fs::set_permissions(path, fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("securing {}: {e}", path.display()))?;
        self.hand_over(path)
    }

    /// The address, socket and limits, rewritten at every start so that they always match this run.
    fn write_settings(&self) -> Result<(), String> {
        let mut text = format!(
            "# Written by {} at every start; edits are lost.\n\
             listen_addresses = '127.0.0.1'\n\
             port = {}\n\
             unix_socket_directories = '{}'\n",
            self.spec.owner,
            self.spec.port,
            self.spec.dir.display()
        );
        for (name, value) in &self.spec.settings {
            text.push_str(&format!("{name} = '{value}'\n"));
        }
        let path = self.data().join(SETTINGS_FILE);
        fs::write(&path, text).map_err(|e| format!("writing {}: {e}", path.display()))?;
        self.hand_over(&path)
    }

    /// Stops the server (`pg_ctl stop -m fast`: sessions are ended), keeping the cluster for [`resume`]
    /// (a fault test's outage). Blocks until it is down.
    ///
    /// [`resume`]: Cluster::resume
    pub fn pause(&mut self) -> Result<(), String> {
        self.stop()
    }

    /// Starts the server again after [`pause`](Cluster::pause); blocks until it accepts connections.
    pub fn resume(&mut self) -> Result<(), String> {
        self.run_server()
    }

    /// Stops the server at once, as a crash or a lost machine would (`pg_ctl stop -m immediate`: no
    /// checkpoint, every session cut). Blocks until it is down; [`resume`](Cluster::resume) starts it again,
    /// with crash recovery.
    pub fn crash(&mut self) -> Result<(), String> {
        self.stop_in("immediate")
    }

    /// Starts `postgres` as a child under the tying shell (not `pg_ctl start`, which detaches it).
    fn run_server(&mut self) -> Result<(), String> {
        self.started = true;
        let prefix: &[&str] = if self.as_postgres {
            &["runuser", "-u", "postgres", "--"]
        } else {
            &[]
        };
        let mut command = tied::command(
            prefix,
            &self.log(),
            Stop::Interrupt,
            &self.bin.join("postgres"),
        );
        // The postgres user may not be allowed into the caller's working directory.
        command
            .arg("-D")
            .arg(self.data())
            .current_dir(&self.spec.dir);
        let server = tied::spawn(command).map_err(|e| format!("starting postgres: {e}"))?;
        self.server = Some(server);
        self.wait_until_ready()
    }

    /// pg_isready against the TCP address until the server accepts connections or the deadline passes.
    fn wait_until_ready(&mut self) -> Result<(), String> {
        let begin = Instant::now();
        loop {
            let status = Command::new(self.bin.join("pg_isready"))
                .args(["-h", "127.0.0.1", "-p", &self.spec.port.to_string()])
                .args(["-U", "postgres", "-d", "postgres", "-t", "2", "-q"])
                .status()
                .map_err(|e| format!("starting pg_isready: {e}"))?;
            if status.success() {
                return Ok(());
            }
            if let Some(ended) = self.server.as_mut().and_then(Tied::exited) {
                return Err(format!(
                    "the server in {} ended before accepting connections ({ended})\n{}",
                    self.spec.dir.display(),
                    self.log_tail()
                ));
            }
            if begin.elapsed() > DEADLINE {
                return Err(format!(
                    "the cluster in {} did not accept connections on 127.0.0.1:{} within {} s\n{}",
                    self.spec.dir.display(),
                    self.spec.port,
                    DEADLINE.as_secs(),
                    self.log_tail()
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn stop(&mut self) -> Result<(), String> {
        self.stop_in("fast")
    }

    /// `pg_ctl stop` in `mode` (`fast` ends sessions and checkpoints; `immediate` does neither).
    fn stop_in(&mut self, mode: &str) -> Result<(), String> {
        let output = self
            .server_program("pg_ctl")
            .arg("stop")
            .arg("-D")
            .arg(self.data())
            .args([
                "-m",
                mode,
                "-w",
                "-s",
                "-t",
                &DEADLINE.as_secs().to_string(),
            ])
            .output()
            .map_err(|e| format!("starting pg_ctl: {e}"))?;
        if output.status.success() || !self.data().join("postmaster.pid").exists() {
            // The server is down: let its shell end too.
            if let Some(mut server) = self.server.take() {
                server.end();
            }
            return Ok(());
        }
        checked(&output, "pg_ctl stop")
    }

    /// A PostgreSQL server program, run as the postgres user when this process is root.
    pub(super) fn server_program(&self, name: &str) -> Command {
        let program = self.bin.join(name);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        };
        // The postgres user may not be allowed into the caller's working directory.
        command.current_dir(&self.spec.dir);
        command
    }

    /// Gives `path` to the postgres user when the server programs run as that user.
    fn hand_over(&self, path: &Path) -> Result<(), String> {
        if !self.as_postgres {
            return Ok(());
        }
        let (uid, gid) = postgres_ids()?;
        std::os::unix::fs::chown(path, Some(uid), Some(gid))
            .map_err(|e| format!("handing {} to the postgres user: {e}", path.display()))
    }

    /// The last lines of the server log, for error messages.
    fn log_tail(&self) -> String {
        let log = fs::read_to_string(self.log()).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        if tail.is_empty() {
            format!(
                "(the server log {} is empty or missing)",
                self.log().display()
            )
        } else {
            format!("last lines of {}:\n{tail}", self.log().display())
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.started {
            if let Err(problem) = self.stop() {
                // Removing the files of a running server would leave it holding the port: leave both.
                eprintln!(
                    "could not stop the disposable cluster in {}: {problem}\nto clean up: {}",
                    self.spec.dir.display(),
                    cleanup_commands(&self.spec.dir)
                );
                return;
            }
        }
        if !self.keep {
            if let Err(e) = fs::remove_dir_all(&self.spec.dir) {
                eprintln!("could not remove {}: {e}", self.spec.dir.display());
            }
        }
    }
}

/// The refusal for an existing directory, saying whose it looks like and how to clean up.
fn refusal_for_directory(spec: &ClusterSpec) -> String {
    let (dir, marker, owner) = (&spec.dir, spec.marker(), &spec.owner);
    if dir.join(&marker).is_file() {
        format!(
            "{} already exists: a cluster of {owner} left by an earlier run that was killed or kept for reuse. \
             To use it, {}; or clean up: {}",
            dir.display(),
            spec.reuse_hint,
            cleanup_commands(dir)
        )
    } else if spec.reuse {
        format!(
            "{} exists but was not made by {owner} (no {marker} in it), so it is neither reused nor touched; \
             move it away if it is not needed",
            dir.display()
        )
    } else {
        format!(
            "{} already exists and was not made by {owner}; it is left alone — move it away if it is not \
             needed",
            dir.display()
        )
    }
}

/// The commands that stop and remove a cluster left behind, with the programs of this machine.
fn cleanup_commands(dir: &Path) -> String {
    format!("`{}; rm -rf {}`", stop_command(dir), dir.display())
}

fn stop_command(dir: &Path) -> String {
    let runuser = if effective_uid().is_ok_and(|uid| uid == 0) {
        "runuser -u postgres -- "
    } else {
        ""
    };
    let pg_ctl = postgres_bin_dir()
        .map(|bin| bin.join("pg_ctl"))
        .unwrap_or_else(|_| PathBuf::from("pg_ctl"));
    format!(
        "{runuser}{} stop -D {} -m fast",
        pg_ctl.display(),
        dir.join("data").display()
    )
}

/// Refuses a port that something listens on or that cannot be bound on 127.0.0.1.
fn port_is_free(spec: &ClusterSpec) -> Result<(), String> {
    let (port, dir) = (spec.port, &spec.dir);
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let taken = |why: String| {
        let hint = if dir.join(spec.marker()).is_file() {
            format!(
                "if it is the kept cluster in {}, still running after a killed run, stop it with `{}`",
                dir.display(),
                stop_command(dir)
            )
        } else {
            spec.port_hint.clone()
        };
        let holder = crate::ports::holder(port)
            .map(|holder| format!(", held by {holder}"))
            .unwrap_or_default();
        format!("127.0.0.1:{port} is taken ({why}{holder}); {hint}")
    };
    if TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok() {
        return Err(taken("something accepts connections there".to_owned()));
    }
    match TcpListener::bind(address) {
        Ok(listener) => {
            drop(listener);
            Ok(())
        }
        Err(e) => Err(taken(format!("cannot bind it: {e}"))),
    }
}

/// The directory of initdb and pg_ctl: `pg_config --bindir`, else the highest /usr/lib/postgresql/*/bin.
fn postgres_bin_dir() -> Result<PathBuf, String> {
    let has_programs = |dir: &Path| {
        ["initdb", "pg_ctl", "pg_isready"]
            .iter()
            .all(|p| dir.join(p).is_file())
    };
    if let Ok(output) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
        if output.status.success() && has_programs(&dir) {
            return Ok(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, bin)| has_programs(bin))
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin).ok_or_else(|| {
        "no PostgreSQL server programs found (initdb, pg_ctl and pg_isready, from `pg_config --bindir` or \
         /usr/lib/postgresql/*/bin): install the PostgreSQL server (Debian: postgresql)"
            .to_owned()
    })
}

/// The effective user of this process: /proc/self belongs to it.
fn effective_uid() -> Result<u32, String> {
    fs::metadata("/proc/self")
        .map(|m| m.uid())
        .map_err(|e| format!("reading /proc/self to learn the effective user: {e}"))
}

/// The postgres user's uid and gid, for running initdb and pg_ctl as root.
fn postgres_ids() -> Result<(u32, u32), String> {
    let id = |flag: &str| -> Result<u32, String> {
        let output = Command::new("id")
            .args([flag, "postgres"])
            .output()
            .map_err(|e| format!("starting id: {e}"))?;
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .ok()
            .filter(|_| output.status.success())
            .ok_or_else(|| {
                "this process is root, which initdb and postgres refuse, and there is no postgres user to run \
                 them as: create one, or run as an ordinary user"
                    .to_owned()
            })
    };
    Ok((id("-u")?, id("-g")?))
}

fn checked(output: &Output, what: &str) -> Result<(), String> {
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}): {}{}",
        output.status,
        String::from_utf8_lossy(&output.stderr).trim(),
        String::from_utf8_lossy(&output.stdout).trim()
    ))
}

#[cfg(test)]
mod tests;
