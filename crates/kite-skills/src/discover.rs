//! Finding skills: the folders a user names, `.agents/skills/` in the working directory and
//! each of its parents (the convention agents share), and kite's own folder under
//! `$XDG_CONFIG_HOME`. Each folder is searched recursively, hidden folders included; a name
//! found twice is reported and the first one, the nearer, wins. A conventional folder that
//! another user owns or may write in is left out (and said to be), and so is any folder
//! below it that another user owns or may write in.

use crate::archive::is_archive;
use crate::skill::{Invalid, Skill, find_skill_md};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// How deep below a folder skills are looked for.
pub const MAX_DEPTH: usize = 8;
/// The most folders and files looked at below one folder.
pub const MAX_ENTRIES: usize = 20_000;

/// A place to look for skills.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Root {
    /// A folder (searched), a skill's folder, or an archive.
    pub path: PathBuf,
    /// Named by the user: a missing one is an error, not silence.
    pub explicit: bool,
}

impl Root {
    /// A place the user named.
    pub fn explicit(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            explicit: true,
        }
    }

    /// A conventional place, which need not exist.
    pub fn conventional(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            explicit: false,
        }
    }
}

/// The conventional places, nearest first: `.agents/skills/` in `cwd` and each parent, then
/// `kite/skills` in the user's configuration folder (`config_home`, usually
/// `$XDG_CONFIG_HOME` or `~/.config`).
pub fn conventional_roots(cwd: &Path, config_home: Option<&Path>) -> Vec<Root> {
    let mut roots: Vec<Root> = cwd
        .ancestors()
        .map(|dir| Root::conventional(dir.join(".agents").join("skills")))
        .collect();
    if let Some(home) = config_home {
        roots.push(Root::conventional(home.join("kite").join("skills")));
    }
    roots
}

/// A skill left out because one of the same name was found nearer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shadowed {
    /// The name both have.
    pub name: String,
    /// Where the skill in use is.
    pub kept: PathBuf,
    /// Where the one left out is.
    pub ignored: PathBuf,
}

/// What a search found.
#[derive(Debug, Default)]
pub struct Discovery {
    /// The valid skills, one per name, in the order found.
    pub skills: Vec<Skill>,
    /// Skills that are not valid, with their problems; they are left out.
    pub invalid: Vec<Invalid>,
    /// Names found more than once.
    pub shadowed: Vec<Shadowed>,
    /// Places the user named that could not be searched, and searches cut short.
    pub errors: Vec<String>,
}

/// Searches `roots` in order; archives are unpacked under `cache`.
pub fn discover(roots: &[Root], cache: &Path) -> Discovery {
    let mut found = Discovery::default();
    let mut visited = HashSet::new();
    for root in roots {
        let mut candidates = Vec::new();
        match std::fs::metadata(&root.path) {
            Err(e) if root.explicit => found.errors.push(format!(
                "cannot look for skills in {}: {e}",
                root.path.display()
            )),
            Err(_) => continue,
            Ok(meta) => {
                if let (false, Err(why)) = (root.explicit, owned_by_user(&root.path)) {
                    found.errors.push(format!(
                        "left out the skills in {}: {why}",
                        root.path.display()
                    ));
                    continue;
                }
                if meta.is_file() {
                    candidates.push(root.path.clone());
                } else {
                    let mut budget = MAX_ENTRIES;
                    let mut walking = Walk {
                        budget: &mut budget,
                        visited: &mut visited,
                        out: &mut candidates,
                        guarded: !root.explicit,
                        left_out: &mut found.errors,
                    };
                    walking.walk(&root.path, 0);
                    if budget == 0 {
                        found.errors.push(format!(
                            "stopped looking for skills in {} after {MAX_ENTRIES} entries",
                            root.path.display()
                        ));
                    }
                }
            }
        }
        for path in candidates {
            match Skill::load(&path, cache) {
                Err(invalid) => found.invalid.push(invalid),
                Ok(skill) => match found.skills.iter().find(|s| s.name() == skill.name()) {
                    Some(kept) => found.shadowed.push(Shadowed {
                        name: skill.meta.name.clone(),
                        kept: kept.source.clone(),
                        ignored: skill.source,
                    }),
                    None => found.skills.push(skill),
                },
            }
        }
    }
    found
}

