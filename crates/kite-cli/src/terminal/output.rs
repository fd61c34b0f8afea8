//! Printing a run: the answer on stdout and tool activity on stderr for people, or JSON
//! lines on stdout for scripts.

mod json;

use crate::terminal::text::{dollars, printable};
use json::{json_error, json_event, line};
use kite::cassette::CassetteError;
use kite::redact::StreamRedactor;
use kite::{AgentError, AgentEvent, Event, Run, StopReason};
use serde_json::{Value, json};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to stdout failed: its reader went away (`kite … | head`), or worse.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// Set when that failure was not the reader going away (a full disk, say).
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);
/// Set while a command cut short by a signal is dropped: what it would still say of its
/// cancelled work (a store's task cancelled, say) is noise after `kite: interrupted`.
static HUSHED: AtomicBool = AtomicBool::new(false);

/// Says nothing more on stderr (`true`), or speaks again.
pub(crate) fn hush(on: bool) {
    HUSHED.store(on, Ordering::Relaxed);
}

/// Writes to stdout and flushes. A failed write is not an error of the command: it marks
/// stdout closed, later writes are skipped, and the command ends quietly as soon as it
/// looks (see [`stdout_closed`]).
///
/// No secret kite knows of is written, and on a terminal no control character that could
/// drive it (a model's text or a server's name is not trusted with the screen).
pub(crate) fn write_out(args: std::fmt::Arguments<'_>) {
    if stdout_closed() {
        return;
    }
    static TERMINAL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let text = crate::terminal::secrets::redact(&args.to_string());
    match TERMINAL.get_or_init(|| std::io::stdout().is_terminal()) {
        true => emit(&printable(&text)),
        false => emit(&text),
    }
}

/// Writes kite's own terminal control (clearing the screen, a rendered answer whose text
/// was made safe already) to stdout as it is, secrets still hidden.
pub(crate) fn write_raw(text: &str) {
    if !stdout_closed() {
        emit(&crate::terminal::secrets::redact(text));
    }
}

/// Writes `text` to stdout and flushes; a failure marks stdout closed (and failed, unless
/// its reader only went away, which is the quiet case).
fn emit(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        STDOUT_CLOSED.store(true, Ordering::Relaxed);
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            errln!("kite: cannot write the output: {e}");
            STDOUT_FAILED.store(true, Ordering::Relaxed);
        }
    }
}

/// Whether writing stdout failed for a reason other than its reader going away.
pub(crate) fn stdout_failed() -> bool {
    STDOUT_FAILED.load(Ordering::Relaxed)
}

/// Writes to stderr for a person: secrets hidden and, unless `raw`, control characters
/// shown as escapes; a closed stderr is ignored.
pub(crate) fn write_err(args: std::fmt::Arguments<'_>, raw: bool) {
    if HUSHED.load(Ordering::Relaxed) {
        return;
    }
    let text = crate::terminal::secrets::redact(&args.to_string());
    let text = match raw {
        true => text,
        false => printable(&text).into_owned(),
    };
    let _ = std::io::stderr().write_all(text.as_bytes());
}

/// Whether stdout's reader has gone away.
pub(crate) fn stdout_closed() -> bool {
    STDOUT_CLOSED.load(Ordering::Relaxed)
}

/// What `usage` used and cost, on one line: `812 in (200 cached) / 64 out tokens, $0.0012`.
pub(crate) fn usage_line(usage: &kite::Usage) -> String {
    let mut line = format!("{} in", usage.input_tokens);
    match (usage.cached_input_tokens, usage.cache_write_tokens) {
        (0, 0) => {}
        (read, 0) => line.push_str(&format!(" ({read} cached)")),
        (0, written) => line.push_str(&format!(" ({written} written to cache)")),
        (read, written) => {
            line.push_str(&format!(" ({read} cached, {written} written to cache)"));
        }
    }
    line.push_str(&format!(" / {} out", usage.output_tokens));
    if usage.reasoning_tokens > 0 {
        line.push_str(&format!(" ({} reasoning)", usage.reasoning_tokens));
    }
    line.push_str(" tokens, ");
    line.push_str(&usage.cost.map_or("cost unknown".to_owned(), dollars));
    line
}

/// `print!` that never panics on a closed stdout.
macro_rules! out {
    ($($t:tt)*) => { $crate::terminal::output::write_out(format_args!($($t)*)) };
}

