//! Cassettes: a [`Transport`] that records real traffic once and replays it offline, failing
//! with a diff when a request drifts from what was recorded.
//!
//! A cassette is a folder a person can review: `cassette.json` lists the exchanges in order
//! (method, URL, selected headers, status), and each exchange's bodies sit beside it, the
//! request as normalized JSON and the response as the bytes received (`.sse` streams keep
//! their text). A multipart upload is stored as its fields and a SHA-256 of each file, never
//! the file. Keys and authorization headers are never written, and a scanner refuses to
//! write anything that looks like a key.
//!
//! Replay hands a stream out one event at a time, or, for a cassette recorded with
//! [`Cassette::timing`], in the chunks it arrived in and (when asked) at the recorded pace.

mod normalize;
mod recording;
mod secrets;
mod tree;

pub use normalize::{Normalized, Rules};
pub use recording::{
    Chunk, Exchange, INDEX, MAX_FILE, Recording, StoredRequest, StoredResponse, read_body,
};
pub use secrets::{Finding, scan, scan_body};
pub use tree::{Scanned, find, scan_path};

use crate::{ByteStream, HttpRequest, HttpResponse, Transport, TransportFuture};
use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue};
use kite_core::{CassetteErrorKind, Error};
use recording::{io_error, read_timing, timing_text};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// What a cassette does with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Only replay; a request with no recording is an error naming the file to record.
    Replay,
    /// Replay what is recorded, record what is missing.
    Auto,
    /// Record everything again, replacing the cassette.
    Record,
}

impl Mode {
    /// `replay`, `auto` or `record`.
    pub fn parse(s: &str) -> Result<Self, Error> {
        match s {
            "replay" => Ok(Self::Replay),
            "auto" => Ok(Self::Auto),
            "record" => Ok(Self::Record),
            other => Err(Error::Config(format!(
                "KITE_CASSETTE={other:?}; expected replay, auto or record"
            ))),
        }
    }

    /// The mode `KITE_CASSETTE` names; without it, `Replay` when `CI` is set, else `Auto`.
    pub fn from_env() -> Result<Self, Error> {
        let ci = std::env::var_os("CI").is_some();
        Self::from_env_or(if ci { Self::Replay } else { Self::Auto })
    }

    /// The mode `KITE_CASSETTE` names, or `default`.
    pub fn from_env_or(default: Self) -> Result<Self, Error> {
        match std::env::var("KITE_CASSETTE") {
            Ok(v) if !v.is_empty() => Self::parse(&v),
            _ => Ok(default),
        }
    }
}

/// Request headers worth keeping (never credentials).
const REQUEST_HEADERS: &[&str] = &[
    "content-type",
    "accept",
    "anthropic-version",
    "anthropic-beta",
    "openai-beta",
];
/// Response headers worth keeping.
const RESPONSE_HEADERS: &[&str] = &["content-type", "retry-after", "x-should-retry"];

/// A record/replay transport around a real one.
///
/// ```no_run
/// # async fn demo() -> Result<(), kite_core::Error> {
/// use kite_http::{ReqwestTransport, cassette::Cassette};
/// let cassette = Cassette::open("tests/cassettes/weather", ReqwestTransport::shared()?)?;
/// // Give `cassette` to a model with `.transport(cassette)`.
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Cassette {
    inner: Arc<Shared>,
}

struct Shared {
    dir: PathBuf,
    mode: Mode,
    rules: Rules,
    transport: Arc<dyn Transport>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    recording: Recording,
    /// Requests seen so far: the next one matches this exchange.
    next: usize,
    /// Record chunk timing, and replay at the recorded pace.
    timing: bool,
    /// The folder was found writable (checked before the first request is paid for).
    writable: bool,
}

impl std::fmt::Debug for Cassette {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cassette")
            .field("dir", &self.inner.dir)
            .field("mode", &self.inner.mode)
            .finish_non_exhaustive()
    }
}

impl Cassette {
    /// The cassette in folder `dir`, in the mode `KITE_CASSETTE` names, around `transport`.
    pub fn open(dir: impl AsRef<Path>, transport: impl Transport + 'static) -> Result<Self, Error> {
        Self::with_mode(dir, Mode::from_env()?, Rules::default(), transport)
    }

