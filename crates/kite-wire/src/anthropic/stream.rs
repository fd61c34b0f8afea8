//! Streamed (SSE) Messages responses.

use super::blocks::Blocks;
use super::wire::{Delta, MessageHead, StreamEvent, read};
use crate::errors;
use crate::finish_reason;
use crate::sse::{Frames, SseStream};
use kite_core::{Error, Event, TransportErrorKind};
use serde_json::value::RawValue;

/// Decodes a streamed Messages response.
pub type AnthropicStreamDecoder = SseStream<AnthropicFrames>;

/// What the events of a Messages stream mean (see [`AnthropicStreamDecoder`]).
#[derive(Debug, Default)]
pub struct AnthropicFrames {
    blocks: Blocks,
}

impl Frames for AnthropicFrames {
    fn frame(&mut self, event: &str, data: &[u8], out: &mut Vec<Event>) -> Result<bool, Error> {
        let data = data.trim_ascii();
        let v: StreamEvent = serde_json::from_slice(data)
            .map_err(|e| Error::decode(format!("event is not valid JSON: {e}"), data))?;
        // The event name and the payload's `type` agree; the payload is authoritative.
        let kind = v.kind.as_ref().map_or(event, |k| k.as_str());
        let index = v.index.unwrap_or(0);
        match kind {
            "message_start" => {
                let m: MessageHead = match v.message {
                    Some(raw) => {
                        read(raw).map_err(|e| Error::decode(format!("message_start: {e}"), data))?
                    }
                    None => MessageHead::default(),
                };
                out.push(Event::Start {
                    id: m.id.map(|s| s.into_string()),
                    model: m.model.map(|s| s.into_string()),
                });
                if let Some(u) = &m.usage {
                    self.blocks.usage(u);
                }
            }
            "content_block_start" => {
                let block = v.content_block.unwrap_or(RawValue::NULL);
                self.blocks.start(index, block, out);
            }
            "content_block_delta" => {
                let delta = v.delta.unwrap_or(RawValue::NULL);
                self.blocks.delta(index, delta, out);
            }
            "content_block_stop" => self.blocks.stop(index, out),
            "message_delta" => {
                let delta: Delta = v.delta.and_then(|raw| read(raw).ok()).unwrap_or_default();
                if let Some(r) = delta.stop_reason {
                    self.blocks.finish = Some(finish_reason(r.as_str()));
                }
                if let Some(u) = &v.usage {
                    self.blocks.usage(u);
                }
            }
            "message_stop" => {
                self.blocks.finish(out);
                return Ok(true);
            }
            "ping" => {}
            // Fields at the top level, or (as some servers send them) under `error`.
            "error" => return Err(errors::from_event(data)),
            other => out.push(crate::sse::unknown(other, data)),
        }
        Ok(false)
    }

    fn eof(&mut self, _: &mut Vec<Event>) -> Result<(), Error> {
        Err(Error::transport(
            TransportErrorKind::ConnectionClosed,
            "the stream ended before message_stop",
        ))
    }
}
