//! The bodies that follow a connection's requests: a request's, counted as it comes (for
//! the slowest body's rate), and an answer's, which keeps its connection busy until sent
//! and, over HTTP/2, says whether it waits for its client.

use super::table::{Busy, Conn, Table};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

/// A request's body, counted as it comes.
pub(super) struct Received {
    body: hyper::body::Incoming,
    conn: Arc<Conn>,
}

impl Received {
    pub(super) fn new(body: hyper::body::Incoming, conn: &Arc<Conn>) -> Self {
        Self {
            body,
            conn: conn.clone(),
        }
    }
}

impl http_body::Body for Received {
    type Data = axum::body::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<axum::body::Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                let n = frame.data_ref().map_or(0, |d| d.len() as u64);
                self.conn.received.fetch_add(n, Ordering::Relaxed);
            }
            Poll::Ready(_) => self.conn.receiving_since.store(0, Ordering::Relaxed),
            Poll::Pending => {}
        }
        if self.body.is_end_stream() {
            self.conn.receiving_since.store(0, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// An answer's body, which keeps its connection busy until it is done (or dropped) and,
/// over HTTP/2, says in `waiting` since when it waits for its client: hyper takes a piece,
/// sends it, and asks for the next once the client's window allows. A body that has
/// nothing yet waits on its model instead (`u64::MAX`), for as long as that takes.
pub(super) struct Answering {
    body: axum::body::Body,
    _busy: Busy,
    table: Arc<Table>,
    waiting: Option<Arc<AtomicU64>>,
}

impl Answering {
    pub(super) fn new(
        body: axum::body::Body,
        busy: Busy,
        table: Arc<Table>,
        waiting: Option<Arc<AtomicU64>>,
    ) -> Self {
        Self {
            body,
            _busy: busy,
            table,
            waiting,
        }
    }
}

impl http_body::Body for Answering {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<axum::body::Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Some(waiting) = &self.waiting {
            let since = match &polled {
                Poll::Pending => u64::MAX,
                Poll::Ready(_) => self.table.now(),
            };
            waiting.store(since, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
