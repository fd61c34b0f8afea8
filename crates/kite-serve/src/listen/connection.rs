//! One connection's life: its first byte within its deadline, then which HTTP it speaks
//! (the HTTP/2 preface, read within the headers' deadline: hyper-util's own look has none),
//! then served until it ends, is dropped to make room, or is closed: gracefully, and for
//! HTTP/2, whose close waits for the client to answer a ping, not for long once nothing is
//! under way. An HTTP/2 connection with nothing under way for the headers' deadline is
//! closed, as an HTTP/1.1 one is by hyper between requests; so is one whose client has
//! taken nothing of an answer for four keep-alives' time (a minute by default; it can hold
//! back a stream's window for ever, where an HTTP/1.1 client must fill the kernel's
//! buffers first).

use super::table::{Conn, Forget, STALLED};
use super::{Counted, Deadlines};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

/// How many keep-alives' time an HTTP/2 client may take none of an answer before its
/// connection is closed (a minute by default).
const STALLED_AFTER: u32 = 4;

/// The most read at once while telling which HTTP a client speaks.
const SNIFF_READ: usize = 8 * 1024;

/// What an HTTP/2 client sends first.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Serves `socket` with `http` (see the module doc).
pub(super) async fn serve(
    mut socket: Socket,
    conn: Arc<Conn>,
    forget: Forget,
    http: hyper_util::server::conn::auto::Builder<TokioExecutor>,
    service: Counted,
    deadlines: Deadlines,
    draining: &AtomicBool,
) {
    let table = &forget.0;
    conn.idle_since.store(table.now(), Ordering::Relaxed);
    let mut one = [0u8; 1];
    let spoke = tokio::select! {
        // What came is heard first, even when it comes as the connection is closed.
        biased;
        read = tokio::time::timeout(deadlines.first_byte, socket.tcp.peek(&mut one)) => {
            matches!(read, Ok(Ok(n)) if n > 0)
        }
        // Closed to make room before it said anything.
        () = conn.close.cancelled() => false,
    };
    if !spoke {
        return;
    }
    conn.reading_since
        .store(table.now().max(1), Ordering::Relaxed);
    let h2 = tokio::select! {
        biased;
        h2 = tokio::time::timeout(deadlines.headers, socket.sniff()) => match h2 {
            Ok(Some(h2)) => h2,
            _ => return,
        },
        () = conn.close.cancelled() => return,
    };
    conn.h2.store(h2, Ordering::Relaxed);
    if h2 && draining.load(Ordering::Relaxed) {
        // Told at once to go elsewhere.
        conn.close.cancel();
    }
    let http = match h2 {
        true => http.http2_only(),
        false => http.http1_only(),
    };
    let served = http.serve_connection(TokioIo::new(socket), service);
    tokio::pin!(served);
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    // (An answer waiting on its model is not waiting on its client.)
    let stalled_after = (deadlines.keep_alive * STALLED_AFTER)
        .max(Duration::from_secs(1))
        .as_millis() as u64;
    loop {
        tokio::select! {
            _ = served.as_mut() => return,
            () = conn.close.cancelled() => break,
            _ = tick.tick(), if h2 => {
                let now = table.now();
                let idle = now.saturating_sub(conn.idle_since.load(Ordering::Relaxed));
                if conn.busy.load(Ordering::Acquire) == 0
                    && idle >= deadlines.headers.as_millis() as u64
                {
                    break;
                }
                if conn.stalled(now.saturating_sub(stalled_after)) {
                    // Its other answers go with it: a client that takes none of one for
                    // this long has stopped reading, or means to hold what it asked for.
                    conn.evicted.store(STALLED, Ordering::Relaxed);
                    break;
                }
            }
        }
    }
    // Dropped to make room, idle or sending its body too slowly: at once, however little of
    // a request it sent.
    if conn.goes_now() {
        return;
    }
    served.as_mut().graceful_shutdown();
    // What is under way finishes; then a client that does not answer HTTP/2's last ping is
    // given two seconds.
    let mut quiet = 0;
    loop {
        tokio::select! {
            _ = served.as_mut() => return,
            _ = tick.tick() => {
                quiet = match conn.busy.load(Ordering::Acquire) {
                    0 => quiet + 1,
                    _ => 0,
                };
                if quiet > 2 {
                    return;
                }
            }
        }
    }
}

