//! Streamed (SSE) and whole (JSON) Messages responses.

use super::blocks::Blocks;
use crate::errors;
use crate::sse::{Frames, SseStream};
use kite_core::{
    ApiError, Error, Event, FinishReason, Response, ResponseBuilder, TransportErrorKind,
};
use serde_json::Value;

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
        let v: Value = serde_json::from_slice(data)
            .map_err(|e| Error::decode(format!("event is not valid JSON: {e}"), data))?;
        // The event name and the payload's `type` agree; the payload is authoritative.
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event);
        let index = v.get("index").and_then(Value::as_u64).unwrap_or(0) as u32;
        match kind {
            "message_start" => {
                let m = &v["message"];
                out.push(Event::Start {
                    id: m.get("id").and_then(Value::as_str).map(str::to_owned),
                    model: m.get("model").and_then(Value::as_str).map(str::to_owned),
                });
                if let Some(u) = m.get("usage") {
                    self.blocks.usage(u);
                }
            }
            "content_block_start" => self.blocks.start(index, &v["content_block"], out),
            "content_block_delta" => self.blocks.delta(index, &v["delta"], out),
            "content_block_stop" => self.blocks.stop(index, out),
            "message_delta" => {
                if let Some(r) = v.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.blocks.finish = Some(FinishReason::from_wire(r));
                }
                if let Some(u) = v.get("usage") {
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
            other => out.push(Event::Unknown {
                kind: other.to_owned(),
                data: v.clone(),
            }),
        }
        Ok(false)
    }

    fn eof(&mut self, _: u64, _: &[u8], _: &mut Vec<Event>) -> Result<(), Error> {
        Err(Error::transport(
            TransportErrorKind::ConnectionClosed,
            "the stream ended before message_stop",
        ))
    }
}

/// The events a whole (non-streamed) Messages response stands for.
pub fn response_events(body: &[u8]) -> Result<Vec<Event>, Error> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| Error::decode(format!("message is not valid JSON: {e}"), body))?;
    if v.get("type").and_then(Value::as_str) == Some("error") {
        let e = errors::from_value(None, &v).unwrap_or_else(|| ApiError::new(None, v.to_string()));
        return Err(e.into());
    }
    let Some(content) = v.get("content").and_then(Value::as_array) else {
        return Err(Error::decode("message has no content", body));
    };
    let mut out = vec![Event::Start {
        id: v.get("id").and_then(Value::as_str).map(str::to_owned),
        model: v.get("model").and_then(Value::as_str).map(str::to_owned),
    }];
    let mut blocks = Blocks::default();
    for (i, block) in content.iter().enumerate() {
        blocks.start(i as u32, block, &mut out);
        blocks.stop(i as u32, &mut out);
    }
    if let Some(u) = v.get("usage") {
        blocks.usage(u);
    }
    blocks.finish = v
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(FinishReason::from_wire);
    blocks.finish(&mut out);
    Ok(out)
}

/// Decodes a whole (non-streamed) Messages response.
pub fn decode_response(body: &[u8]) -> Result<Response, Error> {
    ResponseBuilder::build(response_events(body)?)
}
