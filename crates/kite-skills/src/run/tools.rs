//! `view`, `create_file`, `str_replace` and `bash`: the model's hands in a run.

use super::files::{Got, MAX_WRITE, editable, io_message, listing, make_dirs, read, shown, write};
use super::{Space, State};
use crate::sandbox::{self, Stopped};
use crate::set::Kind;
use kite_agent::{Tool, ToolContext, ToolError, ToolFuture, ToolOutput};
use kite_core::ToolSpec;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Less free room than this in the workspace after a command is called full.
const FULL: u64 = 64 * 1024;

#[derive(Clone, Copy)]
enum Which {
    View,
    Create,
    Replace,
    Bash,
}

struct SkillTool<C> {
    which: Which,
    spec: ToolSpec,
    state: Arc<State<C>>,
}

pub(super) fn all<C: Send + Sync + 'static>(state: &Arc<State<C>>) -> Vec<Arc<dyn Tool<C>>> {
    let path = json!({"type": "string", "description": "Relative to the workspace; a skill's files are under skills/NAME/."});
    let specs = [
        (
            Which::View,
            "view",
            "Read a file, or list a folder two levels deep. Use it to load a skill's \
             SKILL.md, and then the files its instructions point to.",
            json!({"type": "object", "properties": {
                "path": path,
                "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
                    "description": "Only lines START to END (1-based; END -1 for the last line)."}
            }, "required": ["path"]}),
        ),
        (
            Which::Create,
            "create_file",
            "Create or overwrite a file in the workspace with the given text.",
            json!({"type": "object", "properties": {
                "path": path,
                "file_text": {"type": "string", "description": "The file's whole text."}
            }, "required": ["path", "file_text"]}),
        ),
        (
            Which::Replace,
            "str_replace",
            "Replace the one occurrence of old_str in a workspace file with new_str.",
            json!({"type": "object", "properties": {
                "path": path,
                "old_str": {"type": "string", "description": "Text that occurs exactly once in the file."},
                "new_str": {"type": "string", "description": "What replaces it (empty to delete)."}
            }, "required": ["path", "old_str", "new_str"]}),
        ),
        (
            Which::Bash,
            "bash",
            if state.sandbox.network {
                "Run a shell command in the workspace, in a sandbox with network access, with \
                 a time limit. Use it to run a skill's scripts."
            } else {
                "Run a shell command in the workspace, in a sandbox without network, with a \
                 time limit. Use it to run a skill's scripts."
            },
            json!({"type": "object", "properties": {
                "command": {"type": "string", "description": "The command, run with sh -c."}
            }, "required": ["command"]}),
        ),
    ];
    specs
        .into_iter()
        .map(|(which, name, description, schema)| {
            Arc::new(SkillTool {
                which,
                spec: ToolSpec::new(name, description, schema),
                state: state.clone(),
            }) as Arc<dyn Tool<C>>
        })
        .collect()
}

impl<C: Send + Sync + 'static> Tool<C> for SkillTool<C> {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, args: Value, ctx: ToolContext<C>) -> ToolFuture<C> {
        let state = self.state.clone();
        let which = self.which;
        Box::pin(async move {
            let text = |key: &str| args.get(key).and_then(Value::as_str).unwrap_or_default();
            let result = match which {
                Which::View => view(&state, text("path"), range(&args)),
                Which::Create => create(&state, text("path"), text("file_text")).await,
                Which::Replace => {
                    replace(&state, text("path"), text("old_str"), text("new_str")).await
                }
                Which::Bash => return bash(&state, text("command"), &ctx).await,
            };
            result.map(ToolOutput::text).map_err(ToolError::Model)
        })
    }
}

fn range(args: &Value) -> Option<(i64, i64)> {
    let r = args.get("view_range")?.as_array()?;
    Some((r.first()?.as_i64()?, r.get(1)?.as_i64()?))
}

/// Where a path the model gave lies.
enum Place {
    /// `skills`: the list of skills.
    Skills,
    /// A path in skill number `index`'s folder (`""` for the folder).
    Skill { index: usize, rel: PathBuf },
    /// A path in the workspace (`""` for the workspace).
    Workspace(PathBuf),
}