/// A connection's socket, which tells its table entry before it closes; what was read to
/// tell which HTTP it speaks is read again first.
pub(super) struct Socket {
    tcp: tokio::net::TcpStream,
    conn: Arc<Conn>,
    read: Vec<u8>,
    replayed: usize,
    /// hyper's own answer to a request it could not read, rewritten with a body, and how
    /// much of it is written.
    told: Option<(Vec<u8>, usize)>,
}

impl Socket {
    pub(super) fn new(tcp: tokio::net::TcpStream, conn: Arc<Conn>) -> Self {
        Self {
            tcp,
            conn,
            read: Vec::new(),
            replayed: 0,
            told: None,
        }
    }

    /// Whether the client speaks HTTP/2 from the start: reads until its bytes part from
    /// the preface (HTTP/1.1) or have made all of it; `None` when it closes first. Each
    /// read takes what has come, as hyper's would, so that an HTTP/1.1 request that came
    /// whole is read once.
    async fn sniff(&mut self) -> Option<bool> {
        let mut buf = vec![0u8; SNIFF_READ];
        while PREFACE.starts_with(&self.read[..self.read.len().min(PREFACE.len())])
            && self.read.len() < PREFACE.len()
        {
            let n = self.tcp.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            self.read.extend_from_slice(&buf[..n]);
        }
        Some(self.read.starts_with(PREFACE))
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        // Before `tcp` closes (fields drop after this).
        self.conn.closing();
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.replayed < this.read.len() {
            let left = &this.read[this.replayed..];
            let n = left.len().min(buf.remaining());
            buf.put_slice(&left[..n]);
            this.replayed += n;
            if this.replayed == this.read.len() {
                // Not kept for the connection's life.
                (this.read, this.replayed) = (Vec::new(), 0);
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.tcp).poll_read(cx, buf)
    }
}

/// What hyper writes, and nothing else does, when it cannot read a request (a malformed
/// one, headers past its limit): a status, `connection: close` and no body.
const HYPER_REFUSAL: &[u8] = b"\r\nconnection: close\r\ncontent-length: 0\r\n";

/// hyper's bodiless refusal `head`, with a JSON body in the shape every served API's
/// clients read (OpenAI's), saying what was wrong; `None` for anything else.
fn with_body(head: &[u8]) -> Option<Vec<u8>> {
    let line_end = head.windows(2).position(|w| w == b"\r\n")?;
    let status_line = std::str::from_utf8(&head[..line_end]).ok()?;
    let rest = &head[line_end..];
    if !status_line.starts_with("HTTP/1.1 4") || !rest.starts_with(HYPER_REFUSAL) {
        return None;
    }
    let message = match status_line.get(9..12)? {
        "431" => "the request's headers are larger than this server reads",
        "414" => "the request's path is longer than this server reads",
        _ => "the request could not be read as HTTP/1.1",
    };
    let body = format!(
        r#"{{"error":{{"message":"{message}","type":"invalid_request_error","param":null,"code":null}}}}"#
    );
    Some(
        format!(
            "{status_line}\r\ncontent-type: application/json\r\nconnection: close\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

impl Socket {
    /// Writes `buf`, or, when it is hyper's bodiless refusal, that refusal with a body
    /// (reporting `buf` written once all of it is).
    fn write_some(&mut self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        if self.told.is_none()
            && let Some(whole) = with_body(buf)
        {
            self.told = Some((whole, 0));
        }
        let Some((whole, at)) = &mut self.told else {
            return Pin::new(&mut self.tcp).poll_write(cx, buf);
        };
        while *at < whole.len() {
            match Pin::new(&mut self.tcp).poll_write(cx, &whole[*at..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Ok(0)),
                Poll::Ready(Ok(n)) => *at += n,
                other => return other,
            }
        }
        Poll::Ready(Ok(buf.len()))
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.write_some(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        // A refusal is written whole, alone.
        if let Some(first) = bufs.first()
            && (self.told.is_some() || with_body(first).is_some())
        {
            return self.write_some(cx, first);
        }
        Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}
