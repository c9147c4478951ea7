//! Writes racing an erasure on PostgreSQL. A write naming the account an erasure is deleting waits for the
//! erasure's lock on the account's row and finds the row gone once the erasure commits: a race, not an
//! outage, answered as the memory store answers a write made just after the erasure.
//!
//! The erasure is held in the middle of its transaction, after it locked the account, by a lock on one of the
//! account's events taken from another connection; the writes are started once it waits there, and the lock
//! is let go once they wait on the erasure.

use std::time::{Duration, Instant};

use janitor_core::directory::{Directory, DirectoryError, KeyInput, KeyType};
use janitor_core::erasure::AccountErasure;
use janitor_core::evidence::{Action, EventInput, EventType, Evidence, EvidenceConfig, SubjectId};
use janitor_core::testing::{label_key, visitor, T0};
use janitor_core::{StoreError, Stores};
use janitor_sql::testing::{admin_client, create_visitors, with_schemas};
use janitor_sql::PgStores;

/// The backends `blocker` holds up, once there are `count` of them (at most 10 s).
async fn held_count(admin: &tokio_postgres::Client, blocker: i32, count: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let rows = admin
            .query(
                "SELECT pid FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)) ORDER BY pid",
                &[&blocker],
            )
            .await
            .unwrap();
        if rows.len() >= count {
            return rows.iter().map(|row| row.get(0)).collect();
        }
        assert!(
            Instant::now() < deadline,
            "{count} backends never waited on {blocker}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn sign_in(
    id: &str,
    evidence: &Evidence<impl janitor_core::evidence::EvidenceStore>,
) -> EventInput {
    EventInput::builder(id, EventType::LoginSuccess)
        .action(Action::SignIn)
        .subject(evidence.subject_id("alice"))
        .visitor(visitor(1))
        .build()
        .unwrap()
}

/// An erasure of `account` held in the middle of its transaction, after it locked the account's row.
struct Held {
    holder: tokio_postgres::Client,
    watcher: tokio_postgres::Client,
    erasing: i32,
    erasure: tokio::task::JoinHandle<Result<AccountErasure, StoreError>>,
}

impl Held {
    /// Starts the erasure of `account`, which must have an event, and holds it on that event.
    async fn erasure(stores: &PgStores, account: &SubjectId) -> Held {
        let holder = admin_client().await;
        let pid: i32 = holder
            .query_one("SELECT pg_backend_pid()", &[])
            .await
            .unwrap()
            .get(0);
        let schema = stores.database().schema().unwrap().as_str().to_owned();
        holder.batch_execute("BEGIN").await.unwrap();
        let lock =
            format!("SELECT 1 FROM {schema}.application_events WHERE subject_id = $1 FOR UPDATE");
        assert!(!holder
            .query(&lock, &[&account.as_str()])
            .await
            .unwrap()
            .is_empty());
        let erasure = {
            let (stores, account) = (stores.clone(), account.clone());
            tokio::spawn(async move { stores.erase_account(&account, None).await })
        };
        // Watched from a connection of its own: pg_stat_activity stays as it was for the rest of a transaction.
        let watcher = admin_client().await;
        let erasing = held_count(&watcher, pid, 1).await[0];
        Held {
            holder,
            watcher,
            erasing,
            erasure,
        }
    }

    /// Lets the erasure go on once `writes` statements wait on it, and returns what it erased.
    async fn release(self, writes: usize) -> AccountErasure {
        held_count(&self.watcher, self.erasing, writes).await;
        self.holder.batch_execute("ROLLBACK").await.unwrap();
        self.erasure.await.unwrap().expect("the erasure commits")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_naming_an_account_being_erased_are_answered_as_after_the_erasure() {
    with_schemas(|schemas| async move {
        let database = schemas.fresh_with(|b| b.max_connections(4)).await;
        create_visitors(&database, &[visitor(1)]).await;
        let stores = PgStores::new(database.clone());
        let key = label_key("erasure-race");
        let evidence = Evidence::new(stores.evidence(), key.clone(), EvidenceConfig::default())
            .with_clock(janitor_core::Clock::manual(0));
        let directory =
            Directory::new(stores.directory(), key).with_clock(janitor_core::Clock::manual(0));
        let alice = evidence.subject_id("alice");
        assert!(
            evidence
                .at(T0)
                .record(&sign_in("before", &evidence))
                .await
                .unwrap()
                .recorded
        );

        // Alice signs in while her account is erased: the event is recorded, her account with it again, as
        // in memory after the erasure.
        let held = Held::erasure(&stores, &alice).await;
        let recorded = {
            let evidence = evidence.clone();
            tokio::spawn(async move { evidence.at(T0).record(&sign_in("during", &evidence)).await })
        };
        assert!(held.release(1).await.subject_existed);
        assert!(recorded.await.unwrap().expect("no storage error").recorded);
        let events: i64 = database
            .pool()
            .get()
            .await
            .unwrap()
            .query_one(
                "SELECT count(*) FROM application_events WHERE subject_id = $1",
                &[&alice.as_str()],
            )
            .await
            .unwrap()
            .get(0);
        assert_eq!(events, 1, "the erased event is gone, the new one is stored");

        // A verified key added while the account is erased finds no account, as in memory after the erasure.
        let held = Held::erasure(&stores, &alice).await;
        let keyed = {
            let (directory, alice) = (directory.clone(), alice.clone());
            let email = KeyInput::new(KeyType::Email, "app", "alice@example.com");
            tokio::spawn(async move { directory.at(T0).add_verified_key(&alice, &email).await })
        };
        assert!(held.release(1).await.subject_existed);
        match keyed.await.unwrap() {
            Err(DirectoryError::UnknownSubject { .. }) => {}
            other => panic!("a key for the erased account gave {other:?}"),
        }
    })
    .await;
}
