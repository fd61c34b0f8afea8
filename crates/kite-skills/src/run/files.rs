//! Reading and writing the files the model names, through `cap-std` handles: never waiting
//! on a FIFO or a device (they are opened without blocking and refused), never reading
//! past a limit, and never replacing a file with less than it held. What is made is the
//! workspace's owner's alone (0600 files, 0700 folders): as root, the sandbox's id.

use crate::sandbox::Id;
use cap_std::fs::{Dir, DirBuilder, DirBuilderExt as _, OpenOptions, OpenOptionsExt as _};
use std::io::{Read as _, Write as _};
use std::path::Path;

/// The most bytes of a file `view` shows.
pub(crate) const MAX_VIEW: usize = 256 * 1024;
/// The most bytes `view` reads to find a range of lines, and `create_file` and
/// `str_replace` write.
pub(crate) const MAX_WRITE: usize = 8 * 1024 * 1024;
/// The most entries a folder's listing shows.
const MAX_LISTED: usize = 300;

/// What a path holds.
pub(super) enum Got {
    Folder,
    /// A regular file's first bytes (at most the limit asked for) and its whole length.
    File {
        bytes: Vec<u8>,
        len: u64,
    },
}

/// Opens `rel` in `dir` without blocking and reads at most `limit` bytes of it.
pub(super) fn read(
    dir: &Dir,
    rel: &Path,
    shown: &str,
    within: &str,
    limit: usize,
) -> Result<Got, String> {
    let fail = |e: std::io::Error| io_message(shown, within, &e);
    let file = dir
        .open_with(
            rel,
            OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK),
        )
        .map_err(fail)?;
    let meta = file.metadata().map_err(fail)?;
    if meta.is_dir() {
        return Ok(Got::Folder);
    }
    if !meta.is_file() {
        return Err(format!("`{shown}` is not a regular file; refused"));
    }
    let mut bytes = Vec::new();
    file.take(limit as u64)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    Ok(Got::File {
        bytes,
        len: meta.len(),
    })
}

/// The text in `bytes`, a file's first bytes (`whole` when they are all of it): a
/// character cut at the end is dropped; `None` when it is not UTF-8 text.
pub(super) fn text(mut bytes: Vec<u8>, whole: bool) -> Option<String> {
    match std::str::from_utf8(&bytes) {
        Ok(_) => {}
        Err(e) if !whole && e.error_len().is_none() => bytes.truncate(e.valid_up_to()),
        Err(_) => return None,
    }
    String::from_utf8(bytes).ok()
}

/// What `view` shows of a file: lines `start..=end` (1-based, `end` -1 for the last) or
/// all, at most [`MAX_VIEW`] bytes, with a note where it stops short.
pub(super) fn shown(got: Got, shown: &str, range: Option<(i64, i64)>) -> String {
    let Got::File { bytes, len } = got else {
        return format!("`{shown}` is a folder");
    };
    let read = bytes.len() as u64;
    let Some(text) = text(bytes, read == len) else {
        return format!("`{shown}` is a binary file of {len} bytes; it is not shown");
    };
    let mut out = match range {
        None => text,
        Some((start, end)) => {
            let lines: Vec<&str> = text.lines().collect();
            let start = usize::try_from(start.max(1) - 1).unwrap_or(0);
            let end = match end {
                e if e < 0 => lines.len(),
                e => usize::try_from(e).unwrap_or(0).min(lines.len()),
            };
            lines.get(start..end).unwrap_or_default().join("\n")
        }
    };
    if out.len() > MAX_VIEW {
        let mut at = MAX_VIEW;
        while !out.is_char_boundary(at) {
            at -= 1;
        }
        out.truncate(at);
        out.push_str(&format!(
            "\n[cut: only {} KiB are shown at once; ask for fewer lines with view_range]",
            MAX_VIEW / 1024
        ));
    } else if read < len {
        out.push_str(&format!(
            "\n[the file is {len} bytes; only its first {} MiB can be viewed]",
            MAX_WRITE >> 20
        ));
    }
    out
}

