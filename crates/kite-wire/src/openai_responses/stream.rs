//! Streamed (SSE) Responses.

use super::items::{Items, start};
use super::wire::{StreamEvent, WireResponse};
use crate::ResumePoint;
use crate::errors;
use crate::sse::{Frames, SseStream};
use kite_core::{Error, Event, TransportErrorKind};
use serde_json::value::RawValue;

/// Decodes a streamed Responses response.
pub type ResponsesStreamDecoder = SseStream<ResponsesFrames>;

/// What the events of a Responses stream mean (see [`ResponsesStreamDecoder`]).
#[derive(Debug, Default)]
pub struct ResponsesFrames {
    items: Items,
    /// The last `sequence_number` seen: where a dropped stream resumes.
    pub last_sequence: Option<u64>,
    /// The response's id, once `response.created` named it.
    pub id: Option<String>,
    /// The response runs in the background, so its stream can be resumed.
    pub background: bool,
}

impl Frames for ResponsesFrames {
    fn frame(&mut self, event: &str, data: &[u8], out: &mut Vec<Event>) -> Result<bool, Error> {
        let data = data.trim_ascii();
        if data == b"[DONE]" {
            return Ok(false);
        }
        let v: StreamEvent = serde_json::from_slice(data)
            .map_err(|e| Error::decode(format!("event is not valid JSON: {e}"), data))?;
        if let Some(n) = v.sequence_number {
            // A resumed stream may repeat what was already seen.
            if self.last_sequence.is_some_and(|last| n <= last) {
                return Ok(false);
            }
            self.last_sequence = Some(n);
        }
        let kind = v.kind.as_ref().map_or(event, |k| k.as_str());
        let output_index = v.output_index.unwrap_or(0);
        // An output item is one part of the message.
        let part = u32::try_from(output_index).unwrap_or(u32::MAX);
        let none = WireResponse::default();
        match kind {
            "response.created" => {
                let response = v.response.as_deref().unwrap_or(&none);
                self.id = response.id.as_ref().map(|s| s.as_str().to_owned());
                self.background = response.background == Some(true);
                start(response, out);
            }
            "response.output_item.added" => {
                let item = v.item.unwrap_or(RawValue::NULL);
                self.items.added(output_index, item, out);
            }
            "response.output_item.done" => {
                let item = v.item.unwrap_or(RawValue::NULL);
                self.items.done(output_index, item, false, out);
            }
            "response.output_text.delta" => out.push(Event::text(part, v.delta.text())),
            "response.refusal.delta" => out.push(Event::RefusalDelta {
                part,
                text: v.delta.text(),
            }),
            "response.reasoning_summary_text.delta" => {
                out.push(Event::reasoning(part, v.delta.text()))
            }
            "response.reasoning_summary_part.added" if v.summary_index.unwrap_or(0) > 0 => {
                out.push(Event::reasoning(part, "\n\n"))
            }
            "response.function_call_arguments.delta" => {
                let index = self.items.call_index(output_index);
                out.push(Event::ToolCallDelta {
                    index,
                    arguments: v.delta.text(),
                });
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                let response = v.response.as_deref().unwrap_or(&none);
                self.items.end(response, out)?;
                return Ok(true);
            }
            // Fields at the top level, or (as some servers send them) under `error`.
            "error" => return Err(errors::from_event(data)),
            k if k.ends_with(".done")
                || k.ends_with(".added")
                || k == "response.in_progress"
                || k.starts_with("response.web_search_call.") => {}
            other => out.push(crate::sse::unknown(other, data)),
        }
        Ok(false)
    }

    fn eof(&mut self, _: &mut Vec<Event>) -> Result<(), Error> {
        Err(Error::transport(
            TransportErrorKind::ConnectionClosed,
            "the stream ended before the response was complete",
        ))
    }

    fn resume_point(&self) -> Option<ResumePoint> {
        Some(ResumePoint {
            id: self.id.clone().filter(|_| self.background)?,
            after: self.last_sequence?,
        })
    }
}
