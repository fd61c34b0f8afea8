//! The data model's own rules: how events fold into a response, how usage sums, how errors
//! are classified, how everything serializes.

use kite_core::{
    Error, Event, FinishReason, Message, Metadata, Part, Request, ResponseBuilder, Role, ToolCall,
    ToolChoice, ToolResult, Usage,
};
use serde_json::json;

fn build(events: Vec<Event>) -> Result<kite_core::Response, Error> {
    let mut b = ResponseBuilder::new();
    events.into_iter().for_each(|e| b.push(e));
    b.finish()
}

#[test]
fn deltas_fold_into_parts_in_order() {
    let r = build(vec![
        Event::Start {
            id: Some("r1".into()),
            model: Some("m".into()),
        },
        Event::reasoning(0, "think"),
        Event::reasoning(0, "ing"),
        Event::ReasoningEnd {
            part: 0,
            metadata: Metadata::with("anthropic", "signature", json!("sig")),
        },
        Event::text(1, "Hel"),
        Event::text(1, ""),
        Event::text(1, "lo"),
        Event::ToolCallStart {
            index: 1,
            id: "c2".into(),
            name: "b".into(),
        },
        Event::ToolCallDelta {
            index: 1,
            arguments: "{}".into(),
        },
        Event::ToolCallEnd {
            index: 0,
            call: ToolCall::new("c1", "a", r#"{"x":1}"#),
        },
        Event::ToolCallEnd {
            index: 1,
            call: ToolCall::new("c2", "b", "{}"),
        },
        Event::Usage {
            usage: Usage {
                input_tokens: 1,
                ..Usage::default()
            },
        },
        Event::Usage {
            usage: Usage {
                input_tokens: 5,
                output_tokens: 2,
                total_tokens: 7,
                ..Usage::default()
            },
        },
        Event::Finish {
            reason: FinishReason::ToolCalls,
        },
    ])
    .unwrap();
    assert_eq!(r.id.as_deref(), Some("r1"));
    assert_eq!(r.message.role, Role::Assistant);
    assert_eq!(r.message.parts.len(), 4);
    match &r.message.parts[0] {
        Part::Reasoning(x) => {
            assert_eq!(x.text, "thinking");
            assert_eq!(
                x.metadata.get("anthropic", "signature"),
                Some(&json!("sig"))
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.text(), "Hello");
    let calls: Vec<_> = r.tool_calls().map(|c| c.id.as_str()).collect();
    assert_eq!(calls, ["c1", "c2"]);
    assert_eq!(r.usage.input_tokens, 5, "the last usage is the total");
}

#[test]
fn a_new_reasoning_block_after_text_is_a_new_part() {
    let r = build(vec![
        Event::reasoning(0, "a"),
        Event::text(1, "b"),
        Event::reasoning(2, "c"),
        Event::ReasoningEnd {
            part: 2,
            metadata: Metadata::new(),
        },
        Event::ReasoningEnd {
            part: 3,
            metadata: Metadata::with("x", "data", json!("opaque")),
        },
        Event::Finish {
            reason: FinishReason::Stop,
        },
    ])
    .unwrap();
    let kinds: Vec<&str> = r
        .message
        .parts
        .iter()
        .map(|p| match p {
            Part::Reasoning(r) if r.text.is_empty() => "opaque-reasoning",
            Part::Reasoning(_) => "reasoning",
            Part::Text { .. } => "text",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds,
        ["reasoning", "text", "reasoning", "opaque-reasoning"]
    );
}

#[test]
fn deltas_of_another_part_start_a_block_even_of_the_same_kind() {
    // Text, thinking, then text again (Anthropic's adaptive thinking): three blocks.
    let r = build(vec![
        Event::text(0, "Let me check. "),
        Event::reasoning(1, "the user wants"),
        Event::text(2, "Done."),
        Event::text(3, "And more."),
        Event::text(3, " Still."),
        Event::Finish {
            reason: FinishReason::Stop,
        },
    ])
    .unwrap();
    let texts: Vec<String> = r
        .message
        .parts
        .iter()
        .map(|p| match p {
            Part::Text { text } => format!("text:{text}"),
            Part::Reasoning(r) => format!("reasoning:{}", r.text),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        texts,
        [
            "text:Let me check. ",
            "reasoning:the user wants",
            "text:Done.",
            "text:And more. Still."
        ]
    );
}

#[test]
fn a_stream_without_a_finish_is_an_error() {
    let e = build(vec![Event::text(0, "cut")]).unwrap_err();
    assert!(matches!(e, Error::Transport(_)), "{e:?}");
    assert!(e.to_string().contains("ended before"));
}

#[test]
fn usage_sums_and_keeps_cost_when_any_side_has_one() {
    let a = Usage {
        input_tokens: 10,
        output_tokens: 2,
        total_tokens: 12,
        cached_input_tokens: 4,
        cache_write_tokens: 3,
        reasoning_tokens: 1,
        cost: None,
    };
    let b = Usage {
        input_tokens: 1,
        output_tokens: 1,
        total_tokens: 2,
        cost: Some(0.5),
        ..Usage::default()
    };
    let s = a + b;
    assert_eq!(
        (s.input_tokens, s.output_tokens, s.total_tokens),
        (11, 3, 14)
    );
    assert_eq!(
        (
            s.cached_input_tokens,
            s.cache_write_tokens,
            s.reasoning_tokens
        ),
        (4, 3, 1)
    );
    assert_eq!(s.cost, Some(0.5));
    assert_eq!((a + a).cost, None);
}

#[test]
fn finish_reasons_serialize_by_kite_names() {
    assert_eq!(
        serde_json::to_value(FinishReason::ToolCalls).unwrap(),
        json!("tool_calls")
    );
    let back: FinishReason = serde_json::from_value(json!("length")).unwrap();
    assert_eq!(back, FinishReason::Length);
}

#[test]
fn decode_errors_keep_a_bounded_payload() {
    let e = kite_core::DecodeError::new("bad", vec![b'x'; 10_000]);
    assert!(e.payload.len() <= kite_core::DecodeError::MAX_PAYLOAD + 3);
    assert!(e.payload.ends_with("..."));
}

#[test]
fn history_round_trips_through_serde() {
    let mut req = Request::new("m")
        .system("s")
        .message(Message::user("q"))
        .message(Message::new(
            Role::Assistant,
            vec![
                Part::ToolCall(ToolCall::new("c", "f", "{\"a\":1}")),
                Part::Refusal { text: "no".into() },
            ],
        ));
    req.messages
        .push(Message::tool_result(ToolResult::error("c", "boom")));
    req.tool_choice = Some(ToolChoice::Tool("f".into()));
    let json = serde_json::to_string(&req).unwrap();
    let back: Request = serde_json::from_str(&json).unwrap();
    assert_eq!(back, req);
}

#[test]
fn empty_arguments_mean_an_empty_object() {
    assert_eq!(
        ToolCall::new("c", "f", "").parse_arguments().unwrap(),
        json!({})
    );
    assert!(ToolCall::new("c", "f", "{oops").parse_arguments().is_err());
}

#[test]
fn a_response_streams_back_into_itself() {
    let original = build(vec![
        Event::Start {
            id: Some("r".into()),
            model: None,
        },
        Event::reasoning(0, "hmm"),
        Event::ReasoningEnd {
            part: 0,
            metadata: Metadata::with(
                "chat",
                "reasoning_details",
                json!([{"type": "reasoning.text"}]),
            ),
        },
        Event::text(1, "calling"),
        Event::ToolCallEnd {
            index: 0,
            call: ToolCall::new("c1", "f", "{}"),
        },
        Event::ToolCallEnd {
            index: 1,
            call: ToolCall::new("c2", "g", r#"{"a":1}"#),
        },
        Event::Usage {
            usage: Usage {
                input_tokens: 3,
                ..Usage::default()
            },
        },
        Event::Finish {
            reason: FinishReason::ToolCalls,
        },
    ])
    .unwrap();
    let again = build(original.clone().into_events()).unwrap();
    assert_eq!(again, original);
}
