//! The Docker setup of the capacity run (docker/compose.yaml) keeps the reference's limits and the harness's
//! loopback-only rule. The file is the one source of the limits `cargo xtask benchmark-capacity --docker` runs
//! with, and the description for Docker Compose elsewhere; it is checked here as written, without an engine: YAML
//! in its JSON subset with full-line `#` comments, read with serde_json.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use janitor_benchmarks::capacity::cluster;
use janitor_benchmarks::capacity::env::{CapacityEnv, Run, VARIABLES};
use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn compose() -> Value {
    let path = workspace().join("docker/compose.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let json: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect();
    serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("{} is not JSON-subset YAML: {e}", path.display()))
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("expected a list, got {value}"))
        .iter()
        .map(|v| {
            v.as_str()
                .unwrap_or_else(|| panic!("expected a string, got {v}"))
        })
        .collect()
}

/// A service's environment list as name → value (`None` for a name passed through from the caller).
fn environment(service: &Value) -> BTreeMap<&str, Option<&str>> {
    strings(&service["environment"])
        .into_iter()
        .map(|entry| match entry.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (entry, None),
        })
        .collect()
}

#[test]
fn every_service_has_the_reference_limits() {
    let compose = compose();
    let services = &compose["services"];
    let names: Vec<&String> = services.as_object().unwrap().keys().collect();
    assert_eq!(names, ["client", "postgres", "server"]);
    for (name, cpus, memory) in [
        ("postgres", 2, "1g"),
        ("server", 4, "4g"),
        ("client", 2, "4g"),
    ] {
        let service = &services[name];
        assert_eq!(service["cpus"], cpus, "{name} cpus");
        assert_eq!(service["mem_limit"], memory, "{name} memory");
        // Without it swap would stretch the memory limit.
        assert_eq!(service["memswap_limit"], memory, "{name} memory and swap");
        assert!(
            service.get("deploy").is_none(),
            "{name}: limits are given once, at the service"
        );
    }
    for name in ["server", "client"] {
        let nofile = &services[name]["ulimits"]["nofile"];
        assert_eq!(
            (&nofile["soft"], &nofile["hard"]),
            (&262_144.into(), &262_144.into()),
            "{name}"
        );
    }
}

#[test]
fn postgres_runs_with_the_disposable_clusters_settings() {
    let compose = compose();
    let postgres = &compose["services"]["postgres"];
    assert!(postgres["image"]
        .as_str()
        .unwrap()
        .starts_with("postgres:17"));
    let command = strings(&postgres["command"]);
    assert_eq!(command[0], "postgres");
    // The same settings as the native disposable cluster, each as a `-c name=value` pair.
    let flags: Vec<String> = command[1..]
        .chunks(2)
        .map(|pair| {
            assert_eq!(pair[0], "-c", "{command:?}");
            pair[1].to_owned()
        })
        .collect();
    let expected: Vec<String> = cluster::SETTINGS
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    assert_eq!(flags, expected);
    assert_eq!(flags, ["shared_buffers=128MB", "max_connections=40"]);
}

#[test]
fn only_postgres_is_published_and_only_on_loopback() {
    let compose = compose();
    let services = &compose["services"];
    assert_eq!(
        strings(&services["postgres"]["ports"]),
        ["127.0.0.1:30434:5432"]
    );
    assert!(services["postgres"].get("network_mode").is_none());
    for name in ["server", "client"] {
        let service = &services[name];
        // Sharing postgres's network namespace: everything talks over 127.0.0.1 as in the native run.
        assert_eq!(service["network_mode"], "service:postgres", "{name}");
        assert!(service.get("ports").is_none(), "{name} publishes nothing");
        assert!(
            service.get("networks").is_none(),
            "{name} joins no other network"
        );
        assert!(
            service.get("sysctls").is_none(),
            "{name}: namespace sysctls belong to postgres"
        );
    }
    assert_eq!(
        services["postgres"]["sysctls"]["net.ipv4.ip_local_port_range"],
        "1024 65535"
    );
}

