//! Server-sent events framing, sans-IO.
//!
//! Written by hand rather than taken from a crate because it sits on the hot path of every
//! streamed response, must never allocate per byte, and must accept what real providers send:
//! `:` comment lines (OpenRouter's `: OPENROUTER PROCESSING`), LF, CRLF or lone-CR line
//! endings, a CR and LF split across two reads, and a leading byte-order mark. It follows the
//! WHATWG event-stream parsing rules otherwise: an event cut off by the end of the stream,
//! before its blank line, is discarded.
//!
//! ```
//! use kite_wire::sse::SseDecoder;
//!
//! let mut sse = SseDecoder::new();
//! sse.feed(b"event: ping\ndata: {\"a\":\r\ndata: 1}\r\n\r\n: comment\n");
//! let frame = sse.next_frame().unwrap();
//! assert_eq!(frame.event, "ping");
//! assert_eq!(frame.data, b"{\"a\":\n1}");
//! assert!(sse.next_frame().is_none());
//! ```

use kite_core::{Error, Event, TransportErrorKind};
use memchr::memchr2;

/// One dispatched event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The `event:` field; empty when none was sent (the spec's "message").
    pub event: &'a str,
    /// The `data:` lines joined with `\n`, as bytes: a JSON parser reads them as they are and
    /// checks the UTF-8 of what it keeps; [`Frame::text`] gives them as text.
    pub data: &'a [u8],
    /// The last `id:` seen so far on this stream.
    pub id: Option<&'a str>,
    /// The `retry:` reconnection time in milliseconds, if this event set one.
    pub retry: Option<u64>,
}

impl Frame<'_> {
    /// The data as text, with invalid UTF-8 replaced.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(self.data)
    }
}

/// What a stream held: non-empty lines, comment lines, field lines (`data`, `event`, `id`,
/// `retry`), dispatched events, and whether it ended in the middle of an event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Seen {
    /// Non-empty lines.
    pub lines: u64,
    /// `:` comment lines (keep-alives such as OpenRouter's `: OPENROUTER PROCESSING`).
    pub comments: u64,
    /// Lines naming a field of the specification.
    pub fields: u64,
    /// Events dispatched.
    pub frames: u64,
    /// The stream ended in the middle of an event, which was discarded.
    pub cut: bool,
}

/// Incremental SSE parser: [`feed`](Self::feed) bytes as they arrive, then take frames with
/// [`next_frame`](Self::next_frame) until it returns `None`. Splitting the input at any byte
/// gives the same frames.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    pos: usize,
    /// The previous line ended in CR at the end of the buffer: a following LF belongs to it.
    skip_lf: bool,
    bom_checked: bool,
    data: Vec<u8>,
    has_data: bool,
    event: String,
    id: Option<String>,
    retry: Option<u64>,
    out_data: Vec<u8>,
    out_event: String,
    seen: Seen,
    /// How many bytes from `pos` are known to hold no line end: a long line arriving in
    /// pieces is searched once, not again with every piece.
    scanned: usize,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds bytes read from the connection.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Marks the end of the input. An event not yet ended by a blank line is discarded, as
    /// the specification says: the stream was cut off in the middle of it.
    pub fn end(&mut self) {
        let tail = &self.buf[self.pos..];
        let field = [&b"data:"[..], b":", b"event:", b"id:", b"retry:"];
        let tail_is_field = tail == b"data" || field.iter().any(|f| tail.starts_with(f));
        self.seen.cut |= self.has_data || tail_is_field;
        self.buf.clear();
        self.pos = 0;
        self.scanned = 0;
        self.skip_lf = false;
        self.bom_checked = true;
        self.data.clear();
        self.has_data = false;
        self.event.clear();
    }

    /// How many bytes are held for the event being read: its data so far and the line not
    /// yet ended. A caller bounds it, so that a stream with no line end cannot fill memory.
    pub fn pending(&self) -> usize {
        self.buf.len() - self.pos + self.data.len()
    }

    /// What the stream held so far: lets a caller tell a stream that carried no events from
    /// one that carried something else.
    pub fn seen(&self) -> Seen {
        self.seen
    }

    /// The next complete frame, if the bytes fed so far hold one.
    pub fn next_frame(&mut self) -> Option<Frame<'_>> {
        if !self.bom_checked {
            let rest = &self.buf[self.pos..];
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            if rest.len() < BOM.len() && BOM.starts_with(rest) {
                return None;
            }
            if rest.starts_with(BOM) {
                self.pos += BOM.len();
            }
            self.bom_checked = true;
        }
        loop {
            if self.skip_lf && self.pos < self.buf.len() {
                if self.buf[self.pos] == b'\n' {
                    self.pos += 1;
                }
                self.skip_lf = false;
            }
            let rest = &self.buf[self.pos..];
            let from = self.scanned.min(rest.len());
            let Some(end) = memchr2(b'\n', b'\r', &rest[from..]).map(|i| from + i) else {
                self.scanned = rest.len();
                self.compact();
                return None;
            };
            self.scanned = 0;
            let line_start = self.pos;
            let mut next = line_start + end + 1;
            if rest[end] == b'\r' {
                match self.buf.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.skip_lf = true,
                }
            }
            self.pos = next;
            if end == 0 {
                if self.dispatch() {
                    return Some(Frame {
                        event: &self.out_event,
                        data: &self.out_data,
                        id: self.id.as_deref(),
                        retry: self.retry.take(),
                    });
                }
                continue;
            }
            self.seen.lines += 1;
            self.field(line_start, line_start + end);
        }
    }

    fn field(&mut self, start: usize, end: usize) {
        let line = &self.buf[start..end];
        if line[0] == b':' {
            self.seen.comments += 1;
            return;
        }
        // Nearly every line is `data: ...`: take it without searching for the colon.
        if let Some(value) = line.strip_prefix(b"data:") {
            self.seen.fields += 1;
            let value = value.strip_prefix(b" ").unwrap_or(value);
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
            return;
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        if matches!(name, b"data" | b"event" | b"id" | b"retry") {
            self.seen.fields += 1;
        }
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.push_str(&String::from_utf8_lossy(value));
            }
            b"id" if !value.contains(&0) => {
                self.id = Some(String::from_utf8_lossy(value).into_owned())
            }
            b"retry" => {
                if let Some(ms) = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok()) {
                    self.retry = Some(ms);
                }
            }
            _ => {}
        }
    }

    /// Moves the pending event to the output slots; false when there is nothing to dispatch.
    fn dispatch(&mut self) -> bool {
        if !self.has_data {
            self.event.clear();
            return false;
        }
        // The buffers trade places, so nothing is copied or allocated.
        std::mem::swap(&mut self.out_data, &mut self.data);
        self.data.clear();
        std::mem::swap(&mut self.out_event, &mut self.event);
        self.event.clear();
        self.has_data = false;
        self.seen.frames += 1;
        true
    }

    fn compact(&mut self) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
    }
}

