//! Request encoding: a history rebuilt from recorded responses encodes to the request the
//! service really received next, and each dialect writes the fields its server accepts.

mod fixtures;

use fixtures::root;
use kite_core::{
    Error, Message, Part, Request, ResponseFormat, Role, ToolChoice, ToolResult, ToolSpec,
};
use kite_wire::StreamDecoder;
use kite_wire::openai_chat::{ChatStreamDecoder, Dialect, decode_response, encode_request};
use serde_json::{Value, json};

fn read(path: &str) -> Vec<u8> {
    std::fs::read(root().join(path)).unwrap()
}

fn encode(req: &Request, dialect: Dialect, stream: bool) -> Value {
    serde_json::from_slice(&encode_request(req, dialect, stream).unwrap()).unwrap()
}

/// Assistant `content: ""` next to tool calls means the same as `null`.
fn normalize(mut messages: Value) -> Value {
    for m in messages.as_array_mut().unwrap() {
        if m.get("tool_calls").is_some() && m["content"] == json!("") {
            m["content"] = Value::Null;
        }
    }
    messages
}

#[test]
fn a_recorded_tool_call_answered_encodes_to_the_recorded_follow_up_request() {
    let recorded: Value = serde_json::from_slice(&read(
        "mistral/chat-completions/tool-result-final-answer/request.json",
    ))
    .unwrap();
    let first = decode_response(&read("mistral/chat-completions/tool-call/response.json")).unwrap();

    let tools: Vec<ToolSpec> = recorded["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let f = &t["function"];
            ToolSpec::new(
                f["name"].as_str().unwrap(),
                f["description"].as_str().unwrap(),
                f["parameters"].clone(),
            )
        })
        .collect();
    let call = first.tool_calls().next().unwrap().clone();
    // The recorded request re-serialized the arguments compactly.
    let mut assistant = first.message.clone();
    for p in &mut assistant.parts {
        if let Part::ToolCall(c) = p {
            c.arguments = serde_json::to_string(&c.parse_arguments().unwrap()).unwrap();
        }
    }
    let mut req = Request::new("mistral-small-latest")
        .message(Message::user(
            "What's the weather in Berlin? (52.5200, 13.4050)",
        ))
        .message(assistant)
        .message(Message::tool_result(ToolResult::text(
            call.id,
            "Current weather at 52.5200, 13.4050: 15°C, Wind: 10 km/h",
        )));
    req.tools = tools;

    let body = encode(&req, Dialect::Mistral, false);
    assert_eq!(
        normalize(body["messages"].clone()),
        normalize(recorded["messages"].clone())
    );
    assert_eq!(body["tools"], recorded["tools"]);
    assert_eq!(body["model"], recorded["model"]);
}

#[test]
fn openai_multi_step_history_encodes_like_the_recorded_request() {
    let recorded: Value = serde_json::from_slice(&read(
        "openai/chat-completions/tool-result-final-answer/request.json",
    ))
    .unwrap();
    let mut req = Request::new("gpt-5-nano").message(Message::user("Roll the dice 3 times"));
    for (id, roll) in [
        ("call_7dcIMRmEuM8F9fGslT21rOr9", 1),
        ("call_YOXLnTVO3JTtRUD7ZjcJ2TLh", 2),
        ("call_yGcTHhmb8OwxOH2l8NWQyiNV", 3),
    ] {
        req.messages.push(Message::new(
            Role::Assistant,
            vec![Part::ToolCall(kite_core::ToolCall::new(
                id,
                "dice_roll",
                "{}",
            ))],
        ));
        req.messages.push(Message::tool_result(ToolResult::text(
            id,
            format!("{{roll: {roll}}}"),
        )));
    }
    let body = encode(&req, Dialect::OpenAi, false);
    // The recording starts with a developer message, which kite sends as `system`.
    let want: Vec<Value> = recorded["messages"].as_array().unwrap()[1..].to_vec();
    assert_eq!(
        normalize(body["messages"].clone()),
        normalize(Value::Array(want))
    );
}

