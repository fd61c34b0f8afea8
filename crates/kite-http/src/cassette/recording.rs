//! What a cassette folder holds, read and written: `cassette.json` (the index) and the bodies
//! beside it.

use super::error::{CassetteErrorKind, cassette_error};
use kite_core::Error;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The index file of a cassette folder.
pub const INDEX: &str = "cassette.json";

/// The format version this kite reads and writes.
pub(super) const FORMAT: u32 = 1;

/// The largest file a cassette reads (index, body or timing): far above any recorded
/// answer, and a bound on what a hostile one can make kite hold.
pub const MAX_FILE: u64 = 256 * 1024 * 1024;

/// The recorded exchanges of one cassette, in the order they happened.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Recording {
    /// The format's version (1).
    pub kite_cassette: u32,
    /// The exchanges, in the order they happened.
    pub exchanges: Vec<Exchange>,
}

/// One request and the response it got.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Exchange {
    /// What was sent.
    pub request: StoredRequest,
    /// What came back.
    pub response: StoredResponse,
}

/// A request as recorded: never with credentials.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StoredRequest {
    /// The HTTP method (`POST`, `GET`, ...).
    pub method: String,
    /// The URL it went to; replay matches its path and query.
    pub url: String,
    /// Allow-listed headers only (`content-type`, `accept`, API versions and betas).
    pub headers: BTreeMap<String, String>,
    /// The file holding the normalized body, beside `cassette.json`.
    pub body: String,
}

/// A response as recorded.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StoredResponse {
    /// The HTTP status.
    pub status: u16,
    /// Allow-listed headers only (`content-type`, `retry-after`, `x-should-retry`).
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
    /// The byte offset in the body where the chunk ends.
    pub end: usize,
    /// Milliseconds after the request was sent that the chunk arrived.
    pub at_ms: u64,
}

pub(crate) fn io_error(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    cassette_error(
        CassetteErrorKind::Io,
        format!("cannot {what} {}: {e}", path.display()),
    )
}

fn invalid(dir: &Path, why: impl std::fmt::Display) -> Error {
    cassette_error(
        CassetteErrorKind::Invalid,
        format!("cassette {}: {why}", dir.display()),
    )
}

/// Checks that `name` is a plain file name: no separators, no `..`, nothing absolute. A
/// cassette comes from a repository, and its index must not name files elsewhere.
fn check_name(dir: &Path, name: &str) -> Result<(), Error> {
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains(['/', '\\', '\0'])
        && name.len() <= 255;
    if plain {
        Ok(())
    } else {
        Err(invalid(
            dir,
            format!("{name:?} is not a plain file name inside the cassette folder"),
        ))
    }
}

impl Recording {
    /// The cassette in `dir`; `None` when the folder holds none. An index of another
    /// format version, or one that names a body outside the folder, is refused.
    pub fn read(dir: &Path) -> Result<Option<Self>, Error> {
        match std::fs::symlink_metadata(dir.join(INDEX)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            _ => {}
        }
        let bytes = read_body(dir, INDEX)?;
        Self::from_json(dir, &bytes).map(Some)
    }

    /// The index `bytes` of the cassette in `dir`, checked: its format version, and that
    /// every body it names is a plain file name.
    pub fn from_json(dir: &Path, bytes: &[u8]) -> Result<Self, Error> {
        let recording: Self = serde_json::from_slice(bytes)
            .map_err(|e| invalid(dir, format!("{INDEX} is not a cassette index: {e}")))?;
        if recording.kite_cassette != FORMAT {
            return Err(invalid(
                dir,
                format!(
                    "format version {} (this kite reads version {FORMAT}); record it again",
                    recording.kite_cassette
                ),
            ));
        }
        for ex in &recording.exchanges {
            check_name(dir, &ex.request.body)?;
            check_name(dir, &ex.response.body)?;
            if let Some(t) = &ex.response.timing {
                check_name(dir, t)?;
            }
        }
        Ok(recording)
    }

    /// Writes the index into `dir`, whole or not at all.
    pub(crate) fn write(&self, dir: &Path) -> Result<(), Error> {
        let json = serde_json::to_string_pretty(self)
            .map_err(|e| io_error("write", &dir.join(INDEX), e))?;
        write_file(dir, INDEX, format!("{json}\n").as_bytes())
    }
}

/// The bytes of `file` in cassette folder `dir`. `file` must be a plain name; a link must
/// not lead out of the folder; and what it names must be a regular file of at most
/// [`MAX_FILE`] bytes (a pipe would hang the reader, a device fill its memory).
pub fn read_body(dir: &Path, file: &str) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    check_name(dir, file)?;
    let path = dir.join(file);
    let real = match (std::fs::canonicalize(dir), std::fs::canonicalize(&path)) {
        (Ok(d), Ok(p)) if p.parent() == Some(d.as_path()) => p,
        (Ok(_), Ok(_)) => {
            return Err(invalid(
                dir,
                format!("{file:?} is a link that leads out of the cassette folder"),
            ));
        }
        (_, Err(e)) => return Err(io_error("read", &path, e)),
        (Err(e), _) => return Err(io_error("read", dir, e)),
    };
    let meta = std::fs::metadata(&real).map_err(|e| io_error("read", &path, e))?;
    if !meta.is_file() {
        return Err(invalid(dir, format!("{file:?} is not a regular file")));
    }
    if meta.len() > MAX_FILE {
        return Err(invalid(
            dir,
            format!(
                "{file:?} has {} bytes; a cassette file may have {MAX_FILE}",
                meta.len()
            ),
        ));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    std::fs::File::open(&real)
        .and_then(|f| f.take(MAX_FILE + 1).read_to_end(&mut out))
        .map_err(|e| io_error("read", &path, e))?;
    if out.len() as u64 > MAX_FILE {
        return Err(invalid(dir, format!("{file:?} grew past {MAX_FILE} bytes")));
    }
    Ok(out)
}

