//! Agent Skills for kite.
//!
//! A skill (the open format at agentskills.io) is a folder with a `SKILL.md`, YAML
//! frontmatter (name, description) and Markdown instructions, and optional `scripts/`,
//! `references/` and `assets/`. This crate:
//!
//! - loads and validates skills ([`Skill::load`]), from folders and `.skill`/`.zip` archives,
//!   with the verdicts of the specification's reference validator; every problem names
//!   its file, line and rule ([`Problem`]);
//! - finds them ([`discover`]) in `.agents/skills/` folders, kite's config folder and the
//!   places a user names;
//! - discloses them step by step ([`SkillRun`]): the model first sees each skill's name and
//!   description, loads the instructions when it wants them, and reads referenced files
//!   one at a time, through tools that work in a per-run workspace;
//! - runs their scripts in a bubblewrap sandbox ([`sandbox`]), and refuses to run them
//!   without one unless told so in as many words;
//! - serves programs that bring their own HTTP client ([`client`]): tools and system prompt
//!   for each API, tool calls out of raw JSON, results back in, and the whole loop.
//!
//! Two skill folders searched: one valid, and one whose name differs from its folder's,
//! which is left out with the rule it breaks:
//!
//! ```
//! use kite_skills::{Root, Rule, discover};
//!
//! let tmp = tempfile::tempdir()?;
//! let root = tmp.path().join("skills");
//! for (folder, name) in [("release-notes", "release-notes"), ("changelog", "change-log")] {
//!     std::fs::create_dir_all(root.join(folder))?;
//!     let text = format!("---\nname: {name}\ndescription: Writes release notes.\n---\n# Steps\n");
//!     std::fs::write(root.join(folder).join("SKILL.md"), text)?;
//! }
//! let found = discover(&[Root::explicit(root.clone())], &tmp.path().join("cache"));
//! assert_eq!(found.skills.len(), 1);
//! assert_eq!(found.skills[0].name(), "release-notes");
//! assert_eq!(found.skills[0].body, "# Steps\n");
//! assert_eq!(found.invalid[0].problems[0].rule, Rule::NameFolder);
//! # Ok::<(), std::io::Error>(())
//! ```

mod archive;
pub mod client;
mod discover;
mod frontmatter;
mod prompt;
mod run;
pub mod sandbox;
mod set;
mod skill;
mod validate;

pub use archive::{MAX_ARCHIVE, MAX_MEMBER, MAX_MEMBERS, MAX_TOTAL};
pub use discover::{
    Discovery, MAX_DEPTH, MAX_ENTRIES, Root, Shadowed, conventional_roots, discover,
};
pub use prompt::available_skills;
pub use run::{RunOptions, SkillRun};
pub use sandbox::SandboxOptions;
pub use set::{NativeSkill, SkillSet};
pub use skill::{Invalid, MAX_SKILL_MD, Skill};
pub use validate::{
    FIELDS, Frontmatter, MAX_COMPATIBILITY, MAX_DESCRIPTION, MAX_NAME, Problem, Rule,
};
