//! Thinking through the gateway, with real recorded streams: in front of Anthropic, its
//! thinking blocks (and redacted ones) reach a Messages client and come back upstream byte
//! for byte, signatures and all; in front of another provider, a client's thinking blocks
//! are left out on the way in, and the client is never given a signature Anthropic did
//! not make.

mod common;

use common::serve::{GATEWAY_KEY, Served, serve_provider};
use kite_testkit::{ReplayServer, Reply, fixture};
use serde_json::{Value, json};

fn gateway(provider: &str, upstream: &ReplayServer) -> Served {
    serve_provider(provider, "claude-sonnet-4-5", upstream, &[])
}

/// The content blocks of a streamed Messages answer, assembled from its events.
async fn streamed_blocks(served: &Served, body: &Value) -> Vec<Value> {
    let r = reqwest::Client::new()
        .post(format!("{}/messages", served.base))
        .header("x-api-key", GATEWAY_KEY)
        .header("anthropic-version", "2023-06-01")
        .json(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    blocks_of(&r.text().await.unwrap())
}

/// The content blocks an SSE body of Messages events makes.
fn blocks_of(sse: &str) -> Vec<Value> {
    let mut blocks: Vec<Value> = Vec::new();
    let mut partial_json: Vec<String> = Vec::new();
    for line in sse.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let e: Value = serde_json::from_str(data).unwrap();
        let i = e["index"].as_u64().unwrap_or(0) as usize;
        match e["type"].as_str() {
            Some("content_block_start") => {
                blocks.push(e["content_block"].clone());
                partial_json.push(String::new());
            }
            Some("content_block_delta") => {
                let d = &e["delta"];
                let b = &mut blocks[i];
                match d["type"].as_str() {
                    Some("thinking_delta") => append(b, "thinking", &d["thinking"]),
                    Some("signature_delta") => append(b, "signature", &d["signature"]),
                    Some("text_delta") => append(b, "text", &d["text"]),
                    Some("input_json_delta") => {
                        partial_json[i].push_str(d["partial_json"].as_str().unwrap())
                    }
                    _ => {}
                }
            }
            Some("content_block_stop") if blocks[i]["type"] == "tool_use" => {
                let input = &partial_json[i];
                if !input.is_empty() {
                    blocks[i]["input"] = serde_json::from_str(input).unwrap();
                }
            }
            _ => {}
        }
    }
    blocks
}

fn append(block: &mut Value, key: &str, more: &Value) {
    let now = block[key].as_str().unwrap_or_default().to_owned();
    block[key] = json!(now + more.as_str().unwrap_or_default());
}

/// The blocks of a type in the recorded stream at `path`, as the provider sent them.
fn recorded(path: &str) -> Vec<Value> {
    blocks_of(&String::from_utf8(fixture(path)).unwrap())
}

#[tokio::test]
async fn anthropics_thinking_comes_back_to_it_byte_for_byte() {
    let upstream = ReplayServer::start(vec![
        Reply::sse(fixture(
            "anthropic/messages/stream-thinking-then-tool-use/response.sse",
        )),
        Reply::sse(fixture("anthropic/messages/stream-text/response.sse")),
    ])
    .await;
    let served = gateway("anthropic", &upstream);
    let ask = json!({"model": "claude-sonnet-4-5", "max_tokens": 4000, "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "tools": [{"name": "fixed_version", "description": "The version with the fix.",
            "input_schema": {"type": "object", "properties": {"bug": {"type": "string"}}}}],
        "messages": [{"role": "user", "content": "Which version fixes it?"}]});
    let blocks = streamed_blocks(&served, &ask).await;
    let from_anthropic = recorded("anthropic/messages/stream-thinking-then-tool-use/response.sse");
    let thinking = &blocks[0];
    assert_eq!(thinking["type"], "thinking");
    assert_eq!(thinking["signature"], from_anthropic[0]["signature"]);
    assert_eq!(thinking["thinking"], from_anthropic[0]["thinking"]);
    let call = blocks.iter().find(|b| b["type"] == "tool_use").unwrap();

    // The client sends its history back, as Claude Code does.
    let mut again = ask.clone();
    again["messages"] = json!([
        ask["messages"][0],
        {"role": "assistant", "content": [thinking, call]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
            "content": "4.2.1"}]},
    ]);
    streamed_blocks(&served, &again).await;
    let sent: Value = serde_json::from_slice(&upstream.requests()[1].body).unwrap();
    assert_eq!(
        sent["messages"][1]["content"][0],
        json!({"type": "thinking", "thinking": from_anthropic[0]["thinking"],
            "signature": from_anthropic[0]["signature"]})
    );
}

#[tokio::test]
async fn redacted_thinking_comes_back_whole() {
    let upstream = ReplayServer::start(vec![
        Reply::sse(fixture(
            "anthropic/messages/stream-redacted-thinking/response.sse",
        )),
        Reply::sse(fixture("anthropic/messages/stream-text/response.sse")),
    ])
    .await;
    let served = gateway("anthropic", &upstream);
    let ask = json!({"model": "claude-sonnet-4-5", "max_tokens": 4000, "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 2000},
        "messages": [{"role": "user", "content": "Think about it."}]});
    let blocks = streamed_blocks(&served, &ask).await;
    let from_anthropic = recorded("anthropic/messages/stream-redacted-thinking/response.sse");
    let redacted: Vec<&Value> = from_anthropic
        .iter()
        .filter(|b| b["type"] == "redacted_thinking")
        .collect();
    assert!(!redacted.is_empty());
    let given: Vec<&Value> = blocks
        .iter()
        .filter(|b| b["type"] == "redacted_thinking")
        .collect();
    assert_eq!(given, redacted);
    let mut again = ask.clone();
    again["messages"] = json!([
        ask["messages"][0],
        {"role": "assistant", "content": blocks},
        {"role": "user", "content": "Go on."},
    ]);
    streamed_blocks(&served, &again).await;
    let sent: Value = serde_json::from_slice(&upstream.requests()[1].body).unwrap();
    let back: Vec<&Value> = sent["messages"][1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "redacted_thinking")
        .collect();
    assert_eq!(back, redacted);
}

#[tokio::test]
async fn another_providers_thinking_never_carries_a_signature() {
    // Mistral's Magistral thinks in the open: its thoughts have no signature.
    let upstream = ReplayServer::start(vec![Reply::sse(fixture(
        "mistral/chat-completions/stream-magistral-thinking/response.sse",
    ))])
    .await;
    let served = gateway("mistral", &upstream);
    let ask = json!({"model": "magistral-small", "max_tokens": 4000, "stream": true,
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Anthropic's thought.", "signature": "SIG-FROM-ANTHROPIC"},
                {"type": "text", "text": "Hello."}]},
            {"role": "user", "content": "What is 2 + 2?"}]});
    let blocks = streamed_blocks(&served, &ask).await;
    assert!(blocks.iter().any(|b| b["type"] == "text"), "{blocks:?}");
    for b in &blocks {
        assert!(b.get("signature").is_none(), "{b}");
    }
    // The client's thinking, which only Anthropic can take back, was left out.
    let sent = upstream.requests()[0].body_text();
    assert!(!sent.contains("SIG-FROM-ANTHROPIC"), "{sent}");
    assert!(!sent.contains("Anthropic's thought."), "{sent}");
}