#[test]
fn the_roles_and_settings_reach_the_harness() {
    let compose = compose();
    let services = &compose["services"];
    assert_eq!(strings(&services["server"]["command"]), ["serve-fleet"]);
    assert_eq!(strings(&services["client"]["command"]), ["capacity"]);
    let url = "postgres://postgres@127.0.0.1:5432/postgres";
    let client = environment(&services["client"]);
    let server = environment(&services["server"]);
    assert_eq!(client["JANITOR_BENCHMARK_EXTERNAL_SERVERS"], Some("1"));
    assert_eq!(client["JANITOR_BENCHMARK_DATABASE_URL"], Some(url));
    assert_eq!(server["JANITOR_BENCHMARK_DATABASE_URL"], Some(url));
    // Every setting reaches the client, fixed here or passed through; nothing unknown is set.
    let client_names: Vec<&str> = client.keys().copied().collect();
    let mut known = VARIABLES.to_vec();
    known.sort_unstable();
    assert_eq!(client_names, known);
    // The fleet sees the same passed-through settings (workers, connections, …) as the client.
    for (name, value) in &server {
        assert!(VARIABLES.contains(name), "{name}");
        assert_eq!(
            client.get(name),
            Some(value),
            "{name} differs between server and client"
        );
    }
    assert_eq!(
        server.len(),
        client.len() - 2,
        "all but EXTERNAL_SERVERS and OUT"
    );
    // The fixed values pass the harness's own checks (the URL is loopback).
    let fixed: BTreeMap<String, String> = client
        .iter()
        .filter_map(|(name, value)| value.map(|v| (name.to_string(), v.to_owned())))
        .collect();
    let env = CapacityEnv::from_vars(&fixed, Run::Capacity).unwrap();
    assert!(env.external_servers);
    assert_eq!(env.database_url.as_deref(), Some(url));
    // The client waits for the database and the fleet.
    assert_eq!(
        services["client"]["depends_on"]["postgres"]["condition"],
        "service_healthy"
    );
    assert_eq!(
        services["client"]["depends_on"]["server"]["condition"],
        "service_started"
    );
    assert_eq!(
        services["server"]["depends_on"]["postgres"]["condition"],
        "service_healthy"
    );
}

#[test]
fn the_harness_image_is_built_from_the_workspace_and_reports_land_in_the_repository() {
    let compose = compose();
    let docker = workspace().join("docker");
    for name in ["server", "client"] {
        let build = &compose["services"][name]["build"];
        let context = docker.join(build["context"].as_str().unwrap());
        assert_eq!(
            context.canonicalize().unwrap(),
            workspace().canonicalize().unwrap(),
            "{name}"
        );
        let dockerfile = context.join(build["dockerfile"].as_str().unwrap());
        assert!(dockerfile.is_file(), "{} exists", dockerfile.display());
        let text = std::fs::read_to_string(&dockerfile).unwrap();
        for needed in [
            "FROM rust:1-slim-bookworm AS build",
            "FROM debian:bookworm-slim",
            "cargo build --release --locked --manifest-path benchmarks/Cargo.toml --target-dir target \\\n    --bin janitor-capacity",
            "WORKDIR /janitor\n",
            "ENTRYPOINT [\"janitor-capacity\"]",
        ] {
            assert!(
                text.contains(needed),
                "{} lacks {needed:?}",
                dockerfile.display()
            );
        }
        assert_eq!(compose["services"][name]["image"], "janitor-capacity:local");
    }
    let ignored = std::fs::read_to_string(workspace().join(".dockerignore")).unwrap();
    let patterns: Vec<&str> = ignored.lines().collect();
    assert!(
        patterns.contains(&"**/target") && patterns.contains(&".git"),
        "{patterns:?}"
    );
    // The harness writes docs/benchmarks below its working directory, /janitor in the image.
    let volumes = strings(&compose["services"]["client"]["volumes"]);
    assert_eq!(volumes, ["../docs/benchmarks:/janitor/docs/benchmarks"]);
    assert!(docker.join("../docs/benchmarks").is_dir());
}
