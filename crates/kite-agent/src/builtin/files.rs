//! Reading and listing files under one folder.

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

/// The folder tools may see, and the check that keeps them in it.
#[derive(Clone, Debug)]
struct Root(Arc<PathBuf>);

impl Root {
    fn new(root: &Path) -> std::io::Result<Self> {
        Ok(Self(Arc::new(root.canonicalize()?)))
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
        let joined = self.0.join(rel);
        if !lexically_under(&joined, &self.0) {
            return Err(outside());
        }
        match joined.canonicalize() {
            Ok(real) if real.starts_with(&*self.0) => Ok(real),
            Ok(_) => Err(outside()),
            Err(e) => {
                // Missing: say so only when what does exist of the path is inside (a link
                // may lead out to a place that is missing).
                let known = joined
                    .ancestors()
                    .skip(1)
                    .find_map(|a| a.canonicalize().ok());
                let dangling_out = links_lead_out(&joined, &self.0);
                match known {
                    Some(a) if a.starts_with(&*self.0) && !dangling_out => {
                        Err(ToolError::model(format!("`{rel}`: {e}")))
                    }
                    _ => Err(outside()),
                }
            }
        }
    }
}

/// `read_file`: the text of a file under `root` (at most 100 KiB).
pub fn read_file<C: Send + Sync + 'static>(root: &Path) -> std::io::Result<impl Tool<C>> {
    let root = Root::new(root)?;
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

/// `list_files`: the entries of a folder under `root`, folders marked with a trailing `/`.
pub fn list_files<C: Send + Sync + 'static>(root: &Path) -> std::io::Result<impl Tool<C>> {
    let root = Root::new(root)?;
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
