//! A `SKILL.md`'s frontmatter: where it is, and its YAML read the way the specification's
//! reference library reads it (strictyaml with no schema).
//!
//! That library keeps every scalar as text (`123`, `null` and `yes` are strings), and
//! refuses flow collections (`[a, b]`, `{a: b}`), anchors and aliases, tags and duplicate
//! keys. yaml-rust2's event parser reads the YAML; this module builds the tree and refuses
//! what strictyaml refuses, keeping each value's line so that problems can name it.

use std::collections::HashSet;
use yaml_rust2::Event;
use yaml_rust2::parser::Parser;

/// How deep lists and maps may nest: the tree is dropped and written out by recursion.
const MAX_NESTING: usize = 32;
/// How many keys all the maps of a frontmatter may hold together: a skill's has a handful,
/// and every `ask`, `chat` or `serve` that finds the file reads it.
pub(crate) const MAX_KEYS: usize = 1024;

/// A YAML value as strictyaml sees it: text, a list or a map.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    /// Every scalar, as written (quotes and block indicators resolved).
    Text(String),
    List(Vec<Node>),
    Map(Vec<Entry>),
}

/// One key of a map, with the (1-based) line it is on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Entry {
    pub key: String,
    pub line: usize,
    pub value: Node,
}

/// The parts of a `SKILL.md`, after its line ends are made `\n` as Python's text mode does.
#[derive(Debug)]
pub(crate) struct Split {
    /// The YAML between the first two `---`, starting on the file's first line, so that
    /// YAML line numbers are the file's.
    pub yaml: String,
    /// The Markdown after the frontmatter.
    pub body: String,
}

/// Why the frontmatter could not be read.
#[derive(Debug, PartialEq)]
pub(crate) enum SplitError {
    /// The file does not start with `---`.
    NotStarted,
    /// No second `---`.
    NotClosed,
}

/// `\r\n` and lone `\r` become `\n`, as when Python reads a file as text.
pub(crate) fn normalize_newlines(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// Splits on the first two `---` anywhere in the text, as the reference library does
/// (`content.split("---", 2)`): the closing `---` need not be on a line of its own.
pub(crate) fn split(text: &str) -> Result<Split, SplitError> {
    let rest = text.strip_prefix("---").ok_or(SplitError::NotStarted)?;
    let end = rest.find("---").ok_or(SplitError::NotClosed)?;
    Ok(Split {
        yaml: rest[..end].to_owned(),
        body: rest[end + 3..].trim_start_matches('\n').to_owned(),
    })
}

/// A YAML error, with the line it was found on.
#[derive(Debug, PartialEq)]
pub(crate) struct YamlError {
    pub line: usize,
    pub message: String,
}

/// Parses the frontmatter's YAML into a tree of text. An empty document is `Text("")`.
pub(crate) fn parse(yaml: &str) -> Result<Node, YamlError> {
    let chars: Vec<char> = yaml.chars().collect();
    let mut parser = Parser::new_from_str(yaml);
    let mut stack: Vec<Building> = Vec::new();
    let mut root: Option<Node> = None;
    let mut documents = 0;
    let mut keys = 0;
    loop {
        let (event, mark) = parser.next_token().map_err(|e| YamlError {
            line: e.marker().line(),
            message: e.info().to_owned(),
        })?;
        let line = mark.line();
        let at = |message: String| YamlError { line, message };
        let flow = matches!(chars.get(mark.index()), Some('[' | '{'));
        let node = match event {
            Event::StreamEnd => break,
            Event::DocumentStart => {
                documents += 1;
                if documents > 1 {
                    return Err(at("a second YAML document in the frontmatter".into()));
                }
                continue;
            }
            Event::Alias(_) => return Err(at("aliases (`*name`) are not allowed".into())),
            Event::Scalar(_, _, anchor, _) | Event::SequenceStart(anchor, _) if anchor != 0 => {
                return Err(at("anchors (`&name`) are not allowed".into()));
            }
            Event::MappingStart(anchor, _) if anchor != 0 => {
                return Err(at("anchors (`&name`) are not allowed".into()));
            }
            Event::Scalar(_, _, _, Some(tag))
            | Event::SequenceStart(_, Some(tag))
            | Event::MappingStart(_, Some(tag)) => {
                return Err(at(format!("tags (`!{}`) are not allowed", tag.suffix)));
            }
            Event::SequenceStart(..) | Event::MappingStart(..) if flow => {
                return Err(at(
                    "flow collections (`[..]`, `{..}`) are not allowed; write a block list \
                     or map, or quote the text"
                        .into(),
                ));
            }
            Event::SequenceStart(..) | Event::MappingStart(..) if stack.len() >= MAX_NESTING => {
                return Err(at(format!(
                    "lists and maps nested more than {MAX_NESTING} deep are not allowed"
                )));
            }
            Event::SequenceStart(..) => {
                stack.push(Building::List(Vec::new()));
                continue;
            }
            Event::MappingStart(..) => {
                stack.push(Building::Map(Vec::new(), HashSet::new(), None));
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Building::List(items)) => Node::List(items),
                Some(Building::Map(entries, ..)) => Node::Map(entries),
                None => return Err(at("unbalanced YAML".into())),
            },
            Event::Scalar(text, ..) => Node::Text(text),
            Event::Nothing | Event::StreamStart | Event::DocumentEnd => continue,
        };
        match stack.last_mut() {
            None => root = Some(node),
            Some(Building::List(items)) => items.push(node),
            Some(Building::Map(entries, seen, pending)) => match pending.take() {
                Some((key, line)) => entries.push(Entry {
                    key,
                    line,
                    value: node,
                }),
                None => {
                    let Node::Text(key) = node else {
                        return Err(at("a map's keys must be text".into()));
                    };
                    keys += 1;
                    if keys > MAX_KEYS {
                        return Err(at(format!(
                            "more than {MAX_KEYS} keys in the frontmatter are not allowed"
                        )));
                    }
                    if !seen.insert(key.clone()) {
                        return Err(at(format!("duplicate key '{key}'")));
                    }
                    *pending = Some((key, line));
                }
            },
        }
    }
    Ok(root.unwrap_or(Node::Text(String::new())))
}