/// Writes `bytes` as `file` in `dir` without following links: into a new file of its own
/// (that cannot already exist), then renamed over `file`, which replaces a link rather
/// than writing where it points. A reader never sees a half-written file.
pub(crate) fn write_file(dir: &Path, file: &str, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    check_name(dir, file)?;
    let target = dir.join(file);
    let tmp = fresh(dir, file, |f| f.write_all(bytes))?;
    std::fs::rename(&tmp, &target).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_error("write", &target, e)
    })
}

/// A new file in `dir`, created exclusively (never an existing file or link) and filled by
/// `fill`; its path.
pub(crate) fn fresh(
    dir: &Path,
    file: &str,
    fill: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<PathBuf, Error> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = dir.join(format!(".{file}.{}.{n}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| io_error("write into", dir, e))?;
    fill(&mut f).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io_error("write", &dir.join(file), e)
    })?;
    Ok(tmp)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(name: &str, index: &serde_json::Value) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("kite-rec-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(INDEX), index.to_string()).unwrap();
        dir
    }

    fn index(version: u32, request_body: &str) -> serde_json::Value {
        serde_json::json!({"kite_cassette": version, "exchanges": [{
            "request": {"method": "POST", "url": "http://h/v1", "headers": {}, "body": request_body},
            "response": {"status": 200, "headers": {}, "body": "001-response.json"}
        }]})
    }

    fn invalid_message(e: Error) -> String {
        match super::super::CassetteError::of(&e) {
            Some(c) if c.kind == CassetteErrorKind::Invalid => c.message.clone(),
            _ => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_body_named_outside_the_folder_is_refused_and_nothing_of_it_is_read() {
        for name in [
            "/proc/self/environ",
            "../../etc/passwd",
            "a/b.json",
            "..",
            "",
            "x\\y",
        ] {
            let dir = folder("outside", &index(1, name));
            let e = invalid_message(Recording::read(&dir).unwrap_err());
            assert!(e.contains("not a plain file name"), "{name}: {e}");
            let e = invalid_message(read_body(&dir, name).unwrap_err());
            assert!(!e.contains("PATH="), "{e}");
            let _ = std::fs::remove_dir_all(&dir);
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_folder_is_refused_and_one_inside_is_read() {
        let dir = folder("link", &index(1, "001-request.json"));
        std::os::unix::fs::symlink("/proc/self/environ", dir.join("001-request.json")).unwrap();
        assert!(
            Recording::read(&dir).unwrap().is_some(),
            "the index itself is fine"
        );
        let e = invalid_message(read_body(&dir, "001-request.json").unwrap_err());
        assert!(e.contains("leads out of the cassette folder"), "{e}");
        std::fs::write(dir.join("real.json"), "{}").unwrap();
        std::os::unix::fs::symlink("real.json", dir.join("001-response.json")).unwrap();
        assert_eq!(read_body(&dir, "001-response.json").unwrap(), b"{}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[cfg(unix)]
    #[test]
    fn writing_replaces_a_planted_link_instead_of_writing_through_it() {
        let dir = folder("planted", &index(1, "001-request.json"));
        let victim = dir.with_extension("victim");
        std::fs::write(&victim, "precious").unwrap();
        for name in ["001-request.json", INDEX] {
            let _ = std::fs::remove_file(dir.join(name));
            std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
            write_file(&dir, name, b"new").unwrap();
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
            let meta = std::fs::symlink_metadata(dir.join(name)).unwrap();
            assert!(meta.is_file(), "{name} is a file of its own now");
        }
        let _ = std::fs::remove_dir_all(&dir);
        let _ = std::fs::remove_file(&victim);
    }

    #[cfg(unix)]
    #[test]
    fn a_device_or_a_pipe_is_refused_without_reading_it() {
        let dir = folder("devices", &index(1, "001-request.json"));
        std::os::unix::fs::symlink("/dev/zero", dir.join("001-request.json")).unwrap();
        let e = invalid_message(read_body(&dir, "001-request.json").unwrap_err());
        assert!(
            e.contains("leads out") || e.contains("not a regular file"),
            "{e}"
        );
        let fifo = dir.join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = invalid_message(read_body(&dir, "pipe").unwrap_err());
            assert!(e.contains("not a regular file"), "{e}");
            std::fs::remove_file(dir.join(INDEX)).unwrap();
            std::os::unix::fs::symlink("pipe", dir.join(INDEX)).unwrap();
            let e = invalid_message(Recording::read(&dir).unwrap_err());
            assert!(e.contains("not a regular file"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_unknown_format_version_is_refused() {
        let dir = folder("version", &index(2, "001-request.json"));
        let e = invalid_message(Recording::read(&dir).unwrap_err());
        assert!(
            e.contains("format version 2 (this kite reads version 1)"),
            "{e}"
        );
        std::fs::write(dir.join(INDEX), "{not json").unwrap();
        let e = invalid_message(Recording::read(&dir).unwrap_err());
        assert!(e.contains("is not a cassette index"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
