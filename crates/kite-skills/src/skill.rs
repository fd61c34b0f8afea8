//! A skill: its checked frontmatter, its instructions, and where its files are.

use crate::archive;
use crate::validate::{self, Frontmatter, Problem, Rule};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest `SKILL.md` read (1 MiB): instructions are meant to be read by a model.
pub const MAX_SKILL_MD: u64 = 1024 * 1024;

/// A skill loaded from a folder or an archive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skill {
    /// The checked frontmatter: name, description and the optional fields.
    pub meta: Frontmatter,
    /// The instructions: the Markdown after the frontmatter.
    pub body: String,
    /// The folder holding `SKILL.md`, its scripts, references and assets (for an archive,
    /// where it was unpacked).
    pub dir: PathBuf,
    /// The `SKILL.md` (or `skill.md`) file.
    pub file: PathBuf,
    /// Where the skill came from: its folder, or the archive.
    pub source: PathBuf,
}

/// A skill that could not be loaded, with every problem found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Invalid {
    /// The folder or archive.
    pub path: PathBuf,
    /// What is wrong, in file order as far as there is one.
    pub problems: Vec<Problem>,
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} is not a valid skill:", self.path.display())?;
        for p in &self.problems {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

impl Invalid {
    pub(crate) fn one(path: &Path, file: &Path, rule: Rule, message: String) -> Self {
        Self {
            path: path.to_owned(),
            problems: vec![Problem {
                file: file.to_owned(),
                line: None,
                rule,
                message,
            }],
        }
    }
}

impl Skill {
    /// Loads the skill at `path`: a folder with a `SKILL.md`, that file itself, or a
    /// `.skill` / `.zip` archive (unpacked, after its checks, under `cache`).
    pub fn load(path: &Path, cache: &Path) -> Result<Self, Invalid> {
        if archive::is_archive(path) && path.is_file() {
            return archive::load(path, cache);
        }
        Self::load_dir(path)
    }

    /// Loads the skill in the folder `dir` (or whose `SKILL.md` is `dir`).
    pub fn load_dir(dir: &Path) -> Result<Self, Invalid> {
        let dir = match dir.file_name() {
            Some(n) if n.eq_ignore_ascii_case("skill.md") && dir.is_file() => {
                dir.parent().unwrap_or(Path::new("."))
            }
            _ => dir,
        };
        Self::load_from(dir, dir)
    }

    /// Loads the folder `dir`, saying it came from `source`.
    pub(crate) fn load_from(dir: &Path, source: &Path) -> Result<Self, Invalid> {
        let Ok(meta) = std::fs::metadata(dir) else {
            return Err(Invalid::one(
                source,
                dir,
                Rule::MissingFile,
                format!("No such folder: {}", dir.display()),
            ));
        };
        if !meta.is_dir() {
            return Err(Invalid::one(
                source,
                dir,
                Rule::MissingFile,
                format!("Not a directory: {}", dir.display()),
            ));
        }
        let Some(file) = find_skill_md(dir) else {
            return Err(Invalid::one(
                source,
                dir,
                Rule::MissingFile,
                "Missing required file: SKILL.md".into(),
            ));
        };
        let text = read_text(&file).map_err(|message| Invalid {
            path: source.to_owned(),
            problems: vec![Problem {
                file: file.clone(),
                line: None,
                rule: Rule::Unreadable,
                message,
            }],
        })?;
        // The folder's own name, as the reference compares it (`.` has none).
        let folder = folder_name(dir);
        let (meta, body) =
            validate::check(&file, Some(&folder), &text).map_err(|problems| Invalid {
                path: source.to_owned(),
                problems,
            })?;
        Ok(Self {
            meta,
            body,
            dir: dir.to_owned(),
            file,
            source: source.to_owned(),
        })
    }

    /// The skill's name.
    pub fn name(&self) -> &str {
        &self.meta.name
    }

    /// What the skill does and when to use it.
    pub fn description(&self) -> &str {
        &self.meta.description
    }
}

/// `SKILL.md`, else `skill.md`, as the reference library looks for them. A folder of that
/// name does not count.
pub(crate) fn find_skill_md(dir: &Path) -> Option<PathBuf> {
    ["SKILL.md", "skill.md"]
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// The name a folder is compared with: the last component as given (`..` and `.` resolved
/// first, since a skill checked from inside its folder has a name too).
fn folder_name(dir: &Path) -> String {
    let named = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    named
        .or_else(|| {
            let real = dir.canonicalize().ok()?;
            Some(real.file_name()?.to_string_lossy().into_owned())
        })
        .unwrap_or_default()
}

/// A text file of at most [`MAX_SKILL_MD`] bytes.
fn read_text(file: &Path) -> Result<String, String> {
    let mut bytes = Vec::new();
    std::fs::File::open(file)
        .and_then(|f| f.take(MAX_SKILL_MD + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("Cannot read {}: {e}", file.display()))?;
    if bytes.len() as u64 > MAX_SKILL_MD {
        return Err(format!(
            "{} is larger than {} KiB",
            file.display(),
            MAX_SKILL_MD / 1024
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{} is not UTF-8 text (byte {} is not)",
            file.display(),
            e.utf8_error().valid_up_to()
        )
    })
}
