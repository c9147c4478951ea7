//! TLS to a PostgreSQL server that accepts nothing else: a disposable cluster of this test's own, `hostssl`
//! only, with a CA and a server certificate made now. Every `sslmode` is tried against it, and each refusal
//! must say why in words an operator can act on.

use std::path::{Path, PathBuf};

use janitor_core::{Retention, StoreError, VisitorStore};
use janitor_sql::{Database, DatabaseConfig, PgVisitorStore, SetupError};
use janitor_test_support::cluster::{free_port, Cluster, ClusterSpec};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair, KeyUsagePurpose,
};

/// A CA, a server certificate it signed for `localhost` only, and an unrelated CA.
struct Pki {
    ca: String,
    server_certificate: String,
    server_key: String,
    other_ca: String,
}

fn certificate_authority(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params.distinguished_name.push(DnType::CommonName, name);
    CertifiedIssuer::self_signed(params, KeyPair::generate().unwrap()).unwrap()
}

fn pki() -> Pki {
    let ca = certificate_authority("Janitor test CA");
    let server_key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&server_key, &ca)
        .unwrap();
    Pki {
        ca: ca.pem(),
        server_certificate: server.pem(),
        server_key: server_key.serialize_pem(),
        other_ca: certificate_authority("Someone else's CA").pem(),
    }
}

/// The cluster: TLS on with this certificate and key, and a `pg_hba.conf` that refuses every connection
/// without TLS.
fn tls_only_cluster(dir: &Path, certificate: &str, key: &str) -> Cluster {
    let spec = ClusterSpec {
        settings: vec![
            ("ssl".into(), "on".into()),
            ("ssl_cert_file".into(), "server.crt".into()),
            ("ssl_key_file".into(), "server.key".into()),
        ],
        hba: Some(
            "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n"
                .into(),
        ),
        files: vec![
            ("server.crt".into(), certificate.as_bytes().to_vec()),
            ("server.key".into(), key.as_bytes().to_vec()),
        ],
        ..ClusterSpec::new("janitor-tls-test", dir.to_path_buf(), free_port().unwrap())
    };
    Cluster::start(spec).unwrap()
}

