//! The walk over pulldown-cmark's events that turns a complete piece of Markdown into text
//! with ANSI escapes: every piece of the model's text goes through [`printable`] before the
//! renderer's own escapes are added.
//!
//! It runs a little past 450 lines: the walk is one match over the events with the state it
//! keeps (lists, tables, links, the column words wrap at), which reads best in one place.

use super::table::{Cell, Table};
use super::{
    BOLD, CodeLines, DIM, H1, H2, INLINE_CODE, ITALIC, MAX_HIGHLIGHTED_BLOCK, QUOTE, RESET, STRIKE,
    UNDERLINE,
};
use crate::terminal::text::printable;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// Renders a complete piece of Markdown; "" if it shows nothing, else text ending in "\n".
/// With a `width`, text is wrapped between words to lines of at most that many columns (a
/// word longer than a line is left to the terminal); code and tables are never wrapped.
pub(super) fn render(markdown: &str, width: Option<usize>) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut renderer = Renderer {
        width,
        ..Renderer::default()
    };
    for event in Parser::new_ext(markdown, options) {
        renderer.event(event);
    }
    renderer.finish()
}

/// A block that holds others and marks their lines.
enum Container {
    /// A block quote: a bar before every line.
    Quote,
    /// A list item: its marker before its first line, as many spaces before the others.
    Item { marker: String, shown: bool },
}

/// A link or image being rendered.
struct Link {
    /// Where it points, printable.
    url: String,
    /// Its text so far, printable.
    text: String,
}

/// A code block being collected.
struct Code {
    /// The first word of its info string.
    language: Option<String>,
    /// Its text, as the model wrote it.
    text: String,
}

/// Turns pulldown-cmark's events into text with escapes.
#[derive(Default)]
struct Renderer {
    /// The rendered text.
    out: String,
    /// Whether the current line has been started (its prefix written).
    mid_line: bool,
    /// Whether the next block must be set off by a blank line.
    need_blank: bool,
    /// The styles in force, outermost first.
    styles: Vec<&'static str>,
    /// The quotes and list items around the current line, outermost first.
    containers: Vec<Container>,
    /// The open lists: the next number of an ordered one.
    lists: Vec<Option<u64>>,
    /// The open links and images, innermost last.
    links: Vec<Link>,
    /// The code block being collected.
    code: Option<Code>,
    /// The table being collected.
    table: Option<Table>,
    /// How many bytes of code it highlighted.
    highlighted: usize,
    /// The columns text is wrapped to, if any.
    width: Option<usize>,
    /// The columns the current line takes so far.
    column: usize,
    /// Where the current line's text begins, after its prefix.
    indent: usize,
    /// Whether the text written last ended in a space: a line may break there, and only
    /// there, so a word styled in parts (`**bo**ld`) stays whole.
    spaced: bool,
}

