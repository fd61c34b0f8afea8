//! `kite ask` exporting its spans and metrics over OTLP/HTTP to a real receiver on
//! loopback (a small server on the `opentelemetry-proto` package that decodes the
//! protobuf), after a normal exit and after an error.

mod common;

use common::otlp::Receiver;
use common::{KEY, answer, kite, run, signal_once_begun};
use kite_testkit::{ReplayServer, Reply, mcp};
use serde_json::Value;
use std::time::Duration;

/// `cmd` (the binary, set up by the caller) asking OpenAI's API at `server`, with no store.
fn asking(
    mut cmd: tokio::process::Command,
    server: &ReplayServer,
    extra: &[&str],
) -> tokio::process::Command {
    cmd.env("OPENAI_API_KEY", KEY)
        .args([
            "ask",
            "--no-store",
            "--provider",
            "openai",
            "--model",
            "gpt-5-nano",
        ])
        .args(extra)
        .arg("--base-url")
        .arg(format!("{}/v1", server.url()))
        .arg("Say hi.");
    cmd
}

/// `kite ask` against `server`, sending its telemetry to `receiver`.
fn ask(receiver: &Receiver, server: &ReplayServer) -> tokio::process::Command {
    let mut c = kite();
    c.env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            "authorization=Bearer otlp-token-SECRET-42",
        )
        .env("OTEL_SERVICE_NAME", "kite-under-test");
    asking(c, server, &[])
}

fn spans(received: &[Value]) -> Vec<&Value> {
    received.iter().filter(|r| r["signal"] == "span").collect()
}

#[tokio::test]
async fn ask_sends_its_spans_and_metrics_to_the_collector_on_exit() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(dir.path());
    let server = ReplayServer::start(vec![answer("Hi there.", 1)]).await;
    let r = run(&mut ask(&receiver, &server)).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Hi there."));

    let received = receiver.received();
    let spans = spans(&received);
    let chat = spans
        .iter()
        .find(|s| s["name"] == "chat gpt-5-nano")
        .unwrap_or_else(|| panic!("no chat span in {received:?}"));
    let agent = spans.iter().find(|s| s["name"] == "invoke_agent").unwrap();
    assert_eq!(chat["parent_span_id"], agent["span_id"]);
    assert_eq!(chat["trace_id"], agent["trace_id"]);
    assert_eq!(chat["kind"], "SPAN_KIND_CLIENT");
    let a = &chat["attributes"];
    assert_eq!(a["gen_ai.operation.name"], "chat");
    assert_eq!(a["gen_ai.provider.name"], "openai");
    assert_eq!(a["gen_ai.request.model"], "gpt-5-nano");
    assert_eq!(
        a["gen_ai.response.finish_reasons"],
        serde_json::json!(["stop"])
    );
    assert_eq!(a["server.address"], "127.0.0.1");
    assert!(a["gen_ai.response.time_to_first_chunk"].as_f64().unwrap() > 0.0);
    assert_eq!(chat["resource"]["service.name"], "kite-under-test");
    // The configured header went to the collector, and nowhere else.
    assert_eq!(chat["authorization"], "Bearer otlp-token-SECRET-42");
    let metrics: Vec<&str> = received
        .iter()
        .filter(|r| r["signal"] == "metric")
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(
        metrics.contains(&"gen_ai.client.operation.duration"),
        "{metrics:?}"
    );
    let shown = serde_json::to_string(&spans).unwrap();
    assert!(!shown.contains(KEY), "the provider key reached a trace");
    assert!(!r.stderr.contains("SECRET"), "{}", r.stderr);
}

#[tokio::test]
async fn ask_sends_its_spans_after_an_error_too() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(dir.path());
    let server = ReplayServer::start(vec![Reply::json(
        401,
        r#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}"#,
    )])
    .await;
    let r = run(&mut ask(&receiver, &server)).await;
    assert_ne!(r.code, 0, "{}", r.stderr);
    let received = receiver.received();
    let chat = spans(&received)
        .into_iter()
        .find(|s| s["name"] == "chat gpt-5-nano")
        .unwrap_or_else(|| panic!("no chat span in {received:?}"));
    assert_eq!(chat["attributes"]["error.type"], "401");
    assert_eq!(chat["status"]["code"], "STATUS_CODE_ERROR");
}

