//! What a client sends is never dropped unseen: a field the gateway serves reaches the
//! model, one it does not is refused with 400 naming it (in the client's API's shape),
//! unless its value asks for nothing.

use kite_core::{Event, EventStream, FinishReason, Model, Request, ToolChoice};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

/// Answers "Hello." and keeps the last request it was given.
#[derive(Clone, Default)]
struct Captures(Arc<Mutex<Option<Request>>>);

impl Model for Captures {
    fn stream(&self, request: &Request) -> EventStream {
        *self.0.lock().unwrap() = Some(request.clone());
        Box::pin(futures_util::stream::iter([
            Ok(Event::text(0, "Hello.")),
            Ok(Event::Finish {
                reason: FinishReason::Stop,
            }),
        ]))
    }
}

impl Captures {
    fn last(&self) -> Request {
        self.0.lock().unwrap().take().expect("the model was asked")
    }
}

/// A gateway serving `model` as "m"; its address.
async fn serve(model: Captures) -> std::net::SocketAddr {
    let gateway = kite_serve::Gateway::new(
        vec![kite_serve::Route::new("m", Arc::new(model), "m")],
        false,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        Arc::new(gateway),
        std::future::pending(),
    ));
    addr
}

async fn post(addr: std::net::SocketAddr, path: &str, body: &Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/v1/{path}"))
        .json(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// `base` with `more`'s fields set.
fn with(base: &Value, more: Value) -> Value {
    let mut v = base.clone();
    for (k, x) in more.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

#[tokio::test]
async fn chat_completions_fields_reach_the_model_or_are_refused_by_name() {
    let model = Captures::default();
    let addr = serve(model.clone()).await;
    let base = json!({"model": "m", "messages": [{"role": "user", "content": "Hi"}]});
    for (more, named) in [
        (json!({"n": 3}), "`n`"),
        (json!({"logprobs": true}), "`logprobs`"),
        (json!({"top_logprobs": 2}), "`top_logprobs`"),
        (json!({"logit_bias": [1]}), "`logit_bias` must be an object"),
        (json!({"modalities": ["text", "audio"]}), "`modalities`"),
        (json!({"audio": {"voice": "alloy"}}), "`audio`"),
        (json!({"store": true}), "`store`"),
        (json!({"metadata": {"team": "a"}}), "`metadata`"),
        (json!({"functions": [{"name": "f"}]}), "`functions`"),
        // `{}` asks for a search with the defaults.
        (json!({"web_search_options": {}}), "`web_search_options`"),
        (json!({"n": "3"}), "`n` must be a number, not \"3\""),
        (json!({"frobnicate": 1}), "`frobnicate` is not a field"),
        (
            json!({"frequency_penalty": 3}),
            "`frequency_penalty` must be between",
        ),
        (json!({"seed": 1.5}), "`seed` must be a whole number"),
        (json!({"stop": ["a", 1]}), "`stop` holds 1"),
        (json!({"tools": {}}), "`tools` must be an array"),
        (json!({"messages": []}), "`messages` is empty"),
        (
            json!({"messages": [{"role": "user"}]}),
            "`messages` holds no text",
        ),
        (
            json!({"messages": [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}]}),
            "`messages` holds no text",
        ),
        (
            json!({"tool_choice": "required"}),
            "`tool_choice` asks for a tool call",
        ),
    ] {
        let body = with(&base, more.clone());
        let (status, said) = post(addr, "chat/completions", &body).await;
        assert_eq!(status, 400, "{more}: {said}");
        let message = said["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{more}: {message}");
        assert_eq!(said["error"]["type"], "invalid_request_error", "{said}");
        // The field is named as `param` too, for clients that point at it.
        let field = more.as_object().unwrap().keys().next().unwrap();
        assert_eq!(said["error"]["param"], json!(field), "{said}");
        assert!(!message.contains("Some("), "{message}");
    }
    // What the gateway serves reaches the model; what asks for nothing is taken.
    let body = with(
        &base,
        json!({"frequency_penalty": 0.5, "presence_penalty": -0.25, "verbosity": "low",
            "safety_identifier": "user-7", "n": 1, "logprobs": false, "seed": 42,
            "service_tier": "auto", "prompt_cache_key": "k", "parallel_tool_calls": false,
            "stream_options": {"include_obfuscation": false}}),
    );
    let (status, said) = post(addr, "chat/completions", &body).await;
    assert_eq!(status, 200, "{said}");
    let r = model.last();
    assert_eq!(
        (r.frequency_penalty, r.presence_penalty, r.seed),
        (Some(0.5), Some(-0.25), Some(42))
    );
    assert_eq!(r.verbosity.as_deref(), Some("low"));
    assert_eq!(r.user.as_deref(), Some("user-7"));
    assert_eq!(r.parallel_tool_calls, Some(false));
    assert!(
        r.provider_options.is_empty(),
        "the default tier asks nothing"
    );
    // What only OpenAI's API has is asked of it: a route to another refuses it.
    let only_openai = json!({"logit_bias": {"50256": -100}, "service_tier": "flex",
        "prediction": {"type": "content", "content": "x"}});
    let (status, said) = post(addr, "chat/completions", &with(&base, only_openai.clone())).await;
    assert_eq!(status, 200, "{said}");
    let r = model.last();
    for (k, v) in only_openai.as_object().unwrap() {
        assert_eq!(r.provider_options.get("chat", k), Some(v), "{k}");
    }
    // vLLM's and llama.cpp's own settings are passed on: `top_k` as kite's (Anthropic and
    // the local model take it too), the rest to Chat Completions servers.
    let theirs = json!({"min_p": 0.05, "repetition_penalty": 1.1,
        "chat_template_kwargs": {"enable_thinking": false}});
    let (status, said) = post(
        addr,
        "chat/completions",
        &with(&with(&base, json!({"top_k": 20})), theirs.clone()),
    )
    .await;
    assert_eq!(status, 200, "{said}");
    let r = model.last();
    assert_eq!(r.top_k, Some(20));
    for (k, v) in theirs.as_object().unwrap() {
        assert_eq!(r.provider_options.get("chat", k), Some(v), "{k}");
    }
    // Their neutral values ask for nothing: a route to any model takes them.
    let neutral = json!({"repetition_penalty": 1.0, "min_p": 0, "chat_template_kwargs": {}});
    let (status, said) = post(addr, "chat/completions", &with(&base, neutral)).await;
    assert_eq!(status, 200, "{said}");
    assert!(model.last().provider_options.is_empty());
    // A penalty of 0 asks for nothing: no model's encoder will have to refuse it.
    let body = with(
        &base,
        json!({"frequency_penalty": 0, "presence_penalty": 0.0}),
    );
    let (status, said) = post(addr, "chat/completions", &body).await;
    assert_eq!(status, 200, "{said}");
    let r = model.last();
    assert_eq!((r.frequency_penalty, r.presence_penalty), (None, None));
}

#[tokio::test]
async fn messages_fields_reach_the_model_or_are_refused_by_name() {
    let model = Captures::default();
    let addr = serve(model.clone()).await;
    let base = json!({"model": "m", "max_tokens": 2000,
        "messages": [{"role": "user", "content": "Hi"}]});
    let tool = json!({"name": "add", "input_schema": {"type": "object"}});
    for (more, named) in [
        (json!({"container": "c_1"}), "`container`"),
        (
            json!({"metadata": {"user_id": "u", "team": "a"}}),
            "`metadata`",
        ),
        (json!({"service_tier": "priority"}), "`service_tier`"),
        (json!({"mcp_servers": [{"url": "x"}]}), "`mcp_servers`"),
        (json!({"frobnicate": 1}), "`frobnicate` is not a field"),
        (
            json!({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
            "web_search",
        ),
        (json!({"thinking": {"type": "sometimes"}}), "thinking.type"),
        (json!({"top_k": 0}), "top_k"),
        (json!({"messages": []}), "`messages` is empty"),
        (
            json!({"tool_choice": {"type": "tool", "name": "sub"}, "tools": [tool.clone()]}),
            "`sub`",
        ),
    ] {
        let body = with(&base, more.clone());
        let (status, said) = post(addr, "messages", &body).await;
        assert_eq!(status, 400, "{more}: {said}");
        assert_eq!(said["type"], "error", "{said}");
        assert_eq!(said["error"]["type"], "invalid_request_error", "{said}");
        let message = said["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{more}: {message}");
    }
    let body = with(
        &base,
        json!({"top_k": 40, "metadata": {"user_id": "user-7"},
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "tools": [tool], "tool_choice": {"type": "auto", "disable_parallel_tool_use": true},
            "cache_control": {"type": "ephemeral"}, "service_tier": "standard_only"}),
    );
    let (status, said) = post(addr, "messages", &body).await;
    assert_eq!(status, 200, "{said}");
    let r = model.last();
    assert_eq!(r.top_k, Some(40));
    assert_eq!(r.user.as_deref(), Some("user-7"));
    assert_eq!(r.reasoning.and_then(|x| x.budget_tokens), Some(1024));
    assert_eq!(r.parallel_tool_calls, Some(false));
    assert_eq!(r.tool_choice, Some(ToolChoice::Auto));
}

#[tokio::test]
async fn messages_blocks_are_served_or_refused_by_name_and_thinking_goes_both_ways() {
    let model = Captures::default();
    let addr = serve(model.clone()).await;
    let with_blocks = |blocks: Value| {
        json!({"model": "m", "max_tokens": 100, "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": "And?"}]})
    };
    for (blocks, named) in [
        (
            json!([{"type": "document", "source": {}}]),
            "document blocks belong in the user's messages",
        ),
        (
            json!([{"type": "server_tool_use", "id": "s", "name": "web_search"}]),
            "server_tool_use",
        ),
        (json!([{"type": "thinking", "thinking": "hm"}]), "signature"),
        (
            json!([{"type": "redacted_thinking", "data": {"x": 1}}]),
            "must be text",
        ),
    ] {
        let (status, said) = post(addr, "messages", &with_blocks(blocks.clone())).await;
        assert_eq!(status, 400, "{blocks}: {said}");
        let message = said["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{blocks}: {message}");
    }
    // Thinking with its signature reaches the model as reasoning it can send back.
    let body = with_blocks(json!([
        {"type": "thinking", "thinking": "Let me see.", "signature": "sig-123"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "text", "text": "Hello."}]));
    let (status, said) = post(addr, "messages", &body).await;
    assert_eq!(status, 200, "{said}");
    let r = model.last();
    let reasoning: Vec<&kite_core::Reasoning> = r.messages[1]
        .parts
        .iter()
        .filter_map(|p| match p {
            kite_core::Part::Reasoning(x) => Some(x),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning.len(), 2);
    assert_eq!(reasoning[0].text, "Let me see.");
    assert_eq!(
        reasoning[0].metadata.get("anthropic", "signature"),
        Some(&json!("sig-123"))
    );
    assert_eq!(
        reasoning[1].metadata.get("anthropic", "redacted_data"),
        Some(&json!("opaque"))
    );
    // A tool result's images go on too.
    let body = json!({"model": "m", "max_tokens": 100,
        "tools": [{"name": "shot", "input_schema": {"type": "object"}}],
        "messages": [
        {"role": "user", "content": "Look."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [
            {"type": "text", "text": "here"},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}]}]});
    let (status, said) = post(addr, "messages", &body).await;
    assert_eq!(status, 200, "{said}");
    let r = model.last();
    let result = r
        .messages
        .iter()
        .flat_map(|m| &m.parts)
        .find_map(|p| match p {
            kite_core::Part::ToolResult(x) => Some(x),
            _ => None,
        })
        .unwrap();
    assert_eq!(result.content.len(), 2);
}

/// Thinks (as Anthropic does, signed), then answers.
struct Thinks;

impl Model for Thinks {
    fn stream(&self, _: &Request) -> EventStream {
        Box::pin(futures_util::stream::iter([
            Ok(Event::reasoning(0, "Let me ")),
            Ok(Event::reasoning(0, "think.")),
            Ok(Event::ReasoningEnd {
                part: 0,
                metadata: kite_core::Metadata::with("anthropic", "signature", json!("sig-9")),
            }),
            Ok(Event::text(1, "Four.")),
            Ok(Event::Finish {
                reason: FinishReason::Stop,
            }),
        ]))
    }
}

#[tokio::test]
async fn anthropics_thinking_reaches_a_messages_client_signed_streamed_or_whole() {
    let gateway = kite_serve::Gateway::new(
        vec![kite_serve::Route::new("m", Arc::new(Thinks), "m")],
        false,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(kite_serve::serve(
        listener,
        Arc::new(gateway),
        std::future::pending(),
    ));
    let body = json!({"model": "m", "max_tokens": 100,
        "messages": [{"role": "user", "content": "2+2?"}]});
    let (status, whole) = post(addr, "messages", &body).await;
    assert_eq!(status, 200, "{whole}");
    assert_eq!(
        whole["content"][0],
        json!({"type": "thinking", "thinking": "Let me think.", "signature": "sig-9"})
    );
    assert_eq!(whole["content"][1]["text"], "Four.");
    let streamed = reqwest::Client::new()
        .post(format!("http://{addr}/v1/messages"))
        .json(&with(&body, json!({"stream": true})))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        streamed.contains(r#""signature_delta","signature":"sig-9""#)
            || streamed.contains(r#""signature":"sig-9""#),
        "{streamed}"
    );
    assert!(
        streamed.contains(r#""thinking":"Let me think.""#),
        "{streamed}"
    );
    let thinking_at = streamed.find("thinking_delta").unwrap();
    let text_at = streamed.find("text_delta").unwrap();
    assert!(thinking_at < text_at, "{streamed}");
}

#[tokio::test]
async fn fields_inside_messages_parts_and_tools_are_served_or_refused_by_name() {
    let model = Captures::default();
    let addr = serve(model.clone()).await;
    let user = |content: Value| json!([{"role": "user", "content": content}]);
    let chat = |more: Value| with(&json!({"model": "m", "messages": user(json!("Hi"))}), more);
    let messages = |more: Value| {
        with(
            &json!({"model": "m", "max_tokens": 100, "messages": user(json!("Hi"))}),
            more,
        )
    };
    let responses = |more: Value| with(&json!({"model": "m", "input": "Hi"}), more);
    let f = json!({"type": "function", "function": {"name": "f"}});
    let refused = [
        // Chat Completions: each object's own fields, and what a system message holds.
        (
            "chat/completions",
            chat(json!({"messages": [{"role": "user", "content": "Hi", "foo": 1}]})),
            "`foo` is not a field of a message",
        ),
        (
            "chat/completions",
            chat(json!({"messages": user(json!([{"type": "text", "text": "Hi", "foo": 1}]))})),
            "`foo` is not a field of a text part",
        ),
        (
            "chat/completions",
            chat(json!({"tools": [{"type": "function", "function": {"name": "f"}, "foo": 1}]})),
            "`foo` is not a field of a tool",
        ),
        (
            "chat/completions",
            chat(json!({"tools": [{"type": "function", "function": {"name": "f", "foo": 1}}]})),
            "`foo` is not a field of a tool's function",
        ),
        (
            "chat/completions",
            chat(json!({"tools": [{"type": "custom", "custom": {"name": "f"}}]})),
            "tools of type `custom`",
        ),
        (
            "chat/completions",
            chat(
                json!({"tools": [f], "tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}}),
            ),
            "`tool_choice` of type `allowed_tools`",
        ),
        (
            "chat/completions",
            chat(json!({"response_format": {"type": "text", "foo": 1}})),
            "`foo` is not a field of `response_format`",
        ),
        (
            "chat/completions",
            chat(
                json!({"messages": [{"role": "system", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}, {"role": "user", "content": "Hi"}]}),
            ),
            "a system message takes text only",
        ),
        (
            "chat/completions",
            chat(json!({"messages": user(json!([{"type": "input_audio", "input_audio": {}}]))})),
            "parts of type `input_audio`",
        ),
        (
            "chat/completions",
            chat(json!({"messages": [{"role": "critic", "content": "Hi"}]})),
            "the role `critic`",
        ),
        // Responses.
        (
            "responses",
            responses(json!({"input": [{"role": "user", "content": "Hi", "foo": 1}]})),
            "`foo` is not a field of a message",
        ),
        (
            "responses",
            responses(
                json!({"input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi", "foo": 1}]}]}),
            ),
            "`foo` is not a field of a text part",
        ),
        (
            "responses",
            responses(json!({"tools": [{"type": "function", "name": "f", "foo": 1}]})),
            "`foo` is not a field of a function tool",
        ),
        (
            "responses",
            responses(json!({"tools": [{"type": "frobnicate"}]})),
            "tools of type `frobnicate`",
        ),
        (
            "responses",
            responses(json!({"text": {"format": {"type": "text", "foo": 1}}})),
            "`foo` is not a field of `text.format`",
        ),
        (
            "responses",
            responses(
                json!({"input": [{"role": "system", "content": [{"type": "input_image", "image_url": "https://example.com/a.png"}]}, {"role": "user", "content": "Hi"}]}),
            ),
            "a system message takes text only",
        ),
        // Messages: blocks of the system prompt too.
        (
            "messages",
            messages(json!({"messages": [{"role": "user", "content": "Hi", "foo": 1}]})),
            "`foo` is not a field of a message",
        ),
        (
            "messages",
            messages(json!({"messages": user(json!([{"type": "text", "text": "Hi", "foo": 1}]))})),
            "`foo` is not a field of a text block",
        ),
        (
            "messages",
            messages(json!({"tools": [{"name": "f", "input_schema": {}, "foo": 1}]})),
            "`foo` is not a field of a client tool",
        ),
        (
            "messages",
            messages(
                json!({"tools": [{"name": "f", "input_schema": {}}], "tool_choice": {"type": "auto", "foo": 1}}),
            ),
            "`foo` is not a field of `tool_choice`",
        ),
        (
            "messages",
            messages(json!({"thinking": {"type": "enabled", "budget_tokens": 50, "foo": 1}})),
            "`foo` is not a field of `thinking`",
        ),
        (
            "messages",
            messages(
                json!({"system": [{"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]}),
            ),
            "takes text blocks only, not blocks of type `image`",
        ),
        (
            "messages",
            messages(json!({"system": [{"type": "foo", "text": "Be brief."}]})),
            "not blocks of type `foo`",
        ),
        (
            "messages",
            messages(json!({"messages": [{"role": "tool", "content": "Hi"}]})),
            "role: `tool` is not user, assistant or system",
        ),
        (
            "messages",
            messages(json!({"messages": [{"role": "system", "content": "Hi"}]})),
            "nothing to answer",
        ),
    ];
    for (path, body, named) in refused {
        let (status, said) = post(addr, path, &body).await;
        assert_eq!(status, 400, "{body}: {said}");
        let message = said["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{body}: {message}");
        assert!(!message.contains("Some("), "{message}");
    }
    // What a client sends back of an answer it was given is taken; a null counts as absent;
    // an image's detail reaches the model.
    let body = chat(json!({"messages": [
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}], "name": "ann"},
        {"role": "assistant", "content": "Hello.", "refusal": null, "annotations": [], "audio": null, "function_call": null},
        {"role": "user", "content": "Add."},
        // As the SDKs' `.parse()` helpers and reasoning providers leave an answer.
        {"role": "assistant", "content": null, "parsed": null, "reasoning": "Adding.",
         "tool_calls": [{"index": 0, "id": "c1", "type": "function",
            "function": {"name": "add", "arguments": "{}", "parsed_arguments": {}}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "2"}]}));
    let (status, said) = post(addr, "chat/completions", &body).await;
    assert_eq!(status, 200, "{said}");
    let r = model.last();
    assert!(
        matches!(&r.messages[0].parts[0], kite_core::Part::Image { detail: Some(d), .. } if d == "low"),
        "{:?}",
        r.messages[0]
    );
    let body = responses(json!({"input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
         "content": [{"type": "output_text", "text": "Hello.", "annotations": [], "logprobs": []}]},
        {"role": "user", "content": "And?"}]}));
    let (status, said) = post(addr, "responses", &body).await;
    assert_eq!(status, 200, "{said}");
    let _ = model.last();
    // A client tool's streaming and loading hints are taken.
    let body = messages(
        json!({"tools": [{"name": "f", "input_schema": {"type": "object"},
        "eager_input_streaming": true, "defer_loading": false}]}),
    );
    let (status, said) = post(addr, "messages", &body).await;
    assert_eq!(status, 200, "{said}");
    assert_eq!(model.last().tools.len(), 1);
}

/// What Claude Code sends (a system message among the others, cache breakpoints, adaptive
/// thinking, an effort, context edits, beta features) reaches the model: in order, and
/// what is Anthropic's own offered to it alone.
#[tokio::test]
async fn a_coding_agents_messages_request_reaches_the_model_whole() {
    let model = Captures::default();
    let addr = serve(model.clone()).await;
    let body = json!({"model": "m", "max_tokens": 32000,
        "system": [{"type": "text", "text": "You are terse."},
            {"type": "text", "text": "Use tools.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "system", "content": "Today is Thursday.", "output_config": {"effort": "low"}},
            {"role": "user", "content": [{"type": "text", "text": "Go",
                "cache_control": {"type": "ephemeral"}}]}],
        "thinking": {"type": "adaptive", "display": "omitted"},
        "output_config": {"effort": "medium",
            "format": {"type": "json_schema", "schema": {"type": "object"}}},
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}});
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/v1/messages?beta=true"))
        .header("anthropic-beta", "claude-code-20250219,effort-2025-11-24")
        .header("anthropic-beta", "context-management-2025-06-27")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
    let got = model.last();
    assert_eq!(got.system.as_deref(), Some("You are terse.\n\nUse tools."));
    let roles: Vec<_> = got.messages.iter().map(|m| m.role).collect();
    use kite_core::Role;
    assert_eq!(roles, [Role::User, Role::System, Role::User]);
    assert_eq!(got.messages[1].text(), "Today is Thursday.");
    assert_eq!(
        got.messages[2].metadata.get("anthropic", "cache_control"),
        Some(&json!({"0": {"type": "ephemeral"}}))
    );
    // Adaptive thinking asks nothing of other providers; the format is asked of all.
    assert_eq!(got.reasoning, None);
    assert!(matches!(
        got.response_format,
        Some(kite_core::ResponseFormat::JsonSchema { .. })
    ));
    let hint = |k: &str| got.provider_hints.get("anthropic", k).cloned();
    assert_eq!(
        hint("beta"),
        Some(json!([
            "claude-code-20250219",
            "effort-2025-11-24",
            "context-management-2025-06-27"
        ]))
    );
    assert_eq!(hint("thinking"), Some(body["thinking"].clone()));
    assert_eq!(hint("output_config"), Some(body["output_config"].clone()));
    assert_eq!(
        hint("context_management"),
        Some(body["context_management"].clone())
    );
    assert_eq!(hint("system"), Some(body["system"].clone()));
    assert!(got.provider_options.is_empty());
}