#[test]
fn openrouter_reasoning_details_go_back_with_the_assistant_message() {
    let body = read("openrouter/chat-completions/stream-reasoning-details-tool-call/response.sse");
    let mut dec = ChatStreamDecoder::new();
    let mut events = Vec::new();
    dec.decode(&body, &mut events).unwrap();
    dec.finish(&mut events).unwrap();
    let mut b = kite_core::ResponseBuilder::new();
    events.into_iter().for_each(|e| b.push(e));
    let resp = b.finish().unwrap();

    let req = Request::new("anthropic/claude-haiku-4.5")
        .message(Message::user("weather in Berlin?"))
        .message(resp.message.clone());
    let sent = encode(&req, Dialect::OpenRouter, true);
    let assistant = &sent["messages"][1];
    let details = assistant["reasoning_details"].as_array().unwrap();
    assert_eq!(details.len(), 1);
    assert_eq!(details[0]["type"], "reasoning.text");
    assert!(details[0]["signature"].is_string());
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"],
        "reasoning_weather"
    );
}

#[test]
fn dialects_write_the_fields_their_servers_accept() {
    let mut req = Request::new("m").message(Message::user("hi"));
    req.max_tokens = Some(50);
    req.seed = Some(7);
    req.user = Some("u-1".into());

    let openai = encode(&req, Dialect::OpenAi, true);
    assert_eq!(openai["max_completion_tokens"], 50);
    assert_eq!(openai["seed"], 7);
    assert_eq!(openai["user"], "u-1");
    assert_eq!(openai["stream"], true);
    assert_eq!(openai["stream_options"], json!({"include_usage": true}));
    assert!(openai.get("max_tokens").is_none());

    let mistral = encode(&req, Dialect::Mistral, true);
    assert_eq!(mistral["max_tokens"], 50);
    assert_eq!(mistral["random_seed"], 7);
    assert!(mistral.get("seed").is_none());
    assert!(mistral.get("user").is_none());
    assert!(mistral.get("stream_options").is_none());

    for d in [Dialect::OpenRouter, Dialect::Compatible] {
        assert_eq!(encode(&req, d, false)["max_tokens"], 50);
        assert!(encode(&req, d, false).get("stream").is_none());
    }
    assert_eq!(
        encode(&req, Dialect::Groq, false)["max_completion_tokens"],
        50
    );
}

#[test]
fn every_request_field_is_written() {
    let mut req = Request::new("gpt-4o")
        .system("be brief")
        .message(Message::new(
            Role::User,
            vec![
                Part::text("what is this?"),
                Part::image_url("https://example.com/cat.png"),
                Part::image_base64("image/png", "iVBORw0KGgo="),
            ],
        ))
        .tool(ToolSpec {
            strict: Some(true),
            ..ToolSpec::new("f", "does f", json!({"type": "object"}))
        })
        .extra("service_tier", json!("flex"))
        .extra("temperature", json!(0.1));
    req.tool_choice = Some(ToolChoice::Tool("f".into()));
    req.parallel_tool_calls = Some(false);
    req.temperature = Some(0.5);
    req.top_p = Some(0.9);
    req.stop = vec!["END".into()];
    req.response_format = Some(ResponseFormat::JsonSchema {
        name: "answer".into(),
        schema: json!({"type": "object"}),
        description: None,
        strict: Some(true),
    });
    let body = encode(&req, Dialect::OpenAi, false);
    assert_eq!(
        body["messages"][0],
        json!({"role": "system", "content": "be brief"})
    );
    assert_eq!(
        body["messages"][1]["content"],
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ])
    );
    assert_eq!(
        body["tools"][0],
        // A strict tool's schema is closed for OpenAI's strict mode.
        json!({"type": "function", "function": {"name": "f", "description": "does f", "parameters": {"type": "object", "additionalProperties": false, "properties": {}, "required": []}, "strict": true}})
    );
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "f"}})
    );
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["top_p"], 0.9);
    assert_eq!(body["stop"], json!(["END"]));
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object", "additionalProperties": false, "properties": {}, "required": []}, "strict": true}})
    );
    assert_eq!(body["service_tier"], "flex");
    // Raw options are applied last and win.
    assert_eq!(body["temperature"], 0.1);

    for (choice, wire) in [
        (ToolChoice::Auto, json!("auto")),
        (ToolChoice::None, json!("none")),
        (ToolChoice::Required, json!("required")),
    ] {
        req.tool_choice = Some(choice);
        assert_eq!(encode(&req, Dialect::OpenAi, false)["tool_choice"], wire);
    }
}