/// `println!` that never panics on a closed stdout.
macro_rules! outln {
    () => { $crate::terminal::output::write_out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::terminal::output::write_out(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprint!` that never panics on a closed stderr and hides secrets; kite's own control
/// sequences (the waiting line) pass.
macro_rules! err {
    ($($t:tt)*) => { $crate::terminal::output::write_err(format_args!($($t)*), true) };
}

/// `eprintln!` that never panics on a closed stderr, hides secrets and shows control
/// characters as escapes.
macro_rules! errln {
    ($($t:tt)*) => { $crate::terminal::output::write_err(format_args!("{}\n", format_args!($($t)*)), false) };
}

pub(crate) use {err, errln, out, outln};

pub(crate) struct Output {
    json: bool,
    wrote_text: bool,
    at_line_start: bool,
    /// With `--no-stream`: the answer so far, printed when the run stops.
    held: Option<String>,
    /// On a terminal: the answer rendered as Markdown, block by block.
    markdown: Option<crate::terminal::markdown::Markdown>,
    conversation: Option<String>,
    /// The answer's text, its reasoning and its refusal, each redacted as it streams: a key
    /// split between two deltas is hidden all the same.
    redact: [StreamRedactor; 3],
}

impl Output {
    pub(crate) fn new(json: bool) -> Self {
        Self {
            json,
            wrote_text: false,
            at_line_start: true,
            held: None,
            markdown: None,
            conversation: None,
            redact: std::array::from_fn(|_| {
                StreamRedactor::new(&crate::terminal::secrets::secrets())
            }),
        }
    }

    /// Renders the answer as Markdown (on a terminal), unless `json`.
    pub(crate) fn markdown(mut self, on: bool) -> Self {
        if on && !self.json {
            let markdown = crate::terminal::markdown::Markdown::new();
            // Wrapped between words to the terminal's width, as it is when the answer begins.
            self.markdown = Some(match crossterm::terminal::size() {
                Ok((columns, _)) if columns > 0 => markdown.wrapped_at(columns.into()),
                _ => markdown,
            });
        }
        self
    }

    /// Holds the answer's text back until the run stops (`--no-stream`), unless `json`.
    pub(crate) fn whole(mut self, whole: bool) -> Self {
        if whole && !self.json {
            self.held = Some(String::new());
        }
        self
    }

    /// The stored conversation the turn joined, which the `done` line names.
    pub(crate) fn conversation(&mut self, id: &str) {
        self.conversation = Some(id.to_owned());
    }

    /// Some of the answer's text, as it streams.
    fn text(&mut self, text: &str) {
        let safe = self.redact[0].push(text);
        self.show(&safe);
    }

    /// What the redactors held back, shown (for people) or written as its deltas (JSON):
    /// the answer's text stops here, at least for now.
    fn flush(&mut self) {
        for (i, kind) in ["text_delta", "reasoning_delta", "refusal_delta"]
            .iter()
            .enumerate()
        {
            let rest = self.redact[i].finish();
            match (self.json, rest.is_empty()) {
                (_, true) => {}
                (true, false) => line(&json!({"type": kind, "text": rest})),
                (false, false) => self.show(&rest),
            }
        }
    }

    /// Text that is safe to show: held, rendered or written.
    fn show(&mut self, text: &str) {
        match (&mut self.held, &mut self.markdown) {
            (Some(held), _) => held.push_str(text),
            (None, Some(_)) => {
                let Some(mut md) = self.markdown.take() else {
                    return;
                };
                md.feed(text);
                // A piece at a time: after Ctrl-C, nothing more is rendered, so the turn
                // is cancelled at once however much text is waiting.
                while let Some(piece) = md.next_piece() {
                    self.raw(&piece);
                    if crate::terminal::signals::interrupt_pending() {
                        md.abandon();
                        break;
                    }
                }
                self.markdown = Some(md);
            }
            (None, None) => {
                out!("{text}");
                self.wrote_text = true;
                self.at_line_start = text.ends_with('\n');
            }
        }
    }

    /// Rendered text, written as it is.
    fn raw(&mut self, rendered: &str) {
        if !rendered.is_empty() {
            write_raw(rendered);
            self.wrote_text = true;
            self.at_line_start = rendered.ends_with('\n');
        }
    }

    /// Prints the text held back, if any.
    fn release(&mut self) {
        if let Some(held) = self.held.as_mut().map(std::mem::take)
            && !held.is_empty()
        {
            self.held = None;
            self.show(&held);
            self.held = Some(String::new());
        }
    }

    pub(crate) fn event(&mut self, e: &AgentEvent) {
        if self.json {
            let delta = match e {
                AgentEvent::Model(Event::TextDelta { text, .. }) => Some((0, text)),
                AgentEvent::Model(Event::ReasoningDelta { text, .. }) => Some((1, text)),
                AgentEvent::Model(Event::RefusalDelta { text, .. }) => Some((2, text)),
                _ => None,
            };
            match delta {
                Some((i, text)) => {
                    let safe = self.redact[i].push(text);
                    if let (false, Some(mut v)) = (safe.is_empty(), json_event(e)) {
                        v["text"] = json!(safe);
                        line(&v);
                    }
                }
                None => {
                    if let Some(v) = json_event(e) {
                        self.flush();
                        line(&v);
                    }
                }
            }
            return;
        }
        match e {
            AgentEvent::Model(Event::TextDelta { text, .. } | Event::RefusalDelta { text, .. }) => {
                self.text(text)
            }
            AgentEvent::ToolStarted { call } => {
                self.flush();
                self.end_line();
                errln!("[tool] {}({})", call.name, call.arguments);
            }
            AgentEvent::ToolFinished { record } => {
                let mark = if record.result.is_error {
                    "failed"
                } else {
                    "->"
                };
                errln!(
                    "[tool] {} {mark} {}",
                    record.call.name,
                    short(&record.result.text_content())
                );
            }
            _ => {}
        }
    }

    /// The run stopped: usage and the reason. True when the model answered.
    pub(crate) fn done(&mut self, run: &Run) -> bool {
        let stop = run.stop_reason();
        let answered = matches!(stop, Some(StopReason::Finished { .. }));
        self.flush();
        if self.json {
            let mut usage = serde_json::to_value(run.usage()).unwrap_or_default();
            usage["type"] = json!("usage");
            // Dollars, from the provider or the price table; null when neither knows.
            usage["cost"] = json!(run.usage().cost);
            line(&usage);
            let finish = match &stop {
                Some(StopReason::Finished { finish_reason }) => json!(finish_reason.as_str()),
                Some(StopReason::TurnLimit { .. }) => json!("tool_calls"),
                _ => Value::Null,
            };
            line(
                &json!({"type": "done", "finish_reason": finish, "stop": stop_name(&stop), "turns": run.turns(), "conversation": self.conversation}),
            );
            return answered;
        }
        self.release();
        self.end_line();
        match stop {
            Some(StopReason::TurnLimit { max_turns }) => {
                errln!("kite: stopped after {max_turns} model calls; allow more with --max-turns")
            }
            Some(StopReason::Hook { message }) => errln!("kite: stopped: {message}"),
            Some(StopReason::Finished {
                finish_reason: kite::FinishReason::Length,
            }) => errln!(
                "kite: the answer was cut short at the limit on tokens; allow more with \
                 --max-tokens (on the local model, the context's size may be the limit: \
                 --context-size)"
            ),
            Some(StopReason::BudgetExceeded { tokens, cost }) => errln!(
                "kite: stopped before the next model call: it would pass the budget ({tokens} \
                 tokens{} spent)",
                cost.map(|c| format!(", {}", dollars(c)))
                    .unwrap_or_default()
            ),
            _ => {}
        }
        answered
    }

    /// Whether the answer stopped mid-line (a line on stderr would break into it).
    pub(crate) fn mid_line(&self) -> bool {
        self.wrote_text && !self.at_line_start
    }

    fn end_line(&mut self) {
        if let Some(rest) = self.markdown.as_mut().map(|md| md.finish()) {
            self.raw(&rest);
        }
        if self.wrote_text && !self.at_line_start {
            outln!();
            self.at_line_start = true;
        }
    }

    pub(crate) fn error(&mut self, e: &AgentError) {
        self.flush();
        if self.json {
            let mut v = json_error(e);
            v["conversation"] = json!(self.conversation);
            line(&v);
        } else {
            self.release();
            self.end_line();
        }
    }
}

fn stop_name(stop: &Option<StopReason>) -> &'static str {
    stop.as_ref().map_or("running", StopReason::name)
}

fn short(text: &str) -> String {
    let one_line = text.replace('\n', " ");
    match one_line.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &one_line[..i]),
        None => one_line,
    }
}

/// One line that says what went wrong; a cassette's error keeps its lines (it holds a
/// diff).
pub(crate) fn error_line(e: &AgentError) -> String {
    match e {
        AgentError::Model(inner) if CassetteError::of(inner).is_some() => inner.to_string(),
        AgentError::Model(inner) => inner.to_string().replace('\n', " "),
        other => other.to_string().replace('\n', " "),
    }
}
