//! Text and reasoning deltas carry the part they belong to, so a consumer can tell blocks
//! apart: text, thinking, then text again are three blocks, and so are two text blocks in a
//! row.

use kite_core::{Event, Part, ResponseBuilder};
use kite_wire::StreamDecoder;
use kite_wire::anthropic::AnthropicStreamDecoder;
use std::path::Path;

fn decode(body: &[u8]) -> Vec<Event> {
    let mut d = AnthropicStreamDecoder::new();
    let mut out = Vec::new();
    d.decode(body, &mut out).unwrap();
    d.finish(&mut out).unwrap();
    out
}

fn event(kind: &str, data: &str) -> String {
    format!("event: {kind}\ndata: {data}\n\n")
}

#[test]
fn text_thinking_then_text_are_three_blocks() {
    let mut sse = event(
        "message_start",
        r#"{"type":"message_start","message":{"id":"m","model":"claude","usage":{"input_tokens":3}}}"#,
    );
    for (i, (kind, field, text)) in [
        ("text", "text", "Let me look."),
        ("thinking", "thinking", "They want a list."),
        ("text", "text", "Here it is."),
    ]
    .into_iter()
    .enumerate()
    {
        let delta = if kind == "text" {
            "text_delta"
        } else {
            "thinking_delta"
        };
        sse += &event(
            "content_block_start",
            &format!(
                r#"{{"type":"content_block_start","index":{i},"content_block":{{"type":"{kind}","{field}":""}}}}"#
            ),
        );
        sse += &event(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":{i},"delta":{{"type":"{delta}","{field}":"{text}"}}}}"#
            ),
        );
        sse += &event(
            "content_block_stop",
            &format!(r#"{{"type":"content_block_stop","index":{i}}}"#),
        );
    }
    sse += &event(
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}"#,
    );
    sse += &event("message_stop", r#"{"type":"message_stop"}"#);

    let events = decode(sse.as_bytes());
    let parts: Vec<(u32, &str)> = events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { part, text } | Event::ReasoningDelta { part, text } => {
                Some((*part, text.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        parts,
        [
            (0, "Let me look."),
            (1, "They want a list."),
            (2, "Here it is.")
        ]
    );
    let r = ResponseBuilder::build(events).unwrap();
    assert_eq!(r.message.parts.len(), 3, "{:?}", r.message.parts);
    assert!(matches!(&r.message.parts[1], Part::Reasoning(x) if x.text == "They want a list."));
}

#[test]
fn recorded_text_blocks_around_a_server_tool_stay_apart() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/wire/anthropic/messages/stream-web-search-server-tool/response.sse");
    let body = std::fs::read(path).unwrap();
    // The blocks that carry text: the distinct indices before each text delta.
    let text = String::from_utf8_lossy(&body);
    let mut blocks: Vec<&str> = text
        .split(r#","delta":{"type":"text_delta""#)
        .filter_map(|before| before.rsplit(r#""index":"#).next())
        .take(text.matches("text_delta").count())
        .collect();
    blocks.sort();
    blocks.dedup();
    let text_blocks = blocks.len();
    let r = ResponseBuilder::build(decode(&body)).unwrap();
    let texts = r
        .message
        .parts
        .iter()
        .filter(|p| matches!(p, Part::Text { .. }))
        .count();
    assert!(text_blocks >= 5, "{blocks:?}");
    assert_eq!(texts, text_blocks);
}