#[test]
fn requests_a_chat_server_cannot_take_are_refused_or_carried_otherwise() {
    // An image in a tool's result, which a tool message cannot hold, follows it.
    let mut result = ToolResult::text("c1", "see picture");
    result
        .content
        .push(Part::image_url("https://example.com/x.png"));
    let req = Request::new("m").message(Message::tool_result(result));
    let sent = encode(&req, Dialect::OpenAi, false);
    assert_eq!(
        sent["messages"][1],
        json!({"role": "user", "content": [{"type": "image_url",
            "image_url": {"url": "https://example.com/x.png"}}]})
    );
    assert!(matches!(
        encode_request(&Request::new(""), Dialect::OpenAi, false),
        Err(Error::InvalidRequest(_))
    ));
}

#[test]
fn reasoning_settings_follow_each_dialect() {
    let mut req = Request::new("m").message(Message::user("think"));
    req.reasoning = Some(kite_core::ReasoningConfig::effort("high"));
    assert_eq!(
        encode(&req, Dialect::OpenAi, false)["reasoning_effort"],
        json!("high")
    );
    assert_eq!(
        encode(&req, Dialect::Groq, false)["reasoning_effort"],
        json!("high")
    );
    assert_eq!(
        encode(&req, Dialect::OpenRouter, false)["reasoning"],
        json!({"effort": "high"})
    );
    let mistral = encode(&req, Dialect::Mistral, false);
    assert_eq!(
        (mistral.get("reasoning_effort"), mistral.get("reasoning")),
        (None, None)
    );
    req.reasoning = Some(kite_core::ReasoningConfig {
        budget_tokens: Some(2000),
        ..Default::default()
    });
    assert_eq!(
        encode(&req, Dialect::OpenRouter, false)["reasoning"],
        json!({"max_tokens": 2000})
    );
    assert_eq!(
        encode(&req, Dialect::OpenAi, false).get("reasoning_effort"),
        None
    );
}

#[test]
fn penalties_top_k_and_verbosity_go_where_a_dialect_takes_them_and_are_refused_elsewhere() {
    let mut req = Request::new("m").message(Message::user("Hi"));
    req.frequency_penalty = Some(0.5);
    req.presence_penalty = Some(-0.5);
    req.verbosity = Some("low".into());
    for dialect in [
        Dialect::OpenAi,
        Dialect::Mistral,
        Dialect::OpenRouter,
        Dialect::Groq,
        Dialect::Compatible,
    ] {
        let body = encode(&req, dialect, false);
        assert_eq!(body["frequency_penalty"], 0.5, "{dialect:?}");
        assert_eq!(body["presence_penalty"], -0.5, "{dialect:?}");
        // A hint: OpenAI's models only.
        assert_eq!(
            body.get("verbosity").is_some(),
            dialect == Dialect::OpenAi,
            "{dialect:?}"
        );
    }
    req.top_k = Some(40);
    for dialect in [Dialect::OpenRouter, Dialect::Compatible] {
        assert_eq!(encode(&req, dialect, false)["top_k"], 40, "{dialect:?}");
    }
    for dialect in [Dialect::OpenAi, Dialect::Mistral, Dialect::Groq] {
        assert!(
            matches!(encode_request(&req, dialect, false), Err(Error::InvalidRequest(m)) if m.contains("`top_k`")),
            "{dialect:?}"
        );
    }
}

