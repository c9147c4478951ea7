//! A small HTTP/1.1 client over one TCP connection, for tests and load generators that must see exactly what
//! goes over the wire: status, headers, framing, and whether the server keeps the connection.
//!
//! Requests are written as given, so a test can send a partial or malformed one. Response heads are parsed with
//! `httparse`; bodies are framed by `Content-Length` or chunked encoding. A connection keeps a socket and one
//! buffer, which [`Connection::release_buffer`] gives back, so hundreds of thousands of idle ones stay cheap.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// The longest response head accepted.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most headers a response head may have.
const MAX_HEADERS: usize = 64;
/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 4096;

/// What a load generator needs of a response: no allocation beyond the connection's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The server will close the connection after this response (`Connection: close`).
    pub closing: bool,
}

/// The status line and headers of a response.
#[derive(Debug, Clone, PartialEq, Eq)]
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
}

/// A whole response, for tests.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// How a response's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
}

/// A parsed head: its length in the buffer, what framing and keep-alive need, and the headers when asked for.
struct Parsed {
    length: usize,
    status: u16,
    closing: bool,
    framing: Framing,
    headers: Vec<(String, String)>,
}

/// One client connection.
#[derive(Debug)]
pub struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
    /// Bytes at the start of `buffer` that belong to the last response, dropped before the next read.
    consumed: usize,
    /// Where the last `Content-Length` body sits in `buffer`.
    body: Range<usize>,
    /// The framing of the head [`read_head`](Self::read_head) read last.
    pending_framing: Framing,
}

impl Connection {
    /// Connects to `server`.
    pub async fn open(server: SocketAddr) -> io::Result<Connection> {
        Connection::connect(server, None).await
    }

    /// Connects to `server`, from `source` (any port) when given; Nagle is off because requests are small.
    pub async fn connect(server: SocketAddr, source: Option<IpAddr>) -> io::Result<Connection> {
        let socket = match server {
            SocketAddr::V4(_) => TcpSocket::new_v4()?,
            SocketAddr::V6(_) => TcpSocket::new_v6()?,
        };
        if let Some(source) = source {
            socket.bind(SocketAddr::new(source, 0))?;
        }
        Connection::connect_bound(socket, server).await
    }

    /// Connects `socket`, already bound by the caller, to `server`. A load process that owns its source address
    /// binds each socket to a port of its choosing: past half the ephemeral range the kernel's own choice
    /// (`bind` to port 0) scans every taken port first and costs milliseconds a socket.
    pub async fn connect_bound(socket: TcpSocket, server: SocketAddr) -> io::Result<Connection> {
        let stream = socket.connect(server).await?;
        stream.set_nodelay(true)?;
        Ok(Connection {
            stream,
            buffer: Vec::new(),
            consumed: 0,
            body: 0..0,
            pending_framing: Framing::Length(0),
        })
    }

    /// Writes `bytes` as they are (a request, part of one, or several).
    pub async fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Writes one whole request and reads its response, which must be all the server sent
    /// (`InvalidData` otherwise).
    pub async fn send(&mut self, request: &[u8]) -> io::Result<Response> {
        self.write(request).await?;
        self.read_sole_response().await
    }

    /// Writes `request` and reads the whole response, headers included.
    pub async fn exchange(&mut self, request: &[u8]) -> io::Result<Reply> {
        self.write(request).await?;
        self.read_reply().await
    }

    /// Reads one response without collecting its headers; a `Content-Length` body stays readable through
    /// [`body`](Self::body) until the next read. An end of stream before it is complete is `UnexpectedEof`.
    pub async fn read_response(&mut self) -> io::Result<Response> {
        let parsed = self.read_parsed_head(false).await?;
        let start = self.consumed;
        match parsed.framing {
            Framing::Length(length) => {
                self.fill_to(start + length).await?;
                self.body = start..start + length;
                self.consumed = start + length;
            }
            Framing::Chunked => {
                self.skip_chunks().await?;
                self.body = 0..0;
            }
        }
        Ok(Response {
            status: parsed.status,
            closing: parsed.closing,
        })
    }

