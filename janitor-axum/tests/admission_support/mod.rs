//! A real server on a loopback socket and a small hand-written HTTP/1.1 client, so the admission tests see
//! exactly what goes over the wire (status, headers, whether the connection stays open).
#![allow(dead_code)] // Each test file uses its own subset of the client.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use janitor_axum::admission::{Admission, AdmissionConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{timeout, Instant};

/// How long any single wire operation may take before the test fails instead of hanging.
pub const WIRE_TIMEOUT: Duration = Duration::from_secs(20);

/// How long a test waits for the server to reach a state (a slot freed, a handler reached, a close).
pub const SETTLE: Duration = Duration::from_secs(10);

/// An admission layer with `limit` slots.
pub fn admission_with(limit: usize) -> Admission {
    Admission::new(
        AdmissionConfig::builder()
            .max_in_flight_requests(limit)
            .build()
            .unwrap(),
    )
}

/// Serves `router` with `axum::serve` on 127.0.0.1 and an ephemeral port.
pub async fn serve(router: Router) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    address
}

/// Polls `condition` until it holds, failing the test after `within`.
pub async fn wait_until(what: &str, within: Duration, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + within;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until every slot of `admission` is free again.
pub async fn wait_until_free(admission: &Admission) {
    wait_until("every slot is free", SETTLE, || admission.in_flight() == 0).await;
}

/// Awaits `future`, failing the test instead of hanging when it takes too long.
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    match timeout(WIRE_TIMEOUT, future).await {
        Ok(value) => value,
        Err(_) => panic!("timed out: {what}"),
    }
}

/// A `GET` with no body on a keep-alive connection.
pub fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").into_bytes()
}

/// A `POST` declaring `Content-Length: length` followed by `sent` (which may be shorter).
pub fn post_with_length(path: &str, length: usize, sent: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Content-Length: {length}\r\n\r\n"
    )
    .into_bytes();
    request.extend_from_slice(sent);
    request
}

/// The status line and headers of a response.
#[derive(Debug, Clone)]
pub struct Head {
    /// The status code.
    pub status: u16,
    /// Header names lower-cased, values as sent.
    pub headers: Vec<(String, String)>,
}

impl Head {
    /// The value of header `name` (lower case), if sent once or more.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    fn is_chunked(&self) -> bool {
        self.header("transfer-encoding")
            .is_some_and(|value| value.eq_ignore_ascii_case("chunked"))
    }
}

/// A whole response.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Status and headers.
    pub head: Head,
    /// The body, de-chunked.
    pub body: Vec<u8>,
}

impl Reply {
    /// The status code.
    pub fn status(&self) -> u16 {
        self.head.status
    }

    /// The value of header `name` (lower case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.header(name)
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One client connection.
pub struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl Connection {
    /// Connects to `address`.
    pub async fn open(address: SocketAddr) -> io::Result<Connection> {
        Ok(Connection {
            stream: TcpStream::connect(address).await?,
            buffer: Vec::new(),
        })
    }

    /// Writes `bytes` as they are.
    pub async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Sends `request` and reads the whole response.
    pub async fn exchange(&mut self, request: &[u8]) -> io::Result<Reply> {
        self.send(request).await?;
        self.read_reply().await
    }

    /// Reads one whole response.
    pub async fn read_reply(&mut self) -> io::Result<Reply> {
        let head = self.read_head().await?;
        let body = if head.is_chunked() {
            let mut body = Vec::new();
            while let Some(chunk) = self.read_chunk().await? {
                body.extend_from_slice(&chunk);
            }
            body
        } else {
            let length = head
                .header("content-length")
                .map_or(Ok(0), str::parse::<usize>)
                .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
            self.read_exact(length).await?
        };
        Ok(Reply { head, body })
    }

    /// Reads the status line and headers.
    pub async fn read_head(&mut self) -> io::Result<Head> {
        let raw = self.read_through(b"\r\n\r\n").await?;
        let text = String::from_utf8(raw)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
        let mut lines = text.split("\r\n");
        let status = lines
            .next()
            .and_then(|line| line.split(' ').nth(1))
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "bad status line"))?;
        let headers = lines
            .filter_map(|line| line.split_once(':'))
            .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
            .collect();
        Ok(Head { status, headers })
    }

    /// Reads one chunk of a chunked body: `None` at the terminating chunk (trailers are skipped).
    pub async fn read_chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        let line = self.read_through(b"\r\n").await?;
        let size_text = String::from_utf8_lossy(&line);
        let size_text = size_text.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|err| io::Error::new(io::ErrorKind::InvalidData, err))?;
        if size == 0 {
            // Trailers, if any, end with an empty line.
            while self.read_through(b"\r\n").await?.len() > 2 {}
            return Ok(None);
        }
        let chunk = self.read_exact(size).await?;
        self.read_exact(2).await?;
        Ok(Some(chunk))
    }

    /// Whether the server closed the connection: a read sees end of stream (or a reset) within `wait`.
    pub async fn closed_within(&mut self, wait: Duration) -> bool {
        if !self.buffer.is_empty() {
            return false;
        }
        let mut byte = [0u8; 1];
        match timeout(wait, self.stream.read(&mut byte)).await {
            Ok(Ok(0)) | Ok(Err(_)) => true,
            Ok(Ok(_)) => false,
            Err(_) => false,
        }
    }

    async fn read_through(&mut self, end: &[u8]) -> io::Result<Vec<u8>> {
        loop {
            if let Some(at) = self
                .buffer
                .windows(end.len())
                .position(|window| window == end)
            {
                return Ok(self.buffer.drain(..at + end.len()).collect());
            }
            self.fill().await?;
        }
    }

    async fn read_exact(&mut self, length: usize) -> io::Result<Vec<u8>> {
        while self.buffer.len() < length {
            self.fill().await?;
        }
        Ok(self.buffer.drain(..length).collect())
    }

    async fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 4096];
        let read = self.stream.read(&mut chunk).await?;
        if read == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        self.buffer.extend_from_slice(&chunk[..read]);
        Ok(())
    }
}
