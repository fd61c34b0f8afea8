//! The specification's rules for a `SKILL.md`, with the verdicts of its reference library
//! (`skills-ref`; what it does is written down in `docs/agent-skills-validator.md`): every
//! problem is found, each one names the file, the line and the rule.
//!
//! It is longer than most files here: the rules, their reference texts and the checks are
//! kept side by side, so that one rule can be read, and compared with the reference, in
//! one place.

use crate::frontmatter::{self, Entry, Node, SplitError};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use unicode_general_category::{GeneralCategory, get_general_category};
use unicode_normalization::UnicodeNormalization;

/// The fields a skill's frontmatter may have.
pub const FIELDS: [&str; 6] = [
    "allowed-tools",
    "compatibility",
    "description",
    "license",
    "metadata",
    "name",
];
/// The most characters in a name.
pub const MAX_NAME: usize = 64;
/// The most characters in a description.
pub const MAX_DESCRIPTION: usize = 1024;
/// The most characters in `compatibility`.
pub const MAX_COMPATIBILITY: usize = 500;

/// Which rule a problem breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Rule {
    /// No `SKILL.md` in the folder.
    MissingFile,
    /// The file could not be read, or is not UTF-8.
    Unreadable,
    /// The file does not start with `---`.
    NoFrontmatter,
    /// No closing `---`.
    Unclosed,
    /// The frontmatter is not YAML as the specification reads it.
    Yaml,
    /// The frontmatter is not a map of fields.
    NotMapping,
    /// A field the specification does not define.
    UnknownField,
    /// No `name`.
    NameMissing,
    /// `name` is empty or not text.
    NameEmpty,
    /// `name` is longer than 64 characters.
    NameTooLong,
    /// `name` has upper-case letters.
    NameCase,
    /// `name` starts or ends with a hyphen.
    NameHyphenEdge,
    /// `name` has `--`.
    NameDoubleHyphen,
    /// `name` has characters other than letters, digits and hyphens.
    NameCharacters,
    /// `name` differs from the folder's name.
    NameFolder,
    /// No `description`.
    DescriptionMissing,
    /// `description` is empty or not text.
    DescriptionEmpty,
    /// `description` is longer than 1024 characters.
    DescriptionTooLong,
    /// `compatibility` is not text.
    CompatibilityType,
    /// `compatibility` is longer than 500 characters.
    CompatibilityTooLong,
}

impl Rule {
    /// The rule's short name, as problems print it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MissingFile => "missing-file",
            Self::Unreadable => "unreadable",
            Self::NoFrontmatter => "no-frontmatter",
            Self::Unclosed => "unclosed-frontmatter",
            Self::Yaml => "yaml",
            Self::NotMapping => "not-a-mapping",
            Self::UnknownField => "unknown-field",
            Self::NameMissing => "name-missing",
            Self::NameEmpty => "name-empty",
            Self::NameTooLong => "name-too-long",
            Self::NameCase => "name-lowercase",
            Self::NameHyphenEdge => "name-hyphen-edge",
            Self::NameDoubleHyphen => "name-double-hyphen",
            Self::NameCharacters => "name-characters",
            Self::NameFolder => "name-folder",
            Self::DescriptionMissing => "description-missing",
            Self::DescriptionEmpty => "description-empty",
            Self::DescriptionTooLong => "description-too-long",
            Self::CompatibilityType => "compatibility-type",
            Self::CompatibilityTooLong => "compatibility-too-long",
        }
    }
}

/// One problem with a skill: the file, the line (when it has one), the rule, and what is
/// wrong, in the reference validator's words where it has words for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The file (or, for a missing `SKILL.md`, the folder).
    pub file: PathBuf,
    /// The 1-based line.
    pub line: Option<usize>,
    /// The rule broken.
    pub rule: Rule,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {} [{}]", self.message, self.rule.as_str())
    }
}

/// A skill's frontmatter, checked.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Frontmatter {
    /// The name (trimmed, NFKC).
    pub name: String,
    /// The description, trimmed.
    pub description: String,
    /// `license`, as text.
    pub license: Option<String>,
    /// `compatibility`.
    pub compatibility: Option<String>,
    /// `metadata`: extra data as text (a nested value is written out as text).
    pub metadata: BTreeMap<String, String>,
    /// `allowed-tools`, space-separated (a list is joined with spaces).
    pub allowed_tools: Option<String>,
}