    /// Reads one response, which must be all the server sent (`InvalidData` otherwise), as [`send`](Self::send)
    /// does after writing: for a load generator that writes a request on every connection before reading any
    /// answer, so that the server sees them all at once.
    pub async fn read_sole_response(&mut self) -> io::Result<Response> {
        let response = self.read_response().await?;
        if self.buffer.len() > self.consumed {
            return Err(invalid("bytes after the response"));
        }
        Ok(response)
    }

    /// Reads one whole response, headers and de-chunked body.
    pub async fn read_reply(&mut self) -> io::Result<Reply> {
        let head = self.read_head().await?;
        let body = match self.pending_framing {
            Framing::Chunked => {
                let mut body = Vec::new();
                while let Some(chunk) = self.read_chunk().await? {
                    body.extend_from_slice(&chunk);
                }
                body
            }
            Framing::Length(length) => self.take(length).await?,
        };
        Ok(Reply { head, body })
    }

    /// Reads the status line and headers only; the body follows with [`read_chunk`](Self::read_chunk) (chunked)
    /// or the next [`read_reply`](Self::read_reply) framing.
    pub async fn read_head(&mut self) -> io::Result<Head> {
        let parsed = self.read_parsed_head(true).await?;
        self.pending_framing = parsed.framing;
        Ok(Head {
            status: parsed.status,
            headers: parsed.headers,
        })
    }

    /// Reads one chunk of a chunked body: `None` at the terminating chunk (trailers are skipped).
    pub async fn read_chunk(&mut self) -> io::Result<Option<Vec<u8>>> {
        let line = self.take_line().await?;
        let size = chunk_size(&line)?;
        if size == 0 {
            // Trailers, if any, end with an empty line.
            while !self.take_line().await?.is_empty() {}
            return Ok(None);
        }
        let chunk = self.take(size).await?;
        self.take(2).await?;
        Ok(Some(chunk))
    }

    /// The body of the last response read by [`read_response`](Self::read_response) when it was framed by
    /// `Content-Length` (empty otherwise).
    pub fn body(&self) -> &[u8] {
        &self.buffer[self.body.clone()]
    }

    /// Gives back the read buffer: an idle socket among a few hundred thousand should hold no memory.
    pub fn release_buffer(&mut self) {
        self.buffer = Vec::new();
        self.consumed = 0;
        self.body = 0..0;
    }

