//! Streamed (SSE) and whole (JSON) Responses.

use super::NAMESPACE;
use crate::ResumePoint;
use crate::errors;
use crate::sse::{Frames, SseStream};
use kite_core::{
    ApiError, Error, Event, FinishReason, Metadata, Response, ResponseBuilder, ToolCall,
    TransportErrorKind, Usage,
};
use serde_json::Value;

fn s(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Output items as they open and close: the state both faces share.
#[derive(Debug, Default)]
struct Items {
    /// Tool calls by output index, numbered from 0 in the order they open.
    calls: Vec<(u64, u32)>,
}

impl Items {
    fn call_index(&mut self, output_index: u64) -> u32 {
        if let Some((_, i)) = self.calls.iter().find(|(o, _)| *o == output_index) {
            return *i;
        }
        let i = self.calls.len() as u32;
        self.calls.push((output_index, i));
        i
    }

    fn added(&mut self, output_index: u64, item: &Value, out: &mut Vec<Event>) {
        if item["type"] == "function_call" {
            let index = self.call_index(output_index);
            out.push(Event::ToolCallStart {
                index,
                id: s(item, "call_id"),
                name: s(item, "name"),
            });
        }
    }

    /// An item is complete. With `whole`, its content was not streamed and is emitted here.
    fn done(&mut self, output_index: u64, item: &Value, whole: bool, out: &mut Vec<Event>) {
        match item.get("type").and_then(Value::as_str).unwrap_or("") {
            "message" => {
                if whole {
                    for part in item["content"].as_array().into_iter().flatten() {
                        match part["type"].as_str() {
                            Some("output_text") => out.push(Event::TextDelta {
                                text: s(part, "text"),
                            }),
                            Some("refusal") => out.push(Event::RefusalDelta {
                                text: s(part, "refusal"),
                            }),
                            _ => {}
                        }
                    }
                }
            }
            "reasoning" => {
                if whole {
                    let text: String = item["summary"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|p| s(p, "text"))
                        .collect::<Vec<_>>()
                        .join("\n\n");
                    if !text.is_empty() {
                        out.push(Event::ReasoningDelta { text });
                    }
                }
                out.push(Event::ReasoningEnd {
                    metadata: Metadata::with(NAMESPACE, "item", item.clone()),
                });
            }
            "function_call" => {
                if whole {
                    self.added(output_index, item, out);
                }
                let index = self.call_index(output_index);
                let mut call =
                    ToolCall::new(s(item, "call_id"), s(item, "name"), s(item, "arguments"));
                call.metadata = Metadata::with(NAMESPACE, "item_id", Value::String(s(item, "id")));
                out.push(Event::ToolCallEnd { index, call });
            }
            _ => out.push(Event::Unknown {
                kind: "responses.output_item".into(),
                data: item.clone(),
            }),
        }
    }

    /// The response ended: usage and why; or the error that failed it.
    fn end(&mut self, response: &Value, out: &mut Vec<Event>) -> Result<(), Error> {
        if response["status"] == "failed" {
            let err = &response["error"];
            let mut e = ApiError::new(None, s(err, "message"));
            e = e.with_code(
                err.get("code").and_then(Value::as_str).map(str::to_owned),
                None,
            );
            return Err(e.into());
        }
        let u = &response["usage"];
        let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        let usage = Usage {
            input_tokens: n("/input_tokens"),
            output_tokens: n("/output_tokens"),
            total_tokens: n("/total_tokens"),
            cached_input_tokens: n("/input_tokens_details/cached_tokens"),
            reasoning_tokens: n("/output_tokens_details/reasoning_tokens"),
            cost: None,
        };
        out.push(Event::Usage { usage });
        let reason = match response["status"].as_str() {
            Some("cancelled") => FinishReason::Other("cancelled".into()),
            Some("incomplete") => match response
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
            {
                Some("max_output_tokens") => FinishReason::Length,
                Some("content_filter") => FinishReason::ContentFilter,
                Some(other) => FinishReason::Other(other.to_owned()),
                None => FinishReason::Other("incomplete".into()),
            },
            _ if !self.calls.is_empty() => FinishReason::ToolCalls,
            _ => FinishReason::Stop,
        };
        out.push(Event::Finish { reason });
        Ok(())
    }
}

/// The events that open a response: its id and model, and the id kept with the message so a
/// stored conversation can continue from it.
fn start(response: &Value, out: &mut Vec<Event>) {
    let id = response
        .get("id")
        .and_then(Value::as_str)
        .map(str::to_owned);
    out.push(Event::Start {
        id: id.clone(),
        model: response
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_owned),
    });
    if let Some(id) = id {
        out.push(Event::Metadata {
            metadata: Metadata::with(NAMESPACE, "response_id", Value::String(id)),
        });
    }
}

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
        let v: Value = serde_json::from_slice(data)
            .map_err(|e| Error::decode(format!("event is not valid JSON: {e}"), data))?;
        if let Some(n) = v.get("sequence_number").and_then(Value::as_u64) {
            // A resumed stream may repeat what was already seen.
            if self.last_sequence.is_some_and(|last| n <= last) {
                return Ok(false);
            }
            self.last_sequence = Some(n);
        }
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(event);
        let output_index = v.get("output_index").and_then(Value::as_u64).unwrap_or(0);
        match kind {
            "response.created" => {
                let response = &v["response"];
                self.id = response["id"].as_str().map(str::to_owned);
                self.background = response["background"] == true;
                start(response, out);
            }
            "response.output_item.added" => self.items.added(output_index, &v["item"], out),
            "response.output_item.done" => self.items.done(output_index, &v["item"], false, out),
            "response.output_text.delta" => out.push(Event::TextDelta {
                text: s(&v, "delta"),
            }),
            "response.refusal.delta" => out.push(Event::RefusalDelta {
                text: s(&v, "delta"),
            }),
            "response.reasoning_summary_text.delta" => out.push(Event::ReasoningDelta {
                text: s(&v, "delta"),
            }),
            "response.reasoning_summary_part.added"
                if v["summary_index"].as_u64().unwrap_or(0) > 0 =>
            {
                out.push(Event::ReasoningDelta {
                    text: "\n\n".into(),
                })
            }
            "response.function_call_arguments.delta" => {
                let index = self.items.call_index(output_index);
                out.push(Event::ToolCallDelta {
                    index,
                    arguments: s(&v, "delta"),
                });
            }
            "response.completed" | "response.incomplete" | "response.failed" => {
                self.items.end(&v["response"], out)?;
                return Ok(true);
            }
            // Fields at the top level, or (as some servers send them) under `error`.
            "error" => return Err(errors::from_event(data)),
            k if k.ends_with(".done")
                || k.ends_with(".added")
                || k == "response.in_progress"
                || k.starts_with("response.web_search_call.") => {}
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

/// The events a whole (non-streamed) Responses response stands for.
pub fn response_events(body: &[u8]) -> Result<Vec<Event>, Error> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| Error::decode(format!("response is not valid JSON: {e}"), body))?;
    let Some(output) = v.get("output").and_then(Value::as_array) else {
        if let Some(e) = errors::from_value(None, &v) {
            return Err(e.into());
        }
        return Err(Error::decode("response has no output", body));
    };
    let mut out = Vec::new();
    start(&v, &mut out);
    let mut items = Items::default();
    for (i, item) in output.iter().enumerate() {
        items.done(i as u64, item, true, &mut out);
    }
    items.end(&v, &mut out)?;
    Ok(out)
}

