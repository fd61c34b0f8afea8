//! [`TlsStreamServer`]: a loopback HTTPS server that answers as the providers' own servers
//! do, so a test can see what kite does with their connections. It speaks HTTP/2 and
//! HTTP/1.1, chosen by ALPN; an HTTP/2 connection carries at most `max_streams` requests at
//! once (providers' servers cap theirs at a few hundred); every request is answered with
//! the same slow event stream. It counts the requests in flight and the connections of each
//! kind, so a test can tell whether streams ran side by side.

use bytes::Bytes;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;

/// What the server saw.
#[derive(Debug, Default)]
struct Seen {
    in_flight: AtomicUsize,
    most_in_flight: AtomicUsize,
    h2: AtomicUsize,
    h1: AtomicUsize,
}

impl Seen {
    fn begin(&self) {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
    }

    fn end(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A loopback HTTPS server, HTTP/2 and HTTP/1.1, answering every request with `events`
/// (each an SSE event's bytes), one every `interval`. Stops when dropped.
pub struct TlsStreamServer {
    addr: SocketAddr,
    cert_pem: String,
    seen: Arc<Seen>,
    task: tokio::task::JoinHandle<()>,
}

impl TlsStreamServer {
    /// Starts the server; an HTTP/2 connection carries at most `max_streams` requests at once.
    pub async fn start(max_streams: u32, events: Vec<Vec<u8>>, interval: Duration) -> Self {
        let (acceptor, cert_pem) = crate::faults::acceptor(&[b"h2", b"http/1.1"]);
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let addr = listener.local_addr().expect("its address");
        let seen = Arc::new(Seen::default());
        let events: Arc<Vec<Bytes>> = Arc::new(events.into_iter().map(Bytes::from).collect());
        let (s, answer) = (seen.clone(), Answer { events, interval });
        let task = tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, seen, answer) = (acceptor.clone(), s.clone(), answer.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
                    if h2 {
                        seen.h2.fetch_add(1, Ordering::SeqCst);
                        serve_h2(tls, max_streams, seen, answer).await;
                    } else {
                        seen.h1.fetch_add(1, Ordering::SeqCst);
                        let _ = serve_h1(tls, &seen, &answer).await;
                    }
                });
            }
        });
        Self {
            addr,
            cert_pem,
            seen,
            task,
        }
    }

    /// `https://localhost:PORT`, a name the certificate holds.
    pub fn url(&self) -> String {
        format!("https://localhost:{}", self.addr.port())
    }

    /// The server's self-signed certificate, in PEM: what a client must trust
    /// (`SSL_CERT_FILE`).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The most requests it was answering at once.
    pub fn most_in_flight(&self) -> usize {
        self.seen.most_in_flight.load(Ordering::SeqCst)
    }

    /// The connections it accepted: (HTTP/2, HTTP/1.1).
    pub fn connections(&self) -> (usize, usize) {
        (
            self.seen.h2.load(Ordering::SeqCst),
            self.seen.h1.load(Ordering::SeqCst),
        )
    }
}

impl Drop for TlsStreamServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The answer every request gets.
#[derive(Clone)]
struct Answer {
    events: Arc<Vec<Bytes>>,
    interval: Duration,
}

async fn serve_h2<T>(io: T, max_streams: u32, seen: Arc<Seen>, answer: Answer)
where
    T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Ok(mut conn) = h2::server::Builder::new()
        .max_concurrent_streams(max_streams)
        .handshake::<_, Bytes>(io)
        .await
    else {
        return;
    };
    while let Some(Ok((request, mut respond))) = conn.accept().await {
        let (seen, answer) = (seen.clone(), answer.clone());
        tokio::spawn(async move {
            seen.begin();
            let mut body = request.into_body();
            while let Some(Ok(data)) = body.data().await {
                let _ = body.flow_control().release_capacity(data.len());
            }
            let head = http::Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(())
                .expect("a response head");
            if let Ok(mut send) = respond.send_response(head, false) {
                for event in answer.events.iter() {
                    tokio::time::sleep(answer.interval).await;
                    if send.send_data(event.clone(), false).is_err() {
                        break;
                    }
                }
                let _ = send.send_data(Bytes::new(), true);
            }
            seen.end();
        });
    }
}

/// HTTP/1.1 with keep-alive: each request (its body by `content-length`) answered chunked.
async fn serve_h1<T>(mut io: T, seen: &Seen, answer: &Answer) -> std::io::Result<()>
where
    T: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf = Vec::new();
    loop {
        let head_end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
            if !read_more(&mut io, &mut buf).await? {
                return Ok(());
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            if !read_more(&mut io, &mut buf).await? {
                return Ok(());
            }
        }
        buf.drain(..head_end + length);
        seen.begin();
        let sent = answer_h1(&mut io, answer).await;
        seen.end();
        sent?;
    }
}

/// Reads what comes next onto `buf`; false once the client has closed.
async fn read_more<T: AsyncRead + Unpin>(io: &mut T, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut more = [0u8; 4096];
    let n = io.read(&mut more).await?;
    buf.extend_from_slice(&more[..n]);
    Ok(n > 0)
}

async fn answer_h1<T: AsyncWrite + Unpin>(io: &mut T, answer: &Answer) -> std::io::Result<()> {
    io.write_all(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n",
    )
    .await?;
    for event in answer.events.iter() {
        tokio::time::sleep(answer.interval).await;
        let mut chunk = format!("{:x}\r\n", event.len()).into_bytes();
        chunk.extend_from_slice(event);
        chunk.extend_from_slice(b"\r\n");
        io.write_all(&chunk).await?;
    }
    io.write_all(b"0\r\n\r\n").await
}
