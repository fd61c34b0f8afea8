//! The replay server.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One scripted answer.
#[derive(Clone, Debug)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    chunk: usize,
    delay: Duration,
    fault: Fault,
}

#[derive(Clone, Debug, PartialEq)]
enum Fault {
    None,
    /// Reset the connection after reading the request, before any byte.
    ResetBeforeResponse,
    /// Send `usize` body bytes, then reset.
    ResetAfter(usize),
    /// Send `usize` body bytes, then go silent (for an idle timeout).
    StallAfter(usize),
    /// Write these bytes instead of an HTTP response, then close.
    Raw(Vec<u8>),
}

impl Reply {
    /// An empty response with `status`.
    pub fn status(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
            chunk: usize::MAX,
            delay: Duration::ZERO,
            fault: Fault::None,
        }
    }

    /// A JSON response.
    pub fn json(status: u16, body: impl Into<Vec<u8>>) -> Self {
        Self::status(status)
            .header("content-type", "application/json")
            .body(body)
    }

    /// A 200 event stream.
    pub fn sse(body: impl Into<Vec<u8>>) -> Self {
        Self::status(200)
            .header("content-type", "text/event-stream; charset=utf-8")
            .body(body)
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sets the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// Streams the body in pieces of `size` bytes, waiting `delay` between pieces.
    pub fn chunked(mut self, size: usize, delay: Duration) -> Self {
        self.chunk = size.max(1);
        self.delay = delay;
        self
    }

    /// Reads the request, then resets the connection without answering.
    pub fn reset() -> Self {
        Self {
            fault: Fault::ResetBeforeResponse,
            ..Self::status(0)
        }
    }

    /// Sends the headers and the first `bytes` of the body, then resets the connection.
    pub fn reset_after(mut self, bytes: usize) -> Self {
        self.fault = Fault::ResetAfter(bytes);
        self
    }

    /// Sends the headers and the first `bytes` of the body, then sends nothing more.
    pub fn stall_after(mut self, bytes: usize) -> Self {
        self.fault = Fault::StallAfter(bytes);
        self
    }

    /// Answers with bytes that are not HTTP at all.
    pub fn raw(bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            fault: Fault::Raw(bytes.into()),
            ..Self::status(0)
        }
    }
}

/// A request the server received.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    /// The HTTP method (`POST`, `GET`, ...).
    pub method: String,
    /// The request target: the path, query included.
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    /// The body as received.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body parsed as UTF-8.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What answers a request once the scripted replies are spent.
type Answer = Arc<dyn Fn(&RecordedRequest) -> Reply + Send + Sync>;

struct State {
    replies: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    answer: Option<Answer>,
}

/// A loopback HTTP server answering with scripted replies, one per request, in order. A
/// request beyond the script gets a 599 naming the problem. The server stops when dropped.
pub struct ReplayServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    task: tokio::task::JoinHandle<()>,
}

impl ReplayServer {
    /// Starts a server on 127.0.0.1 with a free port.
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::begin(replies, None).await
    }

    /// Starts a server that answers each request with what `answer` makes of it: a
    /// provider scripted by what it is asked, for clients whose requests cannot be foretold
    /// one by one.
    pub async fn answering(
        answer: impl Fn(&RecordedRequest) -> Reply + Send + Sync + 'static,
    ) -> Self {
        Self::begin(Vec::new(), Some(Arc::new(answer))).await
    }

    async fn begin(replies: Vec<Reply>, answer: Option<Answer>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let state = Arc::new(Mutex::new(State {
            replies: replies.into(),
            requests: Vec::new(),
            answer,
        }));
        let st = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let st = st.clone();
                tokio::spawn(async move {
                    let _ = serve(sock, st).await;
                });
            }
        });
        Self { addr, state, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.lock().unwrap().requests.clone()
    }

    /// How many scripted replies were not used.
    pub fn unused(&self) -> usize {
        self.state.lock().unwrap().replies.len()
    }
}

impl Drop for ReplayServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut sock: TcpStream, state: Arc<Mutex<State>>) -> std::io::Result<()> {
    sock.set_nodelay(true)?;
    let req = read_request(&mut sock).await?;
    let reply = {
        let mut st = state.lock().unwrap();
        let reply = st
            .replies
            .pop_front()
            .or_else(|| st.answer.as_ref().map(|answer| answer(&req)));
        st.requests.push(req);
        reply
    };
    let reply = reply.unwrap_or_else(|| {
        Reply::status(599).body(b"kite-testkit: no scripted reply left for this request".to_vec())
    });
    match &reply.fault {
        Fault::ResetBeforeResponse => return reset(sock),
        Fault::Raw(bytes) => {
            sock.write_all(bytes).await?;
            sock.shutdown().await?;
            return Ok(());
        }
        _ => {}
    }
    let mut head = format!("HTTP/1.1 {} {}\r\n", reply.status, reason(reply.status));
    for (n, v) in &reply.headers {
        head.push_str(&format!("{n}: {v}\r\n"));
    }
    head.push_str("transfer-encoding: chunked\r\nconnection: close\r\n\r\n");
    sock.write_all(head.as_bytes()).await?;

    let limit = match reply.fault {
        Fault::ResetAfter(n) | Fault::StallAfter(n) => n.min(reply.body.len()),
        _ => reply.body.len(),
    };
    for (i, piece) in reply.body[..limit].chunks(reply.chunk.max(1)).enumerate() {
        if i > 0 && !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        sock.write_all(format!("{:x}\r\n", piece.len()).as_bytes())
            .await?;
        sock.write_all(piece).await?;
        sock.write_all(b"\r\n").await?;
        sock.flush().await?;
    }
    match reply.fault {
        Fault::ResetAfter(_) => reset(sock),
        Fault::StallAfter(_) => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(())
        }
        _ => {
            sock.write_all(b"0\r\n\r\n").await?;
            sock.shutdown().await?;
            Ok(())
        }
    }
}

/// Closes with a TCP reset rather than a clean close.
fn reset(sock: TcpStream) -> std::io::Result<()> {
    let std = sock.into_std()?;
    socket2::SockRef::from(&std).set_linger(Some(Duration::ZERO))?;
    drop(std);
    Ok(())
}

async fn read_request(sock: &mut TcpStream) -> std::io::Result<RecordedRequest> {
    let mut buf = Vec::with_capacity(8192);
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = memchr::memmem::find(&buf, b"\r\n\r\n") {
            break i;
        }
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_owned();
    let path = first.next().unwrap_or("").to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut tmp).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    Ok(RecordedRequest {
        method,
        path,
        headers,
        body,
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// A server on 127.0.0.1 that accepts connections and holds them open, but never reads or
/// writes a byte: a provider or MCP server that hangs. Stops when dropped.
pub struct SilentServer {
    addr: SocketAddr,
    task: tokio::task::JoinHandle<()>,
}

impl SilentServer {
    /// Starts it on a free port.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().expect("local addr");
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((sock, _)) = listener.accept().await {
                held.push(sock);
            }
        });
        Self { addr, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for SilentServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
