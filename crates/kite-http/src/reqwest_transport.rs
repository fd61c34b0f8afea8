//! The real transport: reqwest over rustls, one connection pool per client.
//!
//! HTTP/1.1 only (reqwest is built without its `http2` feature), as the providers' own SDKs
//! speak it. A model's answer is a stream that lasts seconds to minutes, and the providers'
//! servers cap the streams one HTTP/2 connection carries at once (a few hundred); past the
//! cap hyper's pool does not open another connection but queues the request, so a gateway's
//! next stream would wait for another's whole answer. Over HTTP/1.1 each stream has a
//! connection of its own, kept alive for the next (`kite-cli/tests/upstream.rs` holds six
//! streams to a server that carries two an HTTP/2 connection).

use crate::{ByteStream, HttpRequest, HttpResponse, Transport, TransportFuture};
use bytes::Bytes;
use futures_core::Stream;
use kite_core::{Error, TransportErrorKind};
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Sleep;

/// How long each phase of a call may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    /// Establishing the connection (TCP and TLS). Default 10 s.
    pub connect: Duration,
    /// From sending the request until the answer starts: its headers and the first piece
    /// of its body. Default 10 min: a reasoning model may think that long before it says
    /// anything, and a non-streamed answer arrives all at once, late.
    pub response: Duration,
    /// Between two pieces of a response body once it has started. Default 2 min: a stream
    /// that has begun and then goes quiet for that long has stalled.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Self {
            connect: Duration::from_secs(10),
            response: Duration::from_secs(600),
            idle: Duration::from_secs(120),
        }
    }
}

/// Sends requests with reqwest. Clones share one connection pool.
#[derive(Clone, Debug)]
pub struct ReqwestTransport {
    client: reqwest::Client,
    timeouts: Timeouts,
}

impl ReqwestTransport {
    /// A transport with its own pool and the given timeouts.
    pub fn new(timeouts: Timeouts) -> Result<Self, Error> {
        let client = reqwest::Client::builder()
            .redirect(same_origin_redirects())
            .connect_timeout(timeouts.connect)
            .pool_idle_timeout(Duration::from_secs(90))
            .user_agent(concat!("kite/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| Error::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self::from_client(client, timeouts))
    }

    /// A transport over a client the caller configured (proxies, certificates).
    pub fn from_client(client: reqwest::Client, timeouts: Timeouts) -> Self {
        Self { client, timeouts }
    }

    /// The process-wide transport with default timeouts: every user shares its pool.
    pub fn shared() -> Result<Self, Error> {
        static SHARED: OnceLock<ReqwestTransport> = OnceLock::new();
        if let Some(t) = SHARED.get() {
            return Ok(t.clone());
        }
        let t = Self::new(Timeouts::default())?;
        Ok(SHARED.get_or_init(|| t).clone())
    }

    /// The same pool with other timeouts.
    pub fn with_timeouts(&self, timeouts: Timeouts) -> Self {
        Self {
            client: self.client.clone(),
            timeouts,
        }
    }
}

impl Transport for ReqwestTransport {
    fn send(&self, request: HttpRequest) -> TransportFuture<'_> {
        Box::pin(async move {
            let started = tokio::time::Instant::now();
            let req = self
                .client
                .request(request.method, &request.url)
                .headers(request.headers)
                .body(request.body);
            let resp = match tokio::time::timeout(self.timeouts.response, req.send()).await {
                Ok(r) => r.map_err(map_error)?,
                Err(_) => {
                    return Err(Error::transport(
                        TransportErrorKind::RequestTimeout,
                        format!("no answer within {:?}", self.timeouts.response),
                    ));
                }
            };
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            // Until the first piece, the answer still has what is left of `response`.
            let first = started + self.timeouts.response;
            let body: ByteStream = Box::pin(IdleTimeout {
                inner: Box::pin(resp.bytes_stream()),
                sleep: Box::pin(tokio::time::sleep_until(first)),
                idle: self.timeouts.idle,
                response: self.timeouts.response,
                started: false,
                done: false,
            });
            Ok(HttpResponse {
                status,
                headers,
                body,
            })
        })
    }
}

type ReqwestBody = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

/// Ends a body whose first piece does not come within `response` of the request, or that
/// then goes quiet for longer than `idle`, with a typed error.
struct IdleTimeout {
    inner: ReqwestBody,
    sleep: Pin<Box<Sleep>>,
    idle: Duration,
    response: Duration,
    /// A piece of the body has arrived.
    started: bool,
    done: bool,
}

impl Stream for IdleTimeout {
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.done {
            return Poll::Ready(None);
        }
        match self.inner.as_mut().poll_next(cx) {
            Poll::Ready(Some(Ok(bytes))) => {
                let deadline = tokio::time::Instant::now() + self.idle;
                self.sleep.as_mut().reset(deadline);
                self.started |= !bytes.is_empty();
                Poll::Ready(Some(Ok(bytes)))
            }
            Poll::Ready(Some(Err(e))) => {
                self.done = true;
                let mut err = map_error(e);
                if let Error::Transport(t) = &mut err
                    && t.kind == TransportErrorKind::Other
                {
                    t.kind = TransportErrorKind::ConnectionClosed;
                }
                Poll::Ready(Some(Err(err)))
            }
            Poll::Ready(None) => {
                self.done = true;
                Poll::Ready(None)
            }
            Poll::Pending => {
                if self.sleep.as_mut().poll(cx).is_ready() {
                    self.done = true;
                    let message = if self.started {
                        format!("the answer stalled: no data for {:?}", self.idle)
                    } else {
                        format!("the answer did not start within {:?}", self.response)
                    };
                    return Poll::Ready(Some(Err(Error::transport(
                        TransportErrorKind::IdleTimeout,
                        message,
                    ))));
                }
                Poll::Pending
            }
        }
    }
}

use std::future::Future as _;

/// Redirects are followed within the origin the request went to, and never elsewhere: a
/// prompt, and the credentials sent with it, go only where they were sent.
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let first = attempt.previous().first();
        let same = first.is_some_and(|f| f.origin() == attempt.url().origin());
        if same && attempt.previous().len() < 5 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// A reqwest error as a kite error. The URL is left out: it may carry a key.
fn map_error(e: reqwest::Error) -> Error {
    // Where it went, so that the error says which server failed: scheme, host, port and
    // path, never the query or a user and password (a key may ride in either).
    let at = e.url().map(|u| crate::shown_url(u.as_str()));
    let e = e.without_url();
    let kind = if e.is_connect() {
        if e.is_timeout() {
            TransportErrorKind::ConnectTimeout
        } else {
            TransportErrorKind::Connect
        }
    } else if e.is_timeout() {
        TransportErrorKind::RequestTimeout
    } else if closed(&e) {
        TransportErrorKind::ConnectionClosed
    } else {
        TransportErrorKind::Other
    };
    match at {
        Some(at) => Error::transport(kind, format!("{at}: {}", chain(&e))),
        None => Error::transport(kind, chain(&e)),
    }
}

/// True when the connection was reset or closed under us.
fn closed(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            if matches!(
                io.kind(),
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
            ) {
                return true;
            }
        }
        if let Some(h) = err.downcast_ref::<hyper::Error>()
            && (h.is_incomplete_message() || h.is_closed() || h.is_canceled())
        {
            return true;
        }
        cur = err.source();
    }
    false
}

fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(err) = cur {
        let m = err.to_string();
        if !s.contains(&m) {
            s.push_str(": ");
            s.push_str(&m);
        }
        cur = err.source();
    }
    s
}
