//! What a cassette folder holds, read and written: `cassette.json` (the index) and the bodies
//! beside it.

use super::Finding;
use kite_core::{CassetteErrorKind, Error};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The index file of a cassette folder.
pub const INDEX: &str = "cassette.json";

/// The recorded exchanges of one cassette, in the order they happened.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Recording {
    /// The format's version (1).
    pub kite_cassette: u32,
    pub exchanges: Vec<Exchange>,
}

/// One request and the response it got.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Exchange {
    pub request: StoredRequest,
    pub response: StoredResponse,
}

/// A request as recorded: never with credentials.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StoredRequest {
    pub method: String,
    pub url: String,
    /// Allow-listed headers only (`content-type`, `accept`, API versions and betas).
    pub headers: BTreeMap<String, String>,
    /// The file holding the normalized body, beside `cassette.json`.
    pub body: String,
}

/// A response as recorded.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StoredResponse {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    /// The file holding the body as received.
    pub body: String,
    /// The file holding when each chunk of the body arrived, when timing was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timing: Option<String>,
}

/// When one chunk of a response body arrived: it ends at byte `end`, `at_ms` milliseconds
/// after the request was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    pub end: usize,
    pub at_ms: u64,
}

pub(crate) fn io_error(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::cassette(
        CassetteErrorKind::Io,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

impl Recording {
    /// The cassette in `dir`; `None` when the folder holds none.
    pub fn read(dir: &Path) -> Result<Option<Self>, Error> {
        let path = dir.join(INDEX);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| io_error("read the cassette", &path, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_error("read", &path, e)),
        }
    }

    /// Writes the index into `dir`, whole or not at all.
    pub(crate) fn write(&self, dir: &Path) -> Result<(), Error> {
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| io_error("write", &dir.join(INDEX), e))?;
        let tmp = dir.join(format!("{INDEX}.tmp"));
        std::fs::write(&tmp, format!("{json}\n")).map_err(|e| io_error("write", &tmp, e))?;
        std::fs::rename(&tmp, dir.join(INDEX)).map_err(|e| io_error("write", &tmp, e))
    }
}

/// The bytes of `file` in cassette folder `dir`.
pub fn read_body(dir: &Path, file: &str) -> Result<Vec<u8>, Error> {
    let path = dir.join(file);
    std::fs::read(&path).map_err(|e| io_error("read", &path, e))
}

/// The chunk timing file written for a response: one `[end, at_ms]` pair per line, so a
/// person can read it.
pub(crate) fn timing_text(chunks: &[Chunk]) -> String {
    let lines: Vec<String> = chunks
        .iter()
        .map(|c| format!("  [{}, {}]", c.end, c.at_ms))
        .collect();
    format!("[\n{}\n]\n", lines.join(",\n"))
}

/// The chunks in a timing file, checked against the body's length.
pub(crate) fn read_timing(dir: &Path, file: &str, len: usize) -> Result<Vec<Chunk>, Error> {
    let path = dir.join(file);
    let pairs: Vec<(usize, u64)> = serde_json::from_slice(&read_body(dir, file)?)
        .map_err(|e| io_error("read the timing", &path, e))?;
    let chunks: Vec<Chunk> = pairs
        .into_iter()
        .map(|(end, at_ms)| Chunk { end, at_ms })
        .collect();
    let ordered = chunks.windows(2).all(|w| w[0].end < w[1].end);
    if !ordered || chunks.last().is_some_and(|c| c.end != len) {
        return Err(io_error(
            "use the timing",
            &path,
            format!("its chunks do not cover the {len}-byte body in order"),
        ));
    }
    Ok(chunks)
}

/// Every cassette folder under `root` (itself included), sorted by path.
pub fn find(root: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut found = Vec::new();
    walk(root, &mut |path| {
        if path.file_name().is_some_and(|n| n == INDEX)
            && let Some(dir) = path.parent()
        {
            found.push(dir.to_path_buf());
        }
    })?;
    found.sort();
    Ok(found)
}

/// Everything that looks like a key in the files under `path` (a file or a folder): each
/// file with its findings, sorted by path.
pub fn scan_path(path: &Path) -> Result<Vec<(PathBuf, Vec<Finding>)>, Error> {
    let mut out = Vec::new();
    let mut failed = None;
    walk(path, &mut |file| match std::fs::read(file) {
        Ok(bytes) => {
            let found = super::scan(&String::from_utf8_lossy(&bytes));
            if !found.is_empty() {
                out.push((file.to_path_buf(), found));
            }
        }
        Err(e) => failed = Some(io_error("read", file, e)),
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Calls `f` with every file under `path`.
fn walk(path: &Path, f: &mut dyn FnMut(&Path)) -> Result<(), Error> {
    let meta = std::fs::metadata(path).map_err(|e| io_error("read", path, e))?;
    if !meta.is_dir() {
        f(path);
        return Ok(());
    }
    let entries = std::fs::read_dir(path).map_err(|e| io_error("read", path, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_error("read", path, e))?;
        let p = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            walk(&p, f)?;
        } else {
            f(&p);
        }
    }
    Ok(())
}
