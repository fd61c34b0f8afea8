//! The fault-injecting proxy.
//!
//! A [`FaultProxy`] listens on a loopback port and passes each connection on to an upstream
//! server (a [`ReplayServer`](crate::ReplayServer), an MCP server, a gateway), bending what
//! comes back the way real networks do: slow, in single bytes, capped, reset, stalled,
//! half-closed, cut before the last chunk. It can also stand for a server whose certificate
//! nobody trusts, or whose name does not resolve. It works on bytes, below HTTP, so the
//! client under test meets the fault in its own transport exactly as it would on a real
//! network.
//!
//! It is written on tokio's sockets rather than with a proxy crate because the faults are
//! the point: each needs a hand on the exact byte where the connection misbehaves.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// One way the network misbehaves. Byte counts are of what the upstream sends back on one
/// connection, its status line and headers included.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Waits this long before connecting upstream, and before passing on each piece the
    /// upstream sends.
    Latency(Duration),
    /// Passes the answer on one byte per write.
    OneByteAtATime,
    /// Passes the answer on at most this many bytes a second.
    Bandwidth(usize),
    /// Passes on this many bytes, then resets the connection (a TCP RST).
    ResetAfter(usize),
    /// Passes on this many bytes, then nothing more, holding the connection open.
    StallAfter(usize),
    /// Passes on this many bytes, then closes its sending side toward the client (a FIN)
    /// while the connection stays open.
    HalfCloseAfter(usize),
    /// Passes a chunked answer on up to its last chunk, withholds the terminating
    /// `0\r\n\r\n`, and closes the connection cleanly.
    TruncatedChunked,
    /// Answers with TLS under a self-signed certificate no client trusts. [`FaultProxy::url`]
    /// is then `https://`.
    SelfSignedTls,
    /// Stands for a host whose name does not resolve: [`FaultProxy::url`] names a host under
    /// `.invalid` (RFC 6761), which no resolver answers.
    Dns,
}

impl Fault {
    /// Every kind of fault once, with the byte counts given: the matrix a client is run
    /// through.
    pub fn all(after: usize) -> Vec<Fault> {
        vec![
            Fault::Latency(Duration::from_millis(150)),
            Fault::OneByteAtATime,
            Fault::Bandwidth(32 * 1024),
            Fault::ResetAfter(0),
            Fault::ResetAfter(after),
            Fault::StallAfter(0),
            Fault::StallAfter(after),
            Fault::HalfCloseAfter(0),
            Fault::HalfCloseAfter(after),
            Fault::TruncatedChunked,
            Fault::SelfSignedTls,
            Fault::Dns,
        ]
    }

    /// Whether a client may still get the whole answer through this fault, on every
    /// connection: it only slows the bytes down.
    pub fn only_slows(&self) -> bool {
        matches!(
            self,
            Fault::Latency(_) | Fault::OneByteAtATime | Fault::Bandwidth(_)
        )
    }
}

/// A loopback proxy that injects a [`Fault`] into the connections it passes on. It stops,
/// and drops every connection it holds, when dropped.
pub struct FaultProxy {
    addr: SocketAddr,
    path: String,
    fault: Fault,
    connections: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy to `upstream` (`http://127.0.0.1:PORT`, with or without a path) that
    /// injects `fault` into every connection.
    pub async fn start(upstream: &str, fault: Fault) -> Self {
        Self::begin(upstream, fault, usize::MAX).await
    }

    /// Starts a proxy that injects `fault` into the first `faulty` connections only and
    /// passes the later ones on untouched: a fault a retry may get past.
    pub async fn start_first(upstream: &str, fault: Fault, faulty: usize) -> Self {
        Self::begin(upstream, fault, faulty).await
    }

    async fn begin(upstream: &str, fault: Fault, faulty: usize) -> Self {
        let rest = upstream
            .strip_prefix("http://")
            .unwrap_or_else(|| panic!("the upstream must be plain http://, not {upstream}"));
        let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let target: SocketAddr = host
            .parse()
            .unwrap_or_else(|_| panic!("the upstream must be IP:PORT, not {host}"));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let connections = Arc::new(AtomicUsize::new(0));
        let count = connections.clone();
        let tls = (fault == Fault::SelfSignedTls).then(|| acceptor(&[]).0);
        let kind = fault.clone();
        let task = tokio::spawn(async move {
            let mut held = JoinSet::new();
            while let Ok((sock, _)) = listener.accept().await {
                let n = count.fetch_add(1, Ordering::SeqCst);
                let fault = (n < faulty).then(|| kind.clone());
                let tls = tls.clone();
                held.spawn(async move {
                    match (fault, tls) {
                        (Some(Fault::SelfSignedTls), Some(tls)) => {
                            // The client gives up on the certificate; nothing is passed on.
                            let _ = tls.accept(sock).await;
                        }
                        (fault, _) => {
                            let _ = pass(sock, target, fault).await;
                        }
                    }
                });
                while held.try_join_next().is_some() {}
            }
        });
        Self {
            addr,
            path: path.to_owned(),
            fault,
            connections,
            task,
        }
    }

    /// Where to send the client: the upstream's path on the proxy's port, `https://` for
    /// [`Fault::SelfSignedTls`] and an unresolvable host for [`Fault::Dns`].
    pub fn url(&self) -> String {
        let port = self.addr.port();
        let path = &self.path;
        match self.fault {
            Fault::SelfSignedTls => format!("https://127.0.0.1:{port}{path}"),
            Fault::Dns => format!("http://kite-fault-proxy.invalid:{port}{path}"),
            _ => format!("http://127.0.0.1:{port}{path}"),
        }
    }