    /// The cassette in folder `dir`, in `mode`, normalizing requests by `rules`.
    pub fn with_mode(
        dir: impl AsRef<Path>,
        mode: Mode,
        rules: Rules,
        transport: impl Transport + 'static,
    ) -> Result<Self, Error> {
        let dir = dir.as_ref().to_path_buf();
        let recording = match mode {
            Mode::Record => Recording::default(),
            Mode::Replay | Mode::Auto => Recording::read(&dir)?.unwrap_or_default(),
        };
        Ok(Self {
            inner: Arc::new(Shared {
                dir,
                mode,
                rules,
                transport: Arc::new(transport),
                state: Mutex::new(State {
                    recording,
                    ..State::default()
                }),
            }),
        })
    }

    /// The cassette `tests/cassettes/NAME` of the crate under test (the folder of
    /// `CARGO_MANIFEST_DIR`), around the real transport, in the mode `KITE_CASSETTE` names:
    /// the one line a test needs.
    ///
    /// ```no_run
    /// # fn demo() -> Result<(), kite_core::Error> {
    /// let cassette = kite_http::cassette::Cassette::named("weather_in_paris")?;
    /// # Ok(()) }
    /// ```
    pub fn named(name: &str) -> Result<Self, Error> {
        let root = std::env::var_os("CARGO_MANIFEST_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        Self::open(
            root.join("tests/cassettes").join(name),
            crate::ReqwestTransport::shared()?,
        )
    }

    /// With `on`, recording also writes when each chunk of a response arrived, and replay
    /// hands out the recorded chunks at the recorded pace (for interfaces that render a
    /// stream as it comes). Off by default: timing differs on every run, so cassettes
    /// recorded without it are byte-identical when recorded again, and replay is instant.
    /// A cassette with timing replays its original chunks either way.
    pub fn timing(self, on: bool) -> Self {
        self.inner.lock().timing = on;
        self
    }

    /// The folder this cassette lives in.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }
}

impl Transport for Cassette {
    fn send(&self, request: HttpRequest) -> TransportFuture<'_> {
        Box::pin(self.inner.clone().send(request))
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn send(self: Arc<Self>, request: HttpRequest) -> Result<HttpResponse, Error> {
        let (n, recorded, timing) = {
            let mut st = self.lock();
            st.next += 1;
            let recorded = st.recording.exchanges.get(st.next - 1).cloned();
            (st.next, recorded, st.timing)
        };
        match (recorded, self.mode) {
            (Some(ex), Mode::Replay | Mode::Auto) => self.replay(n, &ex, &request, timing),
            (None, Mode::Replay) => Err(Error::cassette(
                CassetteErrorKind::Missing,
                format!(
                    "cassette {}: no recording of request {n} ({} {}); record {} with \
                     KITE_CASSETTE=auto (or record) against the real service",
                    self.dir.display(),
                    request.method,
                    request.url,
                    self.dir.join(format!("{n:03}-request.json")).display()
                ),
            )),
            (_, _) => self.record(n, request, timing).await,
        }
    }

    fn normalize(&self, request: &HttpRequest) -> Normalized {
        let content_type = request
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        self.rules.normalize(content_type, &request.body)
    }