impl Frontmatter {
    /// Checks `text`, the content of a `SKILL.md`, as [`Skill::load`](crate::Skill::load)
    /// checks the file once read: line ends made `\n`, the frontmatter split off and read
    /// as the reference library reads it, then every rule. `folder` is the name of the
    /// folder the file is in, which the skill's name must match (`None`: no folder to
    /// match). Returns the frontmatter and the Markdown body after it, or every problem
    /// found, each naming the file `SKILL.md`. The size limit
    /// ([`MAX_SKILL_MD`](crate::MAX_SKILL_MD) bytes) is the caller's to keep.
    ///
    /// ```
    /// use kite_skills::{Frontmatter, Rule};
    ///
    /// let text = "---\nname: pdf\ndescription: Reads PDFs.\n---\n# PDF\n";
    /// let (meta, body) = Frontmatter::check(text, Some("pdf")).unwrap();
    /// assert_eq!((meta.name.as_str(), body.as_str()), ("pdf", "# PDF\n"));
    /// let problems = Frontmatter::check(text, Some("pdfs")).unwrap_err();
    /// assert_eq!(problems[0].rule, Rule::NameFolder);
    /// ```
    pub fn check(text: &str, folder: Option<&str>) -> Result<(Frontmatter, String), Vec<Problem>> {
        check(Path::new("SKILL.md"), folder, text)
    }
}

/// Checks the text of `file`, a skill's `SKILL.md` in a folder named `folder` (`None` for a
/// skill with no folder, a native one). Returns the frontmatter and the Markdown body, or
/// every problem found.
pub(crate) fn check(
    file: &Path,
    folder: Option<&str>,
    text: &str,
) -> Result<(Frontmatter, String), Vec<Problem>> {
    let problem = |line: Option<usize>, rule, message: String| Problem {
        file: file.to_owned(),
        line,
        rule,
        message,
    };
    let text = frontmatter::normalize_newlines(text);
    let split = frontmatter::split(&text).map_err(|e| {
        vec![match e {
            SplitError::NotStarted => problem(
                Some(1),
                Rule::NoFrontmatter,
                "SKILL.md must start with YAML frontmatter (---)".into(),
            ),
            SplitError::NotClosed => problem(
                None,
                Rule::Unclosed,
                "SKILL.md frontmatter not properly closed with ---".into(),
            ),
        }]
    })?;
    let entries = match frontmatter::parse(&split.yaml) {
        Err(e) => {
            return Err(vec![problem(
                Some(e.line),
                Rule::Yaml,
                format!("Invalid YAML in frontmatter: {}", e.message),
            )]);
        }
        Ok(Node::Map(entries)) => entries,
        Ok(_) => {
            return Err(vec![problem(
                Some(1),
                Rule::NotMapping,
                "SKILL.md frontmatter must be a YAML mapping".into(),
            )]);
        }
    };
    let mut problems = Vec::new();
    let mut found = Frontmatter::default();
    let mut unknown: Vec<&Entry> = entries
        .iter()
        .filter(|e| !FIELDS.contains(&e.key.as_str()))
        .collect();
    unknown.sort_by(|a, b| a.key.cmp(&b.key));
    for e in unknown {
        problems.push(problem(
            Some(e.line),
            Rule::UnknownField,
            format!(
                "Unexpected field in frontmatter: {}. Only {} are allowed.",
                e.key,
                FIELDS.join(", ")
            ),
        ));
    }
    let field = |key: &str| entries.iter().find(|e| e.key == key);
    // The line of the frontmatter's end, for fields that are missing.
    let end_line = split.yaml.matches('\n').count() + 1;

    match field("name") {
        None => problems.push(problem(
            Some(end_line),
            Rule::NameMissing,
            "Missing required field in frontmatter: name".into(),
        )),
        Some(Entry {
            value: Node::Text(raw),
            line,
            ..
        }) if !py_strip(raw).is_empty() => {
            let at = Some(*line);
            let name: String = py_strip(raw).nfkc().collect();
            problems.extend(
                name_problems(&name, folder)
                    .into_iter()
                    .map(|(rule, message)| problem(at, rule, message)),
            );
            found.name = name;
        }
        Some(e) => problems.push(problem(
            Some(e.line),
            Rule::NameEmpty,
            "Field 'name' must be a non-empty string".into(),
        )),
    }

    match field("description") {
        None => problems.push(problem(
            Some(end_line),
            Rule::DescriptionMissing,
            "Missing required field in frontmatter: description".into(),
        )),
        Some(Entry {
            value: Node::Text(d),
            line,
            ..
        }) if !py_strip(d).is_empty() => {
            let n = d.chars().count();
            if n > MAX_DESCRIPTION {
                problems.push(problem(
                    Some(*line),
                    Rule::DescriptionTooLong,
                    format!("Description exceeds {MAX_DESCRIPTION} character limit ({n} chars)"),
                ));
            }
            found.description = py_strip(d).to_owned();
        }
        Some(e) => problems.push(problem(
            Some(e.line),
            Rule::DescriptionEmpty,
            "Field 'description' must be a non-empty string".into(),
        )),
    }

    match field("compatibility") {
        None => {}
        Some(Entry {
            value: Node::Text(c),
            line,
            ..
        }) => {
            let n = c.chars().count();
            if n > MAX_COMPATIBILITY {
                problems.push(problem(
                    Some(*line),
                    Rule::CompatibilityTooLong,
                    format!(
                        "Compatibility exceeds {MAX_COMPATIBILITY} character limit ({n} chars)"
                    ),
                ));
            }
            found.compatibility = Some(c.clone());
        }
        Some(e) => problems.push(problem(
            Some(e.line),
            Rule::CompatibilityType,
            "Field 'compatibility' must be a string".into(),
        )),
    }

    // Not checked by the reference validator, so not here either: kept as well as they go.
    found.license = field("license").map(|e| as_text(&e.value));
    found.allowed_tools = field("allowed-tools").map(|e| match &e.value {
        Node::List(items) => items.iter().map(as_text).collect::<Vec<_>>().join(" "),
        other => as_text(other),
    });
    if let Some(Entry {
        value: Node::Map(meta),
        ..
    }) = field("metadata")
    {
        found.metadata = meta
            .iter()
            .map(|e| (e.key.clone(), as_text(&e.value)))
            .collect();
    }
    match problems.is_empty() {
        true => Ok((found, split.body)),
        false => Err(problems),
    }
}

