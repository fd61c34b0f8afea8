//! Markdown on a terminal: a model's answer, which arrives as a stream of fragments, rendered
//! with ANSI styles block by block, as soon as each block is complete.
//!
//! Parsing is pulldown-cmark's and highlighting syntect's. Two parts are written by hand: the
//! splitting of the stream into complete blocks (here), which is kite's own hot path (it runs
//! on every fragment and looks at each line once, deciding only on complete lines), and the
//! walk over pulldown-cmark's events that turns them into escapes ([`render`]), because
//! everything taken from the model's text must go through [`crate::output::printable`] before
//! the renderer's own escapes are added: an escape sequence in the answer is shown, never
//! obeyed.

use render::render;
use std::sync::OnceLock;
use syntect::easy::HighlightLines;
use syntect::highlighting::{Style, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::{LinesWithEndings, as_24_bit_terminal_escaped};

mod render;
mod table;
#[cfg(test)]
mod tests;

/// Ends every style.
const RESET: &str = "\x1b[0m";
/// Strong text and the other headings.
const BOLD: &str = "\x1b[1m";
/// Urls, rules, quote bars and code in a language syntect does not know.
const DIM: &str = "\x1b[2m";
/// Emphasis.
const ITALIC: &str = "\x1b[3m";
/// The text of links.
const UNDERLINE: &str = "\x1b[4m";
/// Strikethrough.
const STRIKE: &str = "\x1b[9m";
/// Inline code.
const INLINE_CODE: &str = "\x1b[33m";
/// Level 1 headings: bold, underlined, magenta.
const H1: &str = "\x1b[1;4;35m";
/// Level 2 headings: bold, cyan.
const H2: &str = "\x1b[1;36m";
/// What starts every line of a block quote.
const QUOTE: &str = "\x1b[2m│ \x1b[0m";

/// Renders a streamed answer as Markdown, one complete block at a time.
#[derive(Default)]
pub(crate) struct Markdown {
    /// Text received and not yet rendered.
    buffer: String,
    /// How much of `buffer` has been looked at: 0 or just after a newline.
    scanned: usize,
    /// The fence of the code block open at `scanned`, if one is.
    fence: Option<Fence>,
    /// Whether `buffer[..scanned]` holds more than blank lines.
    content: bool,
    /// Whether a block has been rendered, so the next one is set off by a blank line.
    started: bool,
}

impl Markdown {
    /// A renderer for a terminal.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Takes the next fragment of the answer; returns the rendered text (with ANSI escapes)
    /// of every block that is now complete, or "" if none is.
    pub(crate) fn push(&mut self, fragment: &str) -> String {
        self.buffer.push_str(fragment);
        let mut out = String::new();
        while let Some(newline) = self.buffer[self.scanned..].find('\n') {
            let end = self.scanned + newline + 1;
            let line = &self.buffer[self.scanned..end];
            let blank = line.trim_matches([' ', '\t', '\r', '\n']).is_empty();
            let (fence, complete) = match self.fence {
                Some(open) if open.closed_by(line) => (None, true),
                Some(open) => (Some(open), false),
                None => (Fence::opened_by(line), blank && self.content),
            };
            self.fence = fence;
            if complete {
                let rendered = render(&self.buffer[..end]);
                self.buffer.replace_range(..end, "");
                self.scanned = 0;
                self.content = false;
                self.emit(&mut out, &rendered);
            } else if blank && !self.content {
                // Blank lines between blocks: the renderer puts its own.
                self.buffer.replace_range(..end, "");
                self.scanned = 0;
            } else {
                self.scanned = end;
                self.content = true;
            }
        }
        out
    }

    /// The answer ended: renders what is left.
    pub(crate) fn finish(&mut self) -> String {
        let rest = std::mem::take(&mut self.buffer);
        let mut out = String::new();
        if !rest.trim().is_empty() {
            let rendered = render(&rest);
            self.emit(&mut out, &rendered);
        }
        *self = Self::default();
        out
    }

    /// Appends a rendered block to `out`, after a blank line if a block came before it.
    fn emit(&mut self, out: &mut String, rendered: &str) {
        if rendered.is_empty() {
            return;
        }
        if self.started {
            out.push('\n');
        }
        out.push_str(rendered);
        self.started = true;
    }
}

/// The opening line of a fenced code block: its character and how many of it.
#[derive(Clone, Copy)]
struct Fence {
    /// '`' or '~'.
    ch: char,
    /// At least 3.
    len: usize,
}

impl Fence {
    /// The fence `line` opens, if it opens one.
    fn opened_by(line: &str) -> Option<Self> {
        let rest = strip_markers(line);
        let ch = rest.chars().next().filter(|&c| c == '`' || c == '~')?;
        let info = rest.trim_start_matches(ch);
        let len = rest.len() - info.len();
        // A backtick fence's info string has no backticks: "```a``` b" is inline code.
        let inline_code = ch == '`' && info.contains('`');
        (len >= 3 && !inline_code).then_some(Self { ch, len })
    }

    /// Whether `line` closes a code block this fence opened.
    fn closed_by(self, line: &str) -> bool {
        let rest = strip_markers(line);
        let after = rest.trim_start_matches(self.ch);
        rest.len() - after.len() >= self.len && after.trim().is_empty()
    }
}

/// `line` without its indentation, block quote markers and list markers: where a fence would
/// start. Generous on purpose: a fence taken for one only delays rendering, while a fence
/// missed would split a code block at its blank lines.
fn strip_markers(line: &str) -> &str {
    let mut rest = line.trim_start();
    loop {
        let after = match rest.strip_prefix('>') {
            Some(after) => after,
            None => match list_marker(rest) {
                Some(after) => after,
                None => return rest,
            },
        };
        rest = after.trim_start();
    }
}

/// `text` after the list marker (`-`, `*`, `+`, `1.` or `1)`) it starts with, if it does.
fn list_marker(text: &str) -> Option<&str> {
    let after = match text.strip_prefix(['-', '*', '+']) {
        Some(after) => after,
        None => {
            let digits = text.trim_start_matches(|c: char| c.is_ascii_digit());
            let count = text.len() - digits.len();
            if count == 0 || count > 9 {
                return None;
            }
            digits.strip_prefix(['.', ')'])?
        }
    };
    after.starts_with([' ', '\t']).then_some(after)
}

/// `code` highlighted as `language`, a string a line (without its newline); `None` if
/// syntect does not know the language or fails. The syntaxes and theme are loaded the first
/// time (tens of milliseconds), and only for a code block that names a language.
fn highlight(code: &str, language: &str) -> Option<Vec<String>> {
    static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();
    static THEME: OnceLock<Option<Theme>> = OnceLock::new();
    let syntaxes = SYNTAXES.get_or_init(SyntaxSet::load_defaults_newlines);
    let syntax = syntaxes.find_syntax_by_token(language)?;
    let theme = THEME.get_or_init(|| {
        let mut set = ThemeSet::load_defaults();
        set.themes.remove("base16-ocean.dark")
    });
    let mut highlighter = HighlightLines::new(syntax, theme.as_ref()?);
    let mut lines = Vec::new();
    for line in LinesWithEndings::from(code) {
        let ranges = highlighter.highlight_line(line, syntaxes).ok()?;
        if line.trim_end_matches(['\n', '\r']).is_empty() {
            lines.push(String::new());
            continue;
        }
        let ranges: Vec<(Style, &str)> = ranges
            .into_iter()
            .map(|(style, text)| (style, text.trim_end_matches(['\n', '\r'])))
            .collect();
        lines.push(format!(
            "{}{RESET}",
            as_24_bit_terminal_escaped(&ranges, false)
        ));
    }
    Some(lines)
}