#[tokio::test]
async fn a_dead_collector_costs_a_deadline_not_the_answer() {
    // Nothing listens there: the answer still comes, and kite exits within its deadline.
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(dir.path());
    let endpoint = receiver.endpoint();
    drop(receiver);
    let server = ReplayServer::start(vec![answer("Still here.", 1)]).await;
    let started = std::time::Instant::now();
    let mut c = kite();
    c.env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint);
    let r = run(&mut asking(c, &server, &[])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Still here."));
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test]
async fn a_silent_collector_is_said_once_and_holds_the_exit_up_no_longer_than_its_deadline() {
    // It takes the connection and never answers.
    let silent = kite_testkit::SilentServer::start().await;
    let server = ReplayServer::start(vec![answer("Still here.", 1)]).await;
    let mut c = kite();
    c.env("OTEL_EXPORTER_OTLP_ENDPOINT", silent.url()).env(
        "OTEL_EXPORTER_OTLP_HEADERS",
        "authorization=Bearer otlp-token-SECRET-42",
    );
    let r = run(&mut asking(c, &server, &[])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Still here."));
    assert_eq!(
        r.stderr.matches("OpenTelemetry export").count(),
        1,
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("within 2 s"), "{}", r.stderr);
    assert!(!r.stderr.contains("SECRET"), "{}", r.stderr);
}

#[tokio::test]
async fn verbose_says_how_each_call_went() {
    let server = ReplayServer::start(vec![answer("Hi there.", 1)]).await;
    let r = run(&mut asking(kite(), &server, &["-v"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let chat = r
        .stderr
        .lines()
        .find(|l| l.starts_with("kite: chat gpt-5-nano: "))
        .unwrap_or_else(|| panic!("{}", r.stderr));
    assert!(
        chat.contains("(first chunk ") && chat.ends_with(", stop"),
        "{chat}"
    );
    assert!(r.stderr.contains("kite: invoke_agent: "), "{}", r.stderr);
    // Without it, nothing of the kind.
    let server = ReplayServer::start(vec![answer("Hi there.", 1)]).await;
    let r = run(&mut asking(kite(), &server, &[])).await;
    assert!(!r.stderr.contains("kite: chat "), "{}", r.stderr);
}

#[tokio::test]
async fn an_mcp_call_is_a_child_of_its_tool_span() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kite.toml"),
        format!(
            "[mcp.servers.py]\ncommand = {:?}\nargs = [{:?}]\n",
            mcp::python().to_string_lossy(),
            mcp::own("py_server.py").to_string_lossy()
        ),
    )
    .unwrap();
    let receiver = Receiver::start(dir.path());
    let mut call = kite::Response::empty(kite::FinishReason::ToolCalls);
    call.message = kite::Message::new(
        kite::Role::Assistant,
        vec![kite::Part::ToolCall(kite::ToolCall::new(
            "call_1",
            "add",
            r#"{"a": 19, "b": 23}"#,
        ))],
    );
    let server = ReplayServer::start(vec![
        Reply::sse(kite_testkit::render::sse(
            kite_testkit::render::Shape::Chat,
            &call,
            1,
        )),
        answer("42.", 2),
    ])
    .await;
    let mut c = common::in_trusted(dir.path());
    c.env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint());
    let mut c = asking(c, &server, &[]);
    let r = run(&mut c).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let received = receiver.received();
    let spans = spans(&received);
    let tool = spans
        .iter()
        .find(|s| s["name"] == "execute_tool add")
        .unwrap_or_else(|| panic!("{received:?}"));
    let mcp_call = spans
        .iter()
        .find(|s| s["name"] == "tools/call add")
        .unwrap_or_else(|| panic!("{received:?}"));
    assert_eq!(mcp_call["parent_span_id"], tool["span_id"]);
    assert_eq!(mcp_call["attributes"]["mcp.server.name"], "py");
    assert_eq!(tool["attributes"]["gen_ai.tool.call.id"], "call_1");
}

#[tokio::test]
async fn ctrl_c_mid_answer_still_sends_the_spans() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(dir.path());
    let body = kite_testkit::fixture("openai/chat-completions/stream-text-with-usage/response.sse");
    let server =
        ReplayServer::start(vec![Reply::sse(body.clone()).stall_after(body.len() / 2)]).await;
    let mut child = ask(&receiver, &server)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The answer has begun, then stalls: Ctrl-C.
    let _stdout = signal_once_begun(&mut child, "-INT", Duration::from_secs(20)).await;
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("kite ended")
        .unwrap();
    assert_eq!(out.status.code(), Some(130));
    let received = receiver.received();
    let chat = spans(&received)
        .into_iter()
        .find(|s| s["name"] == "chat gpt-5-nano")
        .unwrap_or_else(|| panic!("no chat span after Ctrl-C: {received:?}"));
    assert_eq!(chat["attributes"]["error.type"], "cancelled");
    assert!(
        chat["attributes"]["gen_ai.response.time_to_first_chunk"]
            .as_f64()
            .is_some()
    );
}

