//! `cargo xtask benchmark-capacity --docker`: the whole capacity run in three containers with the limits of
//! `docker/compose.yaml`, on a machine with no image registry.
//!
//! - [`engine`]: the engine, found or installed and started (and stopped again).
//! - [`limits`]: the compose file's limits as `docker run` flags, fitted to the host's cores.
//! - [`images`]: the base image from `debootstrap` and the harness image built on it.
//!
//! The containers share one network namespace with nothing but loopback (the database's, made with
//! `--network none`): PostgreSQL on 127.0.0.1:5432, the fleet host on 30,490 and its fleets on 30,500 and up,
//! as in the native run. Nothing is published to the host. The reports come back through a bind mount and are
//! renamed `*-docker.*` beside the native ones.

pub mod engine;
pub mod images;
pub mod limits;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::capacity::{build_harness, status};
use engine::Engine;
use limits::Plan;

/// Every container of the run, database first (the others join its namespace).
pub const CONTAINERS: [&str; 3] = [POSTGRES, SERVER, CLIENT];

/// The database's container.
pub const POSTGRES: &str = "janitor-capacity-postgres";

/// The fleet host's container.
pub const SERVER: &str = "janitor-capacity-server";

/// The client's container: the harness's run, whose exit code is the run's.
pub const CLIENT: &str = "janitor-capacity-client";

/// The database URL inside the shared namespace.
pub const DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

/// Where the client writes its reports inside its container.
const REPORTS_MOUNT: &str = "/janitor/reports";

/// How long PostgreSQL and the fleet host may take to start.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// How the containers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Apply the compose file's CPU limits (fitted to the host). Without them (`--no-cpu-limits`) every
    /// container may use every core, as the native run's processes do, and the run measures what the
    /// containers themselves cost; memory and the other limits stay.
    pub cpu_limits: bool,
}

