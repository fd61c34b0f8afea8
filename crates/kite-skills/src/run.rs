//! One run's use of a skill set: a workspace folder, the record of what the model has
//! loaded, and the tools it does that with (`view`, `create_file`, `str_replace`, `bash`,
//! after Anthropic's text-editor and bash tools, plus native skills' own tools).
//!
//! The model names files by paths relative to the workspace; the skills appear in it,
//! read-only, under `skills/NAME/`. Files are opened through `cap-std` handles on the
//! workspace and on each skill's folder, so `..`, absolute paths and links that point out
//! are refused by the operating system's own path walk, not by string checks that a link
//! made meanwhile could get around.

use crate::prompt::available_skills;
use crate::sandbox::{self, SandboxOptions, Workspace};
use crate::set::{Kind, SkillSet};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use kite_agent::{Tool, Toolkit};
use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

mod files;
mod tools;

/// How a run is set up.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// How `bash` runs commands, and the workspace's size.
    pub sandbox: SandboxOptions,
}

/// A run's workspace and tools over a [`SkillSet`]. Clones share the run.
///
/// It is a [`Toolkit`]: `agent.toolkit(&run)` gives an agent the tools and puts the
/// `<available_skills>` block, with instructions for using it, in its system prompt.
///
/// The workspace is a file system of its own in memory, of the size the sandbox options
/// give (`sandbox::Workspace`), made when a tool first needs it and gone with the run.
pub struct SkillRun<C = ()> {
    state: Arc<State<C>>,
}

impl<C> Clone for SkillRun<C> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
        }
    }
}

pub(crate) struct State<C> {
    set: Arc<SkillSet<C>>,
    /// The workspace, made on first use.
    space: OnceLock<Space>,
    /// Held while the workspace is made.
    making: Mutex<()>,
    /// Each skill's folder, by its index in the set (`None` for a native skill).
    skill_dirs: Vec<Option<Dir>>,
    /// The skill files the model has been given in full.
    loaded: Mutex<HashSet<String>>,
    sandbox: SandboxOptions,
    /// Whether bubblewrap works here, asked once.
    /// Shared by the runs [`SkillRun::fresh`] makes, which have the same sandbox.
    probe: Arc<tokio::sync::OnceCell<Result<(), String>>>,
    /// Held while a command runs: one at a time, so that none changes the workspace under
    /// another's start (its mount points).
    pub(crate) one_command: tokio::sync::Mutex<()>,
}

/// The workspace, and a handle on its root for the tools.
pub(crate) struct Space {
    pub(crate) workspace: Workspace,
    pub(crate) dir: Dir,
}