/// The name rules, each independent of the others.
fn name_problems(name: &str, folder: Option<&str>) -> Vec<(Rule, String)> {
    let mut out = Vec::new();
    let n = name.chars().count();
    if n > MAX_NAME {
        out.push((
            Rule::NameTooLong,
            format!("Skill name '{name}' exceeds {MAX_NAME} character limit ({n} chars)"),
        ));
    }
    if name.to_lowercase() != name {
        out.push((
            Rule::NameCase,
            format!("Skill name '{name}' must be lowercase"),
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        out.push((
            Rule::NameHyphenEdge,
            "Skill name cannot start or end with a hyphen".into(),
        ));
    }
    if name.contains("--") {
        out.push((
            Rule::NameDoubleHyphen,
            "Skill name cannot contain consecutive hyphens".into(),
        ));
    }
    if !name.chars().all(|c| c == '-' || letter_or_number(c)) {
        out.push((
            Rule::NameCharacters,
            format!(
                "Skill name '{name}' contains invalid characters. Only letters, digits, and \
                 hyphens are allowed."
            ),
        ));
    }
    if let Some(folder) = folder {
        let normal: String = folder.nfkc().collect();
        if normal != name {
            out.push((
                Rule::NameFolder,
                format!("Directory name '{folder}' must match skill name '{name}'"),
            ));
        }
    }
    out
}

/// Python's `str.isalnum` for one character: a letter or a number by general category
/// (Rust's `is_alphanumeric` also takes combining marks that are "alphabetic").
fn letter_or_number(c: char) -> bool {
    use GeneralCategory::*;
    matches!(
        get_general_category(c),
        UppercaseLetter
            | LowercaseLetter
            | TitlecaseLetter
            | ModifierLetter
            | OtherLetter
            | DecimalNumber
            | LetterNumber
            | OtherNumber
    )
}

/// Python's `str.strip()`: Unicode white space, and the separators U+001C to U+001F.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c))
}

/// A value as one line of text: a nested list or map is written as JSON.
fn as_text(node: &Node) -> String {
    fn json(node: &Node) -> serde_json::Value {
        match node {
            Node::Text(t) => t.clone().into(),
            Node::List(items) => items.iter().map(json).collect(),
            Node::Map(entries) => entries
                .iter()
                .map(|e| (e.key.clone(), json(&e.value)))
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }
    match node {
        Node::Text(t) => t.clone(),
        other => json(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(folder: &str, text: &str) -> Vec<Rule> {
        match check(Path::new("SKILL.md"), Some(folder), text) {
            Ok(_) => Vec::new(),
            Err(p) => p.into_iter().map(|p| p.rule).collect(),
        }
    }

    #[test]
    fn a_good_skill_reads_whole() {
        let text = "---\r\nname: pdf\r\ndescription: >-\r\n  Read\r\n  PDFs\r\nmetadata:\r\n  \
                    version: 1.0\r\nallowed-tools:\r\n  - Bash\r\n  - Read\r\n---\r\n# Body\r\n";
        let (fm, body) = check(Path::new("SKILL.md"), Some("pdf"), text).unwrap();
        assert_eq!(fm.name, "pdf");
        assert_eq!(fm.description, "Read PDFs");
        assert_eq!(fm.metadata["version"], "1.0");
        assert_eq!(fm.allowed_tools.as_deref(), Some("Bash Read"));
        assert_eq!(body, "# Body\n");
    }

    #[test]
    fn every_problem_is_reported_with_its_line() {
        let text = "---\nname: Bad--Name-\nversion: 1\n---\n";
        let Err(problems) = check(Path::new("x/SKILL.md"), Some("bad"), text) else {
            panic!("accepted")
        };
        let got: Vec<_> = problems.iter().map(|p| (p.rule, p.line)).collect();
        assert_eq!(
            got,
            [
                (Rule::UnknownField, Some(3)),
                (Rule::NameCase, Some(2)),
                (Rule::NameHyphenEdge, Some(2)),
                (Rule::NameDoubleHyphen, Some(2)),
                (Rule::NameFolder, Some(2)),
                (Rule::DescriptionMissing, Some(4)),
            ]
        );
        assert_eq!(
            problems[1].to_string(),
            "x/SKILL.md:2: Skill name 'Bad--Name-' must be lowercase [name-lowercase]"
        );
    }

    #[test]
    fn names_follow_python_not_rust() {
        let ok = |name: &str| rules(name, &format!("---\nname: {name}\ndescription: d\n---\n"));
        assert_eq!(ok("café"), []);
        assert_eq!(ok("日本語"), []);
        // A combining mark is "alphabetic" to Rust but not alphanumeric to Python.
        assert_eq!(ok("x\u{301}"), [Rule::NameCharacters]);
        assert_eq!(ok("a_b"), [Rule::NameCharacters]);
        assert_eq!(ok(&"a".repeat(65)), [Rule::NameTooLong]);
        assert_eq!(ok(&"a".repeat(64)), []);
        // Compared after NFKC: full-width letters match their folder.
        assert_eq!(
            rules("full", "---\nname: ｆｕｌｌ\ndescription: d\n---\n"),
            []
        );
    }

    #[test]
    fn lengths_count_characters_before_trimming() {
        let long = |n: usize| format!("---\nname: a\ndescription: \"{}\"\n---\n", "é".repeat(n));
        assert_eq!(rules("a", &long(1024)), []);
        assert_eq!(rules("a", &long(1025)), [Rule::DescriptionTooLong]);
        assert_eq!(
            rules(
                "a",
                "---\nname: a\ndescription: d\ncompatibility:\n  - x\n---\n"
            ),
            [Rule::CompatibilityType]
        );
        assert_eq!(
            rules("a", "---\nname: a\ndescription: d\ncompatibility:\n---\n"),
            []
        );
    }
}
