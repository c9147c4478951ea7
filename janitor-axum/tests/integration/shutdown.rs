//! `serve::shutdown_signal` in a real process: SIGTERM (what process managers and container runtimes send)
//! arriving while a request's body is still on its way lets that request finish with its full answer, and the
//! process exits 0. The server is this test binary run again as a child, with the ignored test `server` only;
//! the child is killed when the test ends, however it ends.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::routing::post;
use axum::Router;
use janitor_axum::serve::{serve, shutdown_signal, Driver, ServeConfig};

/// Set in the child's environment to the driver it serves with; the `server` test does nothing without it.
const CHILD: &str = "JANITOR_SHUTDOWN_TEST_DRIVER";
/// How long any wait of the test may take before it fails instead of hanging.
const PATIENCE: Duration = Duration::from_secs(20);
/// The body the request sends: its first half before the signal, the rest after.
const BODY: &str = "the first half|and the second half";

#[test]
fn sigterm_lets_a_request_in_flight_finish_and_exits_0_on_the_pooled_driver() {
    sigterm_during_a_body("pooled");
}

#[test]
fn sigterm_lets_a_request_in_flight_finish_and_exits_0_on_the_hyper_driver() {
    sigterm_during_a_body("hyper");
}

fn sigterm_during_a_body(driver: &str) {
    let mut server = Server::start(driver);
    let (first, rest) = BODY.split_at(BODY.find('|').unwrap());
    let mut request = TcpStream::connect(server.address).unwrap();
    request.set_read_timeout(Some(PATIENCE)).unwrap();
    let head = format!(
        "POST /echo HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n\r\n",
        server.address,
        BODY.len()
    );
    request.write_all(head.as_bytes()).unwrap();
    request.write_all(first.as_bytes()).unwrap();
    server.expect_line("in flight");

    server.terminate();
    // The listener is gone once the signal is handled: the request is still in flight, not yet answered.
    server.wait_until_refused();
    request.write_all(rest.as_bytes()).unwrap();
    let mut answer = String::new();
    request.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(
        answer.ends_with(&format!("\r\n\r\nread: {BODY}")),
        "{answer}"
    );

    let status = server.wait();
    assert!(status.success(), "the server exited with {status}");
}

/// The child's side: serves `/echo` (which says on its standard output when a request reaches it, then reads
/// the whole body and answers it back) until `shutdown_signal` resolves, then returns, so the process exits 0.
#[test]
#[ignore = "the server process of the SIGTERM tests, which run it"]
fn server() {
    let Ok(driver) = std::env::var(CHILD) else {
        return;
    };
    let driver = match driver.as_str() {
        "hyper" => Driver::Hyper,
        _ => Driver::Pooled,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let app = Router::new().route("/echo", post(echo));
        let config = ServeConfig::builder().driver(driver).build().unwrap();
        println!("listening {}", listener.local_addr().unwrap());
        serve(listener, app, config, shutdown_signal())
            .await
            .unwrap();
    });
}

/// The full name of the `server` test in this binary: the module path without the crate's name.
fn server_test() -> String {
    let module = module_path!().split_once("::").map_or("", |(_, path)| path);
    format!("{module}::server")
}

async fn echo(body: Body) -> String {
    println!("in flight");
    let bytes = axum::body::to_bytes(body, 1024).await.unwrap();
    format!("read: {}", String::from_utf8_lossy(&bytes))
}

/// The child process, killed and reaped when dropped unless it has exited, and the lines it prints.
struct Server {
    child: Child,
    lines: Receiver<String>,
    address: SocketAddr,
}

impl Server {
    /// This test binary again, running `server` alone with `driver`, once it says where it listens.
    fn start(driver: &str) -> Server {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([&server_test(), "--exact", "--ignored", "--nocapture"])
            .env(CHILD, driver)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().expect("piped");
        // A thread reads the lines, so that a silent child fails the test at a deadline instead of hanging it.
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = send.send(line);
            }
        });
        let mut server = Server {
            child,
            lines,
            address: SocketAddr::from(([127, 0, 0, 1], 0)),
        };
        let listening = server.expect_line("listening ");
        server.address = listening["listening ".len()..].parse().unwrap();
        server
    }

    /// The next line the child prints that starts with `start` (the test harness prints its own too).
    fn expect_line(&mut self, start: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(start) => return line,
                Ok(_) => {}
                Err(_) => panic!("the server did not print {start:?} within {PATIENCE:?}"),
            }
        }
    }

    /// Sends SIGTERM.
    fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -TERM: {status}");
    }

    /// Waits until connections are refused: the server has stopped accepting.
    fn wait_until_refused(&self) {
        let deadline = Instant::now() + PATIENCE;
        while TcpStream::connect(self.address).is_ok() {
            assert!(
                Instant::now() < deadline,
                "the server still accepts connections {PATIENCE:?} after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The child's exit status, once it has exited.
    fn wait(&mut self) -> ExitStatus {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the server did not exit within {PATIENCE:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
