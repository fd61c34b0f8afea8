//! The book's Rust samples are the compiled examples, word for word. Each page shows its code
//! in the page itself, so that it reads the same outside mdBook (on GitHub, in an editor),
//! and marks where the code comes from with a comment right above the fence:
//!
//! ````markdown
//! <!-- example: crates/kite/examples/stream.rs:program -->
//! ```rust
//! ...
//! ```
//! ````
//!
//! These tests cut the anchor's region out of that file as mdBook's `{{#include}}` does and
//! compare it with the fenced block, and check that no page includes a `.rs` file instead.
//! `tests/examples.rs` runs the examples, so the code the book shows is code that works.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.md` file under `docs/src`, in a stable order.
fn pages() -> Vec<PathBuf> {
    fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
        let entries =
            std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                found.push(path);
            }
        }
    }
    let mut found = Vec::new();
    walk(&root().join("docs/src"), &mut found);
    found.sort();
    assert!(!found.is_empty(), "no pages under docs/src");
    found
}

/// `path` as written from the repository's root, for messages.
fn shown(path: &Path) -> String {
    path.strip_prefix(root())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The name after `marker` in `line` (`// ANCHOR: name` gives `name`), if any.
fn anchor_name<'a>(line: &'a str, marker: &str) -> Option<&'a str> {
    let rest = line[line.find(marker)? + marker.len()..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .unwrap_or(rest.len());
    Some(&rest[..end])
}

/// The lines between `// ANCHOR: anchor` and `// ANCHOR_END: anchor` in `source`, as mdBook
/// includes them: every line that marks an anchor, this one or another nested in it, is
/// left out, and the lines are joined with no newline after the last.
fn anchored(source: &str, anchor: &str) -> Result<String, String> {
    let mut lines = source.lines();
    if !lines
        .by_ref()
        .any(|l| anchor_name(l, "ANCHOR:") == Some(anchor))
    {
        return Err(format!("no `// ANCHOR: {anchor}` line"));
    }
    let mut kept = Vec::new();
    for line in lines {
        if anchor_name(line, "ANCHOR_END:") == Some(anchor) {
            return Ok(kept.join("\n"));
        }
        if !line.contains("ANCHOR:") && !line.contains("ANCHOR_END:") {
            kept.push(line);
        }
    }
    Err(format!("no `// ANCHOR_END: {anchor}` line"))
}

/// One `<!-- example: PATH:ANCHOR -->` comment and the fenced block after it.
struct Sample {
    /// The comment's line in the page, counted from 1.
    line: usize,
    /// The example's path from the repository's root.
    path: String,
    anchor: String,
    /// The fenced block's lines, fences left out, joined with `\n`.
    code: String,
}

/// The samples marked in `page`, whose text is `text`; a comment that does not parse or
/// is not followed by a fenced block fails the test.
fn samples(page: &Path, text: &str) -> Vec<Sample> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim().strip_prefix("<!-- example:") else {
            continue;
        };
        let at = format!("{}:{}", shown(page), i + 1);
        let (path, anchor) = rest
            .strip_suffix("-->")
            .and_then(|s| s.trim().rsplit_once(':'))
            .unwrap_or_else(|| panic!("{at}: not `<!-- example: PATH:ANCHOR -->`: {line}"));
        let open = lines.get(i + 1).map_or("", |l| l.trim());
        let ticks = open.len() - open.trim_start_matches('`').len();
        assert!(
            ticks >= 3,
            "{at}: the example comment is not followed by a ``` fence"
        );
        let body = &lines[i + 2..];
        let close = body
            .iter()
            .position(|l| {
                let l = l.trim();
                l.len() >= ticks && l.chars().all(|c| c == '`')
            })
            .unwrap_or_else(|| panic!("{at}: the fence after the example comment is not closed"));
        found.push(Sample {
            line: i + 1,
            path: path.to_string(),
            anchor: anchor.to_string(),
            code: body[..close].join("\n"),
        });
    }
    found
}

/// Where a page's code and its example's, each lines joined with `\n`, first differ,
/// described for a failure message; `None` if they are the same.
fn first_difference(page_code: &str, example_code: &str) -> Option<String> {
    let a: Vec<&str> = page_code.split('\n').collect();
    let b: Vec<&str> = example_code.split('\n').collect();
    let n = (0..a.len().max(b.len())).find(|&n| a.get(n) != b.get(n))?;
    let mut out = format!("line {} of the block differs:\n", n + 1);
    for (whose, lines) in [("page", &a), ("example", &b)] {
        let line = lines.get(n).map_or_else(
            || "(none: the code ends here)".to_string(),
            |l| format!("{l:?}"),
        );
        writeln!(out, "  {whose:>7}: {line}").unwrap();
    }
    Some(out)
}

/// Whether `sample` shows its example's region exactly; if not, why, for a failure message.
fn check(sample: &Sample) -> Result<(), String> {
    let example = format!("{}:{}", sample.path, sample.anchor);
    let source = std::fs::read_to_string(root().join(&sample.path))
        .map_err(|e| format!("shows {example}, which cannot be read: {e}"))?;
    let wanted = anchored(&source, &sample.anchor).map_err(|e| format!("shows {example}: {e}"))?;
    if let Some(difference) = first_difference(&sample.code, &wanted) {
        return Err(format!("the code differs from {example}; {difference}"));
    }
    Ok(())
}

#[test]
fn pages_show_their_examples_exactly() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a page is UTF-8");
        for sample in samples(&page, &text) {
            checked += 1;
            if let Err(why) = check(&sample) {
                failures.push(format!("{}:{}: {why}", shown(&page), sample.line));
            }
        }
    }
    assert!(
        checked > 0,
        "no `<!-- example: PATH:ANCHOR -->` comment under docs/src"
    );
    assert!(
        failures.is_empty(),
        "each page below must show its example's region as it is (copy it again):\n\n{}",
        failures.join("\n")
    );
}

#[test]
fn pages_include_no_rust_files() {
    let mut includes = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).expect("a page is UTF-8");
        for (i, line) in text.lines().enumerate() {
            for directive in ["{{#include", "{{#rustdoc_include"] {
                let Some(at) = line.find(directive) else {
                    continue;
                };
                let target = line[at + directive.len()..]
                    .split("}}")
                    .next()
                    .unwrap_or("");
                let file = target.trim().split(':').next().unwrap_or("");
                if file.ends_with(".rs") {
                    includes.push(format!("{}:{}: {}", shown(&page), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        includes.is_empty(),
        "pages must show Rust code, not include it (mark it with \
         `<!-- example: PATH:ANCHOR -->` instead):\n{}",
        includes.join("\n")
    );
}

#[test]
fn anchors_are_cut_as_mdbook_cuts_them() {
    let source = "\
fn before() {}
// ANCHOR: outer
fn a() {}
// ANCHOR: inner
fn b() {}
// ANCHOR_END: inner
fn c() {}
// ANCHOR_END: outer
fn after() {}
";
    assert_eq!(
        anchored(source, "outer").unwrap(),
        "fn a() {}\nfn b() {}\nfn c() {}"
    );
    assert_eq!(anchored(source, "inner").unwrap(), "fn b() {}");
    assert!(anchored(source, "missing").is_err());
    assert!(anchored("// ANCHOR: open\nfn a() {}\n", "open").is_err());
    // `out` is not `outer`: names are matched whole.
    assert!(anchored(source, "out").is_err());
}