    /// How many connections the proxy has accepted.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A TLS acceptor with a fresh self-signed certificate for `127.0.0.1` and `localhost`,
/// offering `alpn` (none: HTTP/1.1 only), and the certificate in PEM.
pub(crate) fn acceptor(alpn: &[&[u8]]) -> (tokio_rustls::TlsAcceptor, String) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
        .expect("a self-signed certificate");
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(made.signing_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![made.cert.der().clone()], key)
        .expect("the certificate and its key");
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let pem = made.cert.pem();
    (tokio_rustls::TlsAcceptor::from(Arc::new(config)), pem)
}

/// Passes one connection on, the request untouched and the answer through `fault`.
async fn pass(client: TcpStream, target: SocketAddr, fault: Option<Fault>) -> std::io::Result<()> {
    if let Some(Fault::Latency(d)) = fault {
        tokio::time::sleep(d).await;
    }
    let server = TcpStream::connect(target).await?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    let (mut from_client, to_client) = client.into_split();
    let (from_server, mut to_server) = server.into_split();
    // The request's way up, stopped when this connection's task is (the proxy dropped).
    let mut up = Up(tokio::spawn(async move {
        let _ = tokio::io::copy(&mut from_client, &mut to_server).await;
        let _ = to_server.shutdown().await;
        from_client
    }));
    let ended = down(from_server, to_client, fault).await;
    match ended {
        Ended::Closed => {
            let _ = (&mut up.0).await;
        }
        Ended::Reset(to_client) => {
            let _ = socket2::SockRef::from(to_client.as_ref()).set_linger(Some(Duration::ZERO));
            // Not dropped, which would send a FIN first: the socket closes, with the RST
            // that linger 0 makes, once the reader goes with `up`.
            to_client.forget();
            up.0.abort();
            let _ = (&mut up.0).await;
        }
        Ended::Stalled(to_client) => {
            std::future::pending::<()>().await;
            drop(to_client);
        }
    }
    Ok(())
}

/// A task aborted when dropped.
struct Up(tokio::task::JoinHandle<OwnedReadHalf>);

impl Drop for Up {
    fn drop(&mut self) {
        self.0.abort();
    }
}

enum Ended {
    Closed,
    Reset(OwnedWriteHalf),
    Stalled(OwnedWriteHalf),
}

/// The answer's way back, through `fault`.
async fn down(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, fault: Option<Fault>) -> Ended {
    const END: &[u8] = b"\r\n0\r\n\r\n";
    let mut buf = vec![0u8; 16 * 1024];
    let mut sent = 0usize;
    // The last bytes passed on, so the chunked terminator is found across reads.
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = to.shutdown().await;
                return Ended::Closed;
            }
            Ok(n) => n,
        };
        let data = &buf[..n];
        let written = match &fault {
            None => to.write_all(data).await,
            Some(Fault::Latency(d)) => {
                tokio::time::sleep(*d).await;
                to.write_all(data).await
            }
            Some(Fault::OneByteAtATime) => one_by_one(&mut to, data).await,
            Some(Fault::Bandwidth(rate)) => capped(&mut to, data, *rate).await,
            Some(
                Fault::ResetAfter(limit) | Fault::StallAfter(limit) | Fault::HalfCloseAfter(limit),
            ) => {
                let room = limit.saturating_sub(sent);
                if data.len() < room {
                    to.write_all(data).await
                } else {
                    let _ = to.write_all(&data[..room]).await;
                    let _ = to.flush().await;
                    return match fault {
                        Some(Fault::ResetAfter(_)) => Ended::Reset(to),
                        Some(Fault::StallAfter(_)) => Ended::Stalled(to),
                        _ => {
                            let _ = to.shutdown().await;
                            // Keep reading, so the upstream is not the one to end it.
                            let _ = tokio::io::copy(&mut from, &mut tokio::io::sink()).await;
                            Ended::Closed
                        }
                    };
                }
            }
            Some(Fault::TruncatedChunked) => {
                let mut seen = tail.clone();
                seen.extend_from_slice(data);
                if let Some(at) = memchr::memmem::find(&seen, END) {
                    // Up to and including the last chunk's CRLF, and not the terminator.
                    let keep = (at + 2).saturating_sub(tail.len());
                    let _ = to.write_all(&data[..keep.min(data.len())]).await;
                    let _ = to.shutdown().await;
                    return Ended::Closed;
                }
                to.write_all(data).await
            }
            Some(Fault::SelfSignedTls | Fault::Dns) => to.write_all(data).await,
        };
        if written.is_err() {
            return Ended::Closed;
        }
        sent += n;
        tail.extend_from_slice(data);
        let cut = tail.len().saturating_sub(END.len());
        tail.drain(..cut);
    }
}

async fn one_by_one(to: &mut OwnedWriteHalf, data: &[u8]) -> std::io::Result<()> {
    for b in data {
        to.write_all(std::slice::from_ref(b)).await?;
        to.flush().await?;
    }
    Ok(())
}

/// Writes `data` at about `rate` bytes a second, in twentieths of a second.
async fn capped(to: &mut OwnedWriteHalf, data: &[u8], rate: usize) -> std::io::Result<()> {
    let slice = (rate / 20).max(1);
    for piece in data.chunks(slice) {
        to.write_all(piece).await?;
        to.flush().await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
