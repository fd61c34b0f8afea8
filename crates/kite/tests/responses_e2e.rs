//! OpenAI Responses over the real transport: a loopback server replays recorded traffic for
//! the agent loop, background runs (queued → in_progress → completed, cancel) and a dropped
//! background stream that resumes after its last event.

use futures_util::StreamExt;
use kite::http::RetryPolicy;
use kite::wire::openai_responses::Status;
use kite::{
    Agent, Event, FinishReason, Message, Model, OpenAiResponses, PollPolicy, ReasoningConfig,
    Request, ResponseBuilder, StopReason, TransportErrorKind, tool,
};
use kite_testkit::{ReplayServer, Reply};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use std::time::Duration;

const KEY: &str = "sk-test-responses-0123456789SECRET";

fn fixture(case: &str, file: &str) -> Vec<u8> {
    kite_testkit::fixture(&format!("openai/responses/{case}/{file}"))
}

fn model(server: &ReplayServer) -> OpenAiResponses {
    let fast = RetryPolicy {
        server_error_base: Duration::from_millis(10),
        ..RetryPolicy::default()
    };
    OpenAiResponses::new(format!("{}/v1", server.url()))
        .api_key(KEY)
        .retry(fast)
}

fn fast_poll() -> PollPolicy {
    PollPolicy {
        initial: Duration::from_millis(5),
        max: Duration::from_millis(20),
        factor: 2.0,
        timeout: Some(Duration::from_secs(10)),
    }
}

#[derive(Deserialize, JsonSchema)]
struct Operands {
    a: i64,
    b: i64,
}

#[tokio::test]
async fn the_agent_loop_runs_over_responses_streams() {
    let server = ReplayServer::start(vec![
        Reply::sse(fixture("stream-function-call-arguments", "response.sse"))
            .chunked(64, Duration::from_millis(1)),
        Reply::sse(fixture("stream-after-function-output", "response.sse")),
    ])
    .await;
    let multiply = tool(
        "multiply",
        "Multiply two numbers.",
        |o: Operands, _| async move { Ok((o.a * o.b).to_string()) },
    );
    let run = Agent::new(model(&server), "gpt-5.5")
        .configure(|r| r.reasoning = Some(ReasoningConfig::effort("low")))
        .tool(multiply)
        .ask("What is 1231 * 2331? Use the multiply tool.")
        .await
        .unwrap();
    assert!(run.text().contains("2,869,461"), "{}", run.text());
    assert!(matches!(
        run.stop_reason(),
        Some(StopReason::Finished { .. })
    ));
    assert_eq!(run.tool_calls().len(), 1);

    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[1].path, "/v1/responses");
    assert_eq!(
        reqs[1].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let sent: Value = serde_json::from_slice(&reqs[1].body).unwrap();
    let recorded: Value =
        serde_json::from_slice(&fixture("stream-after-function-output", "request.json")).unwrap();
    // The follow-up carries what the recorded client sent: the call and its output.
    assert_eq!(sent["input"][2], recorded["input"][2]);
    assert_eq!(sent["input"][1]["call_id"], recorded["input"][1]["call_id"]);
    assert_eq!(sent["reasoning"], recorded["reasoning"]);
    assert_eq!(
        (&sent["store"], &sent["stream"]),
        (&json!(false), &json!(true))
    );
}

#[tokio::test]
async fn parallel_calls_in_a_json_answer_run_and_go_back_in_order() {
    #[derive(Deserialize, JsonSchema)]
    struct Password {
        password: String,
    }
    let server = ReplayServer::start(vec![
        // A server that answers in JSON although asked to stream.
        Reply::json(200, fixture("parallel-function-calls", "response.json")),
        Reply::json(200, fixture("text-basic", "response.json")),
    ])
    .await;
    let secret = tool(
        "secret_retrieval_tool",
        "A tool that requires a password to retrieve a secret.",
        |p: Password, _| async move { Ok(format!("secret of {}", p.password)) },
    );
    let run = Agent::new(model(&server), "gpt-4o")
        .system("Use parallel tool calling.")
        .tool(secret)
        .ask("Please retrieve the secrets associated with each of these passwords: mellon,radiance")
        .await
        .unwrap();
    assert_eq!(run.text(), "pong");
    let sent: Value = serde_json::from_slice(&server.requests()[1].body).unwrap();
    let outputs: Vec<&Value> = sent["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .collect();
    assert_eq!(outputs.len(), 2);
    assert_eq!(outputs[0]["output"], "secret of mellon");
    assert_eq!(outputs[1]["output"], "secret of radiance");
    assert_eq!(sent["instructions"], "Use parallel tool calling.");
}

/// A stored response object in `status`, as the provider returns it while it runs.
fn stored(id: &str, status: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": id, "object": "response", "status": status, "background": true,
        "model": "o4-mini-deep-research", "output": [], "usage": null, "error": null,
    }))
    .unwrap()
}

