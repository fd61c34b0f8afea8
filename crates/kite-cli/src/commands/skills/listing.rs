//! `kite skills list` and `kite skills show`: the skills a session is offered, found as
//! `kite ask` finds them (so a name is shadowed as it is there), and after them those of
//! project folders that wait for `kite trust`, with what is wrong with them.

use super::{Looking, cache, find, report, report_untrusted};
use crate::config::Loaded;
use crate::terminal::output::{errln, outln};
use crate::terminal::text::printable;
use kite::Error;
use kite::skills::{Discovery, Root, Skill};
use serde_json::json;
use std::path::{Path, PathBuf};

/// What a listing sees.
struct Listing {
    offered: Discovery,
    waiting: Vec<Skill>,
    untrusted: Vec<PathBuf>,
}

fn listing(loaded: &Loaded, dirs: &[PathBuf]) -> Result<Listing, Error> {
    let mut found = find(loaded, dirs, Looking::Trusted)?;
    let roots: Vec<Root> = (found.untrusted.iter())
        .map(|p| Root::conventional(p.join(".agents/skills")))
        .collect();
    let mut waiting = Vec::new();
    if !roots.is_empty() {
        let waits = kite::skills::discover(&roots, &cache()?);
        waiting = waits.skills;
        found.skills.invalid.extend(waits.invalid);
        found.skills.errors.extend(waits.errors);
    }
    Ok(Listing {
        offered: found.skills,
        waiting,
        untrusted: found.untrusted,
    })
}

/// `kite skills list`.
pub(super) fn list(loaded: &Loaded, dirs: &[PathBuf], json: bool) -> Result<(), Error> {
    let listed = listing(loaded, dirs)?;
    report(&listed.offered);
    report_untrusted(&listed.untrusted);
    if listed.offered.skills.is_empty() && listed.waiting.is_empty() && !json {
        errln!(
            "kite: no skills found (looked in --skills, [skills] paths, .agents/skills here \
             and above, and kite/skills in the config folder)"
        );
    }
    let all = listed.offered.skills.iter().map(|s| (s, true));
    for (skill, offered) in all.chain(listed.waiting.iter().map(|s| (s, false))) {
        if json {
            let mut shown = skill_json(skill);
            shown["offered"] = json!(offered);
            outln!("{shown}");
        } else {
            outln!(
                "{}  {}{}\n    {}",
                skill.name(),
                printable(&skill.source.display().to_string()),
                if offered {
                    ""
                } else {
                    "  (not offered until trusted)"
                },
                printable(&one_line(skill.description()))
            );
        }
    }
    Ok(())
}

/// `kite skills show NAME`: the one a session is offered, else one that waits for
/// `kite trust`.
pub(super) fn show(loaded: &Loaded, dirs: &[PathBuf], name: &str) -> Result<(), Error> {
    let listed = listing(loaded, dirs)?;
    let found = &listed.offered;
    let offered = found.skills.iter().find(|s| s.name() == name);
    let waiting = listed.waiting.iter().find(|s| s.name() == name);
    let Some(skill) = offered.or(waiting) else {
        report(found);
        let names: Vec<&str> = (found.skills.iter().chain(&listed.waiting))
            .map(Skill::name)
            .collect();
        return Err(Error::Config(format!(
            "no skill {:?} found (found: {})",
            printable(name),
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )));
    };
    show_one(skill);
    if offered.is_none() {
        outln!("\n(not offered until its folder is trusted: `kite trust`)");
    }
    Ok(())
}

/// A skill for `list --json`.
fn skill_json(skill: &Skill) -> serde_json::Value {
    let m = &skill.meta;
    json!({
        "name": m.name,
        "description": m.description,
        "path": skill.source,
        "dir": skill.dir,
        "license": m.license,
        "compatibility": m.compatibility,
        "allowed_tools": m.allowed_tools,
        "metadata": m.metadata,
    })
}

/// `text` on one line, for a listing.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A skill's fields, its files, then its instructions.
fn show_one(skill: &Skill) {
    let m = &skill.meta;
    outln!("name: {}", m.name);
    outln!("description: {}", printable(&m.description));
    outln!(
        "location: {}",
        printable(&skill.source.display().to_string())
    );
    let optional = [
        ("license", &m.license),
        ("compatibility", &m.compatibility),
        ("allowed-tools", &m.allowed_tools),
    ];
    for (field, value) in optional {
        if let Some(v) = value {
            outln!("{field}: {}", printable(v));
        }
    }
    for (key, value) in &m.metadata {
        outln!("metadata.{}: {}", printable(key), printable(value));
    }
    let mut files = Vec::new();
    list_files(&skill.dir, Path::new(""), &mut files);
    if !files.is_empty() {
        outln!("files:");
        for f in files {
            outln!("  {}", printable(&f.display().to_string()));
        }
    }
    outln!("\n{}", printable(skill.body.trim_end()));
}

/// The files under `dir` (relative to the skill's folder, not following links), at most
/// a few hundred.
fn list_files(dir: &Path, rel: &Path, out: &mut Vec<PathBuf>) {
    const MAX: usize = 500;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        if out.len() >= MAX {
            return;
        }
        let Ok(kind) = e.file_type() else { continue };
        let path = rel.join(e.file_name());
        if kind.is_dir() {
            list_files(&e.path(), &path, out);
        } else {
            out.push(path);
        }
    }
}
