//! A route's own tools: a loop that never stops asking for tools ends at its turn limit
//! with a finish that promises no calls, and every call's usage is counted (and priced
//! alone) against the key as it comes, even when the loop fails midway.

use kite_core::{Error, FinishReason, Message, Part, Response, Role, ToolCall, Usage};
use kite_serve::{Gateway, Route};
use kite_testkit::ScriptedModel;
use serde_json::{Value, json};
use std::sync::Arc;

const KEY: &str = "sk-agentic-test-key";

/// A model's answer asking for `now`, having used 10 tokens in and 1 out.
fn asks_for_now(n: usize) -> Response {
    let mut r = Response::empty(FinishReason::ToolCalls);
    r.message = Message::new(
        Role::Assistant,
        vec![Part::ToolCall(ToolCall::new(
            format!("call_{n}"),
            "now",
            "{}",
        ))],
    );
    r.usage = Usage {
        input_tokens: 10,
        output_tokens: 1,
        total_tokens: 11,
        ..Usage::default()
    };
    r
}

async fn serve(model: ScriptedModel) -> (String, Arc<Gateway>) {
    let route = Route::new("helper", Arc::new(model), "helper");
    route.tools.add(kite_agent::builtin::now());
    // A tiered price: a call of more than 15 input tokens costs 100 times more.
    let pricer: kite_serve::Pricer =
        Arc::new(|_, _, u| Some(if u.input_tokens > 15 { 100.0 } else { 1.0 }));
    let gateway = Arc::new(Gateway::new(vec![route], false).key(KEY).pricer(pricer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(kite_serve::serve(
        listener,
        gateway.clone(),
        std::future::pending(),
    ));
    (base, gateway)
}

fn ask(base: &str, stream: bool) -> reqwest::RequestBuilder {
    reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .bearer_auth(KEY)
        .json(&json!({"model": "helper", "stream": stream,
            "messages": [{"role": "user", "content": "What time is it?"}]}))
}

#[tokio::test]
async fn a_loop_cut_short_by_its_turn_limit_promises_no_tool_calls() {
    let mut model = ScriptedModel::new();
    for n in 0..10 {
        model = model.respond(asks_for_now(n));
    }
    let (base, gateway) = serve(model.clone()).await;
    let answer: Value = ask(&base, false)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let choice = &answer["choices"][0];
    assert_eq!(choice["finish_reason"], "length", "{answer}");
    assert!(choice["message"].get("tool_calls").is_none(), "{answer}");
    assert_eq!(answer["usage"]["prompt_tokens"], 100, "ten calls: {answer}");
    assert_eq!(answer["usage"]["completion_tokens"], 10, "{answer}");
    let used = gateway.key_usage(0).unwrap();
    assert_eq!((used.input_tokens, used.output_tokens), (100, 10));
    // Each call priced alone: ten small calls, not one of a hundred tokens.
    assert_eq!(used.cost, 10.0);
}

#[tokio::test]
async fn calls_made_before_a_loop_fails_are_counted() {
    let model = ScriptedModel::new()
        .respond(asks_for_now(0))
        .respond(asks_for_now(1))
        .error(Error::other(std::io::Error::other("the upstream broke")));
    let (base, gateway) = serve(model).await;
    let streamed = ask(&base, true).send().await.unwrap().text().await.unwrap();
    assert!(streamed.contains("the upstream broke"), "{streamed}");
    assert!(!streamed.contains("tool_calls\":[{"), "{streamed}");
    let used = gateway.key_usage(0).unwrap();
    assert_eq!((used.input_tokens, used.output_tokens), (20, 2));
}

#[tokio::test]
async fn an_answer_with_no_known_price_is_counted_as_unpriced() {
    let mut answer = Response::empty(FinishReason::Stop);
    answer.message = Message::assistant("Hi.");
    answer.usage = asks_for_now(0).usage;
    let model = ScriptedModel::new().respond(answer);
    // No pricer, and the provider says no cost.
    let gateway =
        Arc::new(Gateway::new(vec![Route::new("plain", Arc::new(model), "plain")], false).key(KEY));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(kite_serve::serve(
        listener,
        gateway.clone(),
        std::future::pending(),
    ));
    let said = reqwest::Client::new()
        .post(format!("{base}/chat/completions"))
        .bearer_auth(KEY)
        .json(
            &json!({"model": "plain", "stream": true, "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": "Hi"}]}),
        )
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(said.contains("Hi."), "{said}");
    let used = gateway.key_usage(0).unwrap();
    assert_eq!((used.unpriced, used.cost, used.input_tokens), (1, 0.0, 10));
}
