//! Cancel requests for a statement the client stopped waiting for.
//!
//! A pooler forwards a cancel request only while the connection that sent it stays open: PgBouncer drops a
//! pending cancel when its sender hangs up first, and tokio-postgres hangs up as soon as the request is written.
//! So the request goes over a socket of our own that is held open until the far end closes it.
//! With a failover list of hosts it goes to each of them (see [`CancelTarget::Servers`]).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio_postgres::{CancelToken, Client, NoTls};

/// Where cancel requests go: the pool's servers, as this crate connects to them.
#[derive(Clone)]
pub(crate) enum CancelTarget {
    /// A pool handed in, or one on Unix sockets only: its address is not known here, so the driver's own
    /// request is sent (a server honours it; a pooler may not).
    Driver,
    /// Every TCP host of the pool's configuration, plain or over the pool's TLS. With several hosts (a
    /// failover list) the connection may be on any of them, and the driver does not say which: the request
    /// goes to each, and a server that does not hold the session ignores a key it did not issue.
    Servers {
        hosts: Vec<(String, u16)>,
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
        let hosts = tcp_hosts(config);
        if hosts.is_empty() {
            return CancelTarget::Driver;
        }
        CancelTarget::Servers {
            hosts,
            #[cfg(feature = "tls")]
            tls,
        }
    }

    /// Asks the server to cancel `client`'s running statement, within `limit`.
    pub(crate) async fn cancel(&self, client: &Client, limit: Duration) -> Result<(), String> {
        let token = client.cancel_token();
        let send = async {
            match self {
                CancelTarget::Driver => token.cancel_query(NoTls).await.map_err(|e| e.to_string()),
                #[cfg(feature = "tls")]
                CancelTarget::Servers { hosts, tls } => {
                    to_each(hosts, |host, port| {
                        held_open(token.clone(), host, port, tls.clone())
                    })
                    .await
                }
                #[cfg(not(feature = "tls"))]
                CancelTarget::Servers { hosts } => {
                    to_each(hosts, |host, port| held_open(token.clone(), host, port)).await
                }
            }
        };
        tokio::time::timeout(limit, send)
            .await
            .map_err(|_| format!("no answer within {} ms", limit.as_millis()))?
    }
}

/// The TCP hosts of `config` with their ports, as the driver pairs them: one port for all, one per host, or
/// PostgreSQL's 5432.
fn tcp_hosts(config: &tokio_postgres::Config) -> Vec<(String, u16)> {
    let ports = config.get_ports();
    config
        .get_hosts()
        .iter()
        .enumerate()
        .filter_map(|(i, host)| match host {
            tokio_postgres::config::Host::Tcp(name) => {
                let port = match ports {
                    [] => 5432,
                    [one] => *one,
                    many => many.get(i).copied().unwrap_or(5432),
                };
                Some((name.clone(), port))
            }
            _ => None,
        })
        .collect()
}

/// Sends to every host at once, so that a host that does not answer costs no other its time, and waits for
/// all: every server closes the socket after a cancel request, the one that ignored it too, so the first to
/// finish says nothing about the others. Succeeds when one of them took the request.
async fn to_each<F, Fut>(hosts: &[(String, u16)], send: F) -> Result<(), String>
where
    F: Fn(String, u16) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    let mut sends = tokio::task::JoinSet::new();
    for (host, port) in hosts {
        sends.spawn(send(host.clone(), *port));
    }
    let (mut taken, mut failures) = (false, Vec::new());
    while let Some(sent) = sends.join_next().await {
        match sent {
            Ok(Ok(())) => taken = true,
            Ok(Err(failure)) => failures.push(failure),
            Err(panicked) => failures.push(panicked.to_string()),
        }
    }
    if taken {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}

/// Sends the request over a socket of our own, then waits for the far end to close it.
async fn held_open(
    token: CancelToken,
    host: String,
    port: u16,
    #[cfg(feature = "tls")] tls: Option<tokio_postgres_rustls::MakeRustlsConnect>,
) -> Result<(), String> {
    let socket = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| format!("connecting to {host}:{port}: {e}"))?;
    let (give_back, given_back) = oneshot::channel();
    let stream = HeldOpen {
        socket: Some(socket),
        give_back: Some(give_back),
    };
    #[cfg(feature = "tls")]
    let sent = match tls {
        Some(mut tls) => {
            let connect =
                tokio_postgres::tls::MakeTlsConnect::<HeldOpen>::make_tls_connect(&mut tls, &host)
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

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use super::*;

    fn hosts(connection: &str) -> Vec<(String, u16)> {
        tcp_hosts(&tokio_postgres::Config::from_str(connection).unwrap())
    }

    fn pairs(expected: &[(&str, u16)]) -> Vec<(String, u16)> {
        expected
            .iter()
            .map(|(h, p)| ((*h).to_owned(), *p))
            .collect()
    }

    #[test]
    fn every_tcp_host_of_a_failover_list_gets_its_port() {
        assert_eq!(
            hosts("postgres://u@a:5433,b:5434/db?target_session_attrs=read-write"),
            pairs(&[("a", 5433), ("b", 5434)])
        );
        assert_eq!(
            hosts("host=a,b port=6000 user=u"),
            pairs(&[("a", 6000), ("b", 6000)])
        );
        assert_eq!(hosts("host=a,b user=u"), pairs(&[("a", 5432), ("b", 5432)]));
        assert_eq!(
            hosts("host=/run/postgresql,b port=5432,5433 user=u"),
            pairs(&[("b", 5433)])
        );
        assert!(hosts("host=/run/postgresql user=u").is_empty());
    }
}