fn place<C>(state: &State<C>, path: &str) -> Result<Place, String> {
    let path = path.trim();
    if path.starts_with('/') || path.starts_with('~') || Path::new(path).is_absolute() {
        return Err(format!(
            "`{path}`: absolute paths are refused; give a path relative to the workspace \
             (skills/NAME/SKILL.md for a skill's instructions)"
        ));
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.contains(&"..") {
        return Err(format!(
            "`{path}`: `..` is refused; paths stay inside the workspace and the skills"
        ));
    }
    match parts.as_slice() {
        ["skills"] => Ok(Place::Skills),
        ["skills", name, rest @ ..] => {
            let index = state
                .set
                .skills
                .iter()
                .position(|k| k.meta().name == *name)
                .ok_or_else(|| {
                    format!("there is no skill named `{name}` (`view skills` lists them)")
                })?;
            Ok(Place::Skill {
                index,
                rel: rest.iter().collect(),
            })
        }
        _ => Ok(Place::Workspace(parts.iter().collect())),
    }
}

fn view<C>(state: &State<C>, path: &str, range: Option<(i64, i64)>) -> Result<String, String> {
    match place(state, path)? {
        Place::Skills => Ok(state
            .set
            .skills
            .iter()
            .map(|k| {
                format!(
                    "skills/{}/SKILL.md: {}",
                    k.meta().name,
                    k.meta().description
                )
            })
            .collect::<Vec<_>>()
            .join("\n")),
        Place::Skill { index, rel } => {
            let kind = &state.set.skills[index];
            let name = &kind.meta().name;
            let key = format!("skills/{name}/{}", rel.display());
            let is_instructions = matches!(rel.to_str(), Some("SKILL.md" | "skill.md"));
            let text = match (kind, &state.skill_dirs[index]) {
                (Kind::Native(_), _) if is_instructions => {
                    let bytes = kind.instructions().as_bytes().to_vec();
                    let len = bytes.len() as u64;
                    shown(Got::File { bytes, len }, path, range)
                }
                (Kind::Native(_), _) => {
                    return Err(format!(
                        "`{name}` is built in: it has instructions (skills/{name}/SKILL.md) \
                         and tools, but no files"
                    ));
                }
                (Kind::Folder(_), Some(dir)) => {
                    let dir_name = format!("skills/{name}");
                    if rel.as_os_str().is_empty() {
                        return listing(dir, Path::new("."), &dir_name);
                    }
                    match read(dir, &rel, path, "the skill's folder", MAX_WRITE)? {
                        Got::Folder => return listing(dir, &rel, &key),
                        got => shown(got, path, range),
                    }
                }
                (Kind::Folder(_), None) => return Err("the skill's folder is not open".into()),
            };
            if range.is_none() && !state.first_load(&key) {
                return Ok(format!(
                    "{key} was already loaded in this run; its text is in the conversation above \
                     (should it be gone, view it again with view_range [1, -1])."
                ));
            }
            Ok(text)
        }
        Place::Workspace(rel) => {
            let space = state.space().map_err(|e| e.to_string())?;
            let dir = &space.dir;
            if rel.as_os_str().is_empty() {
                return listing(dir, Path::new("."), ".");
            }
            match read(dir, &rel, path, "the workspace", MAX_WRITE)? {
                Got::Folder => listing(dir, &rel, path),
                got => Ok(shown(got, path, range)),
            }
        }
    }
}

fn writable<C>(state: &State<C>, path: &str) -> Result<PathBuf, String> {
    match place(state, path)? {
        Place::Workspace(rel) if !rel.as_os_str().is_empty() => Ok(rel),
        Place::Workspace(_) => Err("give a file's path".into()),
        _ => Err(format!(
            "`{path}`: the skills' folders are read-only; write in the workspace instead"
        )),
    }
}

/// The workspace, and a refusal of a write of `bytes` more than it has room for.
fn room_for<C>(state: &State<C>, bytes: usize) -> Result<&Space, String> {
    let space = state.space().map_err(|e| e.to_string())?;
    match space.workspace.free() {
        Some(free) if bytes as u64 > free => Err(format!(
            "no room in the workspace for this: {} of its {} MiB are free",
            human(free),
            space.workspace.size().unwrap_or_default() >> 20
        )),
        _ => Ok(space),
    }
}

/// Bytes as a person reads them.
fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

async fn create<C>(state: &State<C>, path: &str, text: &str) -> Result<String, String> {
    let rel = writable(state, path)?;
    if text.len() > MAX_WRITE {
        return Err(format!("the text is larger than {} MiB", MAX_WRITE >> 20));
    }
    let space = room_for(state, text.len())?;
    let (dir, owner) = (&space.dir, space.workspace.owner());
    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        make_dirs(dir, parent, owner).map_err(|e| {
            // A link on the way shows as "exists": following it tells where it leads.
            let e = dir.metadata(parent).err().unwrap_or(e);
            io_message(path, "the workspace", &e)
        })?;
    }
    write(dir, &rel, path, text, owner)?;
    Ok(format!("wrote {} bytes to {path}", text.len()))
}

