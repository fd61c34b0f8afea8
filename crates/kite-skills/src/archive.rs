//! Skills packed as `.skill` or `.zip` archives: checked, then unpacked once into a cache
//! folder named by the archive's SHA-256, and loaded from there.
//!
//! An archive is refused whole when a member would land outside its folder (`../`, an
//! absolute path), is a link, is larger than [`MAX_MEMBER`], or when there are more than
//! [`MAX_MEMBERS`] members or more than [`MAX_TOTAL`] bytes in all. Sizes are counted as
//! the bytes come out, not as the archive claims them.

use crate::skill::{Invalid, Skill, find_skill_md};
use crate::validate::Rule;
use sha2::{Digest, Sha256};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

/// The largest archive read.
pub const MAX_ARCHIVE: u64 = 64 * 1024 * 1024;
/// The largest member unpacked.
pub const MAX_MEMBER: u64 = 16 * 1024 * 1024;
/// The most bytes unpacked from one archive.
pub const MAX_TOTAL: u64 = 128 * 1024 * 1024;
/// The most members in one archive.
pub const MAX_MEMBERS: usize = 10_000;

/// Whether `path` is named like a skill archive.
pub(crate) fn is_archive(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("skill") || e.eq_ignore_ascii_case("zip"))
}

/// Checks and unpacks `path` under `cache`, then loads the skill in it.
pub(crate) fn load(path: &Path, cache: &Path) -> Result<Skill, Invalid> {
    let refuse = |message: String| Invalid::one(path, path, Rule::Unreadable, message);
    let bytes = read_capped(path).map_err(refuse)?;
    let digest = Sha256::digest(&bytes);
    let key: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    let target = cache.join(key);
    if !target.is_dir() {
        unpack(&bytes, path, cache, &target).map_err(refuse)?;
    }
    let dir = skill_folder(&target, path).map_err(refuse)?;
    Skill::load_from(&dir, path)
}

fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_ARCHIVE + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read the archive {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_ARCHIVE {
        return Err(format!(
            "the archive {} is larger than {} MiB",
            path.display(),
            MAX_ARCHIVE >> 20
        ));
    }
    Ok(bytes)
}

/// The folder holding the skill: the unpacked root when `SKILL.md` is at the top (named
/// after the archive), else the one folder at the top.
fn skill_folder(target: &Path, archive: &Path) -> Result<PathBuf, String> {
    let entries: Vec<PathBuf> = std::fs::read_dir(target)
        .map_err(|e| format!("cannot read {}: {e}", target.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    match entries.as_slice() {
        [one] if one.is_dir() && find_skill_md(one).is_some() => Ok(one.clone()),
        _ => Err(format!(
            "{} holds no skill: it needs one folder with a SKILL.md in it (NAME/SKILL.md), \
             or a SKILL.md at its top",
            archive.display()
        )),
    }
}

/// Unpacks into a fresh folder beside `target`, then renames it into place, so that a
/// half-unpacked archive is never found in the cache.
fn unpack(bytes: &[u8], archive: &Path, cache: &Path, target: &Path) -> Result<(), String> {
    let bad = |what: String| format!("the archive {} was refused: {what}", archive.display());
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
        .map_err(|e| bad(format!("it is not a zip archive ({e})")))?;
    if zip.len() > MAX_MEMBERS {
        return Err(bad(format!("it has more than {MAX_MEMBERS} members")));
    }
    std::fs::create_dir_all(cache)
        .map_err(|e| format!("cannot create the cache folder {}: {e}", cache.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".unpacking-")
        .tempdir_in(cache)
        .map_err(|e| format!("cannot unpack into {}: {e}", cache.display()))?;
    // With SKILL.md at the top, the skill's folder is named after the archive.
    let stem = archive
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let top_level = (0..zip.len()).any(|i| {
        zip.by_index(i)
            .is_ok_and(|m| matches!(m.name(), "SKILL.md" | "skill.md"))
    });
    let root = match top_level {
        true => staging.path().join(
            safe_component(&stem)
                .ok_or_else(|| bad(format!("its name {stem:?} cannot name a skill's folder")))?,
        ),
        false => staging.path().to_owned(),
    };
    let mut seen = HashSet::new();
    let mut total = 0u64;
    for i in 0..zip.len() {
        let mut member = zip
            .by_index(i)
            .map_err(|e| bad(format!("member {i} cannot be read ({e})")))?;
        let name = member.name().to_owned();
        let rel = member
            .enclosed_name()
            .filter(|p| p.components().all(|c| matches!(c, Component::Normal(_))))
            .ok_or_else(|| bad(format!("{name:?} would land outside the skill's folder")))?;
        if rel.starts_with("__MACOSX") {
            // What macOS's Finder adds beside the files it zips.
            continue;
        }
        if member.is_symlink() {
            return Err(bad(format!("{name:?} is a link")));
        }
        if !seen.insert(rel.clone()) {
            return Err(bad(format!("{name:?} appears twice")));
        }
        let dest = root.join(&rel);
        if member.is_dir() {
            std::fs::create_dir_all(&dest).map_err(|e| format!("cannot unpack {name:?}: {e}"))?;
            continue;
        }
        if member.size() > MAX_MEMBER {
            return Err(bad(format!(
                "{name:?} is larger than {} MiB",
                MAX_MEMBER >> 20
            )));
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("cannot unpack {name:?}: {e}"))?;
        }
        let executable = member.unix_mode().is_some_and(|m| m & 0o111 != 0);
        let mut out =
            create_new(&dest, executable).map_err(|e| format!("cannot unpack {name:?}: {e}"))?;
        let copied = std::io::copy(&mut (&mut member).take(MAX_MEMBER + 1), &mut out)
            .map_err(|e| bad(format!("{name:?} cannot be unpacked ({e})")))?;
        if copied > MAX_MEMBER {
            return Err(bad(format!(
                "{name:?} is larger than {} MiB",
                MAX_MEMBER >> 20
            )));
        }
        total += copied;
        if total > MAX_TOTAL {
            return Err(bad(format!(
                "it unpacks to more than {} MiB",
                MAX_TOTAL >> 20
            )));
        }
        out.flush()
            .map_err(|e| format!("cannot unpack {name:?}: {e}"))?;
    }
    // Only a whole skill goes into the cache.
    skill_folder(staging.path(), archive)?;
    let staged = staging.keep();
    match std::fs::rename(&staged, target) {
        Ok(()) => Ok(()),
        // Another process unpacked the same archive first: theirs is as good.
        Err(_) if target.is_dir() => {
            let _ = std::fs::remove_dir_all(&staged);
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staged);
            Err(format!("cannot unpack into {}: {e}", target.display()))
        }
    }
}

/// `name` when it is one plain path component.
fn safe_component(name: &str) -> Option<&str> {
    let mut parts = Path::new(name).components();
    match (parts.next(), parts.next()) {
        (Some(Component::Normal(_)), None) => Some(name),
        _ => None,
    }
}

/// A new file (never an existing one, nor through a link), executable when asked.
fn create_new(path: &Path, executable: bool) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if executable { 0o755 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = executable;
    options.open(path)
}
