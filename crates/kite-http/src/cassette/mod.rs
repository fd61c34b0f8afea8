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

mod error;
mod key_scan;
mod mode;
mod normalize;
mod record;
mod recording;
mod replay;
mod tree;

pub use error::{CassetteError, CassetteErrorKind};
pub use key_scan::{Finding, scan, scan_body};
pub use mode::Mode;
pub use normalize::{Normalized, Rules};
pub use recording::{
    Chunk, Exchange, INDEX, MAX_FILE, Recording, StoredRequest, StoredResponse, read_body,
};
pub use tree::{Scanned, find, scan_path};

use crate::{HttpRequest, HttpResponse, Transport, TransportFuture};
use error::cassette_error;
use kite_core::Error;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

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
            (None, Mode::Replay) => Err(cassette_error(
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
}
