//! Agent Skills in the CLI: found for `kite ask` and `kite chat` (`--skills DIR` adds
//! folders, `--no-skills` leaves them out), and `kite skills list|show|validate`.
//!
//! Skills are looked for, nearest first, in the folders `--skills` names, those
//! `[skills] paths` in kite.toml names, `.agents/skills/` in the working directory and its
//! parents, and `kite/skills` in the XDG config folder. A name found twice is said on
//! stderr; the first one found is kept. A project folder's `.agents/skills` (any but the
//! home folder's) is offered only once the folder is trusted (`kite trust FOLDER`), as a
//! kite.toml found there is: a cloned repository's skills reach the model's instructions.
//! The small local model is offered only the skills named for it (`--skills`, `[skills]
//! paths`): a few hundred tokens of skills drown its question.

use crate::config::{self, Loaded};
use crate::terminal::output::{errln, outln};
use crate::terminal::text::printable;
use clap::{Args, Subcommand};
use kite::Error;
use kite::skills::{
    Discovery, Root, RunOptions, SandboxOptions, Skill, SkillRun, SkillSet, conventional_roots,
};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

mod listing;

/// The skill flags of `kite ask` and `kite chat`.
#[derive(Args, Clone, Default)]
pub(crate) struct SkillArgs {
    /// Offer the skills in this folder (or archive) too, before any other (repeatable).
    #[arg(long = "skills", value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Offer no skills.
    #[arg(long, conflicts_with = "dirs")]
    pub no_skills: bool,
    /// Run skills' scripts with no sandbox, as yourself, with all your files and the
    /// network, where bubblewrap cannot run. Only for skills you have read and trust.
    #[arg(long)]
    pub dangerously_run_scripts_unsandboxed: bool,
}

