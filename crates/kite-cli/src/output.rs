//! Printing a run: the answer on stdout and tool activity on stderr for people, or JSON
//! lines on stdout for scripts.

use kite::agent::{CallStatus, ToolRecord};
use kite::cassette::CassetteError;
use kite::{AgentError, AgentEvent, Error, Event, Run, StopReason};
use serde_json::{Value, json};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to stdout failed: its reader went away (`kite … | head`), or worse.
static STDOUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// Set when that failure was not the reader going away (a full disk, say).
static STDOUT_FAILED: AtomicBool = AtomicBool::new(false);

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
    let text = crate::logging::redact(&args.to_string());
    match TERMINAL.get_or_init(|| std::io::stdout().is_terminal()) {
        true => emit(&printable(&text)),
        false => emit(&text),
    }
}

/// Writes kite's own terminal control (clearing the screen, a rendered answer whose text
/// was made safe already) to stdout as it is, secrets still hidden.
pub(crate) fn write_raw(text: &str) {
    if !stdout_closed() {
        emit(&crate::logging::redact(text));
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
    let text = crate::logging::redact(&args.to_string());
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

/// `text` safe to show on a terminal: control characters other than newline and tab (the
/// start of escape sequences that retitle a window or clear a screen) are written as
/// `\u{1b}`. For what comes from outside: cassettes, servers' names and errors.
pub(crate) fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| {
            if unsafe_char(c) {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// Dollars as a person reads them: cents to four places, less with more.
pub(crate) fn dollars(d: f64) -> String {
    match d {
        d if !d.is_finite() || d < 0.0 => "cost unknown".to_owned(),
        0.0 => "$0".to_owned(),
        d if d < 0.0001 => format!("${d:.6}"),
        d if d < 1.0 => format!("${d:.4}"),
        d => format!("${d:.2}"),
    }
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
    ($($t:tt)*) => { $crate::output::write_out(format_args!($($t)*)) };
}

/// `println!` that never panics on a closed stdout.
macro_rules! outln {
    () => { $crate::output::write_out(format_args!("\n")) };
    ($($t:tt)*) => { $crate::output::write_out(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprint!` that never panics on a closed stderr and hides secrets; kite's own control
/// sequences (the waiting line) pass.
macro_rules! err {
    ($($t:tt)*) => { $crate::output::write_err(format_args!($($t)*), true) };
}

/// `eprintln!` that never panics on a closed stderr, hides secrets and shows control
/// characters as escapes.
macro_rules! errln {
    ($($t:tt)*) => { $crate::output::write_err(format_args!("{}\n", format_args!($($t)*)), false) };
}

pub(crate) use {err, errln, out, outln};

pub(crate) struct Output {
    json: bool,
    wrote_text: bool,
    at_line_start: bool,
    /// With `--no-stream`: the answer so far, printed when the run stops.
    held: Option<String>,
    /// On a terminal: the answer rendered as Markdown, block by block.
    markdown: Option<crate::markdown::Markdown>,
    conversation: Option<String>,
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
        }
    }

    /// Renders the answer as Markdown (on a terminal), unless `json`.
    pub(crate) fn markdown(mut self, on: bool) -> Self {
        if on && !self.json {
            self.markdown = Some(crate::markdown::Markdown::new());
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

    /// Some of the answer's text.
    fn text(&mut self, text: &str) {
        match (&mut self.held, &mut self.markdown) {
            (Some(held), _) => held.push_str(text),
            (None, Some(md)) => {
                let rendered = md.push(text);
                self.raw(&rendered);
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
            self.text(&held);
            self.held = Some(String::new());
        }
    }

    pub(crate) fn event(&mut self, e: &AgentEvent) {
        if self.json {
            if let Some(v) = json_event(e) {
                line(&v);
            }
            return;
        }
        match e {
            AgentEvent::Model(Event::TextDelta { text, .. } | Event::RefusalDelta { text, .. }) => {
                self.text(text)
            }
            AgentEvent::ToolStarted { call } => {
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

fn line(v: &Value) {
    outln!("{v}");
}

/// The JSON line for an event; fragments that a later event carries whole, and per-call
/// usage and finish (summed up in the last lines), are left out.
fn json_event(e: &AgentEvent) -> Option<Value> {
    Some(match e {
        AgentEvent::Model(event) => match event {
            Event::Start { id, model } => json!({"type": "start", "id": id, "model": model}),
            Event::TextDelta { text, .. } => json!({"type": "text_delta", "text": text}),
            Event::ReasoningDelta { text, .. } => json!({"type": "reasoning_delta", "text": text}),
            Event::RefusalDelta { text, .. } => json!({"type": "refusal_delta", "text": text}),
            Event::ToolCallEnd { call, .. } => json!({
                "type": "tool_call",
                "id": call.id,
                "name": call.name,
                "arguments": call.parse_arguments().unwrap_or_else(|_| Value::String(call.arguments.clone())),
            }),
            Event::Unknown { kind, data } => json!({"type": "unknown", "kind": kind, "data": data}),
            _ => return None,
        },
        AgentEvent::ToolFinished { record } => tool_result(record),
        _ => return None,
    })
}

fn tool_result(r: &ToolRecord) -> Value {
    let status = match r.status {
        CallStatus::Ran => "ran",
        CallStatus::Skipped => "skipped",
        CallStatus::Refused => "refused",
    };
    json!({
        "type": "tool_result",
        "id": r.call.id,
        "name": r.call.name,
        "content": r.result.text_content(),
        "is_error": r.result.is_error,
        "status": status,
        "duration_ms": r.duration.as_millis() as u64,
    })
}

fn json_error(e: &AgentError) -> Value {
    let mut v = json!({"type": "error", "message": error_line(e)});
    let kind = match e {
        AgentError::Model(Error::Api(a)) => {
            v["status"] = json!(a.status);
            v["code"] = json!(a.code);
            v["request_id"] = json!(a.request_id);
            "api"
        }
        AgentError::Model(Error::Decode(_)) => "decode",
        AgentError::Model(Error::Transport(_)) => "transport",
        AgentError::Model(Error::Config(_)) => "config",
        AgentError::Model(Error::InvalidRequest(_)) => "invalid_request",
        AgentError::Model(Error::Cancelled) => "cancelled",
        AgentError::Model(e) if CassetteError::of(e).is_some() => {
            v["cassette"] = json!(CassetteError::of(e).map(|c| c.kind.as_str()));
            "cassette"
        }
        AgentError::Model(_) => "other",
        AgentError::Tool { .. } => "tool",
        _ => "other",
    };
    v["kind"] = json!(kind);
    v
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
