//! The loopback server every client streams from, and the raw TCP client that gives the
//! floor (what the server and the kernel cost with no client library at all).
//!
//! The server answers every request on a connection, kept alive, with the same HTTP
//! response, rendered once: the head, then the recorded SSE body as one chunk of a chunked
//! body (as OpenAI sends its streams) and the last chunk, written with one `write_all`. It
//! reads a request's head and its `content-length` (or chunked) body and looks at nothing
//! else, on a thread and current-thread runtime of its own. kite-testkit's `ReplayServer`
//! is not used: it closes the connection after each answer, writes a response in several
//! writes, and keeps every request it received, so it would measure itself.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The whole HTTP response carrying `sse`.
fn render(sse: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(sse.len() + 200);
    out.extend_from_slice(
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n\
          cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n",
    );
    out.extend_from_slice(format!("{:x}\r\n", sse.len()).as_bytes());
    out.extend_from_slice(sse);
    out.extend_from_slice(b"\r\n0\r\n\r\n");
    out
}

/// Starts the server answering with `sse`; returns its address.
pub(crate) fn start(sse: &[u8]) -> SocketAddr {
    let response: Arc<[u8]> = render(sse).into();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    // Out of descriptors for a moment: wait, as a server would.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                };
                let response = response.clone();
                tokio::spawn(async move {
                    let _ = serve(sock, &response).await;
                });
            }
        });
    });
    rx.recv().unwrap()
}

/// Where a request's head ends, if it is in `buf`.
fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// The length of the body the head announces, or `None` for a chunked one.
fn content_length(head: &[u8]) -> Option<usize> {
    let head = std::str::from_utf8(head).ok()?;
    let mut length = Some(0);
    for line in head.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            && value.to_ascii_lowercase().contains("chunked")
        {
            return None;
        }
    }
    length
}

async fn serve(mut sock: TcpStream, response: &[u8]) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(4096);
    loop {
        // One request: its head, then its body.
        let end = loop {
            if let Some(end) = head_end(&buf) {
                break end;
            }
            if sock.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        };
        match content_length(&buf[..end]) {
            Some(length) => {
                while buf.len() < end + length {
                    if sock.read_buf(&mut buf).await? == 0 {
                        return Ok(());
                    }
                }
                buf.drain(..end + length);
            }
            None => loop {
                if let Some(i) = buf[end..].windows(5).position(|w| w == b"0\r\n\r\n") {
                    buf.drain(..end + i + 5);
                    break;
                }
                if sock.read_buf(&mut buf).await? == 0 {
                    return Ok(());
                }
            },
        }
        sock.write_all(response).await?;
    }
}

/// The floor: a client that writes the request's bytes, rendered once, on connections it
/// keeps (one per request in flight), and reads the answer's bytes without decoding them.
/// Its time to first byte is to the first byte of the body.
pub(crate) struct Raw {
    addr: SocketAddr,
    request: Vec<u8>,
    idle: Mutex<Vec<TcpStream>>,
    expected: String,
}

impl Raw {
    pub(crate) fn new(base: &str, body: &str, expected: &str) -> Self {
        let authority = base
            .trim_start_matches("http://")
            .split('/')
            .next()
            .unwrap_or_default();
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nhost: {authority}\r\n\
             authorization: Bearer sk-bench\r\ncontent-type: application/json\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        );
        Self {
            addr: authority.parse().expect("a loopback socket address"),
            request: request.into_bytes(),
            idle: Mutex::new(Vec::new()),
            expected: expected.to_owned(),
        }
    }

    /// One request: the time to the first byte of the answer's body.
    pub(crate) async fn once(&self) -> Result<Duration, String> {
        let started = Instant::now();
        let idle = self.idle.lock().unwrap().pop();
        let mut sock = match idle {
            Some(sock) => sock,
            None => {
                let sock = TcpStream::connect(self.addr)
                    .await
                    .map_err(|e| e.to_string())?;
                sock.set_nodelay(true).map_err(|e| e.to_string())?;
                sock
            }
        };
        sock.write_all(&self.request)
            .await
            .map_err(|e| e.to_string())?;
        let mut buf = Vec::with_capacity(4096);
        let mut first = None;
        while !buf.ends_with(b"\r\n0\r\n\r\n") {
            if sock.read_buf(&mut buf).await.map_err(|e| e.to_string())? == 0 {
                return Err("the server closed the connection".into());
            }
            if first.is_none() && head_end(&buf).is_some_and(|end| buf.len() > end) {
                first = Some(started.elapsed());
            }
        }
        // Not decoded, but the answer must be the recording, whose first word is there.
        let first_word = self.expected.split('\n').next().unwrap_or_default();
        let body = String::from_utf8_lossy(&buf);
        if !body.contains("[DONE]") || !body.contains(&format!("\"content\":\"{first_word}\"")) {
            return Err("the answer is not the recording".into());
        }
        self.idle.lock().unwrap().push(sock);
        first.ok_or_else(|| "no body".into())
    }
}
