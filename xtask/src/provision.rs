//! What `cargo xtask test` sets up before the tests: the Debian packages they use (PostgreSQL, Chromium and its
//! WebDriver, PgBouncer, nginx) and a PostgreSQL server at `DATABASE_URL`.
//!
//! Each set-up looks first and acts only on what is missing, so a prepared machine spends no time here. The
//! choices are functions of what was observed (files, the port, the user), kept apart from the commands that act
//! on them so that they are tested without touching the machine. What cannot be provided is an error saying what
//! to do by hand: a test that needs it would fail anyway, later and less plainly.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::capacity::status;

/// The server the tests use when `DATABASE_URL` is not set (janitor-sql's `testing::DEFAULT_URL`).
pub const DEFAULT_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// The port of that server, where Debian puts the first cluster of a machine.
pub const LOCAL_PORT: u16 = 5432;

/// How long a started cluster may take to accept connections.
pub const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The Debian package of the PostgreSQL server; present when its server programs are (see [`server_bin_dir`]).
pub const POSTGRESQL: &str = "postgresql";

/// The other packages, each with the file the tests run from it.
pub const PACKAGE_FILES: &[(&str, &str)] = &[
    ("chromium", "/usr/bin/chromium"),
    ("chromium-driver", "/usr/bin/chromedriver"),
    ("pgbouncer", "/usr/sbin/pgbouncer"),
    // The reverse proxy of docs/deploying.md, run in front of the sign-in example
    // (janitor-axum/tests/integration/nginx.rs).
    ("nginx", "/usr/sbin/nginx"),
];

/// Where Debian keeps the configuration of each cluster, as `<version>/<name>/`.
pub const CLUSTERS_DIR: &str = "/etc/postgresql";

/// Debian's program that starts a cluster by version and name (from postgresql-common).
pub const PG_CTLCLUSTER: &str = "/usr/bin/pg_ctlcluster";

/// The programs the tests' disposable clusters run, besides the server itself.
const SERVER_PROGRAMS: [&str; 3] = ["initdb", "pg_ctl", "pg_isready"];