    /// Whether the server has closed the connection (or sent something unasked), checked without waiting.
    pub fn is_closed(&self) -> bool {
        let mut probe = [0u8; 1];
        !matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    /// Whether the server closes the connection within `wait`: a read sees end of stream or a reset.
    pub async fn closed_within(&mut self, wait: Duration) -> bool {
        if self.buffer.len() > self.consumed {
            return false;
        }
        let mut byte = [0u8; 1];
        match tokio::time::timeout(wait, self.stream.read(&mut byte)).await {
            Ok(Ok(0)) | Ok(Err(_)) => true,
            Ok(Ok(_)) | Err(_) => false,
        }
    }

    /// Makes closing this connection send a reset instead of the usual handshake: neither side then keeps the
    /// socket in `TIME_WAIT`, so a run's ports and connection-tracking entries are free again right after it.
    pub fn abort_on_drop(&self) -> io::Result<()> {
        self.stream.set_zero_linger()
    }

    /// Drops what the last response used, then reads until a whole head is buffered and parses it.
    async fn read_parsed_head(&mut self, keep_headers: bool) -> io::Result<Parsed> {
        self.buffer.drain(..self.consumed);
        self.consumed = 0;
        self.body = 0..0;
        loop {
            if let Some(parsed) = parse_head(&self.buffer, keep_headers)? {
                self.consumed = parsed.length;
                return Ok(parsed);
            }
            if self.buffer.len() > MAX_HEAD_BYTES {
                return Err(invalid("response head too long"));
            }
            self.fill().await?;
        }
    }

    /// Skips a chunked body, leaving `consumed` after its last chunk.
    async fn skip_chunks(&mut self) -> io::Result<()> {
        while self.read_chunk().await?.is_some() {}
        Ok(())
    }

    /// The next `length` bytes after what is consumed, consuming them.
    async fn take(&mut self, length: usize) -> io::Result<Vec<u8>> {
        let start = self.consumed;
        self.fill_to(start + length).await?;
        self.consumed = start + length;
        Ok(self.buffer[start..start + length].to_vec())
    }

    /// The next line (without its `\r\n`), consuming it.
    async fn take_line(&mut self) -> io::Result<Vec<u8>> {
        loop {
            let rest = &self.buffer[self.consumed..];
            if let Some(at) = rest.windows(2).position(|w| w == b"\r\n") {
                let line = rest[..at].to_vec();
                self.consumed += at + 2;
                return Ok(line);
            }
            self.fill().await?;
        }
    }

    async fn fill_to(&mut self, length: usize) -> io::Result<()> {
        while self.buffer.len() < length {
            self.fill().await?;
        }
        Ok(())
    }

    /// Waits for bytes and appends them to the buffer. The chunk they are read into exists only after the wait,
    /// so a pending read holds no buffer of its own: a burst keeps one pending read per connection.
    async fn fill(&mut self) -> io::Result<()> {
        loop {
            self.stream.readable().await?;
            let mut chunk = [0u8; READ_CHUNK];
            match self.stream.try_read(&mut chunk) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    ))
                }
                Ok(read) => {
                    self.buffer.extend_from_slice(&chunk[..read]);
                    return Ok(());
                }
                // Readiness can be reported before the bytes are there.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Parses a response head at the start of `bytes`: `None` while it is incomplete.
fn parse_head(bytes: &[u8], keep_headers: bool) -> io::Result<Option<Parsed>> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut slots);
    let length = match response.parse(bytes) {
        Ok(httparse::Status::Complete(length)) => length,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(invalid(&e.to_string())),
    };
    let status = response.code.ok_or_else(|| invalid("status line"))?;
    let (mut closing, mut framing) = (false, Framing::Length(0));
    let mut headers = Vec::new();
    for header in response.headers.iter() {
        let value = std::str::from_utf8(header.value)
            .map_err(|_| invalid("header value"))?
            .trim();
        if header.name.eq_ignore_ascii_case("content-length") {
            framing = Framing::Length(value.parse().map_err(|_| invalid("content-length"))?);
        } else if header.name.eq_ignore_ascii_case("transfer-encoding")
            && value.eq_ignore_ascii_case("chunked")
        {
            framing = Framing::Chunked;
        } else if header.name.eq_ignore_ascii_case("connection")
            && value.eq_ignore_ascii_case("close")
        {
            closing = true;
        }
        if keep_headers {
            headers.push((header.name.to_ascii_lowercase(), value.to_owned()));
        }
    }
    Ok(Some(Parsed {
        length,
        status,
        closing,
        framing,
        headers,
    }))
}

fn chunk_size(line: &[u8]) -> io::Result<usize> {
    let text = std::str::from_utf8(line).map_err(|_| invalid("chunk size"))?;
    usize::from_str_radix(text.split(';').next().unwrap_or_default().trim(), 16)
        .map_err(|_| invalid("chunk size"))
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad response: {what}"))
}

/// `GET path` with no body, as bytes.
pub fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").into_bytes()
}

/// A JSON `POST` declaring `Content-Length: length` followed by `sent` (which may be shorter).
pub fn post_with_length(path: &str, length: usize, sent: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Content-Length: {length}\r\n\r\n"
    )
    .into_bytes();
    request.extend_from_slice(sent);
    request
}

/// `POST path` of a JSON body with a cookie, as bytes.
pub fn post_json(path: &str, cookie: &str, body: &str) -> Vec<u8> {
    post_json_with(path, &[("Cookie", cookie)], body)
}

