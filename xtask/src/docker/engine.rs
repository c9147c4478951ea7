//! The Docker engine of the run: the one already running, or Debian's `docker.io`, installed when missing and
//! started for the run without any container network in a private address range (`--bridge=none
//! --iptables=false --ip-masq=false`), then stopped again.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::provision;

/// How long a started engine may take to answer.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a started engine may take to stop before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);

/// The flags of an engine this run starts: no bridge, no firewall or masquerading rules, so no container can
/// have a network other than loopback.
pub const DOCKERD_FLAGS: &[&str] = &["--bridge=none", "--iptables=false", "--ip-masq=false"];

/// The package that makes the base image, with the file it provides.
pub const DEBOOTSTRAP: (&str, &str) = ("debootstrap", "/usr/sbin/debootstrap");

/// Debian's engine, installed only when no engine answers (another installation's, Docker's own packages
/// say, is used as it is and never replaced).
pub const DOCKER_IO: (&str, &str) = ("docker.io", "/usr/sbin/dockerd");

/// The engine the run talks to.
#[derive(Debug)]
pub struct Engine {
    /// The engine this run started, with its log; `None` when one was already running.
    started: Option<(Child, PathBuf)>,
}

impl Engine {
    /// Finds a running engine, or installs (when missing) and starts one.
    pub fn find_or_start(scratch: &Path) -> Result<Engine, String> {
        provision::install(&[DEBOOTSTRAP])?;
        if let Some(version) = server_version() {
            println!("using the running Docker engine {version}");
            return Ok(Engine { started: None });
        }
        // An engine that is installed but stopped is started as it is; Debian's is installed only when none is.
        let dockerd = match on_path("dockerd") {
            Some(found) => found,
            None => {
                provision::install(&[DOCKER_IO])?;
                PathBuf::from(DOCKER_IO.1)
            }
        };
        let log = scratch.join("dockerd.log");
        let file =
            std::fs::File::create(&log).map_err(|e| format!("creating {}: {e}", log.display()))?;
        let err = file
            .try_clone()
            .map_err(|e| format!("{}: {e}", log.display()))?;
        let child = Command::new(&dockerd)
            .args(DOCKERD_FLAGS)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("starting dockerd: {e}"))?;
        let mut engine = Engine {
            started: Some((child, log.clone())),
        };
        let begun = Instant::now();
        loop {
            if let Some(version) = server_version() {
                println!(
                    "started the Docker engine {version} ({})",
                    DOCKERD_FLAGS.join(" ")
                );
                return Ok(engine);
            }
            let exited = engine
                .started
                .as_mut()
                .and_then(|(child, _)| child.try_wait().ok().flatten());
            if exited.is_some() || begun.elapsed() > START_TIMEOUT {
                let tail = tail(&log);
                engine.stop()?;
                return Err(format!(
                    "dockerd did not answer within {} s; its log ends:\n{tail}",
                    START_TIMEOUT.as_secs()
                ));
            }
            sleep(Duration::from_millis(250));
        }
    }

    /// Stops the engine if this run started it; leaves one that was running alone.
    pub fn stop(mut self) -> Result<(), String> {
        let Some((mut child, log)) = self.started.take() else {
            return Ok(());
        };
        // SIGTERM lets dockerd stop containerd and unmount its layers; SIGKILL only if it hangs.
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let begun = Instant::now();
        while begun.elapsed() < STOP_TIMEOUT {
            if let Ok(Some(_)) = child.try_wait() {
                println!("stopped the Docker engine this run started");
                return Ok(());
            }
            sleep(Duration::from_millis(250));
        }
        let _ = child.kill();
        let _ = child.wait();
        Err(format!(
            "dockerd did not stop within {} s and was killed; its log: {}",
            STOP_TIMEOUT.as_secs(),
            log.display()
        ))
    }
}

/// The first `name` in a directory of `PATH`.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| candidate.is_file())
}

/// The running engine's version, or `None` when no engine answers.
fn server_version() -> Option<String> {
    let output = Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    (output.status.success() && !version.is_empty()).then_some(version)
}

fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
