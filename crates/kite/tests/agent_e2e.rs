//! The agent loop over the real transport: a loopback server replays a recorded two-step
//! OpenAI exchange (a streamed tool call, then the streamed answer to its result), and the
//! request kite sends in between must be the one the recording holds.

mod common;
use common::weather;

use kite::http::{ReqwestTransport, RetryPolicy, Timeouts};
use kite::wire::openai_chat::Dialect;
use kite::{Agent, AgentEvent, Message, OpenAiCompatible, Part, StopReason, StreamExt};
use kite_testkit::{ReplayServer, Reply, fixture};
use serde_json::Value;
use std::time::Duration;

const DIR: &str = "openai/chat-completions";

async fn agent(server: &ReplayServer) -> Agent {
    let transport = ReqwestTransport::new(Timeouts::default()).unwrap();
    let model = OpenAiCompatible::new(format!("{}/v1", server.url()), Dialect::OpenAi)
        .api_key("sk-test")
        .transport(transport)
        .retry(RetryPolicy::none());
    Agent::new(model, "gpt-5-nano").tool(weather())
}

fn server_replies() -> Vec<Reply> {
    vec![
        Reply::sse(fixture(&format!(
            "{DIR}/stream-tool-call-fragments/response.sse"
        )))
        .chunked(64, Duration::from_millis(1)),
        Reply::sse(fixture(&format!(
            "{DIR}/stream-after-tool-result/response.sse"
        )))
        .chunked(64, Duration::from_millis(1)),
    ]
}

/// Assistant `content: ""` next to tool calls means the same as `null`.
fn normalize(mut messages: Value) -> Value {
    for m in messages.as_array_mut().unwrap() {
        if m.get("tool_calls").is_some() && m["content"] == Value::String(String::new()) {
            m["content"] = Value::Null;
        }
    }
    messages
}

#[tokio::test]
async fn a_recorded_two_step_tool_exchange_runs_end_to_end() {
    let server = ReplayServer::start(server_replies()).await;
    let run = agent(&server)
        .await
        .ask("What's the weather in Berlin? (52.5200, 13.4050)")
        .await
        .unwrap();

    assert!(
        run.text()
            .starts_with("Current weather in Berlin (52.5200, 13.4050): 15°C, wind 10 km/h."),
        "{}",
        run.text()
    );
    assert!(matches!(
        run.stop_reason(),
        Some(StopReason::Finished { .. })
    ));
    assert_eq!(run.turns(), 2);
    assert_eq!(run.usage().input_tokens, 169 + 230);
    assert_eq!(run.tool_calls()[0].call.id, "call_N2fJZh6fGguUrjbTlDD9mkbh");

    // What kite sent the second time is what the recorded client sent.
    let recorded: Value = serde_json::from_slice(&fixture(&format!(
        "{DIR}/stream-after-tool-result/request.json"
    )))
    .unwrap();
    let sent: Value = serde_json::from_slice(&server.requests()[1].body).unwrap();
    assert_eq!(
        normalize(sent["messages"].clone()),
        normalize(recorded["messages"].clone())
    );
    let tool_names = |v: &Value| v["tools"][0]["function"]["name"].clone();
    assert_eq!(tool_names(&sent), tool_names(&recorded));
    let props = |v: &Value| v["tools"][0]["function"]["parameters"]["properties"].clone();
    assert_eq!(props(&sent), props(&recorded));
}

#[tokio::test]
async fn the_same_exchange_streamed_gives_the_same_history() {
    let buffered = {
        let server = ReplayServer::start(server_replies()).await;
        agent(&server)
            .await
            .ask("What's the weather in Berlin? (52.5200, 13.4050)")
            .await
            .unwrap()
    };
    let server = ReplayServer::start(server_replies()).await;
    let agent = agent(&server).await;
    let mut stream = agent.run_stream(
        (),
        vec![Message::user(
            "What's the weather in Berlin? (52.5200, 13.4050)",
        )],
    );
    let mut text = String::new();
    let mut run = None;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            AgentEvent::Model(kite::Event::TextDelta { text: t, .. }) => text.push_str(&t),
            AgentEvent::ToolFinished { record } => {
                assert!(
                    matches!(&record.result.content[0], Part::Text { text } if text.contains("15°C"))
                );
            }
            AgentEvent::Done(r) => run = Some(r),
            _ => {}
        }
    }
    let run = run.unwrap();
    assert_eq!(run.messages(), buffered.messages());
    assert_eq!(text, run.text());
}

#[tokio::test]
async fn a_recorded_mistral_exchange_with_json_bodies_runs_end_to_end() {
    let dir = "mistral/chat-completions";
    let server = ReplayServer::start(vec![
        Reply::json(200, fixture(&format!("{dir}/tool-call/response.json"))),
        Reply::json(
            200,
            fixture(&format!("{dir}/tool-result-final-answer/response.json")),
        ),
    ])
    .await;
    let model = OpenAiCompatible::new(format!("{}/v1", server.url()), Dialect::Mistral)
        .api_key("test")
        .retry(RetryPolicy::none());
    let run = Agent::new(model, "mistral-small-latest")
        .tool(weather())
        .ask("What's the weather in Berlin? (52.5200, 13.4050)")
        .await
        .unwrap();
    assert_eq!(
        run.text(),
        "The current weather in Berlin is **15°C** with a wind speed of **10 km/h**."
    );

    let recorded: Value = serde_json::from_slice(&fixture(&format!(
        "{dir}/tool-result-final-answer/request.json"
    )))
    .unwrap();
    let mut sent: Value = serde_json::from_slice(&server.requests()[1].body).unwrap();
    // The recording re-serialized the arguments compactly; the model's own spacing is kept.
    let args = &mut sent["messages"][1]["tool_calls"][0]["function"]["arguments"];
    let compact = serde_json::from_str::<Value>(args.as_str().unwrap())
        .unwrap()
        .to_string();
    *args = Value::String(compact);
    assert_eq!(
        normalize(sent["messages"].clone()),
        normalize(recorded["messages"].clone())
    );
}
