//! Output items as they open and close, and how a response ends: the state the streamed and
//! whole faces share.

use super::NAMESPACE;
use super::wire::{Item, WireResponse};
use crate::errors::{self, api_error};
use crate::str::{Str, text, value};
use kite_core::{Error, Event, FinishReason, Metadata, ToolCall, Usage};
use serde_json::Value;
use serde_json::value::RawValue;

/// Tool calls by output index, numbered from 0 in the order they open.
#[derive(Debug, Default)]
pub(super) struct Items {
    calls: Vec<(u64, u32)>,
}

fn kind<'a>(item: &'a Item) -> &'a str {
    item.kind.as_ref().map_or("", Str::as_str)
}

/// `raw` read as an item; one whose fields do not have the shapes kite reads is one kite
/// has no type for.
fn item(raw: &RawValue) -> Item<'_> {
    serde_json::from_str(raw.get()).unwrap_or_default()
}

/// The message part an output item is: its index, saturated.
fn part(output_index: u64) -> u32 {
    u32::try_from(output_index).unwrap_or(u32::MAX)
}

impl Items {
    pub(super) fn call_index(&mut self, output_index: u64) -> u32 {
        if let Some((_, i)) = self.calls.iter().find(|(o, _)| *o == output_index) {
            return *i;
        }
        let i = self.calls.len() as u32;
        self.calls.push((output_index, i));
        i
    }

    pub(super) fn added(&mut self, output_index: u64, raw: &RawValue, out: &mut Vec<Event>) {
        let item = item(raw);
        if kind(&item) == "function_call" {
            self.start_call(output_index, item, out);
        }
    }

    fn start_call(&mut self, output_index: u64, item: Item, out: &mut Vec<Event>) {
        let index = self.call_index(output_index);
        out.push(Event::ToolCallStart {
            index,
            id: text(item.call_id),
            name: text(item.name),
        });
    }

    /// An item is complete. With `whole`, its content was not streamed and is emitted here.
    pub(super) fn done(
        &mut self,
        output_index: u64,
        raw: &RawValue,
        whole: bool,
        out: &mut Vec<Event>,
    ) {
        let item = item(raw);
        let part = part(output_index);
        match kind(&item) {
            "message" => {
                if whole {
                    for c in item.content.into_iter().flatten() {
                        match c.kind.as_ref().map(Str::as_str) {
                            Some("output_text") => out.push(Event::text(part, text(c.text))),
                            Some("refusal") => out.push(Event::RefusalDelta {
                                part,
                                text: text(c.refusal),
                            }),
                            _ => {}
                        }
                    }
                }
            }
            "reasoning" => {
                if whole {
                    let text: Vec<String> = item
                        .summary
                        .into_iter()
                        .flatten()
                        .map(|p| text(p.text))
                        .collect();
                    let text = text.join("\n\n");
                    if !text.is_empty() {
                        out.push(Event::reasoning(part, text));
                    }
                }
                out.push(Event::ReasoningEnd {
                    part,
                    metadata: Metadata::with(NAMESPACE, "item", value(raw)),
                });
            }
            "function_call" => {
                let index = self.call_index(output_index);
                if whole {
                    out.push(Event::ToolCallStart {
                        index,
                        id: text(item.call_id.clone()),
                        name: text(item.name.clone()),
                    });
                }
                let mut call =
                    ToolCall::new(text(item.call_id), text(item.name), text(item.arguments));
                call.metadata = Metadata::with(NAMESPACE, "item_id", Value::String(text(item.id)));
                out.push(Event::ToolCallEnd { index, call });
            }
            _ => out.push(Event::Unknown {
                kind: "responses.output_item".into(),
                data: value(raw),
            }),
        }
    }

    /// The response ended: usage and why; or the error that failed it.
    pub(super) fn end(
        &mut self,
        response: &WireResponse,
        out: &mut Vec<Event>,
    ) -> Result<(), Error> {
        let status = response.status.as_ref().map(Str::as_str);
        if status == Some("failed") {
            // The error as the server wrote it, whatever its shape.
            let error = serde_json::json!({"error": response.error.map(value)});
            let e = errors::from_value(None, &error)
                .unwrap_or_else(|| api_error(None, "the response failed", None, None));
            return Err(e.into());
        }
        let usage = response.usage.as_ref().map(Usage::from).unwrap_or_default();
        out.push(Event::Usage { usage });
        let reason = match status {
            Some("cancelled") => FinishReason::Other("cancelled".into()),
            Some("incomplete") => {
                let why = response
                    .incomplete_details
                    .as_ref()
                    .and_then(|d| d.reason.as_ref());
                match why.map(Str::as_str) {
                    Some("max_output_tokens") => FinishReason::Length,
                    Some("content_filter") => FinishReason::ContentFilter,
                    Some(other) => FinishReason::Other(other.to_owned()),
                    None => FinishReason::Other("incomplete".into()),
                }
            }
            _ if !self.calls.is_empty() => FinishReason::ToolCalls,
            _ => FinishReason::Stop,
        };
        out.push(Event::Finish { reason });
        Ok(())
    }
}

/// The events that open a response: its id and model, and the id kept with the message so a
/// stored conversation can continue from it.
pub(super) fn start(response: &WireResponse, out: &mut Vec<Event>) {
    let id = response.id.as_ref().map(|s| s.as_str().to_owned());
    out.push(Event::Start {
        id: id.clone(),
        model: response.model.as_ref().map(|s| s.as_str().to_owned()),
    });
    if let Some(id) = id {
        out.push(Event::Metadata {
            metadata: Metadata::with(NAMESPACE, "response_id", Value::String(id)),
        });
    }
}
