//! A response body driven through a stream decoder.

use crate::ByteStream;
use futures_core::Stream;
use kite_core::{Error, Event, EventStream};
use kite_wire::{ResumePoint, StreamDecoder};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The events of `body` as decoded by `decoder`. An error from the connection or the
/// decoder is the stream's last item.
pub fn decode_stream<D: StreamDecoder + Unpin + 'static>(
    body: ByteStream,
    decoder: D,
) -> EventStream {
    decode_resumable(body, decoder, None)
}

/// Opens a new connection that continues a dropped stream from a [`ResumePoint`].
pub type Reconnect = Box<
    dyn FnMut(ResumePoint) -> Pin<Box<dyn Future<Output = Result<ByteStream, Error>> + Send>>
        + Send,
>;

/// How many times in a row a stream is resumed without an event in between.
const MAX_RESUMES: u32 = 5;

/// Like [`decode_stream`], but when the connection drops (a transport error, or an end
/// before the response was complete) and the decoder knows where the stream can resume,
/// `reconnect` opens a new connection and decoding goes on from there. Events already
/// given out are not given again.
pub fn decode_resumable<D: StreamDecoder + Unpin + 'static>(
    body: ByteStream,
    decoder: D,
    reconnect: Option<Reconnect>,
) -> EventStream {
    Box::pin(Decoded {
        body,
        decoder,
        pending: VecDeque::new(),
        scratch: Vec::new(),
        error: None,
        done: false,
        reconnect,
        reconnecting: None,
        resumes: 0,
    })
}

type Reconnecting = Pin<Box<dyn Future<Output = Result<ByteStream, Error>> + Send>>;

struct Decoded<D> {
    body: ByteStream,
    decoder: D,
    pending: VecDeque<Event>,
    scratch: Vec<Event>,
    error: Option<Error>,
    done: bool,
    reconnect: Option<Reconnect>,
    reconnecting: Option<Reconnecting>,
    /// Resumes since the last event.
    resumes: u32,
}

impl<D: StreamDecoder> Decoded<D> {
    fn take(&mut self, result: Result<(), Error>) {
        if !self.scratch.is_empty() {
            self.resumes = 0;
        }
        self.pending.extend(self.scratch.drain(..));
        if let Err(e) = result {
            self.fail(e);
        }
    }

    /// The connection or the decoder failed: resume when the stream can be, else end.
    fn fail(&mut self, e: Error) {
        if matches!(e, Error::Transport(_))
            && self.resumes < MAX_RESUMES
            && let (Some(reconnect), Some(point)) =
                (self.reconnect.as_mut(), self.decoder.resume_point())
        {
            tracing::debug!(id = %point.id, after = point.after, error = %e, "resuming a dropped stream");
            self.resumes += 1;
            self.reconnecting = Some(reconnect(point));
            return;
        }
        self.error = Some(e);
        self.done = true;
    }
}

impl<D: StreamDecoder + Unpin + 'static> Stream for Decoded<D> {
    type Item = Result<Event, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(e) = this.pending.pop_front() {
                return Poll::Ready(Some(Ok(e)));
            }
            if let Some(e) = this.error.take() {
                return Poll::Ready(Some(Err(e)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            if let Some(fut) = this.reconnecting.as_mut() {
                match fut.as_mut().poll(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(r) => {
                        this.reconnecting = None;
                        match r {
                            Ok(body) => {
                                this.body = body;
                                this.decoder.resumed();
                            }
                            Err(e) => {
                                this.error = Some(e);
                                this.done = true;
                            }
                        }
                        continue;
                    }
                }
            }
            match this.body.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(bytes))) => {
                    let r = this.decoder.decode(&bytes, &mut this.scratch);
                    this.take(r);
                }
                Poll::Ready(Some(Err(e))) => this.fail(e),
                Poll::Ready(None) => {
                    let r = this.decoder.finish(&mut this.scratch);
                    if r.is_ok() {
                        this.done = true;
                    }
                    this.take(r);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
