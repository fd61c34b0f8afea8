//! Hiding secrets (keys, tokens) in text that may have echoed them: whole text
//! ([`redact_all`]), and text that arrives in pieces ([`StreamRedactor`]), where a secret may
//! be split between two pieces, and a model's events ([`EventRedactor`]); and the list of
//! secrets a program's parts share ([`Secrets`]). The one
//! redaction kite has: the HTTP layer, the command line, the gateway and the telemetry all
//! use it.

use crate::{Event, Message, Part};

mod known;

pub use known::{PASSING, Secrets};

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Secrets shorter than this many bytes are not hidden. No provider's key is nearly this
/// short; the values that are (`test`, `EMPTY`, `dummy`, `ollama`) are the placeholders local
/// servers take, and words people say: hiding them would rewrite what was said, on screen
/// and in stored conversations, and guard nothing.
pub const MIN_SECRET: usize = 8;

/// `text` with every one of `secrets` replaced by `[redacted]`, in the order given (put a
/// secret that holds another first); secrets shorter than [`MIN_SECRET`] are left alone.
pub fn redact_all<S: AsRef<str>>(text: &str, secrets: &[S]) -> String {
    let mut out = text.to_owned();
    for s in secrets
        .iter()
        .map(AsRef::as_ref)
        .filter(|s| s.len() >= MIN_SECRET)
    {
        if out.contains(s) {
            out = out.replace(s, REDACTED);
        }
    }
    out
}

/// `message` with every one of `secrets` replaced in what was said: text, refusals,
/// reasoning, tool calls' arguments and tool results, at any depth. Images, documents, ids
/// and provider metadata (signatures, encrypted reasoning) are left as they are, so a short
/// secret that happens to match their bytes cannot corrupt them.
pub fn redact_message<S: AsRef<str>>(message: &mut Message, secrets: &[S]) {
    redact_parts(&mut message.parts, secrets);
}

fn redact_parts<S: AsRef<str>>(parts: &mut [Part], secrets: &[S]) {
    let hide = |text: &mut String| {
        let hidden = redact_all(text, secrets);
        if hidden != *text {
            *text = hidden;
        }
    };
    for part in parts {
        match part {
            Part::Text { text } | Part::Refusal { text } => hide(text),
            Part::Reasoning(r) => hide(&mut r.text),
            Part::ToolCall(call) => hide(&mut call.arguments),
            Part::ToolResult(result) => redact_parts(&mut result.content, secrets),
            _ => {}
        }
    }
}

/// Redacts text that arrives in pieces: what it passes on holds no secret whole, even one
/// split across pieces, because it holds back the end of what it was given for as long as
/// that end could be the start of a secret. [`StreamRedactor::finish`] gives what is held.
#[derive(Clone, Debug, Default)]
pub struct StreamRedactor {
    secrets: Vec<String>,
    held: String,
}

impl StreamRedactor {
    /// A redactor of `secrets` (those shorter than [`MIN_SECRET`] are left alone).
    pub fn new<S: AsRef<str>>(secrets: &[S]) -> Self {
        let mut secrets: Vec<String> = secrets
            .iter()
            .map(|s| s.as_ref().to_owned())
            .filter(|s| s.len() >= MIN_SECRET)
            .collect();
        // A secret that holds another goes first.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self {
            secrets,
            held: String::new(),
        }
    }

    /// Whether it has any secret to hide.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// What may be passed on of `piece`, after what was held before: redacted, less an end
    /// that could start a secret ("" while the whole could).
    pub fn push(&mut self, piece: &str) -> String {
        if self.secrets.is_empty() {
            return piece.to_owned();
        }
        self.held.push_str(piece);
        let redacted = redact_all(&self.held, &self.secrets);
        let keep = self.partial_at_end(&redacted);
        let cut = redacted.len() - keep;
        self.held = redacted[cut..].to_owned();
        let mut out = redacted;
        out.truncate(cut);
        out
    }

    /// What is held back: the end of the text, which no secret followed.
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// The length of the longest end of `text` that is the start (not the whole) of a
    /// secret.
    fn partial_at_end(&self, text: &str) -> usize {
        let bytes = text.as_bytes();
        let mut longest = 0;
        for secret in &self.secrets {
            let s = secret.as_bytes();
            // Only where the secret's first byte occurs near the end can it start.
            let from = bytes.len().saturating_sub(s.len() - 1);
            for at in (from..bytes.len()).filter(|&i| bytes[i] == s[0]) {
                let end = &bytes[at..];
                if end.len() > longest && s.starts_with(end) {
                    longest = end.len();
                    break;
                }
            }
        }
        longest
    }
}

