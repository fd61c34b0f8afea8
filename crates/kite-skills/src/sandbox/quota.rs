//! The workspace's quota: what its files take on disk, counted after each command and
//! while one runs. A walk that finds too much stops early; links are not followed.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The most files and folders a workspace may hold, whatever their size: a walk past it
/// would take long, and so many are no script's honest output.
pub const MAX_ENTRIES: usize = 20_000;

/// How a workspace is over its quota.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Over {
    /// Its files take more than this many bytes.
    Bytes(u64),
    /// It holds more than [`MAX_ENTRIES`] files and folders.
    Entries(usize),
}

impl std::fmt::Display for Over {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Over::Bytes(max) => write!(f, "its files took more than {} MiB", max >> 20),
            Over::Entries(max) => write!(f, "it held more than {max} files and folders"),
        }
    }
}

/// Whether `dir` holds more than `max` bytes on disk (blocks allocated, so a sparse file
/// counts for what it uses) or more than [`MAX_ENTRIES`] entries.
pub(crate) fn over(dir: &Path, max: u64) -> Option<Over> {
    let (mut bytes, mut entries) = (0u64, 0usize);
    let mut stack: Vec<PathBuf> = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        let Ok(listing) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in listing.flatten() {
            entries += 1;
            if entries > MAX_ENTRIES {
                return Some(Over::Entries(MAX_ENTRIES));
            }
            let Ok(meta) = entry.path().symlink_metadata() else {
                continue;
            };
            bytes = bytes.saturating_add(meta.blocks().saturating_mul(512));
            if bytes > max {
                return Some(Over::Bytes(max));
            }
            if meta.is_dir() {
                stack.push(entry.path());
            }
        }
    }
    None
}

/// Removes everything in `dir`, keeping the folder: what a command wrote past the quota
/// would otherwise hold the disk for as long as the run lasts.
pub(crate) fn empty(dir: &Path) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in listing.flatten() {
        let path = entry.path();
        let _ = match entry.file_type() {
            Ok(t) if t.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
    }
}
