//! Whether a question asks for one of the tools offered, for the small local model when the
//! choice is left to it (`auto`). Left to choose, a model of this size answers from
//! guesswork and seldom calls; made to call, it answers every question with a tool (the
//! time, asked the capital of France). So it is made to call only when the question speaks
//! of what a tool does: a word of the tool's name or description (alike when the first five
//! letters are), a word of the calendar or the clock for a tool of dates and times, a file's
//! name for a tool of files, a sum for a tool of arithmetic; and only before any tool has
//! answered that question. A call made then may name only the files the question names,
//! where the tool takes a path: guessed, the path is one the model saw in training.

use kite_core::{Part, Request, Role, ToolSpec};

/// Words too common in questions and descriptions to say what a tool is for.
const COMMON: &[&str] = &[
    "about", "after", "also", "and", "answer", "does", "each", "from", "give", "given", "have",
    "into", "just", "like", "make", "more", "much", "only", "over", "please", "return", "returns",
    "some", "such", "tell", "than", "that", "their", "them", "then", "there", "these", "this",
    "tool", "tools", "under", "using", "what", "when", "where", "which", "with", "working",
    "would", "your",
];

/// Words of the calendar and the clock that ask what it is now (not "what year did the war
/// end?"), for a tool of dates or times.
const WHEN: &[&str] = &[
    "what day",
    "which day",
    "what weekday",
    "today",
    "tonight",
    "tomorrow",
    "yesterday",
    "o'clock",
    "this week",
    "this month",
    "this year",
];

/// The newest user message of `req`, unless a tool has answered it already.
fn open_question(req: &Request) -> Option<String> {
    let at = req.messages.iter().rposition(|m| m.role == Role::User)?;
    let answered = req.messages[at..]
        .iter()
        .flat_map(|m| &m.parts)
        .any(|p| matches!(p, Part::ToolResult(_)));
    (!answered).then(|| req.messages[at].text())
}