/// Runs the whole capacity sequence in containers and writes `*-docker.json` reports to
/// `JANITOR_BENCHMARK_OUT` (or `docs/benchmarks`).
pub fn run(root: &Path, options: Options) -> Result<(), String> {
    let compose = limits::compose_file(root)?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut plan = limits::plan(&compose, cores, limits::open_files_ceiling())?;
    if !options.cpu_limits {
        plan = plan.without_cpu_limits();
    }
    let caller: BTreeMap<String, String> = std::env::vars()
        .filter(|(name, value)| name.starts_with("JANITOR_BENCHMARK_") && !value.is_empty())
        .collect();
    let settings = client_settings(&plan, &caller)?;
    // As the native run names it in its reports: the caller's text, or the default relative to the root.
    let out_name = caller
        .get("JANITOR_BENCHMARK_OUT")
        .map_or("docs/benchmarks", String::as_str)
        .to_owned();
    let out = root.join(&out_name);
    // Built before anything of Docker's starts, so a compile error leaves nothing behind.
    let binary = build_harness(root)?;
    let scratch =
        std::env::temp_dir().join(format!("janitor-capacity-docker-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    describe(&plan);
    let engine = match Engine::find_or_start(&scratch) {
        Ok(engine) => engine,
        Err(problem) => {
            let _ = std::fs::remove_dir_all(&scratch);
            return Err(problem);
        }
    };
    let mut made = Made::default();
    let outcome = leftovers()
        .and_then(|()| images::build(root, &binary, &scratch, &mut made))
        .and_then(|()| containers(&plan, &settings, &scratch, &mut made))
        .and_then(|()| collect_reports(&scratch.join("reports"), &out, &out_name));
    let removed = made.remove();
    let stopped = engine.stop();
    let _ = std::fs::remove_dir_all(&scratch);
    outcome.and(removed).and(stopped)
}

/// The client's settings: the caller's `JANITOR_BENCHMARK_*` values the compose file passes through, with
/// the label `docker` unless the caller named one.
pub fn client_settings(
    plan: &Plan,
    caller: &BTreeMap<String, String>,
) -> Result<Vec<(String, String)>, String> {
    if caller
        .get("JANITOR_BENCHMARK_REUSE")
        .is_some_and(|v| v != "0")
    {
        return Err(
            "JANITOR_BENCHMARK_REUSE: the Docker run builds its database and images afresh and removes \
             them afterwards, so there is nothing to reuse"
                .to_owned(),
        );
    }
    if let Some(url) = caller.get("JANITOR_BENCHMARK_DATABASE_URL") {
        return Err(format!(
            "JANITOR_BENCHMARK_DATABASE_URL={url}: the Docker run uses its own database container"
        ));
    }
    let mut settings: Vec<(String, String)> = plan
        .passed
        .iter()
        .filter_map(|name| caller.get(name).map(|value| (name.clone(), value.clone())))
        .collect();
    if !settings
        .iter()
        .any(|(name, _)| name == "JANITOR_BENCHMARK_LABEL")
    {
        settings.push(("JANITOR_BENCHMARK_LABEL".to_owned(), "docker".to_owned()));
    }
    settings.push((
        "JANITOR_BENCHMARK_DATABASE_URL".to_owned(),
        DATABASE_URL.to_owned(),
    ));
    Ok(settings)
}

fn describe(plan: &Plan) {
    if !plan.postgres.cpu_limited {
        println!(
            "Docker run on {} cores without CPU limits; memory {} / {} / {}",
            plan.host_cores, plan.postgres.memory, plan.server.memory, plan.client.memory
        );
        return;
    }
    println!(
        "Docker run on {} cores: postgres {:.2} CPUs (reference {}), server {:.2} ({}), client {:.2} ({}); \
         memory {} / {} / {}",
        plan.host_cores,
        plan.postgres.cpus,
        plan.postgres.reference_cpus,
        plan.server.cpus,
        plan.server.reference_cpus,
        plan.client.cpus,
        plan.client.reference_cpus,
        plan.postgres.memory,
        plan.server.memory,
        plan.client.memory
    );
}

/// What this run created, so that it removes exactly that.
#[derive(Debug, Default)]
pub struct Made {
    containers: Vec<&'static str>,
    images: Vec<&'static str>,
}

impl Made {
    /// Notes image `name` as this run's.
    pub fn image(&mut self, name: &'static str) {
        self.images.push(name);
    }

    fn remove(self) -> Result<(), String> {
        let mut problems = Vec::new();
        if !self.containers.is_empty() {
            // `-v` takes each container's anonymous volumes with it; the run names none.
            let mut command = docker();
            command
                .args(["rm", "--force", "--volumes"])
                .args(&self.containers);
            if let Err(e) = quiet(&mut command, "docker rm") {
                problems.push(e);
            }
        }
        // The harness image first: the base is its parent.
        for image in self.images.iter().rev() {
            if let Err(e) = quiet(docker().args(["rmi", "--force", image]), "docker rmi") {
                problems.push(e);
            }
        }
        if problems.is_empty() {
            println!("removed the run's containers and images");
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

/// Refuses to start over containers or images of the run's names: they are not this run's to replace.
fn leftovers() -> Result<(), String> {
    let mut found = Vec::new();
    for name in CONTAINERS {
        if quiet(docker().args(["container", "inspect", name]), name).is_ok() {
            found.push(format!("container {name}"));
        }
    }
    for name in images::IMAGES {
        if quiet(docker().args(["image", "inspect", name]), name).is_ok() {
            found.push(format!("image {name}"));
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{} already exist (a run that was killed, or someone else's): remove them with `docker rm --force \
         --volumes {}` and `docker rmi {}`, then run again",
        found.join(", "),
        CONTAINERS.join(" "),
        images::IMAGES.join(" ")
    ))
}

/// Starts the database and the fleet host, runs the client in the foreground and returns its outcome.
fn containers(
    plan: &Plan,
    settings: &[(String, String)],
    scratch: &Path,
    made: &mut Made,
) -> Result<(), String> {
    let reports = scratch.join("reports");
    std::fs::create_dir_all(&reports).map_err(|e| format!("{}: {e}", reports.display()))?;
    made.containers.push(POSTGRES);
    quiet(
        docker()
            .args(["run", "--detach", "--name", POSTGRES, "--network", "none"])
            .args(plan.postgres.flags())
            .args(["--user", "postgres", images::HARNESS, "sh", "-c"])
            .arg(postgres_script(&plan.postgres_settings)),
        "starting the database container",
    )?;
    wait_until(POSTGRES, "database system is ready to accept connections")?;
    let namespace = format!("container:{POSTGRES}");
    let env: Vec<String> = settings
        .iter()
        .flat_map(|(name, value)| ["--env".to_owned(), format!("{name}={value}")])
        .collect();
    made.containers.push(SERVER);
    quiet(
        docker()
            .args(["run", "--detach", "--init", "--name", SERVER, "--network"])
            .arg(&namespace)
            .args(plan.server.flags())
            .args(&env)
            .args([images::HARNESS, "janitor-capacity", "serve-fleet"]),
        "starting the fleet host's container",
    )?;
    wait_until(SERVER, "hosting fleets on")?;
    made.containers.push(CLIENT);
    status(
        docker()
            .args(["run", "--init", "--name", CLIENT, "--network"])
            .arg(&namespace)
            .args(plan.client.flags())
            .args(&env)
            .args(["--env", "JANITOR_BENCHMARK_EXTERNAL_SERVERS=1"])
            .arg("--env")
            .arg(format!("JANITOR_BENCHMARK_OUT={REPORTS_MOUNT}"))
            .arg("--volume")
            .arg(format!("{}:{REPORTS_MOUNT}", reports.display()))
            .args([images::HARNESS, "janitor-capacity", "capacity"]),
        "the harness in its container",
    )
}

/// The database container's command: a cluster made as the native run makes its own (UTF8, `C.UTF-8`, trust
/// on loopback), then the server on 127.0.0.1:5432 with the compose file's settings.
pub fn postgres_script(settings: &[String]) -> String {
    let flags: String = settings.iter().map(|s| format!(" -c '{s}'")).collect();
    format!(
        "set -e; bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1); \
         data={}/data; \
         \"$bin/initdb\" -D \"$data\" -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >/dev/null; \
         exec \"$bin/postgres\" -D \"$data\" -c listen_addresses=127.0.0.1 -p 5432 \
         -c unix_socket_directories={}{flags}",
        images::DATA_DIR,
        images::DATA_DIR
    )
}

/// Waits until `container` logs `line`; fails when it stops first or takes longer than [`READY_TIMEOUT`].
fn wait_until(container: &str, line: &str) -> Result<(), String> {
    let begun = Instant::now();
    loop {
        let logs = docker()
            .args(["logs", container])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("docker logs: {e}"))?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&logs.stdout),
            String::from_utf8_lossy(&logs.stderr)
        );
        if text.contains(line) {
            return Ok(());
        }
        let running = docker()
            .args(["inspect", "--format", "{{.State.Running}}", container])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "true")
            .unwrap_or(false);
        if !running || begun.elapsed() > READY_TIMEOUT {
            return Err(format!(
                "{container} {} before it said {line:?}; it logged:\n{text}",
                if running { "took too long" } else { "stopped" }
            ));
        }
        sleep(Duration::from_millis(250));
    }
}

/// Copies the reports the client wrote to `out` (named `out_name` in the reports), each renamed with
/// [`docker_name`]; a report that names another (the sweep's chart) names its new path.
fn collect_reports(reports: &Path, out: &Path, out_name: &str) -> Result<(), String> {
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let names: Vec<String> = std::fs::read_dir(reports)
        .map_err(|e| format!("{}: {e}", reports.display()))?
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    for name in &names {
        let source = reports.join(name);
        let target = out.join(docker_name(name));
        let mut bytes =
            std::fs::read(&source).map_err(|e| format!("reading {}: {e}", source.display()))?;
        if name.ends_with(".json") {
            bytes =
                renamed_references(&String::from_utf8_lossy(&bytes), &names, out_name).into_bytes();
        }
        std::fs::write(&target, bytes).map_err(|e| format!("writing {}: {e}", target.display()))?;
        println!("wrote {}", target.display());
    }
    Ok(())
}

/// `text` with every path of the client's reports directory to one of `names` replaced by its copy's path.
pub fn renamed_references(text: &str, names: &[String], out_name: &str) -> String {
    let out_name = out_name.trim_end_matches('/');
    names.iter().fold(text.to_owned(), |text, name| {
        text.replace(
            &format!("{REPORTS_MOUNT}/{name}"),
            &format!("{out_name}/{}", docker_name(name)),
        )
    })
}

/// The name a report of the Docker run gets beside the native ones: `-current` becomes `-docker`, a name
/// that has it already stays, any other gains it before its extension.
pub fn docker_name(name: &str) -> String {
    let (stem, extension) = name.split_once('.').unwrap_or((name, ""));
    let stem = match stem.strip_suffix("-current") {
        Some(base) => format!("{base}-docker"),
        None if stem.ends_with("-docker") => stem.to_owned(),
        None => format!("{stem}-docker"),
    };
    if extension.is_empty() {
        stem
    } else {
        format!("{stem}.{extension}")
    }
}

fn docker() -> Command {
    Command::new("docker")
}

/// Runs `command` with its output captured; its error output becomes the error.
fn quiet(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: could not start: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> Plan {
        let compose = limits::compose_file(&crate::capacity::workspace_root()).unwrap();
        limits::plan(&compose, 2, 20_000).unwrap()
    }

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn reports_are_named_beside_the_native_ones() {
        for (native, docker) in [
            ("security-current.json", "security-docker.json"),
            ("throughput-current.svg", "throughput-docker.svg"),
            ("connections-hyper.json", "connections-hyper-docker.json"),
            ("security-docker.json", "security-docker.json"),
            ("lookup-docker.json", "lookup-docker.json"),
            ("README", "README-docker"),
        ] {
            assert_eq!(docker_name(native), docker);
        }
    }

    #[test]
    fn a_report_names_the_copy_of_its_chart() {
        let names = [
            "throughput-current.svg".to_owned(),
            "throughput-current.json".to_owned(),
        ];
        let text =
            r#"{"chart": "/janitor/reports/throughput-current.svg", "other": "/janitor/x.svg"}"#;
        assert_eq!(
            renamed_references(text, &names, "docs/benchmarks/"),
            r#"{"chart": "docs/benchmarks/throughput-docker.svg", "other": "/janitor/x.svg"}"#
        );
    }

    #[test]
    fn the_caller_s_settings_reach_the_client_with_the_docker_label() {
        let caller = vars(&[
            ("JANITOR_BENCHMARK_EVENTS", "10000"),
            ("JANITOR_BENCHMARK_OUT", "/tmp/x"),
        ]);
        let settings = client_settings(&plan(), &caller).unwrap();
        assert!(settings.contains(&("JANITOR_BENCHMARK_EVENTS".into(), "10000".into())));
        assert!(settings.contains(&("JANITOR_BENCHMARK_LABEL".into(), "docker".into())));
        assert!(settings.contains(&("JANITOR_BENCHMARK_DATABASE_URL".into(), DATABASE_URL.into())));
        // The output directory is the host's; inside, the client writes to its mount.
        assert!(!settings
            .iter()
            .any(|(name, _)| name == "JANITOR_BENCHMARK_OUT"));
        let named =
            client_settings(&plan(), &vars(&[("JANITOR_BENCHMARK_LABEL", "pair")])).unwrap();
        assert!(named.contains(&("JANITOR_BENCHMARK_LABEL".into(), "pair".into())));
        assert!(!named.contains(&("JANITOR_BENCHMARK_LABEL".into(), "docker".into())));
    }

    #[test]
    fn reuse_and_a_database_of_the_caller_s_are_refused() {
        let reuse = client_settings(&plan(), &vars(&[("JANITOR_BENCHMARK_REUSE", "1")]));
        assert!(reuse.unwrap_err().contains("nothing to reuse"));
        assert!(client_settings(&plan(), &vars(&[("JANITOR_BENCHMARK_REUSE", "0")])).is_ok());
        let url = vars(&[("JANITOR_BENCHMARK_DATABASE_URL", "postgres://127.0.0.1/x")]);
        assert!(client_settings(&plan(), &url)
            .unwrap_err()
            .contains("its own database container"));
    }

    #[test]
    fn the_database_runs_with_the_compose_file_s_settings_on_loopback() {
        let script = postgres_script(&plan().postgres_settings);
        for part in [
            "--encoding=UTF8 --locale=C.UTF-8",
            "-c listen_addresses=127.0.0.1 -p 5432",
            "-c 'shared_buffers=128MB' -c 'max_connections=40'",
        ] {
            assert!(script.contains(part), "{part}: {script}");
        }
    }
}
