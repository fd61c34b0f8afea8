//! The Responses serve codec's cases: decoding clients' requests (refusals, items, tools,
//! formats), the whole answer, and the stream events. A list of cases, kept together
//! past 450 lines so each reads beside its neighbours.

use super::*;
use crate::StreamDecoder;
use crate::openai_responses::{Options, ResponsesStreamDecoder, decode_response, encode_request};
use kite_core::{Event, ImageSource, ResponseBuilder, Role, ToolCall, ToolResult};

fn decode(body: Value) -> Result<ClientRequest, Error> {
    decode_request(body.to_string().as_bytes())
}

fn recorded(case: &str) -> Vec<u8> {
    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/wire/openai/responses"
    );
    std::fs::read(format!("{root}/{case}/request.json")).unwrap()
}

#[test]
fn string_input_is_one_user_message() {
    let c = decode(
        json!({"model": "m", "input": "Hi", "instructions": "Be brief",
        "stream": true, "store": true, "max_output_tokens": 100, "temperature": 0.2,
        "top_p": 0.9, "parallel_tool_calls": false, "reasoning": {"effort": "low"},
        "include": ["reasoning.encrypted_content"], "prompt_cache_key": "k",
        "text": {"verbosity": "low"}}),
    )
    .unwrap();
    let r = &c.request;
    assert!(c.stream);
    assert_eq!(
        (r.model.as_str(), r.system.as_deref()),
        ("m", Some("Be brief"))
    );
    assert_eq!(r.messages, [Message::user("Hi")]);
    assert_eq!(
        (r.max_tokens, r.temperature, r.top_p),
        (Some(100), Some(0.2), Some(0.9))
    );
    assert_eq!(r.parallel_tool_calls, Some(false));
    assert_eq!(r.reasoning.as_ref().unwrap().effort.as_deref(), Some("low"));
    assert_eq!(r.verbosity.as_deref(), Some("low"));
}

#[test]
fn a_field_not_served_is_refused_by_name_not_dropped() {
    for (body, says) in [
        (json!({"unknown": 1}), "`unknown` is not a field"),
        (json!({"background": true}), "`background` is not served"),
        (
            json!({"include": ["message.output_text.logprobs"]}),
            "`include`",
        ),
        (json!({"top_logprobs": 5}), "`top_logprobs`"),
        (json!({"truncation": "auto"}), "`truncation`"),
        (json!({"service_tier": 1}), "`service_tier` must be text"),
        (json!({"prompt": {"id": "p"}}), "`prompt`"),
        (
            json!({"text": {"verbosity": "loud"}}),
            "`verbosity` must be one of",
        ),
        (json!({"text": {"other": 1}}), "`other` is not a field"),
        (json!({"user": 7}), "`user` must be text"),
        (
            json!({"parallel_tool_calls": "no"}),
            "`parallel_tool_calls` must be true",
        ),
        (json!({"stream_options": {"x": 1}}), "`stream_options.x`"),
        (json!({"input": []}), "`input` is empty"),
    ] {
        let mut v = json!({"model": "m", "input": "x"});
        for (k, x) in body.as_object().unwrap() {
            v[k] = x.clone();
        }
        let e = decode(v).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidRequest(m) if m.contains(says)),
            "{body}: {e}"
        );
    }
    // What asks for nothing is taken.
    let ok = json!({"model": "m", "input": "x", "background": false, "truncation": "disabled",
        "service_tier": "auto", "metadata": {}, "top_logprobs": 0, "store": false});
    assert!(decode(ok).unwrap().request.provider_options.is_empty());
    // What only OpenAI's API has is asked of it, for a route to another to refuse.
    let asked = decode(
        json!({"model": "m", "input": "x", "service_tier": "priority",
        "metadata": {"a": "b"}}),
    )
    .unwrap()
    .request;
    assert_eq!(
        asked.provider_options.get(NAMESPACE, "service_tier"),
        Some(&json!("priority"))
    );
    let why = asked
        .foreign_option("chat", "OpenAI Chat Completions")
        .unwrap();
    assert!(
        why.starts_with("`metadata` is OpenAI Responses' own"),
        "{why}"
    );
}