/// Whether a conventional folder (`.agents/skills`), and the `.agents` folder holding it,
/// belong to the user running kite (or to root) and are writable by no one else: one in
/// a shared folder above the working directory (`/tmp/.agents`) may be anyone's.
fn owned_by_user(path: &Path) -> Result<(), String> {
    for dir in [Some(path), path.parent()].into_iter().flatten() {
        private(dir)?;
    }
    Ok(())
}

/// Whether `dir` (or a file) belongs to the user running kite (or to root) and no one else
/// may write in it.
fn private(dir: &Path) -> Result<(), String> {
    let meta = std::fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    private_meta(dir, &meta)
}

/// How many entries, and how deep, a skill's folder is looked through for others' files.
const MAX_TREE: usize = 50_000;
const MAX_TREE_DEPTH: usize = 16;

/// Whether everything in a skill's folder, at any depth, is [`private`]: a script or
/// reference another user may change is as bad as a `SKILL.md` they may. Links are not
/// followed (only their folder's owner may replace them, and inside the sandbox they lead
/// nowhere else; `SKILL.md`, which kite reads itself, is checked where it leads). `.git`,
/// which nothing of the skill reads, is not looked in, nor is a folder kite cannot read
/// (nor then can the skill's commands).
fn private_tree(dir: &Path) -> Result<(), String> {
    let mut budget = MAX_TREE;
    let mut folders = vec![(dir.to_owned(), 0)];
    while let Some((folder, depth)) = folders.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries {
            let path = entry
                .map_err(|e| format!("{}: {e}", folder.display()))?
                .path();
            budget = budget
                .checked_sub(1)
                .ok_or_else(|| format!("it holds more than {MAX_TREE} entries"))?;
            let meta =
                std::fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if meta.file_type().is_symlink() {
                continue;
            }
            private_meta(&path, &meta)?;
            if meta.is_dir() && path.file_name() != Some(".git".as_ref()) {
                if depth + 1 > MAX_TREE_DEPTH {
                    return Err(format!("it is more than {MAX_TREE_DEPTH} folders deep"));
                }
                folders.push((path, depth + 1));
            }
        }
    }
    Ok(())
}

fn private_meta(dir: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me && meta.uid() != 0 {
        return Err(format!(
            "{} belongs to another user (uid {})",
            dir.display(),
            meta.uid()
        ));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!("others may write in {}", dir.display()));
    }
    Ok(())
}

/// A search below one folder.
struct Walk<'a> {
    /// How many more entries may be looked at.
    budget: &'a mut usize,
    visited: &'a mut HashSet<PathBuf>,
    out: &'a mut Vec<PathBuf>,
    /// Below a conventional folder: folders another user owns or may write in are left
    /// out, and said to be in `left_out`.
    guarded: bool,
    left_out: &'a mut Vec<String>,
}

impl Walk<'_> {
    /// Collects skill folders and archives under `dir`, in name order. A skill's own
    /// folder is not searched further; links to folders are followed once.
    fn walk(&mut self, dir: &Path, depth: usize) {
        let Ok(real) = dir.canonicalize() else { return };
        if !self.visited.insert(real) {
            return;
        }
        if self.guarded
            && depth > 0
            && let Err(why) = private(dir)
        {
            self.left_out
                .push(format!("left out the skills in {}: {why}", dir.display()));
            return;
        }
        if let Some(skill_md) = find_skill_md(dir) {
            // SKILL.md is read as kite, outside the sandbox: followed if it is a link.
            let checked = match self.guarded {
                true => private(&skill_md).and_then(|()| private_tree(dir)),
                false => Ok(()),
            };
            match checked {
                Err(why) => self
                    .left_out
                    .push(format!("left out the skill in {}: {why}", dir.display())),
                Ok(()) => self.out.push(dir.to_owned()),
            }
            return;
        }
        if depth >= MAX_DEPTH {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
        entries.sort();
        for path in entries {
            if *self.budget == 0 {
                return;
            }
            *self.budget -= 1;
            let name = path.file_name().unwrap_or_default();
            if name == ".git" || name == "node_modules" {
                continue;
            }
            if path.is_dir() {
                self.walk(&path, depth + 1);
            } else if is_archive(&path) && path.is_file() {
                match (self.guarded, private(&path)) {
                    (true, Err(why)) => self
                        .left_out
                        .push(format!("left out the skill {}: {why}", path.display())),
                    _ => self.out.push(path),
                }
            }
        }
    }
}
