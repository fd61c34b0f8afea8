//! Anthropic request encoding: histories built by kite encode to what the service received,
//! and thinking goes back exactly as it came.

mod fixtures;

use fixtures::{root, run_stream};
use kite_core::{
    Message, Part, Request, ResponseBuilder, ResponseFormat, Role, ToolCall, ToolChoice,
    ToolResult, ToolSpec,
};
use kite_wire::anthropic::{AnthropicStreamDecoder, decode_response, encode_request};
use serde_json::{Value, json};

fn read(path: &str) -> Vec<u8> {
    std::fs::read(root().join("anthropic/messages").join(path)).unwrap()
}

fn encode(req: &Request) -> Value {
    serde_json::from_slice(&encode_request(req, true).unwrap()).unwrap()
}

/// The JSON payloads of a recorded stream, parsed without kite's decoder.
fn payloads(sse: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(sse)
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

#[test]
fn a_tool_exchange_encodes_to_the_recorded_follow_up_request() {
    let recorded: Value =
        serde_json::from_slice(&read("stream-after-tool-result/request.json")).unwrap();
    let mut req = Request::new("claude-haiku-4-5-20251001")
        .message(Message::user("Two names for a pet pelican"))
        .message(Message::new(
            Role::Assistant,
            vec![
                Part::text(" "),
                Part::ToolCall(ToolCall::new(
                    "toolu_01LtHJmixrs9NcWQkK8hu8hj",
                    "pelican_name_generator",
                    "{}",
                )),
                Part::ToolCall(ToolCall::new(
                    "toolu_01N8a4jWyf116qKTMqKKmjyt",
                    "pelican_name_generator",
                    "",
                )),
            ],
        ))
        .message(Message::new(
            Role::Tool,
            vec![
                Part::ToolResult(ToolResult::text(
                    "toolu_01LtHJmixrs9NcWQkK8hu8hj",
                    "Charles",
                )),
                Part::ToolResult(ToolResult::text("toolu_01N8a4jWyf116qKTMqKKmjyt", "Sammy")),
            ],
        ))
        .tool(ToolSpec::new(
            "pelican_name_generator",
            "",
            json!({"properties": {}, "type": "object"}),
        ));
    req.max_tokens = Some(8192);
    req.temperature = Some(1.0);
    let sent = encode(&req);
    for key in ["model", "max_tokens", "messages", "tools", "stream"] {
        assert_eq!(sent[key], recorded[key], "{key}");
    }
    assert_eq!(
        sent["temperature"].as_f64(),
        recorded["temperature"].as_f64()
    );
}

#[test]
fn streamed_thinking_goes_back_with_its_text_and_signature_unchanged() {
    let sse = read("stream-thinking-then-tool-use/response.sse");
    let (events, err) = run_stream(AnthropicStreamDecoder::new(), &[&sse]);
    assert!(err.is_none());
    let mut b = ResponseBuilder::new();
    events.into_iter().for_each(|e| b.push(e));
    let answer = b.finish().unwrap();

    let call_id = answer.tool_calls().next().unwrap().id.clone();
    let req = Request::new("claude-haiku-4-5-20251001")
        .message(Message::user("Use the fixed_version tool."))
        .message(answer.message)
        .message(Message::tool_result(ToolResult::text(call_id, "1.2.3")));
    let sent = encode(&req);
    let assistant = &sent["messages"][1]["content"];

    let raw = payloads(&sse);
    let delta = |kind: &str, field: &str| -> String {
        raw.iter()
            .filter(|p| p["delta"]["type"] == kind)
            .map(|p| p["delta"][field].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        assistant[0],
        json!({"type": "thinking", "thinking": delta("thinking_delta", "thinking"), "signature": delta("signature_delta", "signature")})
    );
    assert_eq!(assistant[1]["type"], "tool_use");
    assert_eq!(assistant[1]["name"], "fixed_version");
    assert_eq!(assistant[1]["input"], json!({}));
    assert_eq!(
        sent["messages"][2]["content"][0]["tool_use_id"],
        assistant[1]["id"]
    );
}

#[test]
fn redacted_thinking_goes_back_as_it_came() {
    let body = read("redacted-thinking/response.json");
    let original: Value = serde_json::from_slice(&body).unwrap();
    let answer = decode_response(&body).unwrap();
    let req = Request::new("claude")
        .message(Message::user("hi"))
        .message(answer.message);
    let sent = encode(&req);
    assert_eq!(sent["messages"][1]["content"][0], original["content"][0]);
    assert_eq!(sent["messages"][1]["content"][1], original["content"][1]);
}

#[test]
fn every_field_is_written_the_anthropic_way() {
    let mut req = Request::new("claude")
        .system("Be brief.")
        .message(Message::system("And exact."))
        .message(Message::new(
            Role::User,
            vec![
                Part::text("look"),
                Part::image_base64("image/png", "iVBOR"),
                Part::image_url("https://e.com/a.png"),
            ],
        ))
        .message(Message::user("and then"))
        .tool(ToolSpec::new("f", "does f", json!({"type": "object"})))
        .extra(
            "thinking",
            json!({"type": "enabled", "budget_tokens": 1024}),
        );
    req.tool_choice = Some(ToolChoice::Required);
    req.parallel_tool_calls = Some(false);
    req.stop = vec!["END".into()];
    req.top_p = Some(0.9);
    req.user = Some("u-1".into());
    let sent = encode(&req);
    assert_eq!(
        sent["max_tokens"], 4096,
        "a default, since Anthropic requires one"
    );
    assert_eq!(sent["system"], "Be brief.\n\nAnd exact.");
    assert_eq!(
        sent["messages"].as_array().unwrap().len(),
        1,
        "consecutive user messages are one turn"
    );
    assert_eq!(
        sent["messages"][0]["content"],
        json!([
            {"type": "text", "text": "look"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
            {"type": "image", "source": {"type": "url", "url": "https://e.com/a.png"}},
            {"type": "text", "text": "and then"},
        ])
    );
    assert_eq!(
        sent["tools"][0],
        json!({"name": "f", "description": "does f", "input_schema": {"type": "object"}})
    );
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "any", "disable_parallel_tool_use": true})
    );
    assert_eq!(sent["stop_sequences"], json!(["END"]));
    assert_eq!(sent["top_p"], 0.9);
    assert_eq!(sent["metadata"], json!({"user_id": "u-1"}));
    assert_eq!(sent["thinking"]["budget_tokens"], 1024);
    for (choice, wire) in [
        (
            ToolChoice::Auto,
            json!({"type": "auto", "disable_parallel_tool_use": true}),
        ),
        (ToolChoice::None, json!({"type": "none"})),
        (
            ToolChoice::Tool("f".into()),
            json!({"type": "tool", "name": "f", "disable_parallel_tool_use": true}),
        ),
    ] {
        req.tool_choice = Some(choice);
        assert_eq!(encode(&req)["tool_choice"], wire);
    }

    let failed =
        Request::new("claude").message(Message::tool_result(ToolResult::error("t1", "boom")));
    assert_eq!(
        encode(&failed)["messages"][0]["content"][0],
        json!({"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": true})
    );
}