#[test]
fn recorded_items_round_trip_through_kites_own_encoder() {
    let body = recorded("function-call-output-followup");
    let c = decode_request(&body).unwrap();
    let r = &c.request;
    assert!(!c.stream);
    assert_eq!(r.messages.len(), 3);
    let call = r.messages[1].tool_calls().next().unwrap();
    assert_eq!(
        (call.id.as_str(), call.name.as_str()),
        ("call_nJmCK7SJe3ajdYYplIbH0KgL", "multiply")
    );
    assert_eq!(r.messages[2].role, Role::Tool);
    assert_eq!((r.tools.len(), r.tools[0].name.as_str()), (1, "multiply"));
    // What a client sent is what kite would send on.
    let sent: Value = serde_json::from_slice(&body).unwrap();
    let again: Value =
        serde_json::from_slice(&encode_request(r, &Options::default(), false).unwrap()).unwrap();
    assert_eq!(again["input"], sent["input"]);
}

#[test]
fn items_of_one_turn_make_one_assistant_message() {
    let c = decode(json!({"model": "m", "input": [
        {"role": "developer", "content": "Rules."},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Look"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
            {"type": "input_image", "image_url": "https://x/y.png", "detail": "high"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
        {"role": "assistant", "content": [{"type": "output_text", "text": "Adding.", "annotations": []}]},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "add", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": "3"}]}]}))
    .unwrap();
    let r = c.request;
    assert_eq!(r.system.as_deref(), Some("Rules."));
    assert_eq!(r.messages.len(), 3);
    assert!(matches!(&r.messages[0].parts[1],
        Part::Image { source: ImageSource::Base64 { media_type, data }, .. }
        if media_type == "image/png" && data == "AAAA"));
    assert!(matches!(&r.messages[0].parts[2], Part::Image { detail: Some(d), .. } if d == "high"));
    let turn = &r.messages[1].parts;
    assert_eq!(turn.len(), 3);
    assert!(matches!(&turn[0], Part::Reasoning(x) if x.metadata.get(NAMESPACE, "item").is_some()));
    assert_eq!(turn[1], Part::text("Adding."));
    assert_eq!(
        r.messages[2].parts,
        [Part::ToolResult(ToolResult::text("c1", "3"))]
    );
}

#[test]
fn function_tools_and_choices_are_decoded_and_others_refused() {
    let c = decode(
        json!({"model": "m", "input": "x", "tool_choice": {"type": "function", "name": "add"},
        "tools": [{"type": "function", "name": "add", "description": "Adds.", "strict": true,
            "parameters": {"type": "object", "properties": {"a": {"type": "number"}}}}]}),
    )
    .unwrap();
    let t = &c.request.tools[0];
    assert_eq!(
        (t.name.as_str(), t.description.as_str(), t.strict),
        ("add", "Adds.", Some(true))
    );
    assert_eq!(t.parameters["properties"]["a"]["type"], "number");
    assert_eq!(c.request.tool_choice, Some(ToolChoice::Tool("add".into())));
    // A choice the tools cannot meet is refused.
    for choice in [
        json!("required"),
        json!({"type": "function", "name": "sub"}),
    ] {
        let e = decode(json!({"model": "m", "input": "x", "tool_choice": choice,
            "tools": if choice == "required" { json!([]) } else { c_tools() }}));
        assert!(
            matches!(&e, Err(Error::InvalidRequest(m)) if m.contains("`tool_choice`")),
            "{choice}: {e:?}"
        );
    }
    // A hosted tool is handed back for the gateway's policy; an unknown kind is refused.
    let hosted = decode(json!({"model": "m", "input": "x", "tools": [{"type": "web_search"}]}));
    assert_eq!(hosted.unwrap().hosted, vec![json!({"type": "web_search"})]);
    let e = decode(json!({"model": "m", "input": "x", "tools": [{"type": "frobnicate"}]}));
    assert!(
        matches!(&e, Err(Error::InvalidRequest(m)) if m.contains("tools[0]") && m.contains("frobnicate")),
        "{e:?}"
    );
}

fn c_tools() -> serde_json::Value {
    json!([{"type": "function", "name": "add", "parameters": {"type": "object"}}])
}

#[test]
fn text_format_becomes_structured_output() {
    let c = decode(
        json!({"model": "m", "input": "x", "text": {"format": {"type": "json_schema",
        "name": "point", "schema": {"type": "object"}, "strict": true}}}),
    )
    .unwrap();
    assert_eq!(
        c.request.response_format,
        Some(ResponseFormat::JsonSchema {
            name: "point".into(),
            schema: json!({"type": "object"}),
            description: None,
            strict: Some(true),
        })
    );
    let o =
        decode(json!({"model": "m", "input": "x", "text": {"format": {"type": "json_object"}}}));
    assert_eq!(
        o.unwrap().request.response_format,
        Some(ResponseFormat::JsonObject)
    );
}

#[test]
fn stored_state_and_bad_bodies_are_refused() {
    for field in ["previous_response_id", "conversation"] {
        let e = decode(json!({"model": "m", "input": "x", field: "resp_1"})).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidRequest(m) if m.contains(field) && m.contains("stored")),
            "{e}"
        );
    }
    assert!(decode(json!({"model": "m", "input": "x", "previous_response_id": null})).is_ok());
    assert!(
        matches!(decode_request(b"{not json"), Err(Error::InvalidRequest(m)) if m.contains("JSON"))
    );
    assert!(decode(json!({"input": "x"})).is_err());
    assert!(decode(json!({"model": "m"})).is_err());
    let e = decode(json!({"model": "m", "input": [{"type": "item_reference", "id": "msg_1"}]}));
    assert!(matches!(e, Err(Error::InvalidRequest(m)) if m.starts_with("input[0]")));
}

fn answer() -> Response {
    let mut r = Response::empty(FinishReason::ToolCalls);
    r.message.parts = vec![
        Part::text("Let me add."),
        Part::ToolCall(ToolCall::new("c1", "add", r#"{"a":1}"#)),
    ];
    r.usage = Usage {
        input_tokens: 10,
        output_tokens: 5,
        cached_input_tokens: 2,
        reasoning_tokens: 1,
        ..Usage::default()
    };
    r
}

#[test]
fn a_whole_response_has_its_items_and_usage() {
    let v = encode_response(&answer(), "resp_1", "m", 7, &ClientTools::default());
    assert_eq!(
        (
            v["object"].as_str(),
            v["status"].as_str(),
            v["created_at"].as_u64()
        ),
        (Some("response"), Some("completed"), Some(7))
    );
    assert!(v.get("output_text").is_none());
    assert_eq!(
        v["output"][0],
        json!({"id": "msg_1_0", "type": "message", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": "Let me add."}]})
    );
    assert_eq!(
        v["output"][1],
        json!({"id": "fc_1_1", "type": "function_call", "status": "completed",
        "call_id": "c1", "name": "add", "arguments": r#"{"a":1}"#})
    );
    assert_eq!(
        v["usage"],
        json!({"input_tokens": 10, "input_tokens_details": {"cached_tokens": 2},
        "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 1}, "total_tokens": 15})
    );
    // kite's own client reads it back.
    let back = decode_response(v.to_string().as_bytes()).unwrap();
    assert_eq!(
        (back.text(), back.finish_reason.clone()),
        ("Let me add.".into(), FinishReason::ToolCalls)
    );
    assert_eq!(back.tool_calls().next().unwrap().arguments, r#"{"a":1}"#);
    let mut cut = Response::empty(FinishReason::Length);
    cut.message.parts = vec![Part::text("Half")];
    let v = encode_response(&cut, "resp_2", "m", 7, &ClientTools::default());
    assert_eq!(
        (v["status"].as_str(), &v["incomplete_details"]),
        (Some("incomplete"), &json!({"reason": "max_output_tokens"}))
    );
}

fn stream(events: &[Event]) -> Vec<Value> {
    let mut enc = EventEncoder::new("resp_1", "m", 7, ClientTools::default());
    let mut out: Vec<Value> = events.iter().flat_map(|e| enc.event(e)).collect();
    out.extend(enc.finish());
    assert!(enc.finish().is_empty());
    out
}

fn types(out: &[Value]) -> Vec<&str> {
    out.iter().map(|v| v["type"].as_str().unwrap()).collect()
}

#[test]
fn a_stream_numbers_its_events_and_completes_with_the_whole_response() {
    let a = answer();
    let out = stream(&a.clone().into_events());
    assert_eq!(
        types(&out),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    for (n, v) in out.iter().enumerate() {
        assert_eq!(v["sequence_number"], n);
    }
    assert_eq!(out[4]["delta"], "Let me add.");
    assert_eq!(
        (out[4]["item_id"].as_str(), &out[4]["logprobs"]),
        (Some("msg_1_0"), &json!([]))
    );
    assert_eq!(
        (out[9]["output_index"].as_u64(), out[9]["delta"].as_str()),
        (Some(1), Some(r#"{"a":1}"#))
    );
    assert_eq!(
        out[12]["response"],
        encode_response(&a, "resp_1", "m", 7, &ClientTools::default())
    );
}

#[test]
fn interleaved_events_read_back_as_the_same_answer() {
    let call = |id: &str, args: &str| ToolCall::new(id, "add", args);
    let events = [
        Event::text(0, "One"),
        Event::reasoning(1, "Hmm"),
        Event::text(2, "Two"),
        Event::text(3, "Three"),
        Event::ToolCallStart {
            index: 0,
            id: "a".into(),
            name: "add".into(),
        },
        Event::ToolCallStart {
            index: 1,
            id: "b".into(),
            name: "add".into(),
        },
        Event::ToolCallDelta {
            index: 1,
            arguments: r#"{"b""#.into(),
        },
        Event::ToolCallEnd {
            index: 0,
            call: call("a", r#"{"a":1}"#),
        },
        Event::ToolCallDelta {
            index: 1,
            arguments: ":2}".into(),
        },
        Event::ToolCallEnd {
            index: 1,
            call: call("b", r#"{"b":2}"#),
        },
        Event::Usage {
            usage: Usage {
                input_tokens: 3,
                output_tokens: 4,
                ..Usage::default()
            },
        },
        Event::Finish {
            reason: FinishReason::ToolCalls,
        },
    ];
    let out = stream(&events);
    // Each text part is a message item of its own.
    assert_eq!(
        out.iter()
            .filter(|v| v["type"] == "response.output_item.added")
            .count(),
        6
    );
    assert_eq!(
        out.iter()
            .filter(|v| v["type"] == "response.content_part.added")
            .count(),
        3
    );
    let sse: String = out
        .iter()
        .map(|v| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap()))
        .collect();
    let mut decoder = ResponsesStreamDecoder::new();
    let mut back = Vec::new();
    decoder.decode(sse.as_bytes(), &mut back).unwrap();
    let (want, got) = (
        ResponseBuilder::build(events).unwrap(),
        ResponseBuilder::build(back).unwrap(),
    );
    let text = |r: &Response| -> Vec<String> {
        r.message
            .parts
            .iter()
            .filter_map(|p| match p {
                Part::Text { text } => Some(text.clone()),
                Part::Reasoning(x) => Some(x.text.clone()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(text(&got), text(&want));
    let calls = |r: &Response| -> Vec<(String, String)> {
        r.tool_calls()
            .map(|c| (c.id.clone(), c.arguments.clone()))
            .collect()
    };
    assert_eq!(calls(&got), calls(&want));
    assert_eq!(
        (got.usage.output_tokens, got.finish_reason),
        (4, FinishReason::ToolCalls)
    );
    let last = out.last().unwrap();
    assert_eq!(last["response"]["output"].as_array().unwrap().len(), 6);
}

#[test]
fn a_cut_or_failed_stream_says_so() {
    let out = stream(&[
        Event::text(0, "Half"),
        Event::Finish {
            reason: FinishReason::Length,
        },
    ]);
    let last = out.last().unwrap();
    assert_eq!(
        (
            last["type"].as_str(),
            last["response"]["incomplete_details"]["reason"].as_str()
        ),
        (Some("response.incomplete"), Some("max_output_tokens"))
    );
    // The message cut short says so too, streamed and whole.
    assert_eq!(last["response"]["output"][0]["status"], "incomplete");
    let done = out
        .iter()
        .find(|e| e["type"] == "response.output_item.done")
        .unwrap();
    assert_eq!(done["item"]["status"], "incomplete");
    let mut cut = Response::empty(FinishReason::Length);
    cut.message = kite_core::Message::assistant("Half");
    let whole = encode_response(&cut, "resp_2", "m", 7, &ClientTools::default());
    assert_eq!(whole["status"], "incomplete");
    assert_eq!(whole["output"][0]["status"], "incomplete");
    let mut enc = EventEncoder::new("resp_1", "m", 7, ClientTools::default());
    let _ = enc.event(&Event::text(0, "Half"));
    let out = enc.failed("upstream went away");
    assert_eq!(types(&out), ["response.failed"]);
    assert_eq!(out[0]["sequence_number"], 5);
    assert_eq!(
        (
            out[0]["response"]["status"].as_str(),
            out[0]["response"]["error"]["message"].as_str()
        ),
        (Some("failed"), Some("upstream went away"))
    );
    assert!(enc.finish().is_empty());
}
