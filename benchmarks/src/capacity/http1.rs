//! A small HTTP/1.1 keep-alive client connection for the load processes: one request at a time, responses
//! framed by `Content-Length` or chunked encoding. A general client keeps more state per socket than 200,000
//! sockets can afford; this one keeps a socket and a small buffer.

use std::io;
use std::net::{IpAddr, SocketAddr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// The longest response head the harness accepts; the server's are a few hundred bytes.
const MAX_HEAD: usize = 16 * 1024;

/// One keep-alive connection.
#[derive(Debug)]
pub struct Connection {
    stream: TcpStream,
    buffer: Vec<u8>,
    body: std::ops::Range<usize>,
}

/// What the harness needs of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The server will close the connection after this response.
    pub closing: bool,
}

impl Connection {
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
            body: 0..0,
        })
    }

    /// Sends `request` (a whole HTTP/1.1 request) and reads its response.
    pub async fn send(&mut self, request: &[u8]) -> io::Result<Response> {
        self.stream.write_all(request).await?;
        self.read_response().await
    }

    /// Writes `request` (a whole HTTP/1.1 request) without waiting for its answer; a burst writes on every
    /// socket first and reads the answers afterwards.
    pub async fn write(&mut self, request: &[u8]) -> io::Result<()> {
        self.stream.write_all(request).await
    }

    /// Makes closing this connection send a reset instead of the usual handshake: neither side then keeps the
    /// socket in `TIME_WAIT`, so a run's ports and connection-tracking entries are free again right after it.
    pub fn abort_on_drop(&self) -> io::Result<()> {
        self.stream.set_zero_linger()
    }

    /// Reads one response; an end of stream before it is complete is `UnexpectedEof` (the server closed).
    pub async fn read_response(&mut self) -> io::Result<Response> {
        self.buffer.clear();
        let head_end = loop {
            if let Some(end) = find(&self.buffer, b"\r\n\r\n") {
                break end + 4;
            }
            if self.buffer.len() > MAX_HEAD {
                return Err(invalid("response head too long"));
            }
            self.fill().await?;
        };
        let head = Head::parse(&self.buffer[..head_end])?;
        match head.framing {
            Framing::Length(length) => {
                while self.buffer.len() < head_end + length {
                    self.fill().await?;
                }
                if self.buffer.len() > head_end + length {
                    return Err(invalid("bytes after the response"));
                }
                self.body = head_end..head_end + length;
            }
            Framing::Chunked => {
                self.read_chunks(head_end).await?;
                self.body = 0..0;
            }
        }
        Ok(Response {
            status: head.status,
            closing: head.closing,
        })
    }

    /// The body of the last response read, when it was framed by `Content-Length` (empty otherwise).
    pub fn body(&self) -> &[u8] {
        &self.buffer[self.body.clone()]
    }

    /// Gives back the read buffer: an idle socket among a few hundred thousand should hold no memory.
    pub fn release_buffer(&mut self) {
        self.buffer = Vec::new();
        self.body = 0..0;
    }

    /// Whether the server has closed the connection (or sent something unasked), checked without waiting.
    pub fn is_closed(&self) -> bool {
        let mut probe = [0u8; 1];
        !matches!(self.stream.try_read(&mut probe), Err(e) if e.kind() == io::ErrorKind::WouldBlock)
    }

    async fn fill(&mut self) -> io::Result<()> {
        let mut chunk = [0u8; 2048];
        let n = self.stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
        self.buffer.extend_from_slice(&chunk[..n]);
        Ok(())
    }

    async fn read_chunks(&mut self, mut at: usize) -> io::Result<()> {
        loop {
            let line_end = loop {
                if let Some(end) = find(&self.buffer[at..], b"\r\n") {
                    break at + end;
                }
                self.fill().await?;
            };
            let size_text = std::str::from_utf8(&self.buffer[at..line_end])
                .map_err(|_| invalid("chunk size"))?;
            let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| invalid("chunk size"))?;
            let next = line_end + 2 + size + 2;
            while self.buffer.len() < next {
                self.fill().await?;
            }
            if size == 0 {
                return Ok(());
            }
            at = next;
        }
    }
}

enum Framing {
    Length(usize),
    Chunked,
}

struct Head {
    status: u16,
    closing: bool,
    framing: Framing,
}

impl Head {
    fn parse(bytes: &[u8]) -> io::Result<Head> {
        let text = std::str::from_utf8(bytes).map_err(|_| invalid("response head is not UTF-8"))?;
        let mut lines = text.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|code| code.parse().ok())
            .ok_or_else(|| invalid("status line"))?;
        let (mut closing, mut framing) = (false, Framing::Length(0));
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                framing = Framing::Length(value.parse().map_err(|_| invalid("content-length"))?);
            } else if name.eq_ignore_ascii_case("transfer-encoding")
                && value.eq_ignore_ascii_case("chunked")
            {
                framing = Framing::Chunked;
            } else if name.eq_ignore_ascii_case("connection") && value.eq_ignore_ascii_case("close")
            {
                closing = true;
            }
        }
        Ok(Head {
            status,
            closing,
            framing,
        })
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad response: {what}"))
}

/// `GET path` as bytes.
pub fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").into_bytes()
}

/// `POST path` of a JSON body with a cookie, as bytes.
pub fn post_json(path: &str, cookie: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
         Cookie: {cookie}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
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
                tokio::time::sleep(std::time::Duration::from_millis(5)).await;
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
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
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
    async fn refuses_garbage_and_trailing_bytes() {
        let addr = answering(&[b"SMTP ready\r\n\r\n"]).await;
        let mut c = Connection::connect(addr, None).await.unwrap();
        assert_eq!(
            c.send(&get("/")).await.unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        let addr = answering(&[b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nab"]).await;
        let mut c = Connection::connect(addr, None).await.unwrap();
        assert_eq!(
            c.send(&get("/")).await.unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
    }

    #[test]
    fn requests_carry_their_length() {
        let r = String::from_utf8(post_json("/api/visitor", "__visitor=v", "{\"a\":1}")).unwrap();
        assert!(r.starts_with("POST /api/visitor HTTP/1.1\r\n"));
        assert!(r.contains("Content-Length: 7\r\n"));
        assert!(r.ends_with("\r\n\r\n{\"a\":1}"));
    }
}