/// A recorded completed response, renamed to `id`.
fn completed(id: &str) -> Vec<u8> {
    let mut v: Value = serde_json::from_slice(&fixture("text-basic", "response.json")).unwrap();
    v["id"] = json!(id);
    v["background"] = json!(true);
    serde_json::to_vec(&v).unwrap()
}

#[tokio::test]
async fn a_background_run_is_polled_from_queued_to_completed() {
    let id = "resp_bg_1";
    let server = ReplayServer::start(vec![
        Reply::json(200, stored(id, "queued")),
        Reply::json(200, stored(id, "queued")),
        Reply::json(200, stored(id, "in_progress")),
        Reply::json(
            503,
            br#"{"error":{"message":"busy","type":"server_error"}}"#.to_vec(),
        ),
        Reply::json(200, completed(id)),
    ])
    .await;
    let m = model(&server);
    let req =
        Request::new("o4-mini-deep-research").message(Message::user("Reply with exactly: pong"));
    let run = m.start(&req).await.unwrap();
    assert_eq!((run.id.as_str(), &run.status), (id, &Status::Queued));
    assert!(run.result.is_none());

    let answer = m.wait(id, fast_poll()).await.unwrap();
    assert_eq!(answer.text(), "pong");
    assert_eq!(answer.id.as_deref(), Some(id));
    assert_eq!(answer.finish_reason, FinishReason::Stop);

    let reqs = server.requests();
    assert_eq!(
        reqs.len(),
        5,
        "queued, in progress, a retried 503, completed"
    );
    let start: Value = serde_json::from_slice(&reqs[0].body).unwrap();
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(
        (&start["background"], &start["store"], &start["stream"]),
        (&json!(true), &json!(true), &json!(false))
    );
    for r in &reqs[1..] {
        assert_eq!(
            (r.method.as_str(), r.path.as_str()),
            ("GET", "/v1/responses/resp_bg_1")
        );
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
}

#[tokio::test]
async fn a_background_run_is_cancelled_and_stored_responses_deleted() {
    let id = "resp_bg_2";
    let server = ReplayServer::start(vec![
        Reply::json(200, stored(id, "in_progress")),
        Reply::json(200, stored(id, "cancelled")),
        Reply::json(200, stored(id, "cancelled")),
        Reply::json(200, br#"{"id":"resp_bg_2","object":"response.deleted","deleted":true}"#.to_vec()),
        Reply::json(
            404,
            br#"{"error":{"message":"Response with id 'resp_bg_2' not found.","type":"invalid_request_error","param":null,"code":null}}"#.to_vec(),
        ),
    ])
    .await;
    let m = model(&server);
    assert_eq!(m.get(id).await.unwrap().status, Status::InProgress);
    let cancelled = m.cancel(id).await.unwrap();
    assert_eq!(cancelled.status, Status::Cancelled);
    let answer = m.wait(id, fast_poll()).await.unwrap();
    assert_eq!(
        answer.finish_reason,
        FinishReason::Other("cancelled".into())
    );
    m.delete(id).await.unwrap();
    let gone = m.get(id).await.unwrap_err();
    assert_eq!(gone.api().and_then(|e| e.status), Some(404));

    let reqs = server.requests();
    let calls: Vec<(&str, &str)> = reqs
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("GET", "/v1/responses/resp_bg_2"),
            ("POST", "/v1/responses/resp_bg_2/cancel"),
            ("GET", "/v1/responses/resp_bg_2"),
            ("DELETE", "/v1/responses/resp_bg_2"),
            ("GET", "/v1/responses/resp_bg_2"),
        ]
    );
    assert!(matches!(
        m.get("../x").await,
        Err(kite::Error::InvalidRequest(_))
    ));
    assert_eq!(
        server.requests().len(),
        5,
        "a bad id is refused before sending"
    );
}

