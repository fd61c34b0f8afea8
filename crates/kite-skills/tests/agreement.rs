//! kite's verdicts against the reference validator's (`agentskills validate`, from
//! `skills-ref`), on every test skill and on more written here: the same skills pass, and
//! the failures break the same rules.

use kite_skills::{Rule, Skill};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/skills")
}

/// Every folder under `valid/` and `broken/` that is a test skill.
fn fixtures() -> Vec<PathBuf> {
    let mut all = Vec::new();
    for group in ["valid", "broken"] {
        for entry in std::fs::read_dir(testdata().join(group)).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().unwrap().to_string_lossy().starts_with('.') {
                // A hidden collection: the skills inside it.
                for inner in std::fs::read_dir(&path).unwrap() {
                    all.push(inner.unwrap().path());
                }
            } else {
                all.push(path);
            }
        }
    }
    all.sort();
    all
}

/// More cases, each a folder name and a SKILL.md (`None`: no file).
fn written_here() -> Vec<(&'static str, Option<String>)> {
    let fm = |body: &str| Some(format!("---\n{body}\n---\n# Instructions\n"));
    vec![
        (
            "mid-line-end",
            Some("---\nname: mid-line-end\ndescription: a---b\n".into()),
        ),
        ("123", fm("name: 123\ndescription: numbers stay text")),
        ("e-num", fm("name: 123\ndescription: d")),
        (
            "crlf",
            Some("---\r\nname: crlf\r\ndescription: d\r\n---\r\n".into()),
        ),
        ("full", fm("name: ｆｕｌｌ\ndescription: full width")),
        ("café", fm("name: café\ndescription: accents are letters")),
        (
            "mark",
            fm("name: \"mark\\u0301\"\ndescription: a combining mark"),
        ),
        ("title", fm("name: ǅx\ndescription: title case")),
        (
            "quoted-spaces",
            fm("name: \"  quoted-spaces  \"\ndescription: trimmed"),
        ),
        ("blank-desc", fm("name: blank-desc\ndescription: \"   \"")),
        ("list-desc", fm("name: list-desc\ndescription:\n  - a")),
        (
            "empty-compat",
            fm("name: empty-compat\ndescription: d\ncompatibility:"),
        ),
        (
            "meta-any",
            fm("name: meta-any\ndescription: d\nmetadata: hello\nlicense:\n  a: b"),
        ),
        (
            "nested-meta",
            fm("name: nested-meta\ndescription: d\nmetadata:\n  v: 1\n  n:\n    a: b"),
        ),
        (
            "block-1024",
            fm(&format!(
                "name: block-1024\ndescription: |\n  {}",
                "x".repeat(1024)
            )),
        ),
        (
            "leading-blank",
            Some("\n---\nname: leading-blank\ndescription: d\n---\n".into()),
        ),
        ("only-comment", Some("---\n# nothing\n---\n".into())),
        ("scalar-fm", Some("---\njust text\n---\n".into())),
        (
            "four-dashes",
            Some("----\nname: four-dashes\ndescription: d\n---\n".into()),
        ),
        (
            "tab-indent",
            fm("name: tab-indent\ndescription: d\nmetadata:\n\ta: b"),
        ),
        ("lower-skill-md", None),
        (
            "many-problems",
            fm("name: -Bad--\nauthor: x\ndescription:\ncompatibility:\n  - a"),
        ),
        ("not-utf8", None),
    ]
}

fn write_extra(root: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for (name, text) in written_here() {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        match (name, text) {
            ("lower-skill-md", _) => std::fs::write(
                dir.join("skill.md"),
                "---\nname: lower-skill-md\ndescription: d\n---\n",
            )
            .unwrap(),
            ("not-utf8", _) => std::fs::write(
                dir.join("SKILL.md"),
                b"---\nname: not-utf8\ndescription: \xff\xfe\n---\n",
            )
            .unwrap(),
            (_, Some(text)) => std::fs::write(dir.join("SKILL.md"), text).unwrap(),
            (_, None) => {}
        }
        dirs.push(dir);
    }
    dirs
}

