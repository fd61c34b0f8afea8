//! Reading and listing files under one folder, except the files a program keeps its own
//! (kite's configuration, store, logins and keys): they are neither listed nor read, by
//! their path or by any other link to them.

use crate::{Tool, ToolError, ToolOutput, tool};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Files larger than this are cut, and the model is told.
const MAX_READ: u64 = 100 * 1024;
/// A listing stops after this many entries.
const MAX_ENTRIES: usize = 500;

#[derive(Deserialize, JsonSchema)]
struct ReadArgs {
    /// The file's path, relative to the working folder.
    path: String,
}

#[derive(Deserialize, JsonSchema)]
struct ListArgs {
    /// A folder relative to the working folder; the working folder itself when absent.
    #[serde(default)]
    path: Option<String>,
}

/// The folder tools may see, the check that keeps them in it, and what in it they may not
/// see.
#[derive(Clone, Debug)]
struct Root {
    dir: Arc<PathBuf>,
    hidden: Arc<Hidden>,
}

/// The paths tools never read: each as it resolves, with the identity (device and inode) of
/// it and of what a hidden folder holds two levels down, so that a hard link made to one of
/// them elsewhere is hidden too.
#[derive(Debug, Default)]
struct Hidden {
    paths: Vec<PathBuf>,
    files: std::collections::HashSet<(u64, u64)>,
}

/// How many entries of a hidden folder are taken by identity.
const MAX_HIDDEN_ENTRIES: usize = 2_000;

impl Hidden {
    fn new(paths: &[PathBuf]) -> Self {
        use std::os::unix::fs::MetadataExt;
        let mut hidden = Hidden::default();
        for path in paths {
            let Ok(real) = path.canonicalize() else {
                // Not there yet: hidden by the path it will have.
                hidden.paths.push(absolute(path));
                continue;
            };
            let mut stack = vec![(real.clone(), 0)];
            while let Some((at, depth)) = stack.pop() {
                let Ok(meta) = at.symlink_metadata() else {
                    continue;
                };
                if hidden.files.len() >= MAX_HIDDEN_ENTRIES {
                    break;
                }
                hidden.files.insert((meta.dev(), meta.ino()));
                if meta.is_dir() && depth < 2 {
                    let entries = std::fs::read_dir(&at).into_iter().flatten().flatten();
                    stack.extend(entries.map(|e| (e.path(), depth + 1)));
                }
            }
            hidden.paths.push(real);
        }
        hidden
    }

    /// Whether `real` (a resolved path) is one of them, in one of them, or another link to
    /// one.
    fn covers(&self, real: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.paths.iter().any(|h| real.starts_with(h))
            || std::fs::metadata(real).is_ok_and(|m| self.files.contains(&(m.dev(), m.ino())))
    }
}

/// `path` made absolute against the working directory, as written.
fn absolute(path: &Path) -> PathBuf {
    std::env::current_dir()
        .map(|cwd| cwd.join(path))
        .unwrap_or_else(|_| path.to_owned())
}

impl Root {
    fn new(root: &Path, hidden: &[PathBuf]) -> std::io::Result<Self> {
        Ok(Self {
            dir: Arc::new(root.canonicalize()?),
            hidden: Arc::new(Hidden::new(hidden)),
        })
    }

    /// Refuses `real`, a resolved path under the root, when it is hidden.
    fn visible(&self, rel: &str, real: PathBuf) -> Result<PathBuf, ToolError> {
        match self.hidden.covers(&real) {
            true => Err(ToolError::model(format!(
                "`{rel}` is kite's own (its configuration, store, logins or keys); tools never \
                 read it"
            ))),
            false => Ok(real),
        }
    }

    /// `rel` resolved (following links) and checked to lie under the root. A path outside
    /// is refused with one message whether or not it exists, so that the answer tells
    /// nothing about what lies outside.
    fn resolve(&self, rel: &str) -> Result<PathBuf, ToolError> {
        let outside = || {
            ToolError::model(format!(
                "`{rel}` is outside the working folder; only paths under it can be read"
            ))
        };
        let joined = self.dir.join(rel);
        if !lexically_under(&joined, &self.dir) {
            return Err(outside());
        }
        match joined.canonicalize() {
            Ok(real) if real.starts_with(&*self.dir) => self.visible(rel, real),
            Ok(_) => Err(outside()),
            Err(e) => {
                // Missing: say so only when what does exist of the path is inside (a link
                // may lead out to a place that is missing).
                let known = joined
                    .ancestors()
                    .skip(1)
                    .find_map(|a| a.canonicalize().ok());
                let dangling_out = links_lead_out(&joined, &self.dir);
                match known {
                    Some(a) if a.starts_with(&*self.dir) && !dangling_out => {
                        Err(ToolError::model(format!("`{rel}`: {e}")))
                    }
                    _ => Err(outside()),
                }
            }
        }
    }
}

