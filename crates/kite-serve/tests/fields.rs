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
        (json!({"logit_bias": {"50256": -100}}), "`logit_bias`"),
        (json!({"modalities": ["text", "audio"]}), "`modalities`"),
        (json!({"audio": {"voice": "alloy"}}), "`audio`"),
        (json!({"service_tier": "flex"}), "`service_tier`"),
        (
            json!({"prediction": {"type": "content", "content": "x"}}),
            "`prediction`",
        ),
        (json!({"metadata": {"team": "a"}}), "`metadata`"),
        (json!({"store": true}), "`store`"),
        (json!({"functions": [{"name": "f"}]}), "`functions`"),
        (json!({"web_search_options": {}}), ""),
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
            json!({"tool_choice": "required"}),
            "`tool_choice` asks for a tool call",
        ),
    ] {
        let body = with(&base, more.clone());
        let (status, said) = post(addr, "chat/completions", &body).await;
        // `web_search_options: {}` asks for nothing.
        if named.is_empty() {
            assert_eq!(status, 200, "{more}: {said}");
            let _ = model.last();
            continue;
        }
        assert_eq!(status, 400, "{more}: {said}");
        let message = said["error"]["message"].as_str().unwrap();
        assert!(message.contains(named), "{more}: {message}");
        assert_eq!(said["error"]["type"], "invalid_request_error", "{said}");
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
        (json!({"thinking": {"type": "adaptive"}}), "thinking.type"),
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