/// What an API does with the events of a response stream; [`SseStream`] does the rest.
pub trait Frames: Send {
    /// Handles one event. `Ok(true)` when the response is complete: nothing more is read.
    /// An error ends the stream.
    fn frame(&mut self, event: &str, data: &[u8], out: &mut Vec<Event>) -> Result<bool, Error>;

    /// The connection closed, after at least one event, before the response was complete
    /// (or, for APIs whose stream has no end marker, when it was): flushes what is pending,
    /// or says what is missing.
    fn eof(&mut self, out: &mut Vec<Event>) -> Result<(), Error>;

    /// See [`StreamDecoder::resume_point`](crate::StreamDecoder::resume_point).
    fn resume_point(&self) -> Option<crate::ResumePoint> {
        None
    }
}

/// An event kite has no meaning for, passed on as the provider sent it: named `kind`, with
/// its JSON payload (or its text, when the payload is not JSON).
pub(crate) fn unknown(kind: &str, data: &[u8]) -> Event {
    let data = serde_json::from_slice(data)
        .unwrap_or_else(|_| serde_json::Value::String(String::from_utf8_lossy(data).into_owned()));
    Event::Unknown {
        kind: kind.to_owned(),
        data,
    }
}

/// The largest event a stream may send (its data and its unfinished line): far above any
/// real one, and a bound on what a server can make kite hold.
pub const MAX_EVENT: usize = 16 * 1024 * 1024;

/// A stream decoder: SSE framing, and an API's [`Frames`] for what the events mean.
#[derive(Debug, Default)]
pub struct SseStream<F> {
    sse: SseDecoder,
    frames: F,
    /// The response is complete, or an error ended it: nothing more is decoded.
    closed: bool,
    head: Vec<u8>,
    /// Events read on earlier connections of a resumed stream.
    earlier: u64,
}

impl<F: Frames + Default> SseStream<F> {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }
}

impl<F: Frames> SseStream<F> {
    /// The API's state (what it has seen so far).
    pub fn frames(&self) -> &F {
        &self.frames
    }

    fn drain(&mut self, out: &mut Vec<Event>) -> Result<(), Error> {
        while !self.closed {
            let Some(frame) = self.sse.next_frame() else {
                break;
            };
            match self.frames.frame(frame.event, frame.data, out) {
                Ok(done) => self.closed = done,
                Err(e) => {
                    self.closed = true;
                    return Err(e);
                }
            }
        }
        Ok(())
    }
}

impl<F: Frames> crate::StreamDecoder for SseStream<F> {
    fn decode(&mut self, bytes: &[u8], out: &mut Vec<Event>) -> Result<(), Error> {
        if self.closed {
            return Ok(());
        }
        if self.head.len() < 256 {
            let take = bytes.len().min(256 - self.head.len());
            self.head.extend_from_slice(&bytes[..take]);
        }
        self.sse.feed(bytes);
        self.drain(out)?;
        if self.sse.pending() > MAX_EVENT {
            self.closed = true;
            return Err(Error::decode(
                format!("an event larger than {MAX_EVENT} bytes"),
                &self.head,
            ));
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut Vec<Event>) -> Result<(), Error> {
        if !self.closed {
            self.sse.end();
            self.drain(out)?;
        }
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let seen = self.sse.seen();
        if seen.cut {
            return Err(Error::transport(
                TransportErrorKind::ConnectionClosed,
                "the stream ended in the middle of an event",
            ));
        }
        if seen.frames + self.earlier > 0 {
            return self.frames.eof(out);
        }
        if seen.fields > 0 || self.head.is_empty() {
            return Err(Error::transport(
                TransportErrorKind::ConnectionClosed,
                "the stream ended before its first event was complete",
            ));
        }
        if seen.comments > 0 && seen.comments == seen.lines {
            return Err(Error::transport(
                TransportErrorKind::ConnectionClosed,
                "the server sent only keep-alive comments, and no answer",
            ));
        }
        Err(Error::decode(
            "the response body is not a server-sent event stream",
            &self.head,
        ))
    }

    fn resume_point(&self) -> Option<crate::ResumePoint> {
        self.frames.resume_point()
    }

    fn resumed(&mut self) {
        self.earlier += self.sse.seen().frames;
        self.sse = SseDecoder::new();
        self.head.clear();
        self.closed = false;
    }
}
