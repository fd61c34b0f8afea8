//! `kite serve` in front of kite's loopback provider, with the official OpenAI Python SDK as
//! its client: whole and streamed completions, a tool call, structured output, the model
//! list, and errors raised as the SDK's own exception types.

mod common;

use common::{KEY, answer, kite};
use kite::{FinishReason, Message, Part, Response, Role, ToolCall, Usage};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply, mcp};
use serde_json::{Value, json};
use std::io::BufRead;

const GATEWAY_KEY: &str = "sk-gateway-test-0123456789";

/// `kite serve` on a free loopback port; killed when dropped.
struct Served {
    child: std::process::Child,
    base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(upstream: &ReplayServer) -> Served {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kite"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::temp_dir())
        .env("XDG_CONFIG_HOME", "/nonexistent/kite-tests")
        .env("KITE_LOG", "off")
        .env("OPENAI_API_KEY", KEY)
        .args(["serve", "--provider", "openai", "--model", "gpt-5-nano"])
        .args([
            "--addr",
            "127.0.0.1:0",
            "--api-key",
            GATEWAY_KEY,
            "--base-url",
        ])
        .arg(format!("{}/v1", upstream.url()))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    Served { child, base }
}

#[tokio::test]
async fn the_openai_sdk_talks_to_the_gateway() {
    let mut tool = Response::empty(FinishReason::ToolCalls);
    tool.message = Message::new(
        Role::Assistant,
        vec![Part::ToolCall(ToolCall::new(
            "call_7",
            "add",
            r#"{"a": 19, "b": 23}"#,
        ))],
    );
    let mut whole = Response::empty(FinishReason::Stop);
    whole.message = Message::assistant("Hello there.");
    whole.usage = Usage {
        input_tokens: 11,
        output_tokens: 3,
        total_tokens: 14,
        ..Usage::default()
    };
    let upstream = ReplayServer::start(vec![
        Reply::sse(sse(Shape::Chat, &whole, 1)),
        Reply::sse(sse(Shape::Chat, &whole, 2)),
        Reply::sse(sse(Shape::Chat, &tool, 3)),
        answer(r#"{"city": "Paris"}"#, 4),
        Reply::json(
            404,
            r#"{"error": {"message": "The model `no-such-model` does not exist", "type": "invalid_request_error", "code": "model_not_found"}}"#,
        ),
    ])
    .await;
    let served = serve(&upstream);
    let out = tokio::task::spawn_blocking({
        let base = served.base.clone();
        move || {
            std::process::Command::new(mcp::python())
                .arg(mcp::own("openai_client.py"))
                .arg(base)
                .arg(GATEWAY_KEY)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let checks: std::collections::HashMap<String, Value> = stdout
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["check"].as_str().unwrap().to_owned(), v)
        })
        .collect();
    let c = |name: &str| {
        checks
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in {stdout}"))
    };
    assert_eq!(c("whole")["text"], "Hello there.");
    assert_eq!(c("whole")["finish"], "stop");
    assert_eq!(c("whole")["model"], "gpt-5-nano");
    assert_eq!(c("whole")["prompt_tokens"], 11);
    assert_eq!(c("stream")["text"], "Hello there.");
    assert_eq!(c("stream")["finish"], "stop");
    assert_eq!(c("stream")["usage"], 14);
    assert_eq!(c("tool")["name"], "add");
    assert_eq!(c("tool")["arguments"], json!({"a": 19, "b": 23}));
    assert_eq!(c("tool")["finish"], "tool_calls");
    assert_eq!(c("tool")["id"], "call_7");
    assert_eq!(c("structured")["parsed"], json!({"city": "Paris"}));
    assert_eq!(c("models")["ids"], json!(["gpt-5-nano"]));
    assert_eq!(c("not_found")["raised"], "NotFoundError");
    assert_eq!(c("bad_key")["raised"], "AuthenticationError");

    // What went upstream: kite's request, with the provider's key, never the client's.
    let sent = upstream.requests();
    assert_eq!(sent.len(), 5, "the bad key never reached the provider");
    let tools: Value = serde_json::from_slice(&sent[2].body).unwrap();
    assert_eq!(tools["tools"][0]["function"]["name"], "add");
    let shaped: Value = serde_json::from_slice(&sent[3].body).unwrap();
    assert_eq!(shaped["response_format"]["type"], "json_schema");
    for r in &sent {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
}

#[tokio::test]
async fn without_a_key_it_listens_on_loopback_only() {
    let r = common::run(kite().args([
        "serve",
        "--addr",
        "0.0.0.0:0",
        "--provider",
        "openai",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ]))
    .await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("set a client key"), "{}", r.stderr);
}
