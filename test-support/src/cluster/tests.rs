//! The disposable cluster, started for real with the machine's PostgreSQL on ports and directories of the
//! tests' own, so that a benchmark run, or another test run, may go on beside them.

use super::*;

/// A port no other test of this process is given (below the ephemeral range, where a listener another test
/// binds to port 0 cannot land: one did, and a cluster meant to fail found that listener and counted as started).
fn own_port() -> u16 {
    crate::ports::free_span(1).unwrap()
}

const OWNER: &str = "janitor-cluster-test";

fn test_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("{OWNER}-{}-{name}", std::process::id()))
}

/// The spec the tests start: the capacity harness's two settings, so that they are seen to apply.
fn spec(dir: &Path, port: u16, reuse: bool) -> ClusterSpec {
    ClusterSpec {
        reuse,
        settings: vec![
            ("shared_buffers".into(), "128MB".into()),
            ("max_connections".into(), "40".into()),
        ],
        reuse_hint: "start it with reuse set".into(),
        ..ClusterSpec::new(OWNER, dir.to_path_buf(), port)
    }
}

/// Runs `sql` and returns the first column of each row.
fn query(url: &str, sql: &str) -> Result<Vec<String>, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .map_err(|e| format!("connecting to {url}: {e}"))?;
        tokio::spawn(connection);
        let rows = client
            .simple_query(sql)
            .await
            .map_err(|e| format!("{sql}: {e}"))?;
        Ok(rows
            .iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
                _ => None,
            })
            .collect())
    })
}

fn port_is_bindable(port: u16) -> bool {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok()
}

#[test]
fn a_cluster_starts_answers_refuses_a_second_start_and_is_removed() {
    let (dir, port) = (test_dir("fresh"), own_port());
    let cluster = Cluster::start(spec(&dir, port, false)).unwrap();
    assert_eq!(
        cluster.url(),
        format!("postgres://postgres@127.0.0.1:{port}/postgres")
    );
    let settings = query(
        &cluster.url(),
        "SELECT unnest(ARRAY[current_setting('shared_buffers'), current_setting('max_connections'), \
         current_setting('listen_addresses'), current_setting('unix_socket_directories'), \
         current_setting('fsync'), current_setting('server_encoding')])",
    )
    .unwrap();
    assert_eq!(
        settings,
        [
            "128MB",
            "40",
            "127.0.0.1",
            dir.to_str().unwrap(),
            "on",
            "UTF8"
        ]
    );
    assert!(
        dir.join(format!(".s.PGSQL.{port}")).exists(),
        "socket in the cluster's directory"
    );
    assert!(dir.join(format!("{OWNER}.marker")).is_file());

    // The same directory and port again: refused, with the clean-up in the message; nothing is touched.
    let second = Cluster::start(spec(&dir, port, false)).unwrap_err();
    assert!(second.contains("already exists"), "{second}");
    assert!(
        second.contains("pg_ctl stop -D") && second.contains("rm -rf"),
        "{second}"
    );
    // Reuse of a directory whose server is still running: the port is taken.
    let running = Cluster::start(spec(&dir, port, true)).unwrap_err();
    assert!(
        running.contains(&format!("127.0.0.1:{port} is taken")),
        "{running}"
    );
    assert_eq!(query(&cluster.url(), "SELECT 1").unwrap(), ["1"]);

    drop(cluster);
    assert!(!dir.exists(), "{} removed", dir.display());
    assert!(port_is_bindable(port), "port {port} free again");
}

