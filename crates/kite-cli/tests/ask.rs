//! `kite ask` run as a user runs it, against a loopback server replaying recorded traffic.

use kite_testkit::{ReplayServer, Reply};
use serde_json::Value;
use std::time::Duration;
use tokio::process::Command;

const KEY: &str = "sk-cli-test-key-9876543210SECRET";

fn fixture(path: &str) -> Vec<u8> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/wire");
    std::fs::read(root.join(path)).unwrap()
}

/// The kite binary with no provider configured from the outside.
fn kite() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kite"));
    for var in [
        "OPENAI_API_KEY",
        "MISTRAL_API_KEY",
        "OPENROUTER_API_KEY",
        "GROQ_API_KEY",
        "KITE_API_KEY",
        "KITE_PROVIDER",
        "KITE_MODEL",
        "KITE_BASE_URL",
    ] {
        c.env_remove(var);
    }
    c.env("KITE_LOG", "off");
    c
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn run(cmd: &mut Command) -> Run {
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("kite finished")
        .expect("kite ran");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

#[tokio::test]
async fn json_mode_prints_one_event_per_line() {
    let server = ReplayServer::start(vec![
        Reply::sse(fixture(
            "openai/chat-completions/stream-tool-call-fragments/response.sse",
        ))
        .chunked(11, Duration::from_millis(1)),
    ])
    .await;
    let r = run(kite()
        .env("KITE_API_KEY", KEY)
        .args(["ask", "--json", "--model", "gpt-5-nano", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("What's the weather in Berlin?"))
    .await;
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    let lines: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let types: Vec<&str> = lines.iter().map(|v| v["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["start", "tool_call", "usage", "done"]);
    assert_eq!(lines[1]["name"], "weather");
    assert_eq!(lines[1]["id"], "call_N2fJZh6fGguUrjbTlDD9mkbh");
    assert_eq!(
        lines[1]["arguments"],
        serde_json::json!({"latitude": "52.5200", "longitude": "13.4050"})
    );
    assert_eq!(lines[2]["input_tokens"], 169);
    assert_eq!(lines[2]["output_tokens"], 96);
    assert_eq!(lines[3]["finish_reason"], "tool_calls");

    let req = &server.requests()[0];
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body: Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(
        body["messages"][0]["content"],
        "What's the weather in Berlin?"
    );
    assert!(!r.stdout.contains(KEY) && !r.stderr.contains(KEY));
}

#[tokio::test]
async fn text_mode_streams_the_answer() {
    let server = ReplayServer::start(vec![Reply::sse(fixture(
        "mistral/chat-completions/stream-text/response.sse",
    ))])
    .await;
    let r = run(kite()
        .env("MISTRAL_API_KEY", KEY)
        .args([
            "ask",
            "--provider",
            "mistral",
            "--system",
            "Count.",
            "--base-url",
        ])
        .arg(format!("{}/v1", server.url()))
        .args(["Count", "to", "three"]))
    .await;
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert_eq!(r.stdout, "1, 2, 3\n");
    let body: Value = serde_json::from_slice(&server.requests()[0].body).unwrap();
    assert_eq!(body["model"], "mistral-small-latest");
    assert_eq!(
        body["messages"][0],
        serde_json::json!({"role": "system", "content": "Count."})
    );
    assert_eq!(body["messages"][1]["content"], "Count to three");
    assert!(body.get("stream_options").is_none(), "mistral dialect");
}

#[tokio::test]
async fn provider_errors_print_one_line_and_exit_non_zero() {
    let body = format!(
        r#"{{"error":{{"message":"Incorrect API key provided: {KEY}.","type":"invalid_request_error","code":"invalid_api_key"}}}}"#
    );
    let server = ReplayServer::start(vec![
        Reply::json(401, body.clone().into_bytes()),
        Reply::json(401, body.into_bytes()),
    ])
    .await;
    let url = format!("{}/v1", server.url());
    let ask = |extra: &[&str]| {
        let mut c = kite();
        c.env("OPENAI_API_KEY", KEY)
            .args(["ask", "--provider", "openai", "--base-url", &url])
            .args(extra)
            .arg("hi");
        c
    };
    let r = run(&mut ask(&[])).await;
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.lines().count(), 1, "{:?}", r.stderr);
    assert!(
        r.stderr.contains("401") && r.stderr.contains("invalid_api_key"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.is_empty());

    let r = run(&mut ask(&["--json"])).await;
    assert_eq!(r.code, 1);
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["status"], 401);
    assert_eq!(v["code"], "invalid_api_key");
    for out in [&r.stdout, &r.stderr] {
        assert!(!out.contains(KEY), "key leaked: {out}");
    }
}

#[tokio::test]
async fn without_any_provider_it_says_what_to_set() {
    let r = run(kite().args(["ask", "hello"])).await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("OPENAI_API_KEY") && r.stderr.contains("--base-url"),
        "{}",
        r.stderr
    );
    let r = run(kite().args(["ask", "--provider", "nope", "hello"])).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("unknown provider"), "{}", r.stderr);
}