impl<C: Send + Sync + 'static> SkillRun<C> {
    /// Starts a run over `set`: opens each skill's folder.
    pub fn new(set: Arc<SkillSet<C>>, options: RunOptions) -> std::io::Result<Self> {
        Self::with_probe(set, options, Arc::default())
    }

    fn with_probe(
        set: Arc<SkillSet<C>>,
        options: RunOptions,
        probe: Arc<tokio::sync::OnceCell<Result<(), String>>>,
    ) -> std::io::Result<Self> {
        let skill_dirs = set
            .skills
            .iter()
            .map(|k| match k {
                Kind::Folder(s) => Dir::open_ambient_dir(&s.dir, ambient_authority()).map(Some),
                Kind::Native(_) => Ok(None),
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Self {
            state: Arc::new(State {
                set,
                space: OnceLock::new(),
                making: Mutex::new(()),
                skill_dirs,
                loaded: Mutex::new(HashSet::new()),
                sandbox: options.sandbox,
                probe,
                one_command: tokio::sync::Mutex::new(()),
            }),
        })
    }

    /// A new run over the same skills, with the same sandbox, in a fresh workspace and with
    /// nothing loaded yet: for a server whose every request is a run of its own.
    pub fn fresh(&self) -> std::io::Result<Self> {
        let options = RunOptions {
            sandbox: self.state.sandbox.clone(),
        };
        // Whether bubblewrap works here is asked once for all of them.
        Self::with_probe(self.state.set.clone(), options, self.state.probe.clone())
    }

    /// A path to the workspace (`/proc/PID/fd/N`: it is mounted nowhere the rest of the
    /// machine sees), made on first use; see [`Workspace::path`].
    pub fn workspace(&self) -> std::io::Result<&Path> {
        Ok(self.state.space()?.workspace.path())
    }

    /// Whether `bash` can run commands: in a sandbox, or unconfined because the options
    /// allow it. `Err` says why not, and how to allow it.
    pub async fn can_run_scripts(&self) -> Result<(), String> {
        match self.state.sandbox_ready().await {
            Ok(()) => Ok(()),
            Err(_) if self.state.sandbox.dangerously_unsandboxed => Ok(()),
            Err(why) => Err(sandbox::SandboxError::NoSandbox(why).to_string()),
        }
    }

    /// The system prompt's part: how to use skills, then the `<available_skills>` block
    /// with workspace locations (`skills/NAME/SKILL.md`).
    pub fn system_prompt(&self) -> String {
        let block = available_skills(self.state.set.skills.iter().map(|k| {
            let name = k.meta().name.as_str();
            (
                name,
                k.meta().description.as_str(),
                format!("skills/{name}/SKILL.md"),
            )
        }));
        format!(
            "You have skills: folders of instructions, scripts and resources for particular \
             tasks. Each is listed below with its name, a description of when to use it, and \
             the location of its instructions. When a task matches a skill's description, \
             read its SKILL.md with the `view` tool before anything else, then follow it; \
             read the other files it mentions only when you need them. Paths are relative to \
             your workspace, where each skill's folder is `skills/NAME/` (read-only). `bash` \
             runs a command in the workspace, in a sandbox; write your own files with \
             `create_file` and change them with `str_replace`.\n\n{block}"
        )
    }
}

impl<C: Send + Sync + 'static> Toolkit<C> for SkillRun<C> {
    fn tools(&self) -> Vec<Arc<dyn Tool<C>>> {
        let mut all = tools::all(&self.state);
        for kind in &self.state.set.skills {
            all.extend(kind.native_tools().iter().cloned());
        }
        all
    }

    fn instructions(&self) -> Option<String> {
        match self.state.set.is_empty() {
            true => None,
            false => Some(self.system_prompt()),
        }
    }
}

impl<C> State<C> {
    async fn sandbox_ready(&self) -> Result<(), String> {
        self.probe
            .get_or_init(|| sandbox::probe(&self.sandbox))
            .await
            .clone()
    }

    /// The workspace, made on first use.
    pub(crate) fn space(&self) -> std::io::Result<&Space> {
        if let Some(space) = self.space.get() {
            return Ok(space);
        }
        let _making = self.making.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(space) = self.space.get() {
            return Ok(space);
        }
        let workspace = Workspace::new(
            self.sandbox.max_workspace,
            self.sandbox.dangerously_unsandboxed,
        )?;
        let dir = Dir::from_std_file(workspace.root().try_clone()?);
        Ok(self.space.get_or_init(|| Space { workspace, dir }))
    }

    /// Marks a skill file as given in full; false when it was already.
    fn first_load(&self, key: &str) -> bool {
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        loaded.insert(key.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_run_has_its_own_workspace_and_shares_what_was_learnt_of_the_sandbox() {
        let run = SkillRun::<()>::new(Arc::new(SkillSet::new()), RunOptions::default()).unwrap();
        let fresh = run.fresh().unwrap();
        std::fs::write(run.workspace().unwrap().join("mine"), "the first run's").unwrap();
        assert!(!fresh.workspace().unwrap().join("mine").exists());
        assert!(Arc::ptr_eq(&run.state.probe, &fresh.state.probe));
    }
}
