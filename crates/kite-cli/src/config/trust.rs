//! Trusting a `kite.toml` found in the working directory. Such a file comes with whatever
//! folder one works in (a cloned repository), and it can start programs (MCP servers), send
//! a provider's key to another server (`[providers.NAME] base_url`) or read files into a
//! prompt. So, as direnv and mise do, kite reads it only once the user has read it and run
//! `kite trust`, which records the file's path and SHA-256; a changed file must be trusted
//! again; until then kite refuses to run with it (`--config` names a file explicitly). A
//! file named with `--config` or `KITE_CONFIG`, and the one in kite's XDG config folder,
//! are the user's own and need no trust. Trust covers the kite.toml's text only, not the
//! prompts file or the programs it names. `kite trust` (`commands/trust.rs`) records them.
//!
//! A project folder's Agent Skills (`.agents/skills` in the working directory or a folder
//! above it, but the home folder) reach the model's instructions and run scripts, so they
//! too are offered only once `kite trust FOLDER` has recorded the folder: by its path, as
//! editors trust a workspace, since skills change as the project does.

use kite::Error;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// `trusted` in kite's data folder: one `SHA-256 PATH` line per trusted file.
fn list_path() -> Option<PathBuf> {
    crate::config::data_dir().map(|d| d.join("trusted"))
}

/// The canonical path of the working directory's `path`, which must be a file of its own,
/// not a link (which would borrow another file's trust), and whose name fits on one line
/// of the list.
fn canonical(path: &Path) -> Result<String, Error> {
    let meta = std::fs::symlink_metadata(path)
        .map_err(|e| Error::Config(format!("cannot find {}: {e}", path.display())))?;
    if meta.file_type().is_symlink() {
        return Err(Error::Config(format!(
            "{} is a link; kite trusts only a kite.toml of the folder's own (name the file it \
             points to with --config)",
            path.display()
        )));
    }
    let full = std::fs::canonicalize(path)
        .map_err(|e| Error::Config(format!("cannot find {}: {e}", path.display())))?;
    let full = full.to_string_lossy().into_owned();
    if full.contains(['\n', '\r']) {
        return Err(Error::Config(format!(
            "{full:?} holds a line break; kite does not trust files there"
        )));
    }
    Ok(full)
}

fn digest(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The trusted files, as (digest, path) lines.
fn entries() -> Vec<(String, String)> {
    let Some(list) = list_path() else {
        return Vec::new();
    };
    // A list others could have written trusts nothing.
    for place in [Some(list.as_path()), list.parent()].into_iter().flatten() {
        if let Err(why) = crate::config::own_only(place) {
            crate::terminal::output::errln!(
                "kite: {} {why}: no project is trusted while it is",
                place.display()
            );
            return Vec::new();
        }
    }
    let text = crate::config::read_small(&list, "the trust list").unwrap_or_default();
    text.lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(d, p)| (d.to_owned(), p.to_owned()))
        .collect()
}

/// Refuses `text`, read from the working directory's `path`, unless it is trusted as it is.
pub(crate) fn check(path: &Path, text: &str) -> Result<(), Error> {
    let full = canonical(path)?;
    let wanted = digest(text);
    let known: Vec<(String, String)> = entries().into_iter().filter(|(_, p)| *p == full).collect();
    if known.iter().any(|(d, _)| *d == wanted) {
        return Ok(());
    }
    let why = match known.is_empty() {
        true => "is not trusted yet",
        false => "has changed since it was trusted",
    };
    Err(Error::Config(format!(
        "{full} {why}: a kite.toml can start programs and send your keys to other servers. \
         Read it, then run `kite trust` here (or name it with --config)"
    )))
}

/// What a trusted folder's line holds in place of a digest.
const FOLDER: &str = "folder";

/// Whether the project folder `dir` is trusted: its `.agents/skills` may be offered.
pub(crate) fn folder_trusted(dir: &Path) -> bool {
    let Ok(full) = dir.canonicalize() else {
        return false;
    };
    let full = full.to_string_lossy();
    entries().iter().any(|(d, p)| d == FOLDER && *p == full)
}

/// What [`record`] did.
pub(crate) enum Recorded {
    /// The file is trusted as it is now.
    File(String),
    /// The folder's skills may be offered.
    Folder(String),
    /// The file or folder is no longer trusted.
    Forgotten(String),
}

/// Trusts `path` (a kite.toml, or a project folder), or stops trusting it with `forget`,
/// in the list in kite's data folder.
pub(crate) fn record(path: &Path, forget: bool) -> Result<Recorded, Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let folder = path.is_dir();
    let name = match folder {
        true => folder_name(path)?,
        false => canonical(path)?,
    };
    let full = PathBuf::from(&name);
    let list =
        list_path().ok_or_else(|| Error::Config("no home folder to keep trust in".into()))?;
    let mut kept: Vec<(String, String)> =
        entries().into_iter().filter(|(_, p)| *p != name).collect();
    if !forget && folder {
        kept.push((FOLDER.to_owned(), name.clone()));
    } else if !forget {
        let text = crate::config::read_small(&full, "the configuration")?;
        // Only a file kite can read is worth trusting.
        crate::config::settings::parse(&text).map_err(|e| Error::Config(format!("{name}: {e}")))?;
        kept.push((digest(&text), name.clone()));
    }
    crate::config::private_data_dir()
        .map_err(|e| Error::Config(format!("cannot keep trust in {}: {e}", list.display())))?;
    let body: String = kept.iter().map(|(d, p)| format!("{d} {p}\n")).collect();
    // Written aside and moved into place, so a list is never half written.
    let aside = list.with_extension(format!("new-{}", std::process::id()));
    let write = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&aside)
        .and_then(|mut f| f.write_all(body.as_bytes()))
        .and_then(|()| std::fs::rename(&aside, &list));
    write.map_err(|e| Error::Config(format!("cannot keep trust in {}: {e}", list.display())))?;
    Ok(match (forget, folder) {
        (true, _) => Recorded::Forgotten(name),
        (false, true) => Recorded::Folder(name),
        (false, false) => Recorded::File(name),
    })
}

/// A folder's canonical path, which must fit on one line of the list.
fn folder_name(dir: &Path) -> Result<String, Error> {
    let full = dir
        .canonicalize()
        .map_err(|e| Error::Config(format!("cannot find {}: {e}", dir.display())))?;
    let full = full.to_string_lossy().into_owned();
    if full.contains(['\n', '\r']) {
        return Err(Error::Config(format!(
            "{full:?} holds a line break; kite does not trust folders there"
        )));
    }
    Ok(full)
}
