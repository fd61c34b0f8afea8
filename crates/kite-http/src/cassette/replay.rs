//! Replaying a recorded exchange: the request must match the recording, and the response
//! comes back in its recorded chunks (or one SSE event at a time).

use super::Shared;
use super::error::{CassetteErrorKind, cassette_error};
use super::recording::{Chunk, Exchange, read_body, read_timing};
use crate::{ByteStream, HttpRequest, HttpResponse};
use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue};
use kite_core::Error;
use std::time::Duration;
use tokio::time::Instant;

impl Shared {
    pub(super) fn replay(
        &self,
        n: usize,
        ex: &Exchange,
        request: &HttpRequest,
        simulate: bool,
    ) -> Result<HttpResponse, Error> {
        let now = self.normalize(request).pretty();
        let then = String::from_utf8_lossy(&read_body(&self.dir, &ex.request.body)?).into_owned();
        let same_target = ex.request.method == request.method.as_str()
            && path_of(&ex.request.url) == path_of(&request.url);
        if !same_target || then.trim_end() != now.trim_end() {
            let show = |method: &str, url: &str, body: &str| {
                format!("{method} {}\n{}\n", path_of(url), body.trim_end())
            };
            let diff = similar::TextDiff::from_lines(
                &show(&ex.request.method, &ex.request.url, &then),
                &show(request.method.as_str(), &request.url, &now),
            )
            .unified_diff()
            .context_radius(3)
            .header("recorded", "now")
            .to_string();
            return Err(cassette_error(
                CassetteErrorKind::Drift,
                format!(
                    "cassette {}: request {n} differs from the recording ({}):\n{diff}\nTo \
                     record it again, delete {} (or run with KITE_CASSETTE=record).",
                    self.dir.display(),
                    ex.request.body,
                    self.dir.display()
                ),
            ));
        }
        let body = Bytes::from(read_body(&self.dir, &ex.response.body)?);
        let chunks = match &ex.response.timing {
            Some(file) => read_timing(&self.dir, file, body.len())?,
            None => split_events(&body),
        };
        let mut headers = HeaderMap::new();
        for (k, v) in &ex.response.headers {
            if let (Ok(k), Ok(v)) = (
                HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_str(v),
            ) {
                headers.insert(k, v);
            }
        }
        let start = Instant::now();
        let mut from = 0;
        let pieces: Vec<(Bytes, u64)> = chunks
            .into_iter()
            .map(|c| {
                let piece = body.slice(from..c.end);
                from = c.end;
                (piece, c.at_ms)
            })
            .collect();
        let stream: ByteStream = Box::pin(futures_util::stream::iter(pieces).then(
            move |(piece, at_ms)| async move {
                if simulate {
                    tokio::time::sleep_until(start + Duration::from_millis(at_ms)).await;
                }
                Ok(piece)
            },
        ));
        Ok(HttpResponse {
            status: ex.response.status,
            headers,
            body: stream,
        })
    }
}

/// The path and query of a URL: what matches between a recording and a replay whose
/// server moved (loopback ports change).
fn path_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("/", |i| &rest[i..])
}

/// A body replayed one SSE event at a time (or whole when it is not a stream), at once.
fn split_events(body: &[u8]) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + 1 < body.len() {
        let end = if body[i] == b'\n' && body[i + 1] == b'\n' {
            Some(i + 2)
        } else if body[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else {
            None
        };
        match end {
            Some(e) => {
                out.push(Chunk { end: e, at_ms: 0 });
                i = e;
            }
            None => i += 1,
        }
    }
    if out.last().map_or(0, |c| c.end) < body.len() {
        out.push(Chunk {
            end: body.len(),
            at_ms: 0,
        });
    }
    out
}
