//! Markdown on a terminal: a model's answer, which arrives as a stream of fragments, rendered
//! with ANSI styles block by block, as soon as each block is complete; a code block that
//! stands on its own comes a line at a time, and work is handed out in bounded pieces
//! ([`Markdown::next_piece`]) so that a Ctrl-C is heard between them, however long the
//! answer. Highlighting stops at a line or block too long to highlight quickly.
//!
//! Parsing is pulldown-cmark's and highlighting syntect's. Two parts are written by hand: the
//! splitting of the stream into complete blocks (here), which is kite's own hot path (it runs
//! on every fragment and looks at each line once, deciding only on complete lines), and the
//! walk over pulldown-cmark's events that turns them into escapes ([`mod@render`]), because
//! everything taken from the model's text must go through [`crate::terminal::text::printable`] before
//! the renderer's own escapes are added: an escape sequence in the answer is shown, never
//! obeyed.

use crate::terminal::text::printable;
use render::render;
use std::sync::OnceLock;
use syntect::easy::HighlightLines;
use syntect::highlighting::{Style, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::as_24_bit_terminal_escaped;

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

/// Renders a streamed answer as Markdown, one complete block at a time; a code block that
/// stands on its own is rendered a line at a time as it comes, however long it grows.
#[derive(Default)]
pub(crate) struct Markdown {
    /// Text received; what is before `start` has been rendered.
    buffer: String,
    /// Where the text not yet rendered starts: 0 or just after a newline.
    start: usize,
    /// How much of `buffer` has been looked at: `start` or just after a newline.
    scanned: usize,
    /// How far past `scanned` a newline was looked for and not found (so a long line that
    /// comes in small fragments is searched once, not again at each fragment).
    searched: usize,
    /// The fence of the code block open at `scanned`, if one is (inside a block).
    fence: Option<Fence>,
    /// The code block being rendered line by line, if one is.
    code: Option<(Fence, CodeLines)>,
    /// Whether `buffer[start..scanned]` holds more than blank lines.
    content: bool,
    /// Whether a block has been rendered, so the next one is set off by a blank line.
    started: bool,
    /// The terminal's columns, which text is wrapped to between words.
    width: Option<usize>,
}

/// How many lines of a code block one piece holds at most.
const LINES_PER_PIECE: usize = 64;
/// The largest block rendered as Markdown; a larger one is shown as it is.
const MAX_RENDERED: usize = 256 * 1024;

impl Markdown {
    /// A renderer for a terminal.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Wraps text between words to lines of `width` columns.
    pub(crate) fn wrapped_at(mut self, width: usize) -> Self {
        self.width = Some(width.max(20));
        self
    }

    /// Takes the next fragment of the answer; returns the rendered text (with ANSI escapes)
    /// of every block that is now complete, or "" if none is.
    #[cfg(test)]
    pub(crate) fn push(&mut self, fragment: &str) -> String {
        self.feed(fragment);
        std::iter::from_fn(|| self.next_piece()).collect()
    }

    /// Takes the next fragment of the answer, to be rendered by [`Self::next_piece`].
    pub(crate) fn feed(&mut self, fragment: &str) {
        self.buffer.push_str(fragment);
    }

    /// The rendered text of the next complete block, or of the next lines of a code block
    /// (a bounded amount of work); `None` when nothing more is complete. The caller may
    /// stop asking at any point (a cancelled answer).
    pub(crate) fn next_piece(&mut self) -> Option<String> {
        let mut out = String::new();
        let mut code_lines = 0;
        loop {
            // Offsets into the buffer hold for one line's work; between lines it may shrink.
            self.compact();
            let from = self.searched.max(self.scanned);
            let Some(newline) = self.buffer[from..].find('\n') else {
                self.searched = self.buffer.len();
                break;
            };
            let end = from + newline + 1;
            let line = &self.buffer[self.scanned..end];
            if let Some((fence, lines)) = &mut self.code {
                let closed = fence.closed_by(line);
                if !closed {
                    out.push_str(&lines.line(line));
                }
                self.consume(end);
                if closed {
                    self.code = None;
                    return Some(out);
                }
                code_lines += 1;
                if code_lines >= LINES_PER_PIECE {
                    return Some(out);
                }
                continue;
            }
            let blank = line.trim_matches([' ', '\t', '\r', '\n']).is_empty();
            // A fence that starts a block of its own opens a code block rendered as it
            // comes; what came before it is a block of its own.
            if self.fence.is_none()
                && let Some((fence, language)) = Fence::standalone(line)
            {
                let before = self.render_to(self.scanned);
                let lines = CodeLines::new(language.as_deref(), MAX_HIGHLIGHTED_BLOCK);
                self.consume(end);
                self.code = Some((fence, lines));
                if self.started {
                    out.push_str(&before);
                    out.push('\n');
                } else {
                    out.push_str(&before);
                }
                self.started = true;
                if !out.is_empty() {
                    return Some(out);
                }
                continue;
            }
            let (fence, complete) = match self.fence {
                Some(open) if open.closed_by(line) => (None, true),
                Some(open) => (Some(open), false),
                None => (Fence::opened_by(line), blank && self.content),
            };
            self.fence = fence;
            if complete {
                let rendered = self.render_to(end);
                if !rendered.is_empty() {
                    return Some(rendered);
                }
            } else if blank && !self.content {
                // Blank lines between blocks: the renderer puts its own.
                self.consume(end);
            } else {
                self.scanned = end;
                self.searched = end;
                self.content = true;
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// Renders `buffer[start..end]` as a block (after a blank line if one came before) and
    /// marks it rendered; "" when it shows nothing. A block past [`MAX_RENDERED`] is shown
    /// as its text, plain: rendering it would take long.
    fn render_to(&mut self, end: usize) -> String {
        let block = &self.buffer[self.start..end];
        let rendered = match (block.trim().is_empty(), block.len() > MAX_RENDERED) {
            (true, _) => String::new(),
            (false, true) => printable(block).into_owned(),
            (false, false) => render(block, self.width),
        };
        self.consume(end);
        let mut out = String::new();
        self.emit(&mut out, &rendered);
        out
    }

    /// Marks `buffer[..end]` as done with.
    fn consume(&mut self, end: usize) {
        self.start = end;
        self.scanned = end;
        self.content = false;
        self.searched = self.searched.max(end);
    }

    /// Trims what is done with from the buffer once it is most of it. Only between two
    /// lines' work: offsets taken before would point past the new end.
    fn compact(&mut self) {
        if self.start > 64 * 1024 && self.start * 2 > self.buffer.len() {
            self.buffer.replace_range(..self.start, "");
            self.searched -= self.start;
            self.scanned -= self.start;
            self.start = 0;
        }
    }

    /// Drops what is not rendered yet (the answer was cancelled).
    pub(crate) fn abandon(&mut self) {
        let (started, width) = (self.started, self.width);
        *self = Self::default();
        (self.started, self.width) = (started, width);
    }

    /// The answer ended: renders what is left.
    pub(crate) fn finish(&mut self) -> String {
        let mut out: String = std::iter::from_fn(|| self.next_piece()).collect();
        let rest = self.buffer.split_off(self.start);
        match self.code.take() {
            // A code block the answer never closed: its last line.
            Some((_, mut lines)) if !rest.is_empty() => out.push_str(&lines.line(&rest)),
            Some(_) => {}
            None if !rest.trim().is_empty() => {
                let rendered = render(&rest, self.width);
                self.emit(&mut out, &rendered);
            }
            None => {}
        }
        *self = Self {
            width: self.width,
            ..Self::default()
        };
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
    /// The fence `line` opens when it stands at the start of a line of its own (at most
    /// three spaces in, in no quote or list), and its language.
    fn standalone(line: &str) -> Option<(Self, Option<String>)> {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let rest = &line[indent..];
        if indent > 3 || !rest.starts_with(['`', '~']) {
            return None;
        }
        let fence = Self::opened_by(rest)?;
        let info = rest.trim_start_matches(fence.ch);
        Some((fence, info.split_whitespace().next().map(str::to_owned)))
    }

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

/// The longest line highlighted; longer ones are shown plain (highlighting one can take
/// long).
const MAX_HIGHLIGHTED_LINE: usize = 1000;
/// How much of one code block, or of all the code blocks of one rendered block, is
/// highlighted; the rest is shown plain.
pub(crate) const MAX_HIGHLIGHTED_BLOCK: usize = 64 * 1024;

/// A code block's lines rendered one at a time: indented, made printable, highlighted if
/// syntect knows the language (up to the limits above), dim otherwise. The syntaxes and
/// theme are loaded the first time (tens of milliseconds), and only for a code block that
/// names a language.
pub(crate) struct CodeLines {
    highlighter: Option<HighlightLines<'static>>,
    highlighted: usize,
    budget: usize,
}

static SYNTAXES: OnceLock<SyntaxSet> = OnceLock::new();
static THEME: OnceLock<Option<Theme>> = OnceLock::new();

impl CodeLines {
    /// Lines of a block in `language`, highlighted up to `budget` bytes.
    pub(crate) fn new(language: Option<&str>, budget: usize) -> Self {
        let highlighter = language.and_then(|language| {
            let syntaxes = SYNTAXES.get_or_init(SyntaxSet::load_defaults_newlines);
            let syntax = syntaxes.find_syntax_by_token(language)?;
            let theme = THEME.get_or_init(|| {
                let mut set = ThemeSet::load_defaults();
                set.themes.remove("base16-ocean.dark")
            });
            Some(HighlightLines::new(syntax, theme.as_ref()?))
        });
        Self {
            highlighter,
            highlighted: 0,
            budget,
        }
    }

    /// How many bytes it highlighted.
    pub(crate) fn highlighted(&self) -> usize {
        self.highlighted
    }

    /// One line of code (with or without its newline), rendered: "\n" for a blank one,
    /// else two spaces, the line and "\n".
    pub(crate) fn line(&mut self, raw: &str) -> String {
        let raw = raw.trim_end_matches(['\n', '\r']);
        if raw.is_empty() {
            return "\n".to_owned();
        }
        let text = printable(raw);
        format!("  {}\n", self.styled(&text))
    }

    fn styled(&mut self, text: &str) -> String {
        let syntaxes = SYNTAXES.get();
        let within =
            text.len() <= MAX_HIGHLIGHTED_LINE && self.highlighted + text.len() <= self.budget;
        if let (Some(h), Some(syntaxes), true) = (self.highlighter.as_mut(), syntaxes, within) {
            let line = format!("{text}\n");
            if let Ok(ranges) = h.highlight_line(&line, syntaxes) {
                self.highlighted += text.len();
                let ranges: Vec<(Style, &str)> = ranges
                    .into_iter()
                    .map(|(style, t)| (style, t.trim_end_matches(['\n', '\r'])))
                    .collect();
                return format!("{}{RESET}", as_24_bit_terminal_escaped(&ranges, false));
            }
        }
        format!("{DIM}{text}{RESET}")
    }
}