#[tokio::test]
async fn kite_serve_makes_a_server_span_over_each_requests_model_calls() {
    let dir = tempfile::tempdir().unwrap();
    let receiver = Receiver::start(dir.path());
    // A slow stream: its headers come long before its end. It says the provider's key,
    // and content is captured.
    let slow = answer(&format!("Served. {KEY}"), 1).chunked(64, Duration::from_millis(50));
    let upstream = ReplayServer::start(vec![slow]).await;
    let mut served = common::serve::start(
        common::serve::kite_serve()
            .env("KITE_LOG", "off")
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
            .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
            .env("OPENAI_API_KEY", KEY)
            .args([
                "--provider",
                "openai",
                "--model",
                "gpt-5-nano",
                "--base-url",
            ])
            .arg(format!("{}/v1", upstream.url())),
    );
    let streamed = reqwest::Client::new()
        .post(format!("{}/chat/completions", served.base))
        .bearer_auth(served.key())
        .json(&serde_json::json!({"model": "gpt-5-nano", "stream": true,
            "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(streamed.contains("Served."), "{streamed}");
    assert!(!streamed.contains(KEY), "{streamed}");
    // A key in a path, which the server span records.
    let _ = reqwest::Client::new()
        .get(format!("{}/models/{KEY}", served.base))
        .bearer_auth(served.key())
        .send()
        .await
        .unwrap();
    // Stopped, kite sends what it has.
    served.terminate();
    let _ = served.child.wait();

    let received = receiver.received();
    let all = serde_json::to_string(&received).unwrap();
    assert!(!all.contains(KEY), "a key left in a span: {all}");
    assert!(all.contains("/v1/models/[redacted]"), "{all}");
    assert!(
        all.contains("Served. [redacted]"),
        "content is captured: {all}"
    );
    let spans = spans(&received);
    let server = spans
        .iter()
        .find(|s| s["name"] == "POST /v1/chat/completions")
        .unwrap_or_else(|| panic!("no server span in {received:?}"));
    assert_eq!(server["kind"], "SPAN_KIND_SERVER");
    // Integers come as protobuf JSON writes 64-bit ones: in strings.
    assert_eq!(server["attributes"]["http.response.status_code"], "200");
    assert_eq!(server["attributes"]["http.route"], "/v1/chat/completions");
    let chat = spans
        .iter()
        .find(|s| s["name"] == "chat gpt-5-nano")
        .unwrap_or_else(|| panic!("no chat span in {received:?}"));
    assert_eq!(chat["parent_span_id"], server["span_id"]);
    assert_eq!(chat["trace_id"], server["trace_id"]);
    // The request's span lasts until its stream has ended, not until its headers went.
    let took = |s: &Value| s["end_ns"].as_u64().unwrap() - s["start_ns"].as_u64().unwrap();
    assert!(took(chat) > 200_000_000, "a slow stream: {chat}");
    assert!(took(server) * 10 >= took(chat) * 9, "{server}\n{chat}");
}