/// Whether the newest user message of `req` asks for one of its tools, and no tool has
/// answered it yet.
pub(crate) fn asks_for_a_tool(req: &Request) -> bool {
    let Some(question) = open_question(req) else {
        return false;
    };
    let question = question.to_lowercase();
    let asked = words(&question);
    let names_a_file = !files_in(&question).is_empty();
    let has_a_sum = has_arithmetic(&question);
    let of_when = WHEN.iter().any(|w| {
        question.match_indices(w).any(|(at, _)| {
            let before = question[..at].chars().next_back();
            let after = question[at + w.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    });
    req.tools.iter().any(|tool| {
        let cues = cues(tool);
        let about = |stems: &[&str]| cues.iter().any(|c| stems.iter().any(|s| c.starts_with(s)));
        asked.iter().any(|w| cues.iter().any(|c| alike(w, c)))
            || (names_a_file && about(&["file", "folder", "path"]))
            || (has_a_sum && about(&["calcul", "arithmetic", "math", "expression", "evaluat"]))
            || (of_when && about(&["date", "time", "clock"]))
    })
}

/// The files and folders the newest user message of `req` names, as written, unless a tool
/// has answered it already.
pub(crate) fn named_files(req: &Request) -> Vec<String> {
    open_question(req).map_or_else(Vec::new, |q| files_in(&q))
}

/// The words of `text` that look like a file's name (`Cargo.toml`) or a path (`src/`,
/// `/etc/hosts`, `../notes.txt`, `.github/ci.yml`), as written: quotes and brackets around
/// them and the sentence's stop after them are left out. Addresses (`https://…`) are not
/// files.
fn files_in(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let words = text
        .split_whitespace()
        .filter(|w| !w.contains("://"))
        .map(|w| w.trim_start_matches(['"', '\'', '`', '(', '[', '<', '{']))
        .map(|w| w.trim_end_matches(|c: char| !c.is_alphanumeric() && c != '/'));
    for w in words {
        // A number (`3.5`, `1/2`) is no file: a file's name has a letter.
        let file = w.contains('/') && w.chars().any(char::is_alphabetic)
            || w.rsplit_once('.').is_some_and(|(a, b)| {
                !a.is_empty()
                    && (1..=5).contains(&b.len())
                    && b.chars().all(char::is_alphanumeric)
                    && b.chars().any(char::is_alphabetic)
            });
        if file && !found.iter().any(|f| f == w) {
            found.push(w.to_string());
        }
    }
    found
}

/// The words of `text` that may say what it is about: lower case, four letters or more,
/// none of the [`COMMON`] ones.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| w.chars().count() >= 4 && !COMMON.contains(&w.as_str()))
        .collect()
}

/// A tool's words: its name's parts and its description's words.
fn cues(tool: &ToolSpec) -> Vec<String> {
    let mut all = words(&tool.name.replace(['_', '-'], " "));
    // A short name says it all (`now`).
    if tool.name.len() < 4 {
        all.push(tool.name.to_lowercase());
    }
    all.extend(words(&tool.description));
    all
}

/// Whether two words are alike: the same, or the same first five letters.
fn alike(a: &str, b: &str) -> bool {
    a == b || (a.len() >= 5 && b.len() >= 5 && a.get(..5) == b.get(..5))
}

/// Whether `text` holds a sum: a number beside an operator or a percent sign, or words of
/// arithmetic.
fn has_arithmetic(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let operator = |c: char| matches!(c, '+' | '-' | '*' | '/' | '%' | '^' | '×' | '÷');
    let near_digit = chars.iter().enumerate().any(|(i, c)| {
        operator(*c)
            && chars[i.saturating_sub(2)..(i + 3).min(chars.len())]
                .iter()
                .any(char::is_ascii_digit)
    });
    near_digit
        || (chars.iter().any(char::is_ascii_digit)
            && [
                "percent",
                "plus",
                "minus",
                "times",
                "divided",
                "square root",
            ]
            .iter()
            .any(|w| text.contains(w)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kite_core::{Message, ToolCall, ToolResult};
    use serde_json::json;

    fn offered(question: &str) -> Request {
        let tool = |name: &str, description: &str| {
            ToolSpec::new(name, description, json!({"type": "object"}))
        };
        let mut req = Request::new("local").message(Message::user(question));
        req.tools = vec![
            tool("now", "The current date and time in UTC."),
            tool(
                "calculate",
                "Evaluate an arithmetic expression exactly as written and return the number.",
            ),
            tool("read_file", "Read a text file under the working folder."),
        ];
        req
    }

    #[test]
    fn a_question_of_a_tools_matter_asks_for_it_and_others_do_not() {
        for asks in [
            "What is the date and time now?",
            "What time is it?",
            "What is 17.5% of 2380?",
            "How much is 12 * 7?",
            "Summarize Cargo.toml in two sentences.",
            "What does src/main.rs do?",
            "Please read the file notes",
            "What day is it?",
            "What's the weekday today?",
        ] {
            assert!(asks_for_a_tool(&offered(asks)), "{asks}");
        }
        for not in [
            "What is the capital of France?",
            "Write a haiku about kites.",
            "Hi!",
            "Who wrote Hamlet?",
            "What year did the Second World War end?",
            "How many days are in a week?",
            "Say something nice about Sunday.",
        ] {
            assert!(!asks_for_a_tool(&offered(not)), "{not}");
        }
    }

    #[test]
    fn files_are_named_as_written() {
        assert_eq!(
            named_files(&offered(
                "Summarize Cargo.toml and src/main.rs, then Cargo.toml."
            )),
            ["Cargo.toml", "src/main.rs"]
        );
        assert_eq!(named_files(&offered("What is in docs/?")), ["docs/"]);
        assert_eq!(
            named_files(&offered(
                "Compare /etc/hosts, ../notes.txt, `.github/ci.yml` and ~/a.md (see https://x.io/a.html)."
            )),
            ["/etc/hosts", "../notes.txt", ".github/ci.yml", "~/a.md"]
        );
        assert!(named_files(&offered("What is 1/2 of 3.5?")).is_empty());
        assert!(named_files(&offered("Who wrote Hamlet?")).is_empty());
    }

    #[test]
    fn once_a_tool_has_answered_the_model_answers_freely() {
        let mut req = offered("What is the date and time now?");
        req.messages.push(Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall::new("c", "now", "{}"))],
        ));
        req.messages.push(Message::new(
            Role::Tool,
            vec![Part::ToolResult(ToolResult {
                call_id: "c".into(),
                name: Some("now".into()),
                content: vec![Part::text("2026-12-07T12:00:00Z")],
                is_error: false,
            })],
        ));
        assert!(!asks_for_a_tool(&req));
    }
}
