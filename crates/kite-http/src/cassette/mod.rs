//! Cassettes: a [`Transport`] that records real traffic once and replays it offline, failing
//! with a diff when a request drifts from what was recorded.
//!
//! A cassette is a folder a person can review: `cassette.json` lists the exchanges in order
//! (method, URL, selected headers, status), and each exchange's bodies sit beside it, the
//! request as normalized JSON and the response as the bytes received (`.sse` streams keep
//! their text). Keys and authorization headers are never written, and a scanner refuses to
//! write anything that looks like a key.

mod normalize;
mod secrets;

pub use normalize::{Normalized, Rules};
pub use secrets::{Finding, scan};

use crate::{ByteStream, HttpRequest, HttpResponse, Transport, TransportFuture};
use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderName, HeaderValue};
use kite_core::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
        match std::env::var("KITE_CASSETTE") {
            Ok(v) if !v.is_empty() => Self::parse(&v),
            _ if std::env::var_os("CI").is_some() => Ok(Self::Replay),
            _ => Ok(Self::Auto),
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

/// The index of a cassette.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Index {
    kite_cassette: u32,
    exchanges: Vec<Exchange>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Exchange {
    request: StoredRequest,
    response: StoredResponse,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct StoredRequest {
    method: String,
    url: String,
    headers: BTreeMap<String, String>,
    body: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct StoredResponse {
    status: u16,
    headers: BTreeMap<String, String>,
    body: String,
}

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
    index: Index,
    /// Requests seen so far: the next one matches this exchange.
    next: usize,
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
        let index = match mode {
            Mode::Record => Index::default(),
            Mode::Replay | Mode::Auto => read_index(&dir)?,
        };
        Ok(Self {
            inner: Arc::new(Shared {
                dir,
                mode,
                rules,
                transport: Arc::new(transport),
                state: Mutex::new(State { index, next: 0 }),
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

    /// The folder this cassette lives in.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }
}

fn read_index(dir: &Path) -> Result<Index, Error> {
    match std::fs::read(dir.join("cassette.json")) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            Error::Config(format!(
                "{} is not a cassette: {e}",
                dir.join("cassette.json").display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Index::default()),
        Err(e) => Err(Error::Config(format!("cannot read {}: {e}", dir.display()))),
    }
}

impl Transport for Cassette {
    fn send(&self, request: HttpRequest) -> TransportFuture<'_> {
        Box::pin(self.inner.clone().send(request))
    }
}

impl Shared {
    async fn send(self: Arc<Self>, request: HttpRequest) -> Result<HttpResponse, Error> {
        let n = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            st.next += 1;
            st.next
        };
        let recorded = {
            let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            st.index.exchanges.get(n - 1).cloned()
        };
        match (recorded, self.mode) {
            (Some(ex), Mode::Replay | Mode::Auto) => self.replay(n, &ex, &request),
            (None, Mode::Replay) => Err(Error::Config(format!(
                "cassette {}: no recording of request {n} ({} {}); record it with \
                 KITE_CASSETTE=auto (or record) against the real service",
                self.dir.display(),
                request.method,
                request.url
            ))),
            (_, _) => self.record(n, request).await,
        }
    }

    fn replay(
        &self,
        n: usize,
        ex: &Exchange,
        request: &HttpRequest,
    ) -> Result<HttpResponse, Error> {
        let now = self.rules.normalize(&request.body).pretty();
        let body_path = self.dir.join(&ex.request.body);
        let then = std::fs::read_to_string(&body_path)
            .map_err(|e| Error::Config(format!("cannot read {}: {e}", body_path.display())))?;
        let same_target = ex.request.method == request.method.as_str()
            && path_of(&ex.request.url) == path_of(&request.url);
        if !same_target || then.trim_end() != now.trim_end() {
            let diff = similar::TextDiff::from_lines(
                &format!(
                    "{} {}\n{}\n",
                    ex.request.method,
                    path_of(&ex.request.url),
                    then.trim_end()
                ),
                &format!(
                    "{} {}\n{}\n",
                    request.method,
                    path_of(&request.url),
                    now.trim_end()
                ),
            )
            .unified_diff()
            .context_radius(3)
            .header("recorded", "now")
            .to_string();
            return Err(Error::Config(format!(
                "cassette {}: request {n} differs from the recording:\n{diff}\nTo record it \
                 again, delete {} (or run with KITE_CASSETTE=record).",
                self.dir.display(),
                self.dir.display()
            )));
        }
        let body_path = self.dir.join(&ex.response.body);
        let body = std::fs::read(&body_path)
            .map_err(|e| Error::Config(format!("cannot read {}: {e}", body_path.display())))?;
        let mut headers = HeaderMap::new();
        for (k, v) in &ex.response.headers {
            if let (Ok(k), Ok(v)) = (
                HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_str(v),
            ) {
                headers.insert(k, v);
            }
        }
        let chunks = split_events(Bytes::from(body));
        let stream: ByteStream = Box::pin(futures_util::stream::iter(chunks.into_iter().map(Ok)));
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
    ) -> Result<HttpResponse, Error> {
        let normalized = self.rules.normalize(&request.body);
        let stored_request = StoredRequest {
            method: request.method.to_string(),
            url: request.url.clone(),
            headers: keep(&request.headers, REQUEST_HEADERS),
            body: format!(
                "{n:03}-request.{}",
                if matches!(normalized, Normalized::Json(_)) {
                    "json"
                } else {
                    "txt"
                }
            ),
        };
        let request_text = normalized.pretty();
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
            },
        };
        // The body is passed on as it arrives and written once it is complete.
        let mut upstream = resp.body;
        let this = self.clone();
        let body: ByteStream = Box::pin(async_stream(move |tx| async move {
            let mut all = Vec::new();
            while let Some(chunk) = upstream.next().await {
                match chunk {
                    Ok(b) => {
                        all.extend_from_slice(&b);
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
            if let Err(e) = this.write(n, stored, &request_text, &all) {
                let _ = tx.send(Err(e)).await;
            }
        }));
        Ok(HttpResponse {
            status: resp.status,
            headers: resp.headers,
            body,
        })
    }

    /// Writes exchange `n` and the index, after checking that nothing looks like a key.
    fn write(&self, n: usize, ex: Exchange, request: &str, response: &[u8]) -> Result<(), Error> {
        let response_text = String::from_utf8_lossy(response);
        let headers = format!(
            "{:?}{:?}{}",
            ex.request.headers, ex.response.headers, ex.request.url
        );
        for (what, text) in [
            ("request body", request),
            ("response body", &response_text),
            ("headers or URL", &headers),
        ] {
            if let Some(f) = scan(text).first() {
                return Err(Error::Config(format!(
                    "cassette {}: refusing to write exchange {n}: its {what} holds what looks \
                     like a key ({}…, {} characters, at byte {}); mask it with a rule",
                    self.dir.display(),
                    f.kind,
                    f.len,
                    f.offset
                )));
            }
        }
        let io = |e: std::io::Error| {
            Error::Config(format!("cannot write cassette {}: {e}", self.dir.display()))
        };
        std::fs::create_dir_all(&self.dir).map_err(io)?;
        std::fs::write(
            self.dir.join(&ex.request.body),
            format!("{}\n", request.trim_end()),
        )
        .map_err(io)?;
        std::fs::write(self.dir.join(&ex.response.body), response).map_err(io)?;
        let index = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            st.index.kite_cassette = 1;
            let ex_list = &mut st.index.exchanges;
            if ex_list.len() >= n {
                ex_list.truncate(n - 1);
            }
            ex_list.push(ex);
            st.index.clone()
        };
        let json =
            serde_json::to_string_pretty(&index).map_err(|e| Error::Config(e.to_string()))?;
        let tmp = self.dir.join("cassette.json.tmp");
        std::fs::write(&tmp, format!("{json}\n")).map_err(io)?;
        std::fs::rename(&tmp, self.dir.join("cassette.json")).map_err(io)?;
        Ok(())
    }
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

/// A body replayed one SSE event at a time (or whole when it is not a stream).
fn split_events(body: Bytes) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut start = 0;
    let b = &body[..];
    let mut i = 0;
    while i + 1 < b.len() {
        let end = if b[i] == b'\n' && b[i + 1] == b'\n' {
            Some(i + 2)
        } else if b[i..].starts_with(b"\r\n\r\n") {
            Some(i + 4)
        } else {
            None
        };
        match end {
            Some(e) => {
                out.push(body.slice(start..e));
                start = e;
                i = e;
            }
            None => i += 1,
        }
    }
    if start < b.len() {
        out.push(body.slice(start..));
    }
    out
}