impl Renderer {
    /// Renders one event.
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.code {
                Some(code) => code.text.push_str(&text),
                None => self.text(&printable(&text)),
            },
            Event::Code(text) => self.styled(INLINE_CODE, &printable(&text)),
            Event::Html(text)
            | Event::InlineHtml(text)
            | Event::InlineMath(text)
            | Event::DisplayMath(text)
            | Event::FootnoteReference(text) => self.text(&printable(&text)),
            Event::SoftBreak | Event::HardBreak => {
                if self.cell().is_some() {
                    self.text(" ");
                } else {
                    self.newline();
                }
            }
            Event::Rule => {
                self.start_block();
                self.prefix();
                self.out
                    .push_str(&format!("{DIM}{}{RESET}", "─".repeat(40)));
                self.end_block();
            }
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
        }
    }

    /// Renders the start of an element.
    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                self.push_style(match level {
                    HeadingLevel::H1 => H1,
                    HeadingLevel::H2 => H2,
                    _ => BOLD,
                });
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.containers.push(Container::Quote);
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let language = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split_whitespace().next().map(str::to_owned)
                    }
                    CodeBlockKind::Indented => None,
                };
                let text = String::new();
                self.code = Some(Code { language, text });
            }
            Tag::List(start) => {
                self.start_block();
                self.lists.push(start);
            }
            Tag::Item => {
                self.start_block();
                let marker = match self.lists.last_mut() {
                    Some(Some(number)) => {
                        let marker = format!("{number}. ");
                        *number = number.saturating_add(1);
                        marker
                    }
                    _ => "• ".to_owned(),
                };
                let shown = false;
                self.containers.push(Container::Item { marker, shown });
            }
            Tag::Table(aligns) => {
                self.start_block();
                self.table = Some(Table::new(aligns));
            }
            Tag::TableHead => {
                self.start_row();
                self.push_style(BOLD);
            }
            Tag::TableRow => self.start_row(),
            Tag::TableCell => {
                if let Some(table) = &mut self.table {
                    table.cell = Some(Cell::default());
                }
                let styles = self.styles.concat();
                self.raw(&styles);
            }
            Tag::Emphasis => self.push_style(ITALIC),
            Tag::Strong => self.push_style(BOLD),
            Tag::Strikethrough => self.push_style(STRIKE),
            Tag::Link { dest_url, .. } => {
                self.push_style(UNDERLINE);
                let url = printable(&dest_url).into_owned();
                self.links.push(Link {
                    url,
                    text: String::new(),
                });
            }
            Tag::Image { dest_url, .. } => {
                self.text("[image: ");
                let url = printable(&dest_url).into_owned();
                self.links.push(Link {
                    url,
                    text: String::new(),
                });
            }
            _ => {}
        }
    }

    /// Renders the end of an element.
    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => self.end_block(),
            TagEnd::Heading(_) => {
                self.pop_style();
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                self.end_block();
                self.containers.pop();
            }
            TagEnd::CodeBlock => {
                if let Some(code) = self.code.take() {
                    self.code_block(&code);
                }
                self.end_block();
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.end_line();
                // A list inside an item is part of it; any other list is a block.
                self.need_blank = !matches!(self.containers.last(), Some(Container::Item { .. }));
            }
            TagEnd::Item => {
                let empty = matches!(
                    self.containers.last(),
                    Some(Container::Item { shown: false, .. })
                );
                if empty && !self.mid_line {
                    self.prefix();
                }
                self.end_line();
                self.containers.pop();
            }
            TagEnd::Table => {
                let lines = self.table.take().map(|table| table.lines());
                for line in lines.unwrap_or_default() {
                    self.prefix();
                    self.out.push_str(&line);
                    self.newline();
                }
                self.end_block();
            }
            TagEnd::TableHead => {
                self.pop_style();
                if let Some(table) = &mut self.table {
                    table.end_head();
                }
            }
            TagEnd::TableCell => {
                if !self.styles.is_empty() {
                    self.raw(RESET);
                }
                if let Some(table) = &mut self.table {
                    table.end_cell();
                }
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link => {
                self.pop_style();
                let link = self.links.pop();
                if let Some(link) = link.filter(|l| !l.url.is_empty() && l.url != l.text) {
                    self.text(" ");
                    self.styled(DIM, &format!("({})", link.url));
                }
            }
            TagEnd::Image => {
                self.text("]");
                if let Some(link) = self.links.pop().filter(|l| !l.url.is_empty()) {
                    self.text(" ");
                    self.styled(DIM, &format!("({})", link.url));
                }
            }
            _ => {}
        }
    }

    /// Writes printable `text`, which may hold newlines.
    fn text(&mut self, text: &str) {
        if let Some(link) = self.links.last_mut() {
            link.text.push_str(text);
        }
        if let Some(cell) = self.cell() {
            cell.text
                .extend(text.chars().map(|c| if c == '\n' { ' ' } else { c }));
            cell.width += unicode_width::UnicodeWidthStr::width(text);
            return;
        }
        for (index, part) in text.split('\n').enumerate() {
            if index > 0 {
                self.newline();
            }
            // Word by word, each with the spaces after it.
            for word in part.split_inclusive(' ') {
                let shown = unicode_width::UnicodeWidthStr::width(word.trim_end_matches(' '));
                let full = self.spaced
                    && self
                        .width
                        .is_some_and(|w| self.column + shown > w && self.column > self.indent);
                if full {
                    // The space the line breaks at is not shown.
                    let kept = self.out.trim_end_matches(' ').len();
                    self.out.truncate(kept);
                    self.newline();
                }
                if !self.mid_line {
                    let word = word.trim_start_matches(' ');
                    if word.is_empty() {
                        continue;
                    }
                    self.prefix();
                    self.put(word);
                } else {
                    self.put(word);
                }
            }
        }
    }

    /// Writes printable `text` of one line, counting its columns.
    fn put(&mut self, text: &str) {
        self.out.push_str(text);
        self.column += unicode_width::UnicodeWidthStr::width(text);
        self.spaced = text.ends_with(' ');
    }

    /// Writes printable `text` in `style`.
    fn styled(&mut self, style: &'static str, text: &str) {
        self.push_style(style);
        self.text(text);
        self.pop_style();
    }

    /// Writes the renderer's own escapes: into the cell being filled, if there is one.
    fn raw(&mut self, escapes: &str) {
        match self.cell() {
            Some(cell) => cell.text.push_str(escapes),
            None => self.out.push_str(escapes),
        }
    }

    /// The table cell being filled, if there is one.
    fn cell(&mut self) -> Option<&mut Cell> {
        self.table.as_mut().and_then(|table| table.cell.as_mut())
    }

    /// Starts a style; at the start of a line, the line's prefix will apply it.
    fn push_style(&mut self, style: &'static str) {
        self.styles.push(style);
        if self.mid_line || self.cell().is_some() {
            self.raw(style);
        }
    }

    /// Ends the innermost style, restoring the ones around it.
    fn pop_style(&mut self) {
        self.styles.pop();
        if self.mid_line || self.cell().is_some() {
            let escapes = format!("{RESET}{}", self.styles.concat());
            self.raw(&escapes);
        }
    }

    /// Ends the current line, styles reset.
    fn newline(&mut self) {
        if self.mid_line && !self.styles.is_empty() {
            self.out.push_str(RESET);
        }
        self.out.push('\n');
        self.mid_line = false;
        self.column = 0;
    }

    /// Ends the current line if it has been started.
    fn end_line(&mut self) {
        if self.mid_line {
            self.newline();
        }
    }

    /// Starts a line: the quote bars and item markers or indentation, then the styles.
    fn prefix(&mut self) {
        for container in &mut self.containers {
            match container {
                Container::Quote => {
                    self.out.push_str(QUOTE);
                    self.column += 2;
                }
                Container::Item {
                    marker,
                    shown: true,
                } => {
                    let n = marker.chars().count();
                    self.out.push_str(&" ".repeat(n));
                    self.column += n;
                }
                Container::Item { marker, shown } => {
                    self.out.push_str(marker);
                    self.column += marker.chars().count();
                    *shown = true;
                }
            }
        }
        self.indent = self.column;
        for style in &self.styles {
            self.out.push_str(style);
        }
        self.mid_line = true;
    }

    /// Starts a block: on a new line, after a blank one if a block came before it.
    fn start_block(&mut self) {
        self.end_line();
        if self.need_blank {
            self.need_blank = false;
            if self
                .containers
                .iter()
                .any(|c| matches!(c, Container::Quote))
            {
                self.prefix();
            }
            self.newline();
        }
    }

    /// Ends a block.
    fn end_block(&mut self) {
        self.end_line();
        self.need_blank = true;
    }

    /// Starts a table row.
    fn start_row(&mut self) {
        if let Some(table) = &mut self.table {
            table.start_row();
        }
    }

    /// Writes a code block, indented, highlighted if syntect knows its language.
    fn code_block(&mut self, code: &Code) {
        let text = code.text.replace("\r\n", "\n");
        // One budget for every code block of the block rendered (a quote may hold many).
        let left = MAX_HIGHLIGHTED_BLOCK.saturating_sub(self.highlighted);
        let mut lines = CodeLines::new(code.language.as_deref(), left);
        for line in text.lines() {
            self.prefix();
            self.out.push_str(lines.line(line).trim_end_matches('\n'));
            self.newline();
        }
        self.highlighted += lines.highlighted();
    }

    /// The rendered text: "" or text ending in "\n".
    fn finish(mut self) -> String {
        self.end_line();
        self.out
    }
}
