//! Cancel requests for a statement the client stopped waiting for.
//!
//! A pooler forwards a cancel request only while the connection that sent it stays open: PgBouncer drops a
//! pending cancel when its sender hangs up first, and tokio-postgres hangs up as soon as the request is written.
//! So the request goes over a socket of our own that is held open until the far end closes it.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_postgres::{Client, NoTls};

/// Where cancel requests go: the pool's server, as this crate connects to it.
#[derive(Clone)]
pub(crate) enum CancelTarget {
    /// A pool handed in: its address is not known here, so the driver's own request is sent (a server honours
    /// it; a pooler may not).
    Driver,
    /// The first host of the pool's configuration, plain or over the pool's TLS.
    Server {
        host: String,
        port: u16,
        #[cfg(feature = "tls")]
        tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    },
}

impl CancelTarget {
    /// The target for a pool built from `config`, connecting as `tls` says.
    pub(crate) fn of(
        config: &tokio_postgres::Config,
        #[cfg(feature = "tls")] tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
    ) -> CancelTarget {
        match config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(host)) => CancelTarget::Server {
                host: host.clone(),
                port: config.get_ports().first().copied().unwrap_or(5432),
                #[cfg(feature = "tls")]
                tls,
            },
            _ => CancelTarget::Driver,
        }
    }

    /// Asks the server to cancel `client`'s running statement, within `limit`.
    pub(crate) async fn cancel(&self, client: &Client, limit: Duration) -> Result<(), String> {
        let send = async {
            match self {
                CancelTarget::Driver => client
                    .cancel_token()
                    .cancel_query(NoTls)
                    .await
                    .map_err(|e| e.to_string()),
                #[cfg(feature = "tls")]
                CancelTarget::Server { host, port, tls } => {
                    held_open(client, host, *port, tls.clone()).await
                }
                #[cfg(not(feature = "tls"))]
                CancelTarget::Server { host, port } => held_open(client, host, *port).await,
            }
        };
        tokio::time::timeout(limit, send)
            .await
            .map_err(|_| format!("no answer within {} ms", limit.as_millis()))?
    }
}

/// Sends the request over a socket of our own, then waits for the far end to close it.
async fn held_open(
    client: &Client,
    host: &str,
    port: u16,
    #[cfg(feature = "tls")] tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
) -> Result<(), String> {
    let socket = TcpStream::connect((host, port))
        .await
        .map_err(|e| format!("connecting to {host}:{port}: {e}"))?;
    let (give_back, given_back) = oneshot::channel();
    let stream = HeldOpen {
        socket: Some(socket),
        give_back: Some(give_back),
    };
    let token = client.cancel_token();
    #[cfg(feature = "tls")]
    let sent = match tls {
        Some(mut tls) => {
            let connect =
                tokio_postgres::tls::MakeTlsConnect::<HeldOpen>::make_tls_connect(&mut tls, host)
                    .map_err(|e| e.to_string())?;
            token.cancel_query_raw(stream, connect).await
        }
        None => token.cancel_query_raw(stream, NoTls).await,
    };
    #[cfg(not(feature = "tls"))]
    let sent = token.cancel_query_raw(stream, NoTls).await;
    sent.map_err(|e| e.to_string())?;
    if let Ok(mut socket) = given_back.await {
        let mut scratch = [0u8; 64];
        while socket.read(&mut scratch).await.map_err(|e| e.to_string())? > 0 {}
    }
    Ok(())
}

/// A socket whose shutdown is left to the other end: when dropped it hands the socket back, still open.
struct HeldOpen {
    socket: Option<TcpStream>,
    give_back: Option<oneshot::Sender<TcpStream>>,
}

impl HeldOpen {
    fn socket(&mut self) -> Pin<&mut TcpStream> {
        Pin::new(self.socket.as_mut().expect("present until dropped"))
    }
}

impl Drop for HeldOpen {
    fn drop(&mut self) {
        if let (Some(socket), Some(give_back)) = (self.socket.take(), self.give_back.take()) {
            let _ = give_back.send(socket);
        }
    }
}

impl AsyncRead for HeldOpen {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.socket().poll_read(cx, buf)
    }
}

impl AsyncWrite for HeldOpen {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.socket().poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.socket().poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // The far end closes once it has handled the request.
        Poll::Ready(Ok(()))
    }
}
