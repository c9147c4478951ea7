//! A connection that cannot be made says where it went and why: the host and port tried and the cause
//! (refused, timed out, not PostgreSQL, authentication, a missing database), never the password.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::str::FromStr;

use janitor_core::StoreError;
use janitor_sql::testing::database_url;
use janitor_sql::{Database, DatabaseConfig};

/// The password of every URL below.
const SECRET: &str = "S3cretMarker";

/// A port on 127.0.0.1 that nothing listens on: bound by the kernel's choice, then let go.
fn unused_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    listener.local_addr().unwrap().port()
}

/// The message of the unavailable error a ping through `url` ends in, checked for the password.
async fn refusal(url: &str) -> String {
    let config = DatabaseConfig::builder(url)
        .connect_timeout_ms(500)
        .build()
        .unwrap();
    let error = Database::new(config).unwrap().ping().await.unwrap_err();
    for shown in [error.to_string(), format!("{error:?}")] {
        assert!(!shown.contains(SECRET), "{shown}");
    }
    match error {
        StoreError::Unavailable(message) => message,
        other => panic!("expected unavailable, got {other:?}"),
    }
}

/// The host and port of `DATABASE_URL`, the machine's server.
fn real_server() -> (String, u16) {
    let config = tokio_postgres::Config::from_str(&database_url()).unwrap();
    let host = match &config.get_hosts()[0] {
        tokio_postgres::config::Host::Tcp(host) => host.clone(),
        other => panic!("the tests' server is reached over TCP, not {other:?}"),
    };
    (host, config.get_ports().first().copied().unwrap_or(5432))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_listening_is_a_refused_connection_at_that_address() {
    let port = unused_port();
    let message = refusal(&format!("postgres://janitor:{SECRET}@127.0.0.1:{port}/app")).await;
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
    assert!(message.contains("connection refused"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_is_a_timeout_at_that_address() {
    // Connections complete in the kernel's backlog, and nothing ever answers the startup message.
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let message = refusal(&format!("postgres://janitor:{SECRET}@127.0.0.1:{port}/app")).await;
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
    assert!(message.contains("timed out after 500 ms"), "{message}");
    drop(listener);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_of_another_kind_of_server_says_so() {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        // An HTTP server's way: read the request (here the startup message), answer 400 and close.
        let (mut stream, _) = listener.accept().unwrap();
        let _ = stream.read(&mut [0; 512]);
        let _ = stream.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
    });
    let message = refusal(&format!("postgres://janitor:{SECRET}@127.0.0.1:{port}/app")).await;
    assert!(message.contains(&format!("127.0.0.1:{port}")), "{message}");
    assert!(message.contains("wrong port"), "{message}");
    server.join().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_server_refusing_a_login_or_a_database_says_which() {
    let (host, port) = real_server();
    let message = refusal(&format!(
        "postgres://janitor_no_such_role:{SECRET}@{host}:{port}/postgres"
    ))
    .await;
    assert!(message.contains(&format!("{host}:{port}")), "{message}");
    assert!(message.contains("authentication failed"), "{message}");
    assert!(message.contains("janitor_no_such_role"), "{message}");

    let message = refusal(&format!(
        "postgres://postgres:{SECRET}@{host}:{port}/janitor_no_such_database"
    ))
    .await;
    assert!(message.contains(&format!("{host}:{port}")), "{message}");
    assert!(
        message.contains("database \"janitor_no_such_database\" does not exist"),
        "{message}"
    );
}
