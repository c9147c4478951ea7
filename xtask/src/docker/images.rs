//! The images of the Docker run, made without any registry: a base image from `debootstrap --variant=minbase
//! bookworm` imported with `docker import`, and the harness image built on it (`docker/local.Dockerfile`):
//! Debian's PostgreSQL (the server, and pgbench for the client) and the `janitor-capacity` binary built on
//! this machine, which is Debian bookworm too.

use std::path::Path;
use std::process::{Command, Stdio};

use super::Made;
use crate::capacity::status;

/// The base image.
pub const BASE: &str = "janitor-capacity-base:bookworm";

/// The harness image: every container of the run is made from it.
pub const HARNESS: &str = "janitor-capacity:local";

/// Both, base first.
pub const IMAGES: [&str; 2] = [BASE, HARNESS];

/// The Dockerfile of the harness image, relative to the workspace root.
pub const DOCKERFILE: &str = "docker/local.Dockerfile";

/// The directory of the database's cluster inside the image, owned by `postgres`.
pub const DATA_DIR: &str = "/var/lib/janitor-capacity";

/// Debian's release of the base image, the host's own.
pub const SUITE: &str = "bookworm";

/// Where `debootstrap` fetches the base system.
pub const MIRROR: &str = "http://deb.debian.org/debian";

/// Makes both images, noting each in `made` as soon as it exists.
pub fn build(root: &Path, binary: &Path, scratch: &Path, made: &mut Made) -> Result<(), String> {
    let rootfs = scratch.join("rootfs");
    println!("debootstrap --variant=minbase {SUITE} (a few minutes at most)");
    let log = scratch.join("debootstrap.log");
    let output = Command::new("debootstrap")
        .args(["--variant=minbase", SUITE])
        .arg(&rootfs)
        .arg(MIRROR)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("debootstrap: could not start: {e}"))?;
    let _ = std::fs::write(&log, [&output.stdout[..], &output.stderr[..]].concat());
    if !output.status.success() {
        return Err(format!(
            "debootstrap failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    import(&rootfs)?;
    made.image(BASE);
    let _ = std::fs::remove_dir_all(&rootfs);
    let context = scratch.join("context");
    std::fs::create_dir_all(&context).map_err(|e| format!("{}: {e}", context.display()))?;
    std::fs::copy(binary, context.join("janitor-capacity"))
        .map_err(|e| format!("copying the harness into the build context: {e}"))?;
    std::fs::copy(root.join(DOCKERFILE), context.join("Dockerfile"))
        .map_err(|e| format!("copying {DOCKERFILE}: {e}"))?;
    // The image's RUN steps reach Debian's packages through the host's network: the engine has no other.
    let built = status(
        Command::new("docker")
            .args(["build", "--quiet", "--network", "host", "--force-rm"])
            .args(["--build-arg", &format!("BASE={BASE}")])
            .args(["--tag", HARNESS])
            .arg(&context),
        "building the harness image",
    );
    let tagged = Command::new("docker")
        .args(["image", "inspect", HARNESS])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if tagged {
        made.image(HARNESS);
    }
    built
}

/// `tar -C rootfs -c . | docker import - BASE`.
fn import(rootfs: &Path) -> Result<(), String> {
    let mut tar = Command::new("tar")
        .arg("-C")
        .arg(rootfs)
        .args(["-c", "."])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("tar: could not start: {e}"))?;
    let stdout = tar.stdout.take().expect("piped");
    let imported = Command::new("docker")
        .args(["import", "-", BASE])
        .stdin(stdout)
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("docker import: could not start: {e}"));
    let tarred = tar.wait().map_err(|e| format!("tar: {e}"))?;
    match imported? {
        s if s.success() && tarred.success() => {
            println!("imported the base image {BASE}");
            Ok(())
        }
        s => Err(format!(
            "importing the base image failed (tar {tarred}, docker import {s})"
        )),
    }
}
