//! The cassettes and files under a folder: finding cassettes, and scanning every file for
//! what looks like a key. Links below the folder are not followed.

use super::recording::io_error;
use super::{Finding, INDEX, MAX_FILE};
use kite_core::Error;
use std::path::{Path, PathBuf};

/// Every cassette folder under `root` (itself included), sorted by path.
pub fn find(root: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut found = Vec::new();
    walk(root, &mut |entry| {
        if let Entry::File(path) = entry
            && path.file_name().is_some_and(|n| n == INDEX)
            && let Some(dir) = path.parent()
        {
            found.push(dir.to_path_buf());
        }
    })?;
    found.sort();
    Ok(found)
}

/// What [`scan_path`] found: each file with its findings, and what it passed over.
#[derive(Debug, Default)]
pub struct Scanned {
    /// Files holding something that looks like a key, sorted by path.
    pub found: Vec<(PathBuf, Vec<Finding>)>,
    /// Files not read, and why: links, pipes, devices, unreadable or too large files.
    pub skipped: Vec<(PathBuf, String)>,
}

/// Everything that looks like a key in the files under `path` (a file or a folder). Links
/// inside a folder are not followed; what is not a regular file, cannot be read or is
/// larger than [`MAX_FILE`] is passed over and listed, and the scan goes on.
pub fn scan_path(path: &Path) -> Result<Scanned, Error> {
    use std::io::Read;
    let mut out = Scanned::default();
    walk(path, &mut |entry| {
        let file = match entry {
            Entry::File(file) => file,
            Entry::Skipped(file, why) => return out.skipped.push((file.to_path_buf(), why)),
        };
        let read = std::fs::File::open(file).and_then(|f| {
            let mut bytes = Vec::new();
            f.take(MAX_FILE + 1).read_to_end(&mut bytes)?;
            Ok(bytes)
        });
        match read {
            Ok(bytes) if bytes.len() as u64 > MAX_FILE => out
                .skipped
                .push((file.to_path_buf(), format!("larger than {MAX_FILE} bytes"))),
            Ok(bytes) => {
                let found = super::scan_body(&bytes);
                if !found.is_empty() {
                    out.found.push((file.to_path_buf(), found));
                }
            }
            Err(e) => out.skipped.push((file.to_path_buf(), e.to_string())),
        }
    })?;
    out.found.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// What [`walk`] meets.
enum Entry<'a> {
    /// A regular file.
    File(&'a Path),
    /// Something else (a link, a pipe, a device, an unreadable folder), and what it is.
    Skipped(&'a Path, String),
}

/// Calls `f` with everything under `path`, without following links below it (`path`
/// itself may be one). Only a `path` that cannot be read at all is an error.
fn walk(path: &Path, f: &mut dyn FnMut(Entry<'_>)) -> Result<(), Error> {
    let meta = std::fs::metadata(path).map_err(|e| io_error("read", path, e))?;
    walk_in(path, meta.file_type(), f);
    Ok(())
}

fn walk_in(path: &Path, kind: std::fs::FileType, f: &mut dyn FnMut(Entry<'_>)) {
    if kind.is_file() {
        return f(Entry::File(path));
    }
    if !kind.is_dir() {
        let what = if kind.is_symlink() {
            "a link"
        } else {
            "not a regular file"
        };
        return f(Entry::Skipped(path, what.to_owned()));
    }
    let entries = match std::fs::read_dir(path) {
        Ok(entries) => entries,
        Err(e) => return f(Entry::Skipped(path, e.to_string())),
    };
    let mut children: Vec<_> = entries
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.path(), e.file_type().ok()?)))
        .collect();
    children.sort_by(|a, b| a.0.cmp(&b.0));
    for (p, kind) in children {
        walk_in(&p, kind, f);
    }
}