/// A collection being read.
enum Building {
    List(Vec<Node>),
    /// The entries so far, their keys (to find a duplicate at once), and the key waiting
    /// for its value.
    Map(Vec<Entry>, HashSet<String>, Option<(String, usize)>),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Node {
        Node::Text(s.into())
    }

    #[test]
    fn splits_on_the_first_two_markers_anywhere() {
        let s = split("---\nname: a---b\n---\nbody").unwrap();
        assert_eq!(s.yaml, "\nname: a");
        assert_eq!(s.body, "b\n---\nbody");
        assert_eq!(split("# no").unwrap_err(), SplitError::NotStarted);
        assert_eq!(
            split("\u{feff}---\n---").unwrap_err(),
            SplitError::NotStarted
        );
        assert_eq!(split("---\nname: x\n").unwrap_err(), SplitError::NotClosed);
    }

    #[test]
    fn every_scalar_is_text_and_lines_are_the_files() {
        let yaml = "\nname: 123\ndescription: >-\n  two\n  lines\nempty:\nmeta:\n  a: yes\n";
        let Node::Map(entries) = parse(yaml).unwrap() else {
            panic!("not a map")
        };
        let got: Vec<_> = entries.iter().map(|e| (e.key.as_str(), e.line)).collect();
        assert_eq!(
            got,
            [("name", 2), ("description", 3), ("empty", 6), ("meta", 7)]
        );
        assert_eq!(entries[0].value, text("123"));
        assert_eq!(entries[1].value, text("two lines"));
        assert_eq!(entries[2].value, text(""));
        assert_eq!(
            entries[3].value,
            Node::Map(vec![Entry {
                key: "a".into(),
                line: 8,
                value: text("yes")
            }])
        );
    }

    #[test]
    fn refuses_what_strictyaml_refuses() {
        for (yaml, line, says) in [
            ("\nd: [a, b]\n", 2, "flow"),
            ("\nd:\n  x: {a: 1}\n", 3, "flow"),
            ("\na: &x 1\nb: *x\n", 2, "anchors"),
            ("\na: !!str 1\n", 2, "tags"),
            ("\nname: a\nname: b\n", 3, "duplicate key 'name'"),
            ("\nname: a\n  bad: indent\n", 3, ""),
        ] {
            let err = parse(yaml).unwrap_err();
            assert_eq!(err.line, line, "{yaml:?}: {err:?}");
            assert!(err.message.contains(says), "{yaml:?}: {err:?}");
        }
    }

    #[test]
    fn deep_nesting_is_refused_before_it_can_overflow_the_stack() {
        let deep = format!("\nx:\n  {}a\n", "- ".repeat(60_000));
        let err = parse(&deep).unwrap_err();
        assert!(err.message.contains("nested more than 32"), "{err:?}");
        let ok = format!("\nx:\n  {}a\n", "- ".repeat(MAX_NESTING - 2));
        assert!(parse(&ok).is_ok());
    }

    #[test]
    fn many_keys_are_refused_past_the_cap_and_duplicates_found_among_many() {
        let keys = |n: usize| (0..n).map(|i| format!("k{i}: v\n")).collect::<String>();
        assert!(parse(&format!("\n{}", keys(MAX_KEYS))).is_ok());
        let err = parse(&format!("\n{}", keys(MAX_KEYS + 1))).unwrap_err();
        assert!(err.message.contains("more than 1024 keys"), "{err:?}");
        assert_eq!(err.line, MAX_KEYS + 2);
        // Keys in nested maps count too.
        let nested = format!("\nmeta:\n{}", keys(MAX_KEYS).replace('k', "  k"));
        assert!(parse(&nested).unwrap_err().message.contains("more than"));
        let dup = format!("\n{}k7: again\n", keys(MAX_KEYS - 1));
        assert!(
            parse(&dup)
                .unwrap_err()
                .message
                .contains("duplicate key 'k7'")
        );
    }

    #[test]
    fn a_document_that_is_not_a_map_is_kept_as_it_is() {
        assert_eq!(parse("\n").unwrap(), text(""));
        assert_eq!(parse("\n# only a comment\n").unwrap(), text(""));
        assert_eq!(parse("\nplain\n").unwrap(), text("plain"));
        assert_eq!(
            parse("\n- a\n- b\n").unwrap(),
            Node::List(vec![text("a"), text("b")])
        );
    }
}
