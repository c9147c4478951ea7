//! What the tests that break connections on purpose share: a pooled connection's backend, a lock that makes a
//! store's statement wait, and the wait for it to block; and the log a test captures on its own thread.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use janitor_sql::testing::admin_client;
use janitor_sql::Database;

/// The backend process of a connection of `database`'s pool (the only one, in a pool of one).
pub async fn backend_pid(database: &Database) -> i32 {
    let client = database.pool().get().await.unwrap();
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0)
}

/// Takes an exclusive lock on the schema's `observations` in an open transaction of a separate client, so
/// that the store's next read waits on it. Dropping the client ends the transaction.
pub async fn lock_observations(database: &Database) -> tokio_postgres::Client {
    let admin = admin_client().await;
    let schema = database.schema().unwrap();
    admin
        .batch_execute(&format!(
            "BEGIN; LOCK TABLE {schema}.observations IN ACCESS EXCLUSIVE MODE"
        ))
        .await
        .unwrap();
    admin
}

/// Waits until backend `pid` waits on a lock, for at most 10 s.
pub async fn wait_until_blocked(admin: &tokio_postgres::Client, pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let waiting: bool = admin
            .query_one(
                "SELECT coalesce(bool_or(wait_event_type = 'Lock'), false) FROM pg_stat_activity WHERE pid = $1",
                &[&pid],
            )
            .await
            .unwrap()
            .get(0);
        if waiting {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the store's statement never blocked"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Ends backend `pid` as an operator would (`pg_terminate_backend`).
pub async fn terminate(pid: i32) {
    let killed: bool = admin_client()
        .await
        .query_one("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .unwrap()
        .get(0);
    assert!(killed, "backend {pid} was not terminated");
}

/// What the test's subscriber wrote, shared with its writer.
#[derive(Clone, Default)]
pub struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// A subscriber for this thread, up to `level`, writing here; the guard keeps it set. With a
    /// current-thread runtime, the tasks the test spawns log to it too.
    pub fn on_this_thread(level: tracing::Level) -> (Captured, tracing::subscriber::DefaultGuard) {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_max_level(level)
            .with_ansi(false)
            .finish();
        (captured, tracing::subscriber::set_default(subscriber))
    }

    /// The lines written so far.
    pub fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .map(str::to_owned)
            .collect()
    }
}