/// `POST path` of a JSON body with `headers` (name, value) after the content type, as bytes.
pub fn post_json_with(path: &str, headers: &[(&str, &str)], body: &str) -> Vec<u8> {
    let mut request =
        format!("POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    request.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    async fn answering(replies: &'static [&'static [u8]]) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut scratch = [0u8; 4096];
            for reply in replies {
                let _ = socket.read(&mut scratch).await.unwrap();
                // Split each reply in two writes so framing across reads is exercised.
                let (a, b) = reply.split_at(reply.len() / 2);
                socket.write_all(a).await.unwrap();
                tokio::time::sleep(Duration::from_millis(5)).await;
                socket.write_all(b).await.unwrap();
            }
        });
        addr
    }

    #[tokio::test]
    async fn reads_length_and_chunked_responses_then_sees_the_close() {
        let addr = answering(&[
            b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello",
            b"HTTP/1.1 503 Service Unavailable\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 0\r\n\r\n",
        ])
        .await;
        let mut c = Connection::connect(addr, Some("127.0.0.1".parse().unwrap()))
            .await
            .unwrap();
        let r = c.send(&get("/ready")).await.unwrap();
        assert_eq!((r.status, r.closing), (200, false));
        assert_eq!(c.body(), b"hello");
        c.release_buffer();
        assert_eq!(c.body(), b"");
        let r = c
            .send(&post_json("/api/visitor", "__visitor=x", "{}"))
            .await
            .unwrap();
        assert_eq!(r.status, 503);
        let r = c.send(&get("/ready")).await.unwrap();
        assert_eq!((r.status, r.closing), (200, true));
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(c.is_closed());
        let e = c.send(&get("/ready")).await.unwrap_err();
        assert!(
            matches!(
                e.kind(),
                io::ErrorKind::UnexpectedEof
                    | io::ErrorKind::BrokenPipe
                    | io::ErrorKind::ConnectionReset
            ),
            "{e}"
        );
    }

    #[tokio::test]
    async fn replies_carry_headers_and_de_chunked_bodies() {
        let addr = answering(&[
            b"HTTP/1.1 200 OK\r\nX-One: a \r\ncontent-length: 2\r\n\r\nhi",
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2;x=y\r\nab\r\n1\r\nc\r\n0\r\nT: 1\r\n\r\n",
        ])
        .await;
        let mut c = Connection::open(addr).await.unwrap();
        let reply = c.exchange(&get("/")).await.unwrap();
        assert_eq!((reply.status(), reply.text().as_str()), (200, "hi"));
        assert_eq!(reply.header("x-one"), Some("a"));
        let reply = c.exchange(&get("/")).await.unwrap();
        assert_eq!(reply.body, b"abc");
        assert_eq!(reply.header("transfer-encoding"), Some("chunked"));
    }

    #[tokio::test]
    async fn refuses_garbage_and_trailing_bytes() {
        static REPLIES: [&[u8]; 2] = [
            b"SMTP ready\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nab",
        ];
        for reply in &REPLIES {
            // Sent, or written first and read later as a burst does: the answer must stand alone either way.
            for written_first in [false, true] {
                let addr = answering(std::slice::from_ref(reply)).await;
                let mut c = Connection::open(addr).await.unwrap();
                let answer = if written_first {
                    c.write(&get("/")).await.unwrap();
                    c.read_sole_response().await
                } else {
                    c.send(&get("/")).await
                };
                let kind = answer.unwrap_err().kind();
                assert_eq!(kind, io::ErrorKind::InvalidData, "{reply:?}");
            }
        }
    }

    #[tokio::test]
    async fn a_pending_read_holds_no_read_buffer() {
        let addr = answering(&[]).await;
        let mut c = Connection::open(addr).await.unwrap();
        // A burst on a few hundred thousand connections keeps one of these futures per connection.
        assert!(std::mem::size_of_val(&c.read_response()) < READ_CHUNK / 4);
        assert!(std::mem::size_of_val(&c.send(b"")) < READ_CHUNK / 4);
    }

    #[test]
    fn requests_carry_their_length() {
        let r = String::from_utf8(post_json("/api/visitor", "__visitor=v", "{\"a\":1}")).unwrap();
        assert!(r.starts_with("POST /api/visitor HTTP/1.1\r\n"));
        assert!(r.contains("Content-Length: 7\r\n"));
        assert!(r.ends_with("\r\n\r\n{\"a\":1}"));
        let partial = String::from_utf8(post_with_length("/x", 10, b"abc")).unwrap();
        assert!(partial.contains("Content-Length: 10\r\n") && partial.ends_with("\r\n\r\nabc"));
    }
}
