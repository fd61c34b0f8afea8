//! Splitting generated text into answer text and `<tool_call>` blocks as it streams, and
//! stopping at stop sequences, without ever emitting part of a tag or a stop sequence. The
//! prompt's `<tool_response>` tags, which a small model sometimes writes around its answer,
//! are left out of it.

use kite_core::{Event, ToolCall};
use std::sync::atomic::{AtomicU64, Ordering};

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";
/// Tags of the prompt's tool results, never part of an answer.
const DROPPED: [&str; 2] = ["<tool_response>", "</tool_response>"];

/// Turns text pieces into events.
#[derive(Debug, Default)]
pub(crate) struct Splitter {
    pending: String,
    in_call: bool,
    calls: u32,
    stops: Vec<String>,
    /// A stop sequence was met: nothing more is emitted.
    pub stopped: bool,
}

impl Splitter {
    pub(crate) fn new(stops: Vec<String>) -> Self {
        Self {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            ..Self::default()
        }
    }

    /// Whether a call is open (its tag seen, its end not yet).
    pub(crate) fn in_call(&self) -> bool {
        self.in_call
    }

    /// Forgets what an open call holds so far: its text starts again.
    pub(crate) fn restart_call(&mut self) {
        if self.in_call {
            self.pending.clear();
        }
    }

    /// Tool calls emitted so far.
    pub(crate) fn calls(&self) -> u32 {
        self.calls
    }

    /// Adds generated text; appends the events it completes.
    pub(crate) fn push(&mut self, text: &str, out: &mut Vec<Event>) {
        if self.stopped {
            return;
        }
        self.pending.push_str(text);
        loop {
            if self.in_call {
                let Some(end) = self.pending.find(CLOSE) else {
                    return;
                };
                let body = self.pending[..end].to_owned();
                self.pending.drain(..end + CLOSE.len());
                self.in_call = false;
                self.call(&body, out);
                continue;
            }
            // A tool result's tag the model wrote is dropped, before anything else is read.
            let dropped = DROPPED
                .iter()
                .filter_map(|t| self.pending.find(t).map(|at| (at, t.len())))
                .min();
            // The earliest of a call opening or a stop sequence.
            let open = self.pending.find(OPEN);
            let stop = self
                .stops
                .iter()
                .filter_map(|s| self.pending.find(s.as_str()))
                .min();
            if let Some((at, len)) = dropped
                && open.is_none_or(|o| at < o)
                && stop.is_none_or(|s| at < s)
            {
                self.text(at, out);
                self.pending.drain(..len);
                continue;
            }
            match (open, stop) {
                (_, Some(s)) if open.is_none_or(|o| s <= o) => {
                    self.text(s, out);
                    self.pending.clear();
                    self.stopped = true;
                    return;
                }
                (Some(o), _) => {
                    self.text(o, out);
                    self.pending.drain(..OPEN.len());
                    self.in_call = true;
                }
                _ => {
                    // Keep back an ending that may grow into a tag or a stop sequence.
                    let keep = self.held_back();
                    let emit = self.pending.len() - keep;
                    self.text(emit, out);
                    return;
                }
            }
        }
    }

    /// Emits the first `n` bytes of pending text.
    fn text(&mut self, n: usize, out: &mut Vec<Event>) {
        if n == 0 {
            return;
        }
        let text: String = self.pending.drain(..n).collect();
        out.push(Event::text(self.calls, text));
    }

    fn held_back(&self) -> usize {
        let p = &self.pending;
        let mut keep = 0;
        let markers = std::iter::once(OPEN)
            .chain(DROPPED)
            .chain(self.stops.iter().map(String::as_str));
        for marker in markers {
            for len in (1..marker.len()).rev() {
                if len <= keep {
                    break;
                }
                if p.len() >= len
                    && p.is_char_boundary(p.len() - len)
                    && marker.starts_with(&p[p.len() - len..])
                {
                    keep = len;
                    break;
                }
            }
        }
        keep
    }

    fn call(&mut self, body: &str, out: &mut Vec<Event>) {
        let parsed: Option<(String, String)> =
            serde_json::from_str::<serde_json::Value>(body.trim())
                .ok()
                .and_then(|v| {
                    let name = v.get("name")?.as_str()?.to_owned();
                    let args = v.get("arguments").cloned().unwrap_or(serde_json::json!({}));
                    let args = match args {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    };
                    Some((name, args))
                });
        let Some((name, arguments)) = parsed else {
            // Not a call after all: it is text.
            out.push(Event::text(self.calls, format!("{OPEN}{body}{CLOSE}")));
            return;
        };
        let index = self.calls;
        self.calls += 1;
        // Unique in the process, so calls of different turns never share an id in a history.
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let id = format!("call_{}", NEXT_ID.fetch_add(1, Ordering::Relaxed));
        out.push(Event::ToolCallStart {
            index,
            id: id.clone(),
            name: name.clone(),
        });
        out.push(Event::ToolCallDelta {
            index,
            arguments: arguments.clone(),
        });
        out.push(Event::ToolCallEnd {
            index,
            call: ToolCall::new(id, name, arguments),
        });
    }

