//! The disposable PostgreSQL cluster of a run, when `JANITOR_BENCHMARK_DATABASE_URL` is not set: the tests'
//! disposable cluster (`janitor_test_support::cluster`, which says how it is made, guarded and cleaned up) at
//! the harness's fixed place and with the reference's limits.
//!
//! The cluster lives in `<temp dir>/janitor-capacity-cluster` and listens only on 127.0.0.1:30434. It runs
//! with `shared_buffers=128MB` and `max_connections=40`; everything else keeps PostgreSQL's defaults,
//! durability included (fsync, synchronous_commit, full_page_writes stay on), so the figures measured on it are
//! honest. `JANITOR_BENCHMARK_REUSE=1` starts again a cluster an earlier run kept, and keeps it afterwards.

pub use janitor_test_support::cluster::Cluster;
use janitor_test_support::cluster::ClusterSpec;

use super::env::CapacityEnv;

/// The port of the disposable cluster, on 127.0.0.1 only.
/// Below the ephemeral range (32768–60999), where another program's outgoing socket could hold it, and above
/// the ports tests take (20000–29999, `janitor_test_support::ports`).
pub const PORT: u16 = 30_434;

/// The name of the cluster's directory inside the temp directory.
pub const DIR_NAME: &str = "janitor-capacity-cluster";

/// Who makes the cluster: its marker file is `janitor-capacity.marker`.
pub const OWNER: &str = "janitor-capacity";

/// The server settings the cluster runs with besides the address and socket; the rest are PostgreSQL's
/// defaults. Reports can quote them.
pub const SETTINGS: &[(&str, &str)] = &[("shared_buffers", "128MB"), ("max_connections", "40")];

/// The database URL of the run: `JANITOR_BENCHMARK_DATABASE_URL`, or a disposable cluster started now.
pub fn acquire(env: &CapacityEnv) -> Result<(String, Option<Cluster>), String> {
    match &env.database_url {
        Some(url) => Ok((url.clone(), None)),
        None => {
            let cluster = Cluster::start(spec(env.reuse))?;
            println!("disposable PostgreSQL cluster ready at {}", cluster.url());
            Ok((cluster.url(), Some(cluster)))
        }
    }
}

/// The harness's cluster.
fn spec(reuse: bool) -> ClusterSpec {
    ClusterSpec {
        reuse,
        settings: SETTINGS
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect(),
        reuse_hint: "run with JANITOR_BENCHMARK_REUSE=1".to_owned(),
        port_hint:
            "stop whatever holds it, or point JANITOR_BENCHMARK_DATABASE_URL at an existing loopback server"
                .to_owned(),
        ..ClusterSpec::new(OWNER, std::env::temp_dir().join(DIR_NAME), PORT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_database_url_starts_no_cluster() {
        let vars = [(
            "JANITOR_BENCHMARK_DATABASE_URL".to_owned(),
            "postgres://postgres@127.0.0.1:5432/postgres".to_owned(),
        )]
        .into_iter()
        .collect();
        let env = CapacityEnv::from_vars(&vars, super::super::env::Run::Single).unwrap();
        let (url, cluster) = acquire(&env).unwrap();
        assert_eq!(url, "postgres://postgres@127.0.0.1:5432/postgres");
        assert!(cluster.is_none());
    }

    #[test]
    fn the_harness_cluster_is_fixed() {
        let spec = spec(true);
        assert_eq!((spec.port, spec.reuse), (PORT, true));
        assert!(spec.dir.ends_with(DIR_NAME));
        assert_eq!(spec.settings.len(), SETTINGS.len());
    }
}
