//! The agent loop's scenarios, run once against a scripted model and again against loopback
//! servers speaking Chat Completions, Anthropic Messages and OpenAI Responses: every provider
//! must give the same history, tool records, usage and outcome.

use kite::wire::openai_chat::Dialect;
use kite::{
    Agent, Anthropic, FinishReason, Message, Model, OpenAiCompatible, OpenAiResponses, Part,
    Response, Role, Run, StopReason, ToolCall, Usage, tool,
};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply, ScriptedModel};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

#[derive(Deserialize, JsonSchema)]
struct City {
    city: String,
}

fn agent(model: Arc<dyn Model>, max_turns: u32) -> Agent {
    let weather = tool(
        "weather",
        "Current weather in a city",
        |c: City, _| async move { Ok(format!("{} is sunny", c.city)) },
    );
    Agent::shared(model, "m")
        .system("Be brief.")
        .tool(weather)
        .max_turns(max_turns)
}

fn usage(i: u64, o: u64) -> Usage {
    Usage {
        input_tokens: i,
        output_tokens: o,
        total_tokens: i + o,
        ..Usage::default()
    }
}

fn answer(text: &str) -> Response {
    Response {
        id: None,
        model: Some("m".into()),
        message: Message::assistant(text),
        finish_reason: FinishReason::Stop,
        usage: usage(20, 7),
    }
}

fn calls(calls: &[(&str, &str, &str)]) -> Response {
    let parts = calls
        .iter()
        .map(|(id, name, args)| Part::ToolCall(ToolCall::new(*id, *name, *args)))
        .collect();
    Response {
        id: None,
        model: Some("m".into()),
        message: Message::new(Role::Assistant, parts),
        finish_reason: FinishReason::ToolCalls,
        usage: usage(11, 3),
    }
}

/// What a run must agree on, whatever carried it.
#[derive(Debug, PartialEq)]
struct Outcome {
    history: Vec<(Role, Vec<Value>)>,
    records: Vec<(String, Value, String, bool)>,
    usage: (u64, u64),
    stop: String,
}

fn outcome(run: &Run) -> Outcome {
    let part = |p: &Part| match p {
        Part::Text { text } => Some(json!({"text": text})),
        Part::ToolCall(c) => Some(json!({"call": c.id, "name": c.name,
            "args": c.parse_arguments().unwrap_or(Value::String(c.arguments.clone()))})),
        Part::ToolResult(r) => Some(json!({"result": r.call_id, "content": r.text_content(),
            "error": r.is_error})),
        _ => None,
    };
    Outcome {
        history: run
            .messages()
            .iter()
            .map(|m| (m.role, m.parts.iter().filter_map(part).collect()))
            .collect(),
        records: run
            .tool_calls()
            .iter()
            .map(|r| {
                (
                    r.call.name.clone(),
                    r.call.parse_arguments().unwrap_or(Value::Null),
                    r.result.text_content(),
                    r.result.is_error,
                )
            })
            .collect(),
        usage: (run.usage().input_tokens, run.usage().output_tokens),
        stop: match run.stop_reason() {
            Some(StopReason::Finished { finish_reason }) => format!("finished {finish_reason}"),
            Some(StopReason::TurnLimit { max_turns }) => format!("turn limit {max_turns}"),
            other => format!("{other:?}"),
        },
    }
}

async fn on_wire(shape: Shape, script: &[Response], max_turns: u32, prompt: &str) -> Outcome {
    let replies = script
        .iter()
        .enumerate()
        .map(|(n, r)| Reply::sse(sse(shape, r, n)).chunked(23, std::time::Duration::ZERO))
        .collect();
    let server = ReplayServer::start(replies).await;
    let base = format!("{}/v1", server.url());
    let model: Arc<dyn Model> = match shape {
        Shape::Chat => Arc::new(OpenAiCompatible::new(&base, Dialect::OpenAi).api_key("k")),
        Shape::Anthropic => Arc::new(Anthropic::new(&base).api_key("k")),
        Shape::Responses => Arc::new(OpenAiResponses::new(&base).api_key("k")),
    };
    let run = agent(model, max_turns).ask(prompt).await.unwrap();
    assert_eq!(
        server.unused(),
        0,
        "{shape:?}: every scripted answer was asked for"
    );
    let paths: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    let want = match shape {
        Shape::Chat => "/v1/chat/completions",
        Shape::Anthropic => "/v1/messages",
        Shape::Responses => "/v1/responses",
    };
    assert!(paths.iter().all(|p| p == want), "{shape:?}: {paths:?}");
    outcome(&run)
}

/// Runs `script` on the scripted model and on every wire shape; all must agree.
async fn scenario(script: Vec<Response>, max_turns: u32, prompt: &str) -> Outcome {
    let mut scripted = ScriptedModel::new();
    for r in &script {
        scripted = scripted.respond(r.clone());
    }
    let run = agent(Arc::new(scripted), max_turns)
        .ask(prompt)
        .await
        .unwrap();
    let expected = outcome(&run);
    for shape in Shape::ALL {
        let got = on_wire(shape, &script, max_turns, prompt).await;
        assert_eq!(got, expected, "{shape:?} differs from the scripted run");
    }
    expected
}

#[tokio::test]
async fn multi_step_tool_use() {
    let o = scenario(
        vec![
            calls(&[("c1", "weather", r#"{"city":"Paris"}"#)]),
            calls(&[("c2", "weather", r#"{"city":"London"}"#)]),
            answer("Sunny in both."),
        ],
        10,
        "Paris, then London?",
    )
    .await;
    assert_eq!(o.records.len(), 2);
    assert_eq!(o.usage, (11 + 11 + 20, 3 + 3 + 7));
    assert_eq!(o.stop, "finished stop");
}

#[tokio::test]
async fn parallel_calls_come_back_in_call_order() {
    let o = scenario(
        vec![
            calls(&[
                ("c1", "weather", r#"{"city":"Paris"}"#),
                ("c2", "weather", r#"{"city":"Oslo"}"#),
            ]),
            answer("Both sunny."),
        ],
        10,
        "Paris and Oslo?",
    )
    .await;
    assert_eq!(o.records[1].2, "Oslo is sunny");
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_go_back_to_the_model() {
    let o = scenario(
        vec![
            calls(&[("c1", "weather", r#"{"city":"#), ("c2", "forecast", "{}")]),
            calls(&[("c3", "weather", r#"{"town":"Paris"}"#)]),
            calls(&[("c4", "weather", r#"{"city":"Paris"}"#)]),
            answer("Sunny."),
        ],
        10,
        "Weather?",
    )
    .await;
    let errors: Vec<bool> = o.records.iter().map(|r| r.3).collect();
    assert_eq!(errors, [true, true, true, false]);
}

#[tokio::test]
async fn the_turn_limit_is_an_outcome() {
    let o = scenario(
        vec![
            calls(&[("c1", "weather", r#"{"city":"Paris"}"#)]),
            calls(&[("c2", "weather", r#"{"city":"Paris"}"#)]),
        ],
        2,
        "Loop",
    )
    .await;
    assert_eq!(o.stop, "turn limit 2");
}