/// The recorded text stream as a background run: its events and their raw frames.
fn background_stream() -> (Vec<u8>, Vec<(u64, Vec<u8>)>) {
    let sse = String::from_utf8(fixture("stream-text-basic", "response.sse")).unwrap();
    let sse = sse.replace("\"background\":false", "\"background\":true");
    let frames = sse
        .split("\n\n")
        .filter(|f| !f.trim().is_empty())
        .map(|f| {
            let data = f.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
            let v: Value = serde_json::from_str(data).unwrap();
            (
                v["sequence_number"].as_u64().unwrap(),
                format!("{f}\n\n").into_bytes(),
            )
        })
        .collect();
    (sse.into_bytes(), frames)
}

#[tokio::test]
async fn a_dropped_background_stream_resumes_after_its_last_event() {
    let (whole, frames) = background_stream();
    // The first connection dies halfway through the fifth event.
    let cut: usize =
        frames[..4].iter().map(|(_, f)| f.len()).sum::<usize>() + frames[4].1.len() / 2;
    let last_seen = frames[3].0;
    // The provider resumes after the last event kite saw; the second connection also drops,
    // and the third repeats one event kite already has (which must not count twice).
    let rest: Vec<u8> = frames[4..].iter().flat_map(|(_, f)| f.clone()).collect();
    let cut2 = frames[4].1.len() + frames[5].1.len() + 7;
    let after_second = frames[5].0;
    let overlap: Vec<u8> = frames[5..].iter().flat_map(|(_, f)| f.clone()).collect();
    let server = ReplayServer::start(vec![
        Reply::sse(whole.clone()).reset_after(cut),
        Reply::sse(rest).reset_after(cut2),
        Reply::sse(overlap),
    ])
    .await;
    let m = model(&server).background(true);
    let req = Request::new("gpt-5.5").message(Message::user("Reply with exactly: pong"));
    let events: Vec<Event> = m.stream(&req).map(|e| e.unwrap()).collect().await;
    let answer = ResponseBuilder::build(events.clone()).unwrap();
    assert_eq!(answer.text(), "pong");
    let deltas = events
        .iter()
        .filter(|e| matches!(e, Event::TextDelta { .. }))
        .count();
    assert_eq!(deltas, 1, "no event given twice: {events:?}");

    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    let first: Value = serde_json::from_slice(&reqs[0].body).unwrap();
    assert_eq!(
        (&first["background"], &first["stream"]),
        (&json!(true), &json!(true))
    );
    let id = "resp_00592e63e61b66660169fab1b9f8e481a2b321356198d7ac1b";
    assert_eq!(reqs[1].method, "GET");
    assert_eq!(
        reqs[1].path,
        format!("/v1/responses/{id}?stream=true&starting_after={last_seen}")
    );
    assert_eq!(
        reqs[2].path,
        format!("/v1/responses/{id}?stream=true&starting_after={after_second}")
    );
    assert_eq!(
        reqs[2].header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(reqs[2].header("accept"), Some("text/event-stream"));
}

#[tokio::test]
async fn a_dropped_foreground_stream_is_a_typed_error_and_not_resumed() {
    let sse = fixture("stream-text-basic", "response.sse");
    let server =
        ReplayServer::start(vec![Reply::sse(sse.clone()).reset_after(sse.len() / 2)]).await;
    let m = model(&server);
    let req = Request::new("gpt-5.5").message(Message::user("Reply with exactly: pong"));
    let err = m.complete(&req).await.unwrap_err();
    match &err {
        kite::Error::Transport(t) => assert_eq!(t.kind, TransportErrorKind::ConnectionClosed),
        other => panic!("{other:?}"),
    }
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn reattaching_to_a_background_stream_reads_it_from_a_sequence_number() {
    let (_, frames) = background_stream();
    let from = frames[2].0;
    let rest: Vec<u8> = frames[3..].iter().flat_map(|(_, f)| f.clone()).collect();
    let server = ReplayServer::start(vec![Reply::sse(rest)]).await;
    let m = model(&server);
    let events: Vec<Event> = m
        .resume(
            "resp_00592e63e61b66660169fab1b9f8e481a2b321356198d7ac1b",
            Some(from),
        )
        .map(|e| e.unwrap())
        .collect()
        .await;
    assert_eq!(ResponseBuilder::build(events).unwrap().text(), "pong");
    assert!(
        server.requests()[0]
            .path
            .ends_with(&format!("starting_after={from}"))
    );
}