/// A JSON answer is asked for as a forced call of a tool whose input is the answer, and
/// that call comes back as the answer's text.
#[test]
fn a_json_format_is_asked_through_a_tool_and_answered_as_text() {
    let schema = json!({"type": "object", "properties": {"latitude": {"type": "string"}}});
    let mut req = Request::new("claude").message(Message::user("Where is Berlin?"));
    req.response_format = Some(ResponseFormat::JsonSchema {
        name: "place".into(),
        schema: schema.clone(),
        description: None,
        strict: Some(true),
    });
    let sent = encode(&req);
    assert_eq!(sent["tools"][0]["name"], "kite_structured_answer");
    assert_eq!(sent["tools"][0]["input_schema"], schema);
    assert_eq!(
        sent["tool_choice"],
        json!({"type": "tool", "name": "kite_structured_answer"})
    );
    // Beside the client's tools, some call is forced; while thinking, none can be.
    let with_tools = req
        .clone()
        .tool(ToolSpec::new("add", "", json!({"type": "object"})));
    assert_eq!(encode(&with_tools)["tool_choice"], json!({"type": "any"}));
    // A tool the client forces goes first; none allowed leaves the answer's alone.
    let mut forced = with_tools.clone();
    forced.tool_choice = Some(ToolChoice::Tool("add".into()));
    assert_eq!(
        encode(&forced)["tool_choice"],
        json!({"type": "tool", "name": "add"})
    );
    forced.tool_choice = Some(ToolChoice::None);
    assert_eq!(
        encode(&forced)["tool_choice"],
        json!({"type": "tool", "name": "kite_structured_answer"})
    );
    // The name is kept: a client tool of its own by it is refused, not swallowed.
    let taken = req.clone().tool(ToolSpec::new(
        "kite_structured_answer",
        "",
        json!({"type": "object"}),
    ));
    assert!(encode_request(&taken, false).is_err());
    let mut thinking = req.clone();
    thinking.reasoning = Some(kite_core::ReasoningConfig::effort("low"));
    assert_eq!(encode(&thinking)["tool_choice"], json!({"type": "auto"}));

    // A recorded call, as if of that tool: the answer is its input, as text.
    let recorded = String::from_utf8(read("stream-tool-use-input-fragments/response.sse"))
        .unwrap()
        .replace(r#""name":"weather""#, r#""name":"kite_structured_answer""#);
    let (events, err) = run_stream(AnthropicStreamDecoder::new(), &[recorded.as_bytes()]);
    assert!(err.is_none(), "{err:?}");
    let answer = ResponseBuilder::build(events).unwrap();
    assert_eq!(answer.finish_reason, kite_core::FinishReason::Stop);
    assert_eq!(answer.message.tool_calls().count(), 0);
    let said: Value = serde_json::from_str(&answer.text()).unwrap();
    assert_eq!(said, json!({"latitude": "52.5200", "longitude": "13.4050"}));
}

#[test]
fn reasoning_settings_become_a_thinking_budget() {
    let mut req = Request::new("claude-haiku-4-5").message(Message::user("think"));
    req.reasoning = Some(kite_core::ReasoningConfig {
        budget_tokens: Some(1024),
        ..Default::default()
    });
    let sent = encode(&req);
    assert_eq!(
        sent["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert_eq!(
        sent["max_tokens"],
        json!(4096 + 1024),
        "room above the budget"
    );

    req.reasoning = Some(kite_core::ReasoningConfig::effort("low"));
    req.max_tokens = Some(9000);
    let sent = encode(&req);
    assert_eq!(sent["thinking"]["budget_tokens"], json!(2048));
    assert_eq!(sent["max_tokens"], json!(9000));

    req.reasoning = Some(kite_core::ReasoningConfig::effort("none"));
    assert_eq!(encode(&req).get("thinking"), None);
}

#[test]
fn settings_anthropic_lacks_are_refused_and_top_k_and_one_call_at_a_time_are_written() {
    let hi = || Request::new("claude").message(Message::user("Hi"));
    for (set, named) in [
        (
            (|r: &mut Request| r.seed = Some(1)) as fn(&mut Request),
            "`seed`",
        ),
        (|r| r.frequency_penalty = Some(0.1), "`frequency_penalty`"),
        (|r| r.presence_penalty = Some(0.1), "`presence_penalty`"),
    ] {
        let mut req = hi();
        set(&mut req);
        assert!(
            matches!(encode_request(&req, false), Err(kite_core::Error::InvalidRequest(m)) if m.contains(named)),
            "{named}"
        );
    }
    let mut req = hi().tool(ToolSpec::new("add", "", json!({"type": "object"})));
    req.top_k = Some(40);
    req.parallel_tool_calls = Some(false);
    let body = encode(&req);
    assert_eq!(body["top_k"], 40);
    assert_eq!(
        body["tool_choice"],
        json!({"type": "auto", "disable_parallel_tool_use": true})
    );
}

/// Anthropic refuses to think on from tool calls made without its own thinking (another
/// provider's, or a client that kept none): such a turn goes without, and a new question
/// thinks again.
#[test]
fn a_turn_after_calls_made_without_anthropics_thinking_does_not_think() {
    let mut req = Request::new("claude")
        .message(Message::user("Add 1 and 2."))
        .message(Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall::new(
                "t1",
                "add",
                r#"{"a":1,"b":2}"#,
            ))],
        ))
        .message(Message::tool_result(ToolResult::text("t1", "3")));
    req.reasoning = Some(kite_core::ReasoningConfig::effort("low"));
    req.provider_hints
        .insert("anthropic", "thinking", json!({"type": "adaptive"}));
    assert_eq!(encode(&req).get("thinking"), None);
    // With the signed thinking that made the calls, it thinks on.
    let mut signed = req.clone();
    signed.messages[1].parts.insert(
        0,
        Part::Reasoning(kite_core::Reasoning {
            text: "Adding.".into(),
            metadata: kite_core::Metadata::with("anthropic", "signature", json!("sig")),
        }),
    );
    assert_eq!(encode(&signed)["thinking"], json!({"type": "adaptive"}));
    // A new question after the results starts a new turn, which may think.
    let asked = req.message(Message::user("And 3 and 4?"));
    assert_eq!(encode(&asked)["thinking"], json!({"type": "adaptive"}));
}

/// A thinking budget as large as a client may write does not overflow the answer's
/// length: it holds at the most Anthropic could be asked.
#[test]
fn the_largest_thinking_budget_does_not_overflow() {
    let mut req = Request::new("claude").message(Message::user("think"));
    req.reasoning = Some(kite_core::ReasoningConfig {
        budget_tokens: Some(u32::MAX),
        ..Default::default()
    });
    assert_eq!(encode(&req)["max_tokens"], json!(u32::MAX));
    req.max_tokens = Some(2000);
    assert_eq!(encode(&req)["max_tokens"], json!(2000));
    // And a client's number past what a token count holds is refused, not cut.
    let body = json!({"model": "m", "max_tokens": 1_000_000_000_000u64,
        "messages": [{"role": "user", "content": "hi"}]});
    let e = kite_wire::anthropic::serve::decode_request(body.to_string().as_bytes());
    assert!(format!("{e:?}").contains("up to"), "{e:?}");
}
