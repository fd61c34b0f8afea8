//! A response body driven through a stream decoder.

use crate::ByteStream;
use futures_core::Stream;
use kite_core::{Error, Event, EventStream};
use kite_wire::StreamDecoder;
use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The events of `body` as decoded by `decoder`. An error from the connection or the
/// decoder is the stream's last item.
pub fn decode_stream<D: StreamDecoder + Unpin + 'static>(
    body: ByteStream,
    decoder: D,
) -> EventStream {
    Box::pin(Decoded {
        body,
        decoder,
        pending: VecDeque::new(),
        scratch: Vec::new(),
        error: None,
        done: false,
    })
}

struct Decoded<D> {
    body: ByteStream,
    decoder: D,
    pending: VecDeque<Event>,
    scratch: Vec<Event>,
    error: Option<Error>,
    done: bool,
}

impl<D: StreamDecoder> Decoded<D> {
    fn take(&mut self, result: Result<(), Error>) {
        self.pending.extend(self.scratch.drain(..));
        if let Err(e) = result {
            self.error = Some(e);
            self.done = true;
        }
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
            match this.body.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(bytes))) => {
                    let r = this.decoder.decode(&bytes, &mut this.scratch);
                    this.take(r);
                }
                Poll::Ready(Some(Err(e))) => {
                    this.error = Some(e);
                    this.done = true;
                }
                Poll::Ready(None) => {
                    let r = this.decoder.finish(&mut this.scratch);
                    this.take(r);
                    this.done = true;
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