/// The rule a reference message stands for.
fn rule_of(message: &str) -> Rule {
    let table = [
        ("Missing required file", Rule::MissingFile),
        ("must start with YAML frontmatter", Rule::NoFrontmatter),
        ("not properly closed", Rule::Unclosed),
        ("Invalid YAML", Rule::Yaml),
        ("must be a YAML mapping", Rule::NotMapping),
        ("Unexpected fields", Rule::UnknownField),
        (
            "Missing required field in frontmatter: name",
            Rule::NameMissing,
        ),
        ("Field 'name'", Rule::NameEmpty),
        ("character limit", Rule::NameTooLong),
        ("must be lowercase", Rule::NameCase),
        ("start or end with a hyphen", Rule::NameHyphenEdge),
        ("consecutive hyphens", Rule::NameDoubleHyphen),
        ("invalid characters", Rule::NameCharacters),
        ("Directory name", Rule::NameFolder),
        (
            "Missing required field in frontmatter: description",
            Rule::DescriptionMissing,
        ),
        ("Field 'description'", Rule::DescriptionEmpty),
        ("Field 'compatibility'", Rule::CompatibilityType),
    ];
    if message.starts_with("Description exceeds") {
        return Rule::DescriptionTooLong;
    }
    if message.starts_with("Compatibility exceeds") {
        return Rule::CompatibilityTooLong;
    }
    table
        .iter()
        .find(|(text, _)| message.contains(text))
        .map(|(_, rule)| *rule)
        .unwrap_or_else(|| panic!("a reference message kite has no rule for: {message}"))
}

/// The reference's verdict: `None` when valid, else the rules broken. A crash (invalid
/// UTF-8 is one) is a failure with no rule.
fn reference(dir: &Path) -> Option<BTreeSet<Rule>> {
    let out = std::process::Command::new(kite_testkit::mcp::agentskills())
        .arg("validate")
        .arg(dir)
        .output()
        .unwrap();
    match out.status.code() {
        Some(0) => None,
        Some(1) => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            Some(
                stderr
                    .lines()
                    .filter_map(|l| l.strip_prefix("  - "))
                    .map(rule_of)
                    .collect(),
            )
        }
        other => panic!("agentskills validate {} exited {other:?}", dir.display()),
    }
}

fn kite(dir: &Path) -> Option<BTreeSet<Rule>> {
    match Skill::load_dir(dir) {
        Ok(_) => None,
        Err(invalid) => Some(invalid.problems.iter().map(|p| p.rule).collect()),
    }
}

#[test]
fn kite_agrees_with_the_reference_validator() {
    let extra = tempfile::tempdir().unwrap();
    let mut dirs = fixtures();
    dirs.extend(write_extra(extra.path()));
    let (mut valid, mut invalid, mut disagreements) = (0, 0, Vec::new());
    for dir in &dirs {
        let (theirs, ours) = (reference(dir), kite(dir));
        match (&theirs, &ours) {
            (None, None) => valid += 1,
            // A crash of the reference (no message) only needs kite to refuse too.
            (Some(t), Some(o)) if t == o || (t.is_empty() && o.contains(&Rule::Unreadable)) => {
                invalid += 1
            }
            _ => disagreements.push(format!(
                "{}: reference {theirs:?}, kite {ours:?}",
                dir.display()
            )),
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    // Every test skill under valid/ passed, and every broken one failed.
    assert!(
        valid >= 5 + 10 && invalid >= 25 + 8,
        "{valid} valid, {invalid} invalid"
    );
}

#[test]
fn every_broken_fixture_is_refused_with_file_line_and_rule() {
    for entry in std::fs::read_dir(testdata().join("broken")).unwrap() {
        let dir = entry.unwrap().path();
        let invalid = Skill::load_dir(&dir).unwrap_err();
        for problem in &invalid.problems {
            let shown = problem.to_string();
            assert!(shown.contains(&*dir.to_string_lossy()), "{shown}");
            assert!(
                shown.ends_with(&format!("[{}]", problem.rule.as_str())),
                "{shown}"
            );
            let has_file = problem.file.ends_with("SKILL.md");
            // Only a missing file and an unclosed frontmatter have no line to name.
            if has_file && !matches!(problem.rule, Rule::Unclosed | Rule::MissingFile) {
                assert!(problem.line.is_some(), "{shown}");
            }
        }
    }
}