/// Redacts a model's event stream: every delta of text, reasoning, refusal and tool-call
/// arguments through a [`StreamRedactor`] of its own, what is held flushed as a delta of
/// its kind before the next event of another kind, and whole calls redacted whole.
#[derive(Clone, Debug, Default)]
pub struct EventRedactor {
    secrets: Vec<String>,
    streams: std::collections::HashMap<Delta, StreamRedactor>,
}

/// Which stream of deltas a piece of text belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Delta {
    Text(u32),
    Reasoning(u32),
    Refusal(u32),
    Arguments(u32),
}

impl Delta {
    fn event(self, text: String) -> Event {
        match self {
            Delta::Text(part) => Event::TextDelta { part, text },
            Delta::Reasoning(part) => Event::ReasoningDelta { part, text },
            Delta::Refusal(part) => Event::RefusalDelta { part, text },
            Delta::Arguments(index) => Event::ToolCallDelta {
                index,
                arguments: text,
            },
        }
    }
}

impl EventRedactor {
    /// A redactor of `secrets` (those shorter than [`MIN_SECRET`] are left alone).
    pub fn new<S: AsRef<str>>(secrets: &[S]) -> Self {
        Self {
            secrets: StreamRedactor::new(secrets).secrets,
            streams: std::collections::HashMap::new(),
        }
    }

    /// The events that may be passed on now that `event` came: none, it, or what was held
    /// back and then it.
    pub fn push(&mut self, event: Event) -> Vec<Event> {
        if self.secrets.is_empty() {
            return vec![event];
        }
        let (delta, text) = match event {
            Event::TextDelta { part, text } => (Delta::Text(part), text),
            Event::ReasoningDelta { part, text } => (Delta::Reasoning(part), text),
            Event::RefusalDelta { part, text } => (Delta::Refusal(part), text),
            Event::ToolCallDelta { index, arguments } => (Delta::Arguments(index), arguments),
            Event::ToolCallEnd { index, mut call } => {
                let mut out = self.flush(Some(Delta::Arguments(index)));
                call.arguments = redact_all(&call.arguments, &self.secrets);
                out.push(Event::ToolCallEnd { index, call });
                return out;
            }
            Event::ReasoningEnd { part, metadata } => {
                let mut out = self.flush(Some(Delta::Reasoning(part)));
                out.push(Event::ReasoningEnd { part, metadata });
                return out;
            }
            other => {
                let mut out = self.flush(None);
                out.push(other);
                return out;
            }
        };
        let secrets = &self.secrets;
        let safe = self
            .streams
            .entry(delta)
            .or_insert_with(|| StreamRedactor::new(secrets))
            .push(&text);
        match safe.is_empty() {
            true => Vec::new(),
            false => vec![delta.event(safe)],
        }
    }

    /// What is held back, as deltas: the stream ended (or failed).
    pub fn finish(&mut self) -> Vec<Event> {
        self.flush(None)
    }