#[derive(Subcommand)]
pub(crate) enum SkillsCommand {
    /// List the skills kite finds, nearest first; those of folders not yet trusted last.
    List {
        /// One JSON object per skill.
        #[arg(long)]
        json: bool,
        /// Look in this folder (or archive) too, before any other (repeatable).
        #[arg(long = "skills", value_name = "DIR")]
        dirs: Vec<PathBuf>,
    },
    /// Show one skill: where it is, its fields, its instructions and its files.
    Show {
        /// The skill's name.
        name: String,
        /// Look in this folder (or archive) too, before any other (repeatable).
        #[arg(long = "skills", value_name = "DIR")]
        dirs: Vec<PathBuf>,
    },
    /// Check skill folders or archives against the specification; exits 1 if any is
    /// invalid.
    Validate {
        /// Skill folders, `.skill` or `.zip` archives.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
}

/// Where archives are unpacked: `kite/skills` in the XDG cache folder (private to the
/// user), else a temporary folder of this process's own.
fn cache() -> Result<PathBuf, Error> {
    use std::os::unix::fs::DirBuilderExt;
    static FALLBACK: std::sync::OnceLock<Option<tempfile::TempDir>> = std::sync::OnceLock::new();
    let Some(dir) = config::cache_dir().map(|d| d.join("skills")) else {
        return FALLBACK
            .get_or_init(|| {
                tempfile::Builder::new()
                    .prefix("kite-skills-")
                    .tempdir()
                    .ok()
            })
            .as_ref()
            .map(|t| t.path().to_owned())
            .ok_or_else(|| Error::Config("cannot make a folder to unpack skills in".into()));
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .map_err(|e| Error::Config(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

/// Where skills are looked for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Looking {
    /// Where skills may be offered: trusted folders only.
    Trusted,
    /// Only where the user named: the local model's.
    Named,
}

/// What a search for skills found, and the project folders left out until trusted.
struct Found {
    skills: Discovery,
    untrusted: Vec<PathBuf>,
}

/// The skills found for `loaded` and the folders `dirs` names, nearest first.
fn find(loaded: &Loaded, dirs: &[PathBuf], looking: Looking) -> Result<Found, Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Config(format!("cannot find the working directory: {e}")))?;
    check_dirs(dirs, "--skills")?;
    let mut roots: Vec<Root> = dirs.iter().map(Root::explicit).collect();
    roots.extend(loaded.config.skills.paths.iter().map(Root::explicit));
    let home = std::env::var_os("HOME").and_then(|h| PathBuf::from(h).canonicalize().ok());
    let mut untrusted = Vec::new();
    if looking != Looking::Named {
        for root in conventional_roots(&cwd, config::config_dir().as_deref()) {
            // `.agents/skills` of a project folder, which a repository brings along.
            let project = root
                .path
                .parent()
                .filter(|p| p.file_name().is_some_and(|n| n == ".agents"))
                .and_then(Path::parent)
                .map(Path::to_path_buf);
            if let Some(project) = project
                && root.path.is_dir()
                && project.canonicalize().ok() != home
                && !crate::config::trust::folder_trusted(&project)
            {
                untrusted.push(project);
                continue;
            }
            roots.push(root);
        }
    }
    Ok(Found {
        skills: kite::skills::discover(&roots, &cache()?),
        untrusted,
    })
}

/// Says which project folders' skills wait for `kite trust`.
fn report_untrusted(untrusted: &[PathBuf]) {
    for dir in untrusted {
        let dir = printable(&dir.display().to_string()).into_owned();
        errln!(
            "kite: the skills in {dir}/.agents/skills are not offered until you trust the \
             folder: read them, then run `kite trust {dir}`"
        );
    }
}

/// Refuses a folder that is not there, naming it as `what` did.
fn check_dirs(dirs: &[PathBuf], what: &str) -> Result<(), Error> {
    for dir in dirs {
        std::fs::metadata(dir)
            .map_err(|e| Error::Config(format!("{what} {}: {e}", dir.display())))?;
    }
    Ok(())
}

/// Says on stderr what was found but not offered.
fn report(found: &Discovery) {
    for invalid in &found.invalid {
        let first = invalid.problems.first().map(|p| p.to_string());
        let more = invalid.problems.len().saturating_sub(1);
        errln!(
            "kite: skipped the skill at {}: {}{} (`kite skills validate` shows all)",
            printable(&invalid.path.display().to_string()),
            printable(first.as_deref().unwrap_or("it is not valid")),
            match more {
                0 => String::new(),
                n => format!(", and {n} more problems"),
            }
        );
    }
    for s in &found.shadowed {
        errln!(
            "kite: the skill {} at {} is hidden by the one at {}",
            printable(&s.name),
            printable(&s.ignored.display().to_string()),
            printable(&s.kept.display().to_string()),
        );
    }
    for e in &found.errors {
        errln!("kite: {}", printable(e));
    }
}

/// The skills for a session, as a run over a fresh workspace; `None` when there are none
/// or `--no-skills` says so. Says on stderr when their scripts cannot run here.
/// `local`: the small local model, which is offered only the skills named for it.
pub(crate) async fn for_session(
    args: &SkillArgs,
    loaded: &Loaded,
    local: bool,
) -> Result<Option<SkillRun>, Error> {
    if args.no_skills {
        return Ok(None);
    }
    let looking = match local {
        true => Looking::Named,
        false => Looking::Trusted,
    };
    let found = find(loaded, &args.dirs, looking)?;
    report_untrusted(&found.untrusted);
    offer(args, loaded, found.skills, true).await
}

/// The skills of the folders `dirs` alone, as a run over a fresh workspace (for a route
/// of `kite serve`).
pub(crate) async fn from_dirs(
    dirs: &[PathBuf],
    loaded: &Loaded,
) -> Result<Option<SkillRun>, Error> {
    check_dirs(dirs, "skills =")?;
    let roots: Vec<Root> = dirs.iter().map(Root::explicit).collect();
    let found = kite::skills::discover(&roots, &cache()?);
    let args = SkillArgs {
        dirs: dirs.to_vec(),
        ..SkillArgs::default()
    };
    offer(&args, loaded, found, false).await
}

/// The run over what was `found`; `session` says it is for `kite ask` or `kite chat`,
/// where `--no-skills` leaves them out.
async fn offer(
    args: &SkillArgs,
    loaded: &Loaded,
    found: Discovery,
    session: bool,
) -> Result<Option<SkillRun>, Error> {
    report(&found);
    if found.skills.is_empty() {
        return Ok(None);
    }
    let settings = &loaded.config.skills;
    let defaults = SandboxOptions::default();
    let options = RunOptions {
        sandbox: SandboxOptions {
            network: settings.network,
            allow_networks: settings.allow_networks.clone(),
            timeout: settings.timeout.unwrap_or(defaults.timeout),
            max_memory: settings.max_memory.or(defaults.max_memory),
            max_cpus: settings.max_cpus.or(defaults.max_cpus),
            max_tmp: settings.max_tmp.or(defaults.max_tmp),
            max_workspace: settings.max_workspace.or(defaults.max_workspace),
            dangerously_unsandboxed: args.dangerously_run_scripts_unsandboxed,
            ..defaults
        },
    };
    let run = SkillRun::new(Arc::new(SkillSet::from_discovery(&found)), options)
        .map_err(|e| Error::Config(format!("cannot set up the skills' workspace: {e}")))?;
    match run.can_run_scripts().await {
        Err(why) => errln!("kite: skills are offered, but their scripts cannot run: {why}"),
        Ok(()) if args.dangerously_run_scripts_unsandboxed => errln!(
            "kite: skills' scripts may run with no sandbox (--dangerously-run-scripts-unsandboxed)"
        ),
        Ok(()) => {}
    }
    if crate::terminal::logging::verbose() {
        let names: Vec<&str> = found.skills.iter().map(Skill::name).collect();
        match session {
            true => errln!(
                "kite: skills offered: {} (--no-skills leaves them out)",
                names.join(", ")
            ),
            false => errln!("kite: skills offered: {}", names.join(", ")),
        }
    }
    Ok(Some(run))
}

pub(crate) fn run(command: SkillsCommand, config: Option<&Path>) -> Result<(), ExitCode> {
    let fail = |e: Error| {
        errln!("kite: {e}");
        ExitCode::FAILURE
    };
    match command {
        SkillsCommand::List { json, dirs } => {
            let loaded = config::load(config).map_err(fail)?;
            listing::list(&loaded, &dirs, json).map_err(fail)
        }
        SkillsCommand::Show { name, dirs } => {
            let loaded = config::load(config).map_err(fail)?;
            listing::show(&loaded, &dirs, &name).map_err(fail)
        }
        SkillsCommand::Validate { paths } => {
            let cache = cache().map_err(fail)?;
            let mut failed = false;
            for path in &paths {
                match Skill::load(path, &cache) {
                    Ok(skill) => outln!(
                        "{}: valid skill {}",
                        printable(&path.display().to_string()),
                        skill.name()
                    ),
                    Err(invalid) => {
                        failed = true;
                        errln!("{}", printable(&invalid.to_string()));
                    }
                }
            }
            if failed {
                Err(ExitCode::FAILURE)
            } else {
                Ok(())
            }
        }
    }
}
