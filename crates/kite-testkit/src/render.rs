//! A [`Response`] written as a provider would stream it, so that a scripted scenario can be
//! served by a [`ReplayServer`](crate::ReplayServer) in each provider's wire format and run
//! through the real codecs and transport.

use kite_core::{FinishReason, Part, Response};
use serde_json::{Value, json};

/// The wire formats a response can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// OpenAI Chat Completions chunks.
    Chat,
    /// Anthropic Messages events.
    Anthropic,
    /// OpenAI Responses events.
    Responses,
}

impl Shape {
    /// Every shape.
    pub const ALL: [Shape; 3] = [Shape::Chat, Shape::Anthropic, Shape::Responses];
}

/// `response` as the SSE body `shape`'s provider would send; `n` numbers the response
/// (ids are derived from it).
pub fn sse(shape: Shape, response: &Response, n: usize) -> Vec<u8> {
    let mut out = String::new();
    let mut emit = |event: Option<&str>, data: &Value| {
        if let Some(e) = event {
            out.push_str(&format!("event: {e}\n"));
        }
        out.push_str(&format!("data: {data}\n\n"));
    };
    let u = &response.usage;
    let model = response.model.clone().unwrap_or_else(|| "scripted".into());
    match shape {
        Shape::Chat => {
            let id = format!("chatcmpl-{n}");
            let chunk = |delta: Value, finish: Value| {
                json!({"id": id, "object": "chat.completion.chunk", "model": model,
                       "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
            };
            emit(
                None,
                &chunk(json!({"role": "assistant", "content": ""}), Value::Null),
            );
            let mut index = 0;
            for p in &response.message.parts {
                match p {
                    Part::Text { text } => {
                        emit(None, &chunk(json!({"content": text}), Value::Null))
                    }
                    Part::ToolCall(c) => {
                        emit(
                            None,
                            &chunk(
                                json!({"tool_calls": [{"index": index, "id": c.id, "type": "function",
                            "function": {"name": c.name, "arguments": ""}}]}),
                                Value::Null,
                            ),
                        );
                        emit(
                            None,
                            &chunk(
                                json!({"tool_calls": [{"index": index,
                            "function": {"arguments": c.arguments}}]}),
                                Value::Null,
                            ),
                        );
                        index += 1;
                    }
                    _ => {}
                }
            }
            emit(
                None,
                &chunk(json!({}), json!(chat_finish(&response.finish_reason))),
            );
            emit(
                None,
                &json!({"id": id, "object": "chat.completion.chunk", "model": model, "choices": [],
                "usage": {"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens,
                          "total_tokens": u.total_tokens,
                          "prompt_tokens_details": {"cached_tokens": u.cached_input_tokens},
                          "completion_tokens_details": {"reasoning_tokens": u.reasoning_tokens}}}),
            );
            out.push_str("data: [DONE]\n\n");
        }
        Shape::Anthropic => {
            emit(
                Some("message_start"),
                &json!({"type": "message_start", "message": {
                "id": format!("msg_{n}"), "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": null,
                "usage": {"input_tokens": u.input_tokens, "output_tokens": 1}}}),
            );
            for (i, p) in response.message.parts.iter().enumerate() {
                let (start, delta) = match p {
                    Part::Text { text } => (
                        json!({"type": "text", "text": ""}),
                        json!({"type": "text_delta", "text": text}),
                    ),
                    Part::ToolCall(c) => (
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": {}}),
                        json!({"type": "input_json_delta", "partial_json": c.arguments}),
                    ),
                    _ => continue,
                };
                emit(
                    Some("content_block_start"),
                    &json!({"type": "content_block_start", "index": i, "content_block": start}),
                );
                emit(Some("ping"), &json!({"type": "ping"}));
                emit(
                    Some("content_block_delta"),
                    &json!({"type": "content_block_delta", "index": i, "delta": delta}),
                );
                emit(
                    Some("content_block_stop"),
                    &json!({"type": "content_block_stop", "index": i}),
                );
            }
            let stop = match response.finish_reason {
                FinishReason::ToolCalls => "tool_use",
                FinishReason::Length => "max_tokens",
                _ => "end_turn",
            };
            emit(
                Some("message_delta"),
                &json!({"type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": u.output_tokens}}),
            );
            emit(Some("message_stop"), &json!({"type": "message_stop"}));
        }
        Shape::Responses => {
            let id = format!("resp_{n}");
            let mut seq = 0;
            let mut ev = |kind: &str, mut v: Value| {
                v["type"] = json!(kind);
                v["sequence_number"] = json!(seq);
                seq += 1;
                emit(Some(kind), &v);
            };
            let head = json!({"id": id, "object": "response", "status": "in_progress",
                              "background": false, "model": model, "output": []});
            ev("response.created", json!({"response": head}));
            let mut output = Vec::new();
            for (i, p) in response.message.parts.iter().enumerate() {
                let item = match p {
                    Part::Text { text } => {
                        let item_id = format!("msg_{n}_{i}");
                        ev(
                            "response.output_item.added",
                            json!({"output_index": i, "item":
                            {"id": item_id, "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
                        );
                        ev(
                            "response.output_text.delta",
                            json!({"output_index": i, "item_id": item_id,
                            "content_index": 0, "delta": text}),
                        );
                        json!({"id": item_id, "type": "message", "status": "completed", "role": "assistant",
                               "content": [{"type": "output_text", "text": text, "annotations": []}]})
                    }
                    Part::ToolCall(c) => {
                        let item_id = format!("fc_{n}_{i}");
                        ev(
                            "response.output_item.added",
                            json!({"output_index": i, "item":
                            {"id": item_id, "type": "function_call", "status": "in_progress",
                             "call_id": c.id, "name": c.name, "arguments": ""}}),
                        );
                        ev(
                            "response.function_call_arguments.delta",
                            json!({"output_index": i,
                            "item_id": item_id, "delta": c.arguments}),
                        );
                        json!({"id": item_id, "type": "function_call", "status": "completed",
                               "call_id": c.id, "name": c.name, "arguments": c.arguments})
                    }
                    _ => continue,
                };
                ev(
                    "response.output_item.done",
                    json!({"output_index": i, "item": item}),
                );
                output.push(item);
            }
            let (kind, status, details) = match response.finish_reason {
                FinishReason::Length => (
                    "response.incomplete",
                    "incomplete",
                    json!({"reason": "max_output_tokens"}),
                ),
                _ => ("response.completed", "completed", Value::Null),
            };
            ev(
                kind,
                json!({"response": {"id": id, "object": "response", "status": status,
                "background": false, "model": model, "output": output, "incomplete_details": details,
                "usage": {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                          "total_tokens": u.total_tokens}}}),
            );
        }
    }
    out.into_bytes()
}

fn chat_finish(reason: &FinishReason) -> &str {
    match reason {
        FinishReason::ToolCalls => "tool_calls",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content_filter",
        _ => "stop",
    }
}

/// The text a Chat Completions stream (`data:` lines, ending with `[DONE]`) says, read
/// the plain way a client reads it: the `content` of each chunk's first choice, in order.
pub fn chat_stream_text(body: &str) -> String {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|l| *l != "[DONE]")
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            v["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}