    /// The generation ended (`cut`: at the token limit): whatever is pending is text. A call
    /// left open is kept if its JSON is whole. Cut by the limit, one that is not is dropped,
    /// since half a call is neither a call nor anything the model meant to say; ended by
    /// the model itself (with no tools, no grammar holds it to calls), it is its text.
    pub(crate) fn finish(&mut self, out: &mut Vec<Event>, cut: bool) {
        if self.stopped {
            return;
        }
        if self.in_call {
            self.in_call = false;
            let body = std::mem::take(&mut self.pending);
            if serde_json::from_str::<serde_json::Value>(body.trim()).is_ok() {
                self.call(&body, out);
            } else if !cut {
                out.push(Event::text(self.calls, format!("{OPEN}{body}")));
            }
            return;
        }
        // Cut by the limit as the tag of a call began (`<tool`): that start is no text.
        let p = &self.pending;
        let begun = (1..OPEN.len().min(p.len() + 1))
            .rev()
            .find(|&len| p.is_char_boundary(p.len() - len) && OPEN.starts_with(&p[p.len() - len..]))
            .filter(|_| cut)
            .unwrap_or(0);
        let n = self.pending.len() - begun;
        self.text(n, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pieces: &[&str], stops: &[&str]) -> (String, Vec<(String, String)>, bool) {
        run_cut(pieces, stops, false)
    }

    fn run_cut(
        pieces: &[&str],
        stops: &[&str],
        cut: bool,
    ) -> (String, Vec<(String, String)>, bool) {
        let mut s = Splitter::new(stops.iter().map(|s| s.to_string()).collect());
        let mut out = Vec::new();
        for p in pieces {
            s.push(p, &mut out);
        }
        s.finish(&mut out, cut);
        let mut text = String::new();
        let mut calls = Vec::new();
        for e in out {
            match e {
                Event::TextDelta { text: t, .. } => text.push_str(&t),
                Event::ToolCallEnd { call, .. } => calls.push((call.name, call.arguments)),
                _ => {}
            }
        }
        (text, calls, s.stopped)
    }

    #[test]
    fn calls_split_across_pieces_are_found() {
        let pieces = [
            "Let me ",
            "check.<tool",
            "_call>\n{\"name\": \"weather\", ",
            "\"arguments\": {\"city\": \"Paris\"}}\n</tool_",
            "call>",
        ];
        let (text, calls, _) = run(&pieces, &[]);
        assert_eq!(text, "Let me check.");
        assert_eq!(
            calls,
            [("weather".to_owned(), r#"{"city":"Paris"}"#.to_owned())]
        );
    }

    #[test]
    fn every_split_of_the_same_output_gives_the_same_events() {
        let whole = "A<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>B<tool_call>{\"name\":\"g\",\"arguments\":{\"x\":1}}</tool_call>C END tail";
        let expect = run(&[whole], &["END"]);
        assert_eq!(expect.0, "ABC ");
        assert_eq!(expect.1.len(), 2);
        for cut in 1..whole.len() {
            assert_eq!(
                run(&[&whole[..cut], &whole[cut..]], &["END"]),
                expect,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn tool_response_tags_the_model_writes_are_left_out_however_cut() {
        let whole = "<tool_response>\nIt is 12:00.\n</tool_response> Done.";
        let expect = run(&[whole], &[]);
        assert_eq!(expect.0, "\nIt is 12:00.\n Done.");
        for cut in 1..whole.len() {
            assert_eq!(
                run(&[&whole[..cut], &whole[cut..]], &[]),
                expect,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn stop_sequences_end_the_text_and_are_not_emitted() {
        assert_eq!(
            run(&["1, 2, 3", ", 4"], &[", 3"]),
            ("1, 2".to_owned(), vec![], true)
        );
        assert_eq!(
            run(&["no stop here <tool"], &["STOP"]),
            ("no stop here <tool".to_owned(), vec![], false)
        );
    }

    #[test]
    fn malformed_calls_are_text_and_half_calls_cut_by_the_limit_are_dropped() {
        let (text, calls, _) = run(&["<tool_call>not json</tool_call>"], &[]);
        assert_eq!(
            (text.as_str(), calls.len()),
            ("<tool_call>not json</tool_call>", 0)
        );
        let (text, calls, _) = run(&["<tool_call>{\"name\":\"f\",\"arguments\":{}}"], &[]);
        assert_eq!(
            (text.as_str(), calls.len()),
            ("", 1),
            "a whole call cut before its close tag"
        );
        // Cut by the token limit, half a call is dropped; ended by the model, it is text.
        let half = ["Let me look.<tool_call>{\"name\":"];
        let (text, calls, _) = run_cut(&half, &[], true);
        assert_eq!((text.as_str(), calls.len()), ("Let me look.", 0));
        let (text, calls, _) = run(&half, &[]);
        assert_eq!(
            (text.as_str(), calls.len()),
            ("Let me look.<tool_call>{\"name\":", 0)
        );
        // So is the tag's start, cut before the tag was whole.
        for cut in ["<", "<tool", "<tool_call"] {
            let (text, _, _) = run_cut(&["Look.", cut], &[], true);
            assert_eq!(text, "Look.", "{cut}");
            let (text, _, _) = run(&["Look.", cut], &[]);
            assert_eq!(text, format!("Look.{cut}"), "{cut}");
        }
    }

    #[test]
    fn call_ids_are_unique_across_outputs() {
        let mut ids = std::collections::HashSet::new();
        for _ in 0..3 {
            let mut s = Splitter::new(vec![]);
            let mut out = Vec::new();
            s.push(
                "<tool_call>{\"name\":\"f\",\"arguments\":{}}</tool_call>",
                &mut out,
            );
            for e in out {
                if let Event::ToolCallEnd { call, .. } = e {
                    assert!(ids.insert(call.id));
                }
            }
        }
        assert_eq!(ids.len(), 3);
    }

    #[test]
    fn multibyte_text_is_never_cut_inside_a_character() {
        let (text, _, _) = run(&["caf", "é <", "tool é"], &[]);
        assert_eq!(text, "café <tool é");
    }
}