    /// What the stream `only` (or every stream) holds, as deltas.
    fn flush(&mut self, only: Option<Delta>) -> Vec<Event> {
        let mut out = Vec::new();
        let mut flush = |delta: Delta, stream: &mut StreamRedactor| {
            let rest = stream.finish();
            if !rest.is_empty() {
                out.push(delta.event(rest));
            }
        };
        match only {
            Some(delta) => {
                if let Some(stream) = self.streams.get_mut(&delta) {
                    flush(delta, stream);
                }
            }
            None => {
                // In a steady order: text, reasoning, refusal, arguments, by part.
                let mut all: Vec<_> = self.streams.iter_mut().collect();
                all.sort_by_key(|(d, _)| **d);
                for (delta, stream) in all {
                    flush(*delta, stream);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "sk-proj-ABCDEFGH12345678";

    #[test]
    fn a_message_is_redacted_in_what_was_said_and_nowhere_else() {
        use crate::{ImageSource, Reasoning, Role, ToolCall, ToolResult};
        let said = format!("the key is {KEY}");
        let mut m = Message::new(
            Role::Assistant,
            vec![
                Part::Text { text: said.clone() },
                Part::Reasoning(Reasoning {
                    text: said.clone(),
                    ..Reasoning::default()
                }),
                Part::ToolCall(ToolCall::new(
                    "call_1",
                    "send",
                    format!(r#"{{"key":"{KEY}"}}"#),
                )),
                Part::ToolResult(ToolResult::text("call_1", said.clone())),
                Part::Image {
                    source: ImageSource::Base64 {
                        media_type: "image/png".into(),
                        data: format!("AAAA{KEY}"),
                    },
                    detail: None,
                },
            ],
        );
        redact_message(&mut m, &[KEY]);
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(
            json.matches(KEY).count(),
            1,
            "only the image keeps it: {json}"
        );
        assert!(json.contains(r#"{\"key\":\"[redacted]\"}"#), "{json}");
        assert_eq!(
            m.parts[0],
            Part::Text {
                text: format!("the key is {REDACTED}")
            }
        );
    }

    #[test]
    fn whole_text_is_redacted_longest_secret_first() {
        let text = format!("key {KEY} and {KEY}x");
        assert_eq!(redact_all(&text, &[KEY]), "key [redacted] and [redacted]x");
        assert_eq!(redact_all("abc", &["abc"]), "abc", "too short to hide");
        // A placeholder key is a word people say: what they said stays as it was.
        let said = "this is a test of the dummy ollama";
        assert_eq!(redact_all(said, &["test", "dummy", "ollama"]), said);
        assert_eq!(redact_all("a 12345678 b", &["12345678"]), "a [redacted] b");
    }

    #[test]
    fn a_secret_split_across_pieces_never_passes_whole() {
        let text = format!("Here it is: {KEY}. And again {KEY}");
        for size in 1..=text.len() {
            let mut r = StreamRedactor::new(&[KEY]);
            let mut passed = String::new();
            let bytes = text.as_bytes();
            for chunk in bytes.chunks(size) {
                let piece = std::str::from_utf8(chunk).unwrap();
                let out = r.push(piece);
                passed.push_str(&out);
                assert!(!passed.contains(KEY), "{size}: {passed}");
            }
            passed.push_str(&r.finish());
            assert_eq!(
                passed, "Here it is: [redacted]. And again [redacted]",
                "pieces of {size}"
            );
        }
    }

    #[test]
    fn text_that_only_looks_like_a_start_is_held_then_given() {
        let mut r = StreamRedactor::new(&[KEY]);
        assert_eq!(r.push("ask sk-pr"), "ask ");
        assert_eq!(r.push("ide"), "sk-pride");
        assert_eq!(r.push(" sk"), " ");
        assert_eq!(r.finish(), "sk");
        // Non-ASCII text around a secret keeps its characters whole.
        let mut r = StreamRedactor::new(&["ключ-секрет-1234"]);
        let mut out = r.push("да ключ-сек");
        out.push_str(&r.push("рет-1234 нет"));
        out.push_str(&r.finish());
        assert_eq!(out, "да [redacted] нет");
    }
}

#[cfg(test)]
mod event_tests {
    use super::*;
    use crate::{FinishReason, ToolCall};

    #[test]
    fn a_models_events_pass_with_their_secrets_hidden_however_split() {
        let key = "sk-ant-SECRET-0123456789";
        let (a, b) = key.split_at(9);
        let mut r = EventRedactor::new(&[key]);
        let mut out = Vec::new();
        for e in [
            Event::text(0, format!("key {a}")),
            Event::text(0, format!("{b} ok")),
            Event::ToolCallDelta {
                index: 0,
                arguments: format!("{{\"k\": \"{a}"),
            },
            Event::ToolCallDelta {
                index: 0,
                arguments: format!("{b}\"}}"),
            },
            Event::ToolCallEnd {
                index: 0,
                call: ToolCall::new("c", "f", format!("{{\"k\": \"{key}\"}}")),
            },
            Event::text(0, format!("tail {a}")),
            Event::Finish {
                reason: FinishReason::Stop,
            },
        ] {
            out.extend(r.push(e));
        }
        out.extend(r.finish());
        let shown = serde_json::to_string(&out).unwrap();
        assert!(!shown.contains(key), "{shown}");
        let text: String = out
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        // What only looked like the start of a key comes before the finish.
        assert_eq!(text, format!("key [redacted] oktail {a}"));
        assert!(matches!(out.last(), Some(Event::Finish { .. })), "{shown}");
        let args: String = out
            .iter()
            .filter_map(|e| match e {
                Event::ToolCallDelta { arguments, .. } => Some(arguments.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(args, "{\"k\": \"[redacted]\"}");
    }
}