/// `read_file`: the text of a file under `root` (at most 100 KiB), but none of `hidden`,
/// nor anything in them, nor any other link to them.
pub fn read_file<C: Send + Sync + 'static>(
    root: &Path,
    hidden: &[PathBuf],
) -> std::io::Result<impl Tool<C>> {
    let root = Root::new(root, hidden)?;
    Ok(tool(
        "read_file",
        "Read a text file under the working folder.",
        move |args: ReadArgs, _| {
            let root = root.clone();
            async move {
                let path = root.resolve(&args.path)?;
                let meta = std::fs::metadata(&path)
                    .map_err(|e| ToolError::model(format!("`{}`: {e}", args.path)))?;
                if !meta.is_file() {
                    return Err(ToolError::model(format!("`{}` is not a file", args.path)));
                }
                let bytes = read_prefix(&path, MAX_READ)
                    .map_err(|e| ToolError::model(format!("`{}`: {e}", args.path)))?;
                let mut text = String::from_utf8_lossy(&bytes).into_owned();
                if meta.len() > MAX_READ {
                    text.push_str(&format!(
                        "\n[cut: the file has {} bytes; only the first {MAX_READ} are shown]",
                        meta.len()
                    ));
                }
                Ok(ToolOutput::text(text))
            }
        },
    ))
}

/// Whether following the links at `path` (one that does not resolve) leads out of `root`
/// at any hop; a chain too long to follow counts as leading out.
fn links_lead_out(path: &Path, root: &Path) -> bool {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        let Ok(target) = std::fs::read_link(&at) else {
            return false;
        };
        let parent = at.parent().unwrap_or(root);
        let parent = parent
            .canonicalize()
            .unwrap_or_else(|_| parent.to_path_buf());
        at = parent.join(target);
        if !lexically_under(&at, root) {
            return true;
        }
    }
    true
}

/// Whether `path`, with `.` and `..` applied as written, stays under `root`.
fn lexically_under(path: &Path, root: &Path) -> bool {
    use std::path::Component;
    let mut parts: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(parts.last(), Some(Component::Normal(_))) {
                    parts.pop();
                } else {
                    return false;
                }
            }
            other => parts.push(other),
        }
    }
    parts.iter().collect::<PathBuf>().starts_with(root)
}

fn read_prefix(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    std::fs::File::open(path)?.take(max).read_to_end(&mut out)?;
    Ok(out)
}

/// `list_files`: the entries of a folder under `root`, folders marked with a trailing `/`;
/// `hidden` ones (as for [`read_file`]) are left out.
pub fn list_files<C: Send + Sync + 'static>(
    root: &Path,
    hidden: &[PathBuf],
) -> std::io::Result<impl Tool<C>> {
    let root = Root::new(root, hidden)?;
    Ok(tool(
        "list_files",
        "List the files and folders in a folder under the working folder.",
        move |args: ListArgs, _| {
            let root = root.clone();
            async move {
                let rel = args.path.unwrap_or_else(|| ".".into());
                let dir = root.resolve(&rel)?;
                let read = std::fs::read_dir(&dir)
                    .map_err(|e| ToolError::model(format!("`{rel}`: {e}")))?;
                let mut entries: Vec<String> = read
                    .filter_map(Result::ok)
                    .filter(|e| !root.hidden.covers(&e.path()))
                    .map(|e| {
                        let name = e.file_name().to_string_lossy().into_owned();
                        // Links are not followed: their target may lie outside the root.
                        match e.metadata() {
                            Ok(m) if m.is_symlink() => format!("{name} (link)"),
                            Ok(m) if m.is_dir() => format!("{name}/"),
                            Ok(m) => format!("{name} ({} bytes)", m.len()),
                            Err(_) => name,
                        }
                    })
                    .collect();
                entries.sort();
                let total = entries.len();
                entries.truncate(MAX_ENTRIES);
                let mut text = entries.join("\n");
                if total > MAX_ENTRIES {
                    text.push_str(&format!("\n[{} more not shown]", total - MAX_ENTRIES));
                }
                if total == 0 {
                    text = "(empty)".into();
                }
                Ok(ToolOutput::text(text))
            }
        },
    ))
}