/// Decodes a whole (non-streamed) Responses response.
pub fn decode_response(body: &[u8]) -> Result<Response, Error> {
    ResponseBuilder::build(response_events(body)?)
}

/// Where a stored response stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    Queued,
    InProgress,
    Completed,
    Incomplete,
    Failed,
    Cancelled,
    /// A status kite has no name for, as the provider sent it.
    Other(String),
}

impl Status {
    /// The status named `s` on the wire.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "queued" => Self::Queued,
            "in_progress" => Self::InProgress,
            "completed" => Self::Completed,
            "incomplete" => Self::Incomplete,
            "failed" => Self::Failed,
            "cancelled" => Self::Cancelled,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Queued => "queued",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Incomplete => "incomplete",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Other(s) => s,
        }
    }

    /// The response will not change any more.
    pub fn is_done(&self) -> bool {
        !matches!(self, Self::Queued | Self::InProgress)
    }
}

/// A stored response as retrieved (`GET /responses/{id}`): its id and status, and, once it is
/// done, the answer it holds (or the error that failed it).
#[derive(Debug)]
pub struct Stored {
    pub id: String,
    pub status: Status,
    pub result: Option<Result<Response, Error>>,
}

/// Decodes a stored response's JSON.
pub fn decode_stored(body: &[u8]) -> Result<Stored, Error> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| Error::decode(format!("response is not valid JSON: {e}"), body))?;
    let (Some(id), Some(status)) = (v["id"].as_str(), v["status"].as_str()) else {
        return Err(Error::decode("stored response has no id or status", body));
    };
    let status = Status::from_wire(status);
    let result = status.is_done().then(|| decode_response(body));
    Ok(Stored {
        id: id.to_owned(),
        status,
        result,
    })
}