    fn replay(
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
            return Err(Error::cassette(
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

    async fn record(
        self: Arc<Self>,
        n: usize,
        request: HttpRequest,
        timing: bool,
    ) -> Result<HttpResponse, Error> {
        let normalized = self.normalize(&request);
        let ext = match normalized {
            Normalized::Json(_) => "json",
            Normalized::Text(_) => "txt",
        };
        let stored_request = StoredRequest {
            method: request.method.to_string(),
            url: request.url.clone(),
            headers: keep(&request.headers, REQUEST_HEADERS),
            body: format!("{n:03}-request.{ext}"),
        };
        let request_text = normalized.pretty();
        self.check_writable()?;
        let sent = Instant::now();
        let resp = self.transport.send(request).await?;
        let headers = keep(&resp.headers, RESPONSE_HEADERS);
        let ext = match headers.get("content-type").map(String::as_str) {
            Some(ct) if ct.starts_with("text/event-stream") => "sse",
            Some(ct) if ct.contains("json") => "json",
            _ => "txt",
        };
        let stored = Exchange {
            request: stored_request,
            response: StoredResponse {
                status: resp.status,
                headers,
                body: format!("{n:03}-response.{ext}"),
                timing: None,
            },
        };
        // The body is passed on as it arrives and written once it is complete.
        let mut upstream = resp.body;
        let this = self.clone();
        let body: ByteStream = Box::pin(async_stream(move |tx| async move {
            let mut all = Vec::new();
            let mut chunks = Vec::new();
            while let Some(chunk) = upstream.next().await {
                match chunk {
                    Ok(b) => {
                        all.extend_from_slice(&b);
                        if timing && !b.is_empty() {
                            chunks.push(Chunk {
                                end: all.len(),
                                at_ms: sent.elapsed().as_millis() as u64,
                            });
                        }
                        if tx.send(Ok(b)).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
            }
            let chunks = timing.then_some(chunks);
            if let Err(e) = this.write(n, stored, &request_text, &all, chunks) {
                let _ = tx.send(Err(e)).await;
            }
        }));
        Ok(HttpResponse {
            status: resp.status,
            headers: resp.headers,
            body,
        })
    }

    /// Fails before a request is paid for when its recording could not be written.
    fn check_writable(&self) -> Result<(), Error> {
        if self.lock().writable {
            return Ok(());
        }
        let dir = &self.dir;
        // A folder that is a link would have recording write (and clear old exchanges)
        // wherever it points.
        if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(Error::cassette(
                CassetteErrorKind::Invalid,
                format!(
                    "cassette {}: the folder is a link; record into a real folder",
                    dir.display()
                ),
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, e))?;
        let probe = recording::fresh(dir, INDEX, |_| Ok(()))?;
        let _ = std::fs::remove_file(&probe);
        self.lock().writable = true;
        Ok(())
    }

    /// Writes exchange `n` and the index, after checking that nothing looks like a key.
    fn write(
        &self,
        n: usize,
        mut ex: Exchange,
        request: &str,
        response: &[u8],
        chunks: Option<Vec<Chunk>>,
    ) -> Result<(), Error> {
        let headers = format!(
            "{:?}{:?}{}",
            ex.request.headers, ex.response.headers, ex.request.url
        );
        for (what, text) in [
            ("request body", request.as_bytes()),
            ("response body", response),
            ("headers or URL", headers.as_bytes()),
        ] {
            if let Some(f) = scan_body(text).first() {
                return Err(Error::cassette(
                    CassetteErrorKind::Secret,
                    format!(
                        "cassette {}: refusing to write exchange {n}: its {what} holds what \
                         looks like a key ({}…, {} characters, at byte {}); mask it with a rule",
                        self.dir.display(),
                        f.kind,
                        f.len,
                        f.offset
                    ),
                ));
            }
        }
        let dir = &self.dir;
        let put = |file: &str, bytes: &[u8]| recording::write_file(dir, file, bytes);
        std::fs::create_dir_all(dir).map_err(|e| io_error("create", dir, e))?;
        if n == 1 {
            remove_exchange_files(dir)?;
        }
        put(
            &ex.request.body,
            format!("{}\n", request.trim_end()).as_bytes(),
        )?;
        put(&ex.response.body, response)?;
        if let Some(chunks) = chunks {
            let file = format!("{n:03}-response.timing.json");
            put(&file, timing_text(&chunks).as_bytes())?;
            ex.response.timing = Some(file);
        }
        let recording = {
            let mut st = self.lock();
            st.recording.kite_cassette = recording::FORMAT;
            st.recording.exchanges.truncate(n - 1);
            st.recording.exchanges.push(ex);
            st.recording.clone()
        };
        recording.write(dir)
    }
}

/// Removes the exchange files (`001-…`) of an earlier recording, which a new one replaces.
fn remove_exchange_files(dir: &Path) -> Result<(), Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| io_error("read", dir, e))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.as_encoded_bytes();
        let ours = name.len() > 4 && name[..3].iter().all(u8::is_ascii_digit) && name[3] == b'-';
        if ours {
            std::fs::remove_file(entry.path()).map_err(|e| io_error("remove", &entry.path(), e))?;
        }
    }
    Ok(())
}

/// A stream fed by a task through a channel (the body is copied and written as it passes).
fn async_stream<F, Fut>(f: F) -> impl futures_core::Stream<Item = Result<Bytes, Error>> + Send
where
    F: FnOnce(tokio::sync::mpsc::Sender<Result<Bytes, Error>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(f(tx));
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) })
}

fn keep(headers: &HeaderMap, names: &[&str]) -> BTreeMap<String, String> {
    names
        .iter()
        .filter_map(|n| Some((n.to_string(), headers.get(*n)?.to_str().ok()?.to_owned())))
        .collect()
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