async fn replace<C>(state: &State<C>, path: &str, old: &str, new: &str) -> Result<String, String> {
    let rel = writable(state, path)?;
    let space = room_for(state, new.len())?;
    if old.is_empty() {
        return Err("old_str is empty; give text that occurs once in the file".into());
    }
    let (dir, owner) = (&space.dir, space.workspace.owner());
    let text = editable(dir, &rel, path)?;
    match text.matches(old).count() {
        0 => Err(format!("old_str does not occur in {path}")),
        1 => {
            let changed = text.replacen(old, new, 1);
            if changed.len() > MAX_WRITE {
                return Err(format!(
                    "the file would be larger than {} MiB",
                    MAX_WRITE >> 20
                ));
            }
            write(dir, &rel, path, &changed, owner)?;
            Ok(format!("replaced 1 occurrence in {path}"))
        }
        n => Err(format!(
            "old_str occurs {n} times in {path}; give more of the text around it"
        )),
    }
}

async fn bash<C>(
    state: &State<C>,
    command: &str,
    ctx: &ToolContext<C>,
) -> Result<ToolOutput<C>, ToolError> {
    if command.trim().is_empty() {
        return Err(ToolError::model("the command is empty"));
    }
    // One command at a time in a run.
    let _one = state.one_command.lock().await;
    let space = state.space().map_err(|e| ToolError::model(e.to_string()))?;
    let mounts: Vec<(String, PathBuf)> = state
        .set
        .skills
        .iter()
        .filter_map(|k| match k {
            Kind::Folder(s) => Some((s.name().to_owned(), s.dir.clone())),
            Kind::Native(_) => None,
        })
        .collect();
    let ready = state.sandbox_ready().await;
    let outcome = sandbox::run(
        command,
        &space.workspace,
        &mounts,
        &state.sandbox,
        ready,
        &ctx.cancel,
    )
    .await
    .map_err(|e| ToolError::model(e.to_string()))?;
    let mut text = String::new();
    let stdout = String::from_utf8_lossy(&outcome.stdout);
    let stderr = String::from_utf8_lossy(&outcome.stderr);
    text.push_str(&stdout);
    if !stderr.is_empty() {
        text.push_str(&format!("\n[stderr]\n{stderr}"));
    }
    let (is_error, note) = match (outcome.stopped, outcome.status) {
        (Some(Stopped::TimedOut(d)), _) => (
            true,
            format!(
                "stopped: still running after {} s, the time limit",
                d.as_secs()
            ),
        ),
        (Some(Stopped::TooMuchOutput(n)), _) => (
            true,
            format!("stopped: it wrote more than {n} bytes of output"),
        ),
        (Some(Stopped::Cancelled), _) => (true, "stopped: the run was cancelled".to_owned()),
        (Some(Stopped::OutOfMemory(max)), _) => (
            true,
            format!(
                "stopped: it used more than {} MiB of memory, the limit",
                max >> 20
            ),
        ),
        (Some(Stopped::TooMuchCpu(max)), _) => (
            true,
            format!(
                "stopped: its processes used more than {} s of CPU time, the limit",
                max.as_secs()
            ),
        ),
        (None, Some(0)) => (false, "exit status 0".to_owned()),
        (None, Some(n)) => (true, format!("exit status {n}")),
        (None, None) => (true, "ended by a signal".to_owned()),
    };
    text.push_str(&format!("\n[{note}]"));
    if let Some(free) = space.workspace.free()
        && free < FULL
    {
        text.push_str(&format!(
            "\n[the workspace is full: its quota is {} MiB; remove files to make room]",
            space.workspace.size().unwrap_or_default() >> 20
        ));
    }
    Ok(ToolOutput {
        is_error,
        ..ToolOutput::text(text.trim_start().to_owned())
    })
}