fn write(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// Whether a pool for `url` gets a working connection, or the store error that says why not.
async fn reach(url: &str) -> Result<(), StoreError> {
    let config = DatabaseConfig::builder(url)
        .connect_timeout_ms(5_000)
        .build()
        .unwrap();
    Database::new(config).unwrap().ping().await
}

fn refused(outcome: Result<(), StoreError>, case: &str) -> String {
    match outcome {
        Err(StoreError::Unavailable(message)) => message,
        other => panic!("{case}: expected a refusal, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sslmode_against_a_tls_only_server() {
    let pki = pki();
    let files = tempfile_dir("files");
    let ca = write(&files, "ca.pem", &pki.ca);
    let other_ca = write(&files, "other-ca.pem", &pki.other_ca);
    let cluster_dir = tempfile_dir("cluster");
    let cluster = tls_only_cluster(
        &cluster_dir.join("pg"),
        &pki.server_certificate,
        &pki.server_key,
    );
    let port = cluster.port();
    let url =
        |host: &str, query: &str| format!("postgres://postgres@{host}:{port}/postgres?{query}");
    let ca = ca.display();

    // Encrypted without authentication (libpq's require and prefer), and with it.
    for query in ["sslmode=require", "sslmode=prefer"] {
        reach(&url("127.0.0.1", query)).await.expect(query);
    }
    let full = url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    reach(&full)
        .await
        .expect("verify-full against the server's name");
    // verify-ca checks the chain only: the certificate does not name 127.0.0.1, and that is accepted.
    let chain = url("127.0.0.1", &format!("sslmode=verify-ca&sslrootcert={ca}"));
    reach(&chain).await.expect("verify-ca");
    // libpq's require with a root certificate verifies the chain.
    let require_ca = url(
        "127.0.0.1",
        &format!("sslmode=require&sslrootcert={}", other_ca.display()),
    );
    let message = refused(reach(&require_ca).await, "require with another CA");
    assert!(
        message.contains("not signed by a CA this client trusts"),
        "{message}"
    );

    // Refusals, each in plain words.
    let wrong_host = url(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let message = refused(reach(&wrong_host).await, "verify-full, another name");
    assert!(message.contains("not issued for the host"), "{message}");
    let wrong_ca = url(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", other_ca.display()),
    );
    let message = refused(reach(&wrong_ca).await, "verify-full, another CA");
    assert!(
        message.contains("not signed by a CA this client trusts"),
        "{message}"
    );
    // The system's roots (the default) do not know the test CA either.
    let system = url("localhost", "sslmode=verify-full");
    let message = refused(reach(&system).await, "verify-full, system roots");
    assert!(
        message.contains("not signed by a CA this client trusts"),
        "{message}"
    );
    // A plain connection is refused by the server itself.
    let message = refused(reach(&url("127.0.0.1", "sslmode=disable")).await, "disable");
    assert!(message.contains("no encryption"), "{message}");

    // A missing CA file is a configuration error, before any connection.
    let missing = url(
        "localhost",
        "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
    );
    let err = DatabaseConfig::builder(&missing).build().unwrap_err();
    assert!(
        matches!(err, SetupError::Tls(_)) && err.to_string().contains("/nonexistent/ca.pem"),
        "{err}"
    );

    // The stores work over verified TLS, migrations included.
    let database = Database::new(
        DatabaseConfig::builder(&full)
            .schema("tls_stores")
            .build()
            .unwrap(),
    )
    .unwrap();
    database.migrate().await.unwrap();
    let store = PgVisitorStore::new(database, Retention::default());
    let visitor = janitor_core::testing::visitor(1);
    store
        .create_visitor(&visitor, janitor_core::testing::T0)
        .await
        .unwrap();
    assert!(store.delete_visitor(&visitor).await.unwrap());
    drop(cluster);
    for dir in [files, cluster_dir] {
        std::fs::remove_dir_all(dir).unwrap();
    }
    let _ = std::fs::remove_dir(tempfile_dir_of_this_run());
}

/// A directory of this test run's own under the temp directory, made empty.
fn tempfile_dir(name: &str) -> PathBuf {
    let dir = tempfile_dir_of_this_run().join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A self-signed certificate for `localhost` with CA:TRUE, as the PostgreSQL manual's `openssl req -new -x509
/// -subj "/CN=localhost"` makes it: with the name in a subjectAltName, or (as openssl's) in the CN only.
fn self_signed_localhost(alt_name: bool) -> (String, String) {
    let names = if alt_name {
        vec!["localhost".to_owned()]
    } else {
        Vec::new()
    };
    let mut params = CertificateParams::new(names).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let key = KeyPair::generate().unwrap();
    let certificate = params.self_signed(&key).unwrap();
    (certificate.pem(), key.serialize_pem())
}

/// libpq trusts a server whose self-signed certificate is the root certificate itself; webpki alone calls that
/// a CA used as an end entity. Checked for a certificate naming its host either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_server_certificate_named_in_sslrootcert() {
    for alt_name in [true, false] {
        let case = if alt_name { "alt-name" } else { "cn-only" };
        let (certificate, key) = self_signed_localhost(alt_name);
        let (other, _) = self_signed_localhost(alt_name);
        let files = tempfile_dir(&format!("self-signed-{case}"));
        let root = write(&files, "server.crt", &certificate);
        let other = write(&files, "other.crt", &other);
        let cluster = tls_only_cluster(&files.join("pg"), &certificate, &key);
        let port = cluster.port();
        let url = |host: &str, mode: &str, root: &Path| {
            format!(
                "postgres://postgres@{host}:{port}/postgres?sslmode={mode}&sslrootcert={}",
                root.display()
            )
        };

        reach(&url("localhost", "verify-full", &root))
            .await
            .unwrap_or_else(|e| panic!("{case}: verify-full with the right name: {e}"));
        let message = refused(
            reach(&url("127.0.0.1", "verify-full", &root)).await,
            "verify-full, another name",
        );
        assert!(
            message.contains("not issued for the host"),
            "{case}: {message}"
        );
        reach(&url("127.0.0.1", "verify-ca", &root))
            .await
            .unwrap_or_else(|e| panic!("{case}: verify-ca with another name: {e}"));
        reach(&url("127.0.0.1", "require", &root))
            .await
            .unwrap_or_else(|e| panic!("{case}: require with sslrootcert: {e}"));
        for mode in ["verify-full", "verify-ca"] {
            let message = refused(
                reach(&url("localhost", mode, &other)).await,
                "another self-signed certificate",
            );
            // A CA certificate that is not the root itself: refused for what it is, not for want of a server.
            assert!(
                message.contains("the server's certificate was refused: it is a CA certificate"),
                "{case} {mode}: {message}"
            );
        }
        drop(cluster);
        std::fs::remove_dir_all(&files).unwrap();
    }
    // Removed by the last test to finish (it is not empty while another uses it).
    let _ = std::fs::remove_dir(tempfile_dir_of_this_run());
}

/// A certificate a CA signed with the host name in its CN alone (no subjectAltName), as older set-ups issue
/// them: libpq reads the CN then, for a chain to a root as for a self-signed certificate; webpki alone never
/// does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_signed_certificate_naming_its_host_in_the_cn_only() {
    let ca = certificate_authority("Janitor test CA");
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let certificate = params.signed_by(&key, &ca).unwrap();
    let files = tempfile_dir("cn-only-signed");
    let root = write(&files, "ca.pem", &ca.pem());
    let cluster = tls_only_cluster(&files.join("pg"), &certificate.pem(), &key.serialize_pem());
    let port = cluster.port();
    let url = |host: &str| {
        format!(
            "postgres://postgres@{host}:{port}/postgres?sslmode=verify-full&sslrootcert={}",
            root.display()
        )
    };
    reach(&url("localhost"))
        .await
        .expect("verify-full reads the CN of a certificate without subjectAltName");
    let message = refused(reach(&url("127.0.0.1")).await, "verify-full, another name");
    assert!(message.contains("not issued for the host"), "{message}");
    drop(cluster);
    std::fs::remove_dir_all(&files).unwrap();
    let _ = std::fs::remove_dir(tempfile_dir_of_this_run());
}

/// The directory of this run's directories.
fn tempfile_dir_of_this_run() -> PathBuf {
    std::env::temp_dir().join(format!("janitor-tls-test-{}", std::process::id()))
}
