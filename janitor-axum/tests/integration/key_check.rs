//! Instances sharing one database must share the secret: the first records a fingerprint of it, the next with
//! the same secret matches, and one with another secret is refused with a message that says what to fix.

use janitor_axum::handle::{KeyCheck, KeyCheckError};
use janitor_axum::postgres::PgStores;
use janitor_axum::{Janitor, MemoryStores};
use janitor_sql::testing::with_schemas;

const SHARED: &str = "the-shop-instances-share-this-secret-7f3a";
const OTHER: &str = "another-secret-typed-into-one-instance-9c1e";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_secret_on_the_same_database_is_refused() {
    with_schemas(|schemas| async move {
        let stores = PgStores::new(schemas.fresh().await);
        let instance = |secret: &str| {
            let config = janitor_axum::JanitorConfig::builder()
                .secret(secret)
                .namespace("shop")
                .build()
                .unwrap();
            Janitor::new(config, stores.clone())
        };
        assert_eq!(instance(SHARED).check_key().await, Ok(KeyCheck::Recorded));
        assert_eq!(instance(SHARED).check_key().await, Ok(KeyCheck::Matches));
        let refused = instance(OTHER).check_key().await.unwrap_err();
        assert!(matches!(&refused, KeyCheckError::Differs { namespace } if namespace == "shop"));
        assert!(refused.to_string().contains("same secret"), "{refused}");
        assert!(!refused.to_string().contains(OTHER), "never the secret");
        // Another namespace is another tenant, with a secret of its own.
        let config = janitor_axum::JanitorConfig::builder()
            .secret(OTHER)
            .namespace("blog")
            .build()
            .unwrap();
        assert_eq!(
            Janitor::new(config, stores).check_key().await,
            Ok(KeyCheck::Recorded)
        );
    })
    .await;
}

#[tokio::test]
async fn memory_stores_have_nothing_to_compare() {
    let janitor = Janitor::new(
        janitor_axum::JanitorConfig::builder()
            .secret(SHARED)
            .build()
            .unwrap(),
        MemoryStores::new(),
    );
    assert_eq!(janitor.check_key().await, Ok(KeyCheck::Unshared));
}