#[test]
fn a_reused_cluster_keeps_its_data_and_a_foreign_directory_is_refused() {
    let (dir, port) = (test_dir("reuse"), own_port());
    let first = Cluster::start(spec(&dir, port, true)).unwrap();
    query(
        &first.url(),
        "CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)",
    )
    .unwrap();
    drop(first);
    assert!(
        dir.join(format!("{OWNER}.marker")).is_file(),
        "kept for the next run"
    );
    assert!(port_is_bindable(port), "but stopped");

    let again = Cluster::start(spec(&dir, port, true)).unwrap();
    assert_eq!(query(&again.url(), "SELECT n FROM kept").unwrap(), ["7"]);
    drop(again);
    // Without reuse the kept cluster is refused, not removed.
    let refused = Cluster::start(spec(&dir, port, false)).unwrap_err();
    assert!(refused.contains("start it with reuse set"), "{refused}");
    assert!(dir.join("data").join("PG_VERSION").is_file());
    fs::remove_dir_all(&dir).unwrap();

    // A directory the harness did not make is never adopted or removed, even with reuse.
    let foreign = test_dir("foreign");
    fs::create_dir(&foreign).unwrap();
    fs::write(foreign.join("notes"), "someone else's").unwrap();
    for reuse in [false, true] {
        let message = Cluster::start(spec(&foreign, port, reuse)).unwrap_err();
        assert!(
            message.contains(&format!("not made by {OWNER}")),
            "{message}"
        );
    }
    assert_eq!(
        fs::read_to_string(foreign.join("notes")).unwrap(),
        "someone else's"
    );
    fs::remove_dir_all(&foreign).unwrap();
}

#[test]
fn a_taken_port_is_refused_before_anything_is_created() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = test_dir("taken");
    let message = Cluster::start(spec(&dir, port, false)).unwrap_err();
    assert!(
        message.contains(&format!("127.0.0.1:{port} is taken")),
        "{message}"
    );
    // And by whom: this test's own process holds it.
    assert!(
        message.contains(&format!("held by pid {}", std::process::id())),
        "{message}"
    );
    assert!(!dir.exists());
    let relative = Cluster::start(spec(Path::new("relative/dir"), port, false)).unwrap_err();
    assert!(relative.contains("absolute path"), "{relative}");
}

#[test]
fn a_server_that_cannot_start_shows_its_log_and_leaves_nothing() {
    // A socket path past the 107-byte limit of Unix sockets: initdb succeeds, the server refuses to start.
    let dir = test_dir(&"long".repeat(28));
    let port = own_port();
    let message = Cluster::start(spec(&dir, port, false)).unwrap_err();
    assert!(
        message.contains("ended before accepting connections"),
        "{message}"
    );
    assert!(message.contains("last lines of"), "{message}");
    assert!(
        message.contains("too long"),
        "the server's own reason: {message}"
    );
    assert!(!dir.exists(), "the new directory is removed");
    assert!(port_is_bindable(port));
}

#[test]
fn a_standby_replicates_synchronously_and_is_promoted_when_its_primary_crashes() {
    let (primary_dir, standby_dir) = (test_dir("primary"), test_dir("standby"));
    let mut primary_spec = spec(&primary_dir, own_port(), false);
    primary_spec
        .settings
        .push(("synchronous_standby_names".into(), "*".into()));
    let mut primary = Cluster::start(primary_spec).unwrap();
    let mut standby =
        Cluster::start_standby(spec(&standby_dir, own_port(), false), &primary).unwrap();
    assert_eq!(
        query(&standby.url(), "SELECT pg_is_in_recovery()").unwrap(),
        ["t"]
    );
    // Acknowledged only once the standby has it: readable there right after the commit returns.
    query(
        &primary.url(),
        "CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)",
    )
    .unwrap();
    assert_eq!(
        query(&primary.url(), "SELECT sync_state FROM pg_stat_replication").unwrap(),
        ["sync"]
    );
    primary.crash().unwrap();
    assert!(
        query(&primary.url(), "SELECT 1").is_err(),
        "the primary is down"
    );
    standby.promote().unwrap();
    assert_eq!(
        query(
            &standby.url(),
            "INSERT INTO kept VALUES (2); SELECT count(*) FROM kept"
        )
        .unwrap(),
        ["2"]
    );
    assert!(
        Cluster::start_standby(spec(&test_dir("reused"), own_port(), true), &standby).is_err(),
        "a standby is never reused"
    );
    drop((primary, standby));
    assert!(!primary_dir.exists() && !standby_dir.exists());
}