/// Installs the packages whose files are missing. Returns the packages installed (empty when none were).
pub fn packages() -> Result<Vec<&'static str>, String> {
    let missing = missing_packages();
    let Some(args) = install_plan(
        &missing,
        is_root()?,
        Path::new("/usr/bin/apt-get").is_file(),
    )?
    else {
        println!("all packages present: {POSTGRESQL}, {}", package_names());
        return Ok(missing);
    };
    println!("installing {}", missing.join(", "));
    apt_install(&args)?;
    let still = missing_packages();
    if !still.is_empty() {
        return Err(format!(
            "apt-get installed {} but {} still missing",
            missing.join(", "),
            still
                .iter()
                .map(|p| provides(p))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if missing.contains(&"pgbouncer") {
        warn_about_running_pgbouncer();
    }
    Ok(missing)
}

/// Installs those of `packages` (name, a file it provides) whose file is missing, as [`packages`] does for the
/// tests' own.
pub fn install(packages: &[(&'static str, &str)]) -> Result<(), String> {
    let missing: Vec<&str> = packages
        .iter()
        .filter(|(_, file)| !Path::new(file).is_file())
        .map(|(package, _)| *package)
        .collect();
    let Some(args) = install_plan(
        &missing,
        is_root()?,
        Path::new("/usr/bin/apt-get").is_file(),
    )?
    else {
        return Ok(());
    };
    println!("installing {}", missing.join(", "));
    apt_install(&args)?;
    match packages.iter().find(|(_, file)| !Path::new(file).is_file()) {
        Some((package, file)) => Err(format!("apt-get installed {package} but {file} is missing")),
        None => Ok(()),
    }
}

/// The packages whose files are missing on this machine.
fn missing_packages() -> Vec<&'static str> {
    let server = server_bin_dir().is_none().then_some(POSTGRESQL);
    let others = PACKAGE_FILES
        .iter()
        .filter(|(_, file)| !Path::new(file).is_file())
        .map(|(package, _)| *package);
    server.into_iter().chain(others).collect()
}

/// The arguments of the `apt-get` call that installs `missing`, or `None` when nothing is missing. Installing
/// needs root and apt-get; without them the error names the command to run.
pub fn install_plan(
    missing: &[&str],
    root: bool,
    apt: bool,
) -> Result<Option<Vec<String>>, String> {
    if missing.is_empty() {
        return Ok(None);
    }
    let args: Vec<String> = ["install", "-y", "--no-install-recommends"]
        .into_iter()
        .chain(missing.iter().copied())
        .map(str::to_owned)
        .collect();
    let command = format!("apt-get {}", args.join(" "));
    if !apt {
        return Err(format!(
            "the tests need the Debian packages {} and apt-get is not available: install their equivalents \
             ({})",
            missing.join(", "),
            missing.iter().map(|p| provides(p)).collect::<Vec<_>>().join(", ")
        ));
    }
    if !root {
        return Err(format!(
            "the tests need the packages {} and installing them needs root: run `sudo {command}`, then \
             `cargo xtask test` again",
            missing.join(", ")
        ));
    }
    Ok(Some(args))
}

/// What the tests use from `package`, for messages.
fn provides(package: &str) -> &str {
    PACKAGE_FILES
        .iter()
        .find(|(name, _)| *name == package)
        .map_or("PostgreSQL's server programs", |(_, file)| *file)
}

/// `apt-get install …`; a fresh machine's package lists are often stale or empty, so they are refreshed once
/// if the install fails.
fn apt_install(args: &[String]) -> Result<(), String> {
    if apt_get(args).is_err() {
        apt_get(&["update".to_owned()])?;
        apt_get(args)?;
    }
    Ok(())
}

fn apt_get(args: &[String]) -> Result<(), String> {
    status(
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive"),
        &format!("apt-get {}", args.join(" ")),
    )
}

/// Debian's pgbouncer package enables a service. Where services cannot start (a container without systemd)
/// nothing runs, but a bouncer that did start would hold port 6432 and the machine's resources; the tests start
/// their own on other ports, so it is said rather than stopped.
fn warn_about_running_pgbouncer() {
    let running: Vec<String> = fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            fs::read_to_string(entry.path().join("comm"))
                .is_ok_and(|comm| comm.trim() == "pgbouncer")
        })
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    if !running.is_empty() {
        eprintln!(
            "note: a pgbouncer runs after installing the package (process {}), started by its service; the \
             tests do not use it: stop it with `service pgbouncer stop` if it is not wanted",
            running.join(", ")
        );
    }
}

/// What to do about the PostgreSQL server the tests use.
#[derive(Debug, PartialEq, Eq)]
pub enum Server {
    /// `DATABASE_URL` names it: check that it answers, change nothing.
    Given(String),
    /// Something answers on 127.0.0.1:5432; the machine's cluster `version` there, when one is configured.
    Running(Option<String>),
    /// Start the machine's cluster `version`, configured on port 5432.
    Start(String),
}

impl Server {
    /// The machine's cluster this is about, when known.
    fn cluster(&self) -> Option<&str> {
        match self {
            Server::Given(_) => None,
            Server::Running(version) => version.as_deref(),
            Server::Start(version) => Some(version),
        }
    }
}

/// Decides from `DATABASE_URL`, whether 127.0.0.1:5432 accepts connections and the machine's clusters (version
/// and port of its `main` cluster, lowest version first as [`versions`] orders them).
pub fn server_plan(
    database_url: Option<&str>,
    local_answers: bool,
    clusters: &[(String, u16)],
) -> Result<Server, String> {
    if let Some(url) = database_url {
        return Ok(Server::Given(url.to_owned()));
    }
    // The highest version wins when several clusters claim the port: only one of them can hold it.
    let local = clusters
        .iter()
        .rev()
        .find(|(_, port)| *port == LOCAL_PORT)
        .map(|(version, _)| version.clone());
    match (local_answers, local) {
        (true, version) => Ok(Server::Running(version)),
        (false, Some(version)) => Ok(Server::Start(version)),
        (false, None) => Err(format!(
            "nothing answers on 127.0.0.1:{LOCAL_PORT} and no cluster of {CLUSTERS_DIR} is configured on that \
             port ({}): create one with `pg_createcluster <version> main --port {LOCAL_PORT}`, or set \
             DATABASE_URL to a running server",
            if clusters.is_empty() {
                "there are none".to_owned()
            } else {
                clusters
                    .iter()
                    .map(|(version, port)| format!("{version} on {port}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        )),
    }
}

/// Provides the server the tests use: checks `DATABASE_URL` when it is set, else starts the machine's cluster
/// on 127.0.0.1:5432 when it is down, and leaves it running (CI's later steps use it). `installed` says the
/// package was installed just now: its fresh cluster then gets the trust authentication the tests log in with.
pub fn postgres(installed: bool) -> Result<(), String> {
    let bin = server_bin_dir().ok_or_else(|| {
        format!(
            "no PostgreSQL server programs ({}, from `pg_config --bindir` or /usr/lib/postgresql/*/bin): install \
             the Debian package {POSTGRESQL}",
            SERVER_PROGRAMS.join(", ")
        )
    })?;
    let database_url = std::env::var("DATABASE_URL").ok();
    let url = database_url
        .clone()
        .unwrap_or_else(|| DEFAULT_URL.to_owned());
    let plan = server_plan(database_url.as_deref(), local_answers(), &clusters())?;
    if let (true, Some(version)) = (installed, plan.cluster()) {
        trust_loopback(version)?;
    }
    match &plan {
        Server::Given(_) => given_answers(&bin, &url)?,
        Server::Running(_) => println!("PostgreSQL answers on 127.0.0.1:{LOCAL_PORT}"),
        Server::Start(version) => start_cluster(version, &bin)?,
    }
    if let (true, Server::Running(Some(version))) = (installed, &plan) {
        // A package whose service did start read its authentication before trust_loopback wrote it.
        pg_ctlcluster(version, "reload")?;
    }
    log_in(&bin, &url, database_url.is_some())
}

/// The directory of the server programs: `pg_config --bindir`, else the highest /usr/lib/postgresql/*/bin that
/// holds them (as the tests' disposable clusters, in janitor-test-support, look for them).
pub fn server_bin_dir() -> Option<PathBuf> {
    let has_programs = |dir: &Path| SERVER_PROGRAMS.iter().all(|p| dir.join(p).is_file());
    let from_pg_config = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| PathBuf::from(String::from_utf8_lossy(&output.stdout).trim()));
    let installed = versions(dir_names("/usr/lib/postgresql"))
        .into_iter()
        .rev()
        .map(|version| Path::new("/usr/lib/postgresql").join(version).join("bin"));
    from_pg_config
        .into_iter()
        .chain(installed)
        .find(|dir| has_programs(dir))
}

/// The PostgreSQL versions among directory `names` (`15`, `9.6`), lowest first; other names are left out.
pub fn versions(names: impl IntoIterator<Item = String>) -> Vec<String> {
    let number = |name: &str| -> Option<Vec<u32>> {
        name.split('.').map(|part| part.parse().ok()).collect()
    };
    let mut found: Vec<(Vec<u32>, String)> = names
        .into_iter()
        .filter_map(|name| Some((number(&name)?, name)))
        .collect();
    found.sort();
    found.into_iter().map(|(_, name)| name).collect()
}

/// The port a `postgresql.conf` sets: its last uncommented `port` line, else PostgreSQL's default 5432.
pub fn configured_port(conf: &str) -> Option<u16> {
    let mut port = Some(LOCAL_PORT);
    for line in conf.lines() {
        let setting = line.split('#').next().unwrap_or_default();
        if let Some((key, value)) = setting.split_once('=') {
            if key.trim() == "port" {
                port = value.trim().trim_matches('\'').parse().ok();
            }
        }
    }
    port
}

fn dir_names(dir: &str) -> Vec<String> {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect()
}

/// The machine's `main` clusters as (version, port), lowest version first.
fn clusters() -> Vec<(String, u16)> {
    versions(dir_names(CLUSTERS_DIR))
        .into_iter()
        .filter_map(|version| {
            let conf = fs::read_to_string(main_cluster(&version).join("postgresql.conf")).ok()?;
            Some((version, configured_port(&conf)?))
        })
        .collect()
}

fn main_cluster(version: &str) -> PathBuf {
    Path::new(CLUSTERS_DIR).join(version).join("main")
}

fn local_answers() -> bool {
    let address = SocketAddr::from((Ipv4Addr::LOCALHOST, LOCAL_PORT));
    TcpStream::connect_timeout(&address, Duration::from_secs(1)).is_ok()
}

fn given_answers(bin: &Path, url: &str) -> Result<(), String> {
    if !answers(bin, &["-d", url]) {
        return Err(format!(
            "DATABASE_URL is set but its server does not answer (pg_isready): start it or correct \
             DATABASE_URL, or unset it to use this machine's server on 127.0.0.1:{LOCAL_PORT}"
        ));
    }
    println!("the server of DATABASE_URL answers");
    Ok(())
}

fn start_cluster(version: &str, bin: &Path) -> Result<(), String> {
    println!("starting the PostgreSQL {version} cluster `main`");
    pg_ctlcluster(version, "start")?;
    let deadline = Instant::now() + READY_TIMEOUT;
    let port = LOCAL_PORT.to_string();
    while !answers(bin, &["-h", "127.0.0.1", "-p", &port]) {
        if Instant::now() >= deadline {
            return Err(format!(
                "the PostgreSQL {version} cluster was started but does not accept connections on \
                 127.0.0.1:{LOCAL_PORT} after {} s: see its log under /var/log/postgresql",
                READY_TIMEOUT.as_secs()
            ));
        }
        sleep(Duration::from_millis(250));
    }
    Ok(())
}

/// Whether `pg_isready` with `target` (host and port, or `-d` and a connection string) finds a server that
/// accepts connections.
fn answers(bin: &Path, target: &[&str]) -> bool {
    Command::new(bin.join("pg_isready"))
        .arg("-q")
        .args(target)
        .status()
        .is_ok_and(|status| status.success())
}

fn pg_ctlcluster(version: &str, action: &str) -> Result<(), String> {
    if !Path::new(PG_CTLCLUSTER).is_file() {
        return Err(format!(
            "{PG_CTLCLUSTER} is missing (Debian package postgresql-common): start a server on \
             127.0.0.1:{LOCAL_PORT} by hand, or set DATABASE_URL to a running one"
        ));
    }
    // Without the flag, pg_ctlcluster hands the work to systemctl, which containers do not have.
    status(
        Command::new(PG_CTLCLUSTER).args(["--skip-systemctl-redirect", version, "main", action]),
        &format!("`pg_ctlcluster --skip-systemctl-redirect {version} main {action}`"),
    )
    .map_err(|e| {
        format!(
            "{e}: it runs as root or as the cluster's owner; its log is under /var/log/postgresql"
        )
    })
}

/// The lines that let the tests log in as any user over 127.0.0.1 and the local socket without a password.
pub const TRUST_LINES: &str = concat!(
    "# Trust on this machine's loopback, for the tests (written by cargo xtask test).\n",
    "local all all trust\n",
    "host all all 127.0.0.1/32 trust\n",
);

/// `hba` with [`TRUST_LINES`] first (the first matching line decides), unless they are there already.
pub fn trusting(hba: &str) -> String {
    if hba.starts_with(TRUST_LINES) {
        hba.to_owned()
    } else {
        format!("{TRUST_LINES}{hba}")
    }
}

/// Debian's fresh cluster asks passwords over TCP; the tests log in as postgres without one. Done only on a
/// cluster this run installed, never on one somebody set up.
fn trust_loopback(version: &str) -> Result<(), String> {
    let path = main_cluster(version).join("pg_hba.conf");
    let hba = fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    fs::write(&path, trusting(&hba)).map_err(|e| format!("writing {}: {e}", path.display()))?;
    println!("{} trusts 127.0.0.1 and the local socket", path.display());
    Ok(())
}

/// Logs in once, as the tests will: a server that answers but refuses them fails here, with its reason. The
/// URL of `DATABASE_URL` is not printed (`given`), since it may hold a password.
fn log_in(bin: &Path, url: &str, given: bool) -> Result<(), String> {
    let psql = bin.join("psql");
    let output = Command::new(if psql.is_file() {
        psql
    } else {
        PathBuf::from("psql")
    })
    .args(["-w", "-X", "-A", "-t", "-c", "select 1", "-d", url])
    .output()
    .map_err(|e| format!("psql (PostgreSQL's client) could not start: {e}"))?;
    let server = if given {
        "DATABASE_URL".to_owned()
    } else {
        url.to_owned()
    };
    if output.status.success() {
        println!("the tests can log in to {server}");
        return Ok(());
    }
    Err(format!(
        "{server} answers but does not let the tests in: {}. They log in as its URL says, without a password \
         when it gives none (trust authentication: `host all all 127.0.0.1/32 trust` in pg_hba.conf)",
        String::from_utf8_lossy(&output.stderr).trim()
    ))
}

fn is_root() -> Result<bool, String> {
    fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .map_err(|e| format!("reading /proc/self to learn the effective user: {e}"))
}

fn package_names() -> String {
    let names: Vec<&str> = PACKAGE_FILES.iter().map(|(name, _)| *name).collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn versions_are_the_numeric_names_in_numeric_order() {
        let names = strings(&["15", "9.6", "README", "13", "16beta", "10", ".hidden"]);
        assert_eq!(versions(names), strings(&["9.6", "10", "13", "15"]));
        assert!(versions(Vec::new()).is_empty());
    }

    #[test]
    fn the_port_is_the_last_setting_that_is_not_a_comment() {
        assert_eq!(configured_port(""), Some(5432));
        assert_eq!(configured_port("#port = 5433\n"), Some(5432));
        assert_eq!(
            configured_port("port = 5433\t\t# (change requires restart)\n"),
            Some(5433)
        );
        assert_eq!(configured_port("port=5434\nport = '5435'\n"), Some(5435));
        assert_eq!(configured_port("sport = 1\nport = nonsense\n"), None);
    }

    #[test]
    fn nothing_is_installed_when_nothing_is_missing() {
        assert_eq!(install_plan(&[], false, false), Ok(None));
    }

    #[test]
    fn missing_packages_are_installed_by_root_with_apt_get() {
        let plan = install_plan(&["postgresql", "pgbouncer"], true, true).unwrap();
        assert_eq!(
            plan.unwrap(),
            strings(&[
                "install",
                "-y",
                "--no-install-recommends",
                "postgresql",
                "pgbouncer"
            ])
        );
    }

    #[test]
    fn without_root_the_error_says_what_to_run() {
        let problem = install_plan(&["chromium", "chromium-driver"], false, true).unwrap_err();
        assert!(
            problem.contains(
                "sudo apt-get install -y --no-install-recommends chromium chromium-driver"
            ),
            "{problem}"
        );
    }

    #[test]
    fn without_apt_get_the_error_names_what_is_needed() {
        let problem = install_plan(&["pgbouncer"], true, false).unwrap_err();
        assert!(
            problem.contains("pgbouncer") && problem.contains("/usr/sbin/pgbouncer"),
            "{problem}"
        );
    }

    #[test]
    fn a_given_database_url_is_only_checked() {
        let url = "postgres://janitor@db.example:5432/janitor";
        assert_eq!(
            server_plan(Some(url), false, &[]),
            Ok(Server::Given(url.to_owned()))
        );
    }

    #[test]
    fn a_server_that_answers_is_used_as_it_is() {
        let clusters = [("13".to_owned(), 5433), ("15".to_owned(), 5432)];
        assert_eq!(
            server_plan(None, true, &clusters),
            Ok(Server::Running(Some("15".to_owned())))
        );
        assert_eq!(server_plan(None, true, &[]), Ok(Server::Running(None)));
    }

    #[test]
    fn the_cluster_on_the_port_is_started_when_nothing_answers() {
        let clusters = [("15".to_owned(), 5432), ("16".to_owned(), 5433)];
        assert_eq!(
            server_plan(None, false, &clusters),
            Ok(Server::Start("15".to_owned()))
        );
        let both = [("15".to_owned(), 5432), ("16".to_owned(), 5432)];
        assert_eq!(
            server_plan(None, false, &both),
            Ok(Server::Start("16".to_owned()))
        );
    }

    #[test]
    fn no_cluster_on_the_port_is_an_error_that_lists_the_clusters() {
        let problem = server_plan(None, false, &[("16".to_owned(), 5433)]).unwrap_err();
        assert!(
            problem.contains("16 on 5433") && problem.contains("pg_createcluster"),
            "{problem}"
        );
        let problem = server_plan(None, false, &[]).unwrap_err();
        assert!(problem.contains("there are none"), "{problem}");
    }

    #[test]
    fn trust_is_written_once_before_the_other_lines() {
        let debian = "local all postgres peer\nhost all all 127.0.0.1/32 scram-sha-256\n";
        let trusted = trusting(debian);
        assert!(
            trusted.starts_with(TRUST_LINES) && trusted.ends_with(debian),
            "{trusted}"
        );
        assert_eq!(trusting(&trusted), trusted);
    }
}