/// A workspace file's whole text, to be edited.
pub(super) fn editable(dir: &Dir, rel: &Path, shown: &str) -> Result<String, String> {
    match read(dir, rel, shown, "the workspace", MAX_WRITE + 1)? {
        Got::Folder => Err(format!("`{shown}` is a folder")),
        Got::File { len, .. } if len > MAX_WRITE as u64 => Err(format!(
            "`{shown}` is larger than {} MiB; it cannot be edited here",
            MAX_WRITE >> 20
        )),
        Got::File { bytes, .. } => {
            text(bytes, true).ok_or_else(|| format!("`{shown}` is not text; it cannot be edited"))
        }
    }
}

/// Writes `text` as the whole of `rel`, a regular file (made if missing, as `owner`'s).
pub(super) fn write(
    dir: &Dir,
    rel: &Path,
    shown: &str,
    text: &str,
    owner: Option<Id>,
) -> Result<(), String> {
    let fail = |e: std::io::Error| io_message(shown, "the workspace", &e);
    let mut file = dir
        .open_with(
            rel,
            OpenOptions::new()
                .write(true)
                .create(true)
                .mode(0o600)
                .custom_flags(libc::O_NONBLOCK),
        )
        .map_err(fail)?;
    if !file.metadata().map_err(fail)?.is_file() {
        return Err(format!("`{shown}` is not a regular file; refused"));
    }
    give(&file, owner).map_err(fail)?;
    file.set_len(0).map_err(fail)?;
    file.write_all(text.as_bytes()).map_err(fail)
}

/// Makes the folders on the way to `rel` that are missing, as `owner`'s.
pub(super) fn make_dirs(dir: &Dir, rel: &Path, owner: Option<Id>) -> std::io::Result<()> {
    let mut at = std::path::PathBuf::new();
    for part in rel.components() {
        at.push(part);
        match dir.symlink_metadata(&at) {
            Ok(_) => continue,
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        dir.create_dir_with(&at, DirBuilder::new().mode(0o700))?;
        if owner.is_some() {
            // Opened for reading (a folder's handle from `open_dir` takes no fchown), within
            // the workspace and not through a link.
            let made = dir.open_with(
                &at,
                OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW),
            )?;
            give(&made, owner)?;
        }
    }
    Ok(())
}

/// Gives what kite made in the workspace to `owner` (as root: the sandbox's id, so that
/// commands can use it).
fn give(handle: &impl std::os::fd::AsFd, owner: Option<Id>) -> std::io::Result<()> {
    match owner {
        Some(id) => std::os::unix::fs::fchown(handle, Some(id.uid), Some(id.gid)),
        None => Ok(()),
    }
}

/// A folder's files, two levels deep, as paths the model can give back.
pub(super) fn listing(dir: &Dir, rel: &Path, shown: &str) -> Result<String, String> {
    let mut out = Vec::new();
    let mut stack = vec![(rel.to_path_buf(), 0)];
    while let Some((at, depth)) = stack.pop() {
        let entries = dir.read_dir(&at).map_err(|e| io_message(shown, "", &e))?;
        let mut names: Vec<(String, bool)> = entries
            .filter_map(|e| {
                let e = e.ok()?;
                let is_dir = e.file_type().ok()?.is_dir();
                Some((e.file_name().to_string_lossy().into_owned(), is_dir))
            })
            .collect();
        names.sort();
        for (name, is_dir) in names.into_iter().rev() {
            let path = at.join(&name);
            if is_dir && depth < 1 {
                stack.push((path.clone(), depth + 1));
            }
            out.push(format!(
                "{}{}",
                Path::new(shown)
                    .join(path.strip_prefix(rel).unwrap_or(&path))
                    .display(),
                if is_dir { "/" } else { "" }
            ));
        }
        if out.len() > MAX_LISTED {
            out.truncate(MAX_LISTED);
            out.push(format!("[more entries left out after {MAX_LISTED}]"));
            break;
        }
    }
    out.sort();
    match out.is_empty() {
        true => Ok(format!("{shown} is empty")),
        false => Ok(out.join("\n")),
    }
}

/// An I/O error as the model should read it: an escape says so and nothing more.
pub(super) fn io_message(shown: &str, within: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::Other
            if e.to_string().contains("outside") =>
        {
            format!("`{shown}` leads outside {within} (through a link); refused")
        }
        std::io::ErrorKind::NotFound => format!("`{shown}` does not exist"),
        _ => format!("`{shown}`: {e}"),
    }
}