/// A system message among the others (Claude Code's) stays where it is for OpenAI, and is
/// folded into the first for servers that take one only there.
#[test]
fn system_messages_stay_in_place_for_openai_and_are_folded_for_the_others() {
    let req = Request::new("m")
        .system("Be brief.")
        .message(Message::user("Hi"))
        .message(Message::system("Today is Thursday."));
    let openai = encode(&req, Dialect::OpenAi, false);
    let roles: Vec<&str> = openai["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "system"]);
    for dialect in [Dialect::Mistral, Dialect::Compatible, Dialect::Groq] {
        let sent = encode(&req, dialect, false);
        assert_eq!(
            sent["messages"],
            json!([{"role": "system", "content": "Be brief.\n\nToday is Thursday."},
                {"role": "user", "content": "Hi"}]),
            "{dialect:?}"
        );
    }
}

/// OpenAI's own fields reach OpenAI and servers copying its API, and no other dialect.
#[test]
fn openais_own_fields_go_to_openai_alone() {
    let mut req = Request::new("m").message(Message::user("Hi"));
    req.provider_options
        .insert("chat", "logit_bias", json!({"50256": -100}));
    assert_eq!(
        encode(&req, Dialect::OpenAi, false)["logit_bias"],
        json!({"50256": -100})
    );
    let refused = encode_request(&req, Dialect::Mistral, false);
    assert!(
        matches!(&refused, Err(Error::InvalidRequest(m)) if m.starts_with("`logit_bias`")),
        "{refused:?}"
    );
}

/// An end-user id longer than OpenAI takes (Claude Code's) goes as a hash of it.
#[test]
fn a_long_end_user_id_goes_as_a_hash() {
    let long = format!("{{\"device_id\":\"{}\"}}", "d".repeat(120));
    let mut req = Request::new("m").message(Message::user("Hi"));
    req.user = Some(long.clone());
    let sent = encode(&req, Dialect::OpenAi, false);
    let user = sent["user"].as_str().unwrap();
    assert!(user.starts_with("kite-") && user.len() <= 64, "{user}");
    assert!(!user.contains("device"));
    assert_eq!(encode(&req, Dialect::OpenAi, false)["user"], user);
    req.user = Some("user-7".into());
    assert_eq!(encode(&req, Dialect::OpenAi, false)["user"], "user-7");
}

/// An Anthropic client's cache breakpoints reach OpenRouter on the same text parts (it
/// caches by them for the models that do), and no other server.
#[test]
fn cache_breakpoints_go_to_openrouter_on_their_parts() {
    let cache = json!({"type": "ephemeral"});
    let mut req =
        Request::new("anthropic/claude-sonnet-4.5").system("You are terse.\n\nUse tools.");
    req.provider_hints.insert(
        "anthropic",
        "system",
        json!([{"type": "text", "text": "You are terse."},
            {"type": "text", "text": "Use tools.", "cache_control": cache}]),
    );
    let mut asked = Message::user("Go");
    asked.metadata = kite_core::Metadata::with("anthropic", "cache_control", json!({"0": cache}));
    let mut result = Message::tool_result(ToolResult::text("t1", "3"));
    result.metadata = asked.metadata.clone();
    req = req
        .message(asked)
        .message(Message::new(
            Role::Assistant,
            vec![Part::ToolCall(kite_core::ToolCall::new("t1", "add", "{}"))],
        ))
        .message(result);
    let sent = encode(&req, Dialect::OpenRouter, false);
    assert_eq!(
        sent["messages"][0]["content"],
        json!([{"type": "text", "text": "You are terse."},
            {"type": "text", "text": "Use tools.", "cache_control": cache}])
    );
    assert_eq!(
        sent["messages"][1]["content"],
        json!([{"type": "text", "text": "Go", "cache_control": cache}])
    );
    assert_eq!(
        sent["messages"][3]["content"],
        json!([{"type": "text", "text": "3", "cache_control": cache}])
    );
    for dialect in [Dialect::OpenAi, Dialect::Groq, Dialect::Compatible] {
        let sent = encode(&req, dialect, false);
        assert!(!sent.to_string().contains("cache_control"), "{dialect:?}");
    }
}
