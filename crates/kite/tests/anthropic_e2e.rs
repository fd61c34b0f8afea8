//! Anthropic Messages over the real transport: a loopback server replays recorded streams.

use kite::http::RetryPolicy;
use kite::{Agent, Anthropic, ApiErrorKind, Message, Model, Request, StopReason, tool};
use kite_testkit::{ReplayServer, Reply};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

const KEY: &str = "sk-ant-test-0123456789SECRET";

fn fixture(case: &str, file: &str) -> Vec<u8> {
    kite_testkit::fixture(&format!("anthropic/messages/{case}/{file}"))
}

fn model(server: &ReplayServer) -> Anthropic {
    let fast = RetryPolicy {
        server_error_base: Duration::from_millis(10),
        ..RetryPolicy::default()
    };
    Anthropic::new(format!("{}/v1", server.url()))
        .api_key(KEY)
        .retry(fast)
}

#[derive(Deserialize, JsonSchema)]
struct Coordinates {
    latitude: String,
    longitude: String,
}

#[tokio::test]
async fn the_agent_loop_runs_over_anthropic_streams() {
    let server = ReplayServer::start(vec![
        Reply::sse(fixture("stream-tool-use-input-fragments", "response.sse"))
            .chunked(40, Duration::from_millis(1)),
        Reply::sse(fixture("stream-text", "response.sse")),
    ])
    .await;
    let weather = tool(
        "weather",
        "Current weather",
        |c: Coordinates, _| async move { Ok(format!("15°C at {}, {}", c.latitude, c.longitude)) },
    );
    let run = Agent::new(model(&server), "claude-haiku-4-5")
        .system("Be brief.")
        .tool(weather)
        .ask("Weather in Berlin?")
        .await
        .unwrap();
    assert_eq!(run.text(), "Hello");
    assert!(matches!(
        run.stop_reason(),
        Some(StopReason::Finished { .. })
    ));
    assert_eq!(run.usage().input_tokens, 633 + 10);

    let reqs = server.requests();
    assert_eq!(reqs[1].path, "/v1/messages");
    assert_eq!(reqs[1].header("x-api-key"), Some(KEY));
    assert_eq!(reqs[1].header("anthropic-version"), Some("2023-06-01"));
    assert!(reqs[1].header("authorization").is_none());
    let body: Value = serde_json::from_slice(&reqs[1].body).unwrap();
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["max_tokens"], 4096);
    assert_eq!(body["stream"], true);
    assert_eq!(body["tools"][0]["name"], "weather");
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[1]["content"][0],
        json!({"type": "tool_use", "id": "toolu_01MKSN7NHsBVKr7Jvw5pqCQq", "name": "weather",
               "input": {"latitude": "52.5200", "longitude": "13.4050"}})
    );
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01MKSN7NHsBVKr7Jvw5pqCQq",
               "content": "15°C at 52.5200, 13.4050"}]})
    );
}

#[tokio::test]
async fn overload_is_retried_and_errors_are_typed() {
    let overloaded =
        br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#.to_vec();
    let server = ReplayServer::start(vec![
        Reply::json(529, overloaded),
        Reply::sse(fixture("stream-text", "response.sse")),
        Reply::json(401, fixture("error-401-authentication", "response.json")),
    ])
    .await;
    let m = model(&server);
    let req = Request::new("claude-haiku-4-5").message(Message::user("hi"));
    assert_eq!(m.complete(&req).await.unwrap().text(), "Hello");
    let err = m.complete(&req).await.unwrap_err();
    let api = err.api().expect("an API error");
    assert_eq!(
        (api.status, api.kind),
        (Some(401), ApiErrorKind::Authentication)
    );
    assert_eq!(
        api.request_id.as_deref(),
        Some("req_011CeCGmBjaWkq37Sf5iU7so")
    );
    assert!(!format!("{err:?} {m:?}").contains(KEY));
    assert_eq!(server.requests().len(), 3);
}
