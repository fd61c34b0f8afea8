//! `kite ask` run as a user runs it, against a loopback server replaying recorded traffic.

mod common;

use common::{KEY, kite, local_model_installed, run};
use kite_testkit::{ReplayServer, Reply, fixture};
use serde_json::Value;
use std::time::Duration;

/// A recorded tool loop: a streamed call of `weather`, then the answer to its result.
fn weather_loop() -> Vec<Reply> {
    vec![
        Reply::sse(fixture(
            "openai/chat-completions/stream-tool-call-fragments/response.sse",
        ))
        .chunked(11, Duration::from_millis(1)),
        Reply::sse(fixture(
            "openai/chat-completions/stream-after-tool-result/response.sse",
        )),
    ]
}

#[tokio::test]
async fn json_mode_prints_one_event_per_line() {
    let server = ReplayServer::start(weather_loop()).await;
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
    assert_eq!(types[..4], ["start", "tool_call", "tool_result", "start"]);
    assert!(types[4..types.len() - 2].iter().all(|t| *t == "text_delta"));
    assert_eq!(types[types.len() - 2..], ["usage", "done"]);

    let call = &lines[1];
    assert_eq!(call["name"], "weather");
    assert_eq!(call["id"], "call_N2fJZh6fGguUrjbTlDD9mkbh");
    assert_eq!(
        call["arguments"],
        serde_json::json!({"latitude": "52.5200", "longitude": "13.4050"})
    );
    // No tools were enabled: the model is told so, and answers anyway.
    let result = &lines[2];
    assert_eq!(result["is_error"], true);
    assert_eq!(result["status"], "refused");
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("unknown tool `weather`")
    );
    let usage = &lines[lines.len() - 2];
    assert_eq!(
        usage["input_tokens"],
        169 + 230,
        "usage summed over both calls"
    );
    let done = lines.last().unwrap();
    assert_eq!(
        (
            done["finish_reason"].as_str(),
            done["stop"].as_str(),
            done["turns"].as_u64()
        ),
        (Some("stop"), Some("finished"), Some(2))
    );

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
    assert!(body.get("tools").is_none(), "no tools were enabled");
    assert!(!r.stdout.contains(KEY) && !r.stderr.contains(KEY));
}

/// A Chat Completions stream, in OpenAI's wire format, that calls one tool.
fn tool_call_stream(name: &str, arguments: &str) -> Vec<u8> {
    let chunk = |delta: Value, finish: Value| {
        let c = serde_json::json!({"id": "chatcmpl-t", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {c}\n\n")
    };
    let mut body = chunk(
        serde_json::json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": ""}}]}),
        Value::Null,
    );
    body += &chunk(
        serde_json::json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}),
        Value::Null,
    );
    body += &chunk(serde_json::json!({}), serde_json::json!("tool_calls"));
    body += "data: [DONE]\n\n";
    body.into_bytes()
}

#[tokio::test]
async fn built_in_tools_run_when_enabled_and_show_as_they_happen() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "hello").unwrap();
    let server = ReplayServer::start(vec![
        Reply::sse(tool_call_stream("calculate", r#"{"expression": "6 * 7"}"#)),
        Reply::sse(tool_call_stream("list_files", "{}")),
        Reply::sse(fixture("mistral/chat-completions/stream-text/response.sse")),
    ])
    .await;
    let r = run(kite()
        .current_dir(dir.path())
        .args(["ask", "--tools", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("What is 6 times 7, and what files are here?"))
    .await;
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert_eq!(r.stdout, "1, 2, 3\n");
    assert!(
        r.stderr
            .contains(r#"[tool] calculate({"expression": "6 * 7"})"#),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("[tool] calculate -> 42"), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("[tool] list_files -> notes.txt (5 bytes)"),
        "{}",
        r.stderr
    );

    let reqs = server.requests();
    let first: Value = serde_json::from_slice(&reqs[0].body).unwrap();
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["now", "calculate", "read_file", "list_files"]);
    let second: Value = serde_json::from_slice(&reqs[1].body).unwrap();
    assert_eq!(
        second["messages"][2],
        serde_json::json!({"role": "tool", "tool_call_id": "call_1", "content": "42"})
    );
}

#[tokio::test]
async fn the_turn_limit_is_reported() {
    let server = ReplayServer::start(vec![Reply::sse(tool_call_stream("now", "{}"))]).await;
    let r = run(kite()
        .args(["ask", "--tool", "now", "--max-turns", "1", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("time?"))
    .await;
    assert_eq!(r.code, 3, "no answer came: {}", r.stderr);
    assert!(
        r.stderr.contains("stopped after 1 model calls"),
        "{}",
        r.stderr
    );
    let first: Value = serde_json::from_slice(&server.requests()[0].body).unwrap();
    assert_eq!(
        first["tools"].as_array().unwrap().len(),
        1,
        "only the named tool"
    );
    // The same in JSON mode: the done line says why, and the status is not 0.
    let server = ReplayServer::start(vec![Reply::sse(tool_call_stream("now", "{}"))]).await;
    let r = run(kite()
        .args([
            "ask",
            "--json",
            "--tool",
            "now",
            "--max-turns",
            "1",
            "--base-url",
        ])
        .arg(format!("{}/v1", server.url()))
        .arg("time?"))
    .await;
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stdout.contains("\"stop\":\"turn_limit\""), "{}", r.stdout);
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
async fn without_any_provider_and_no_local_model_it_says_what_to_run() {
    let empty = tempfile::tempdir().unwrap();
    let r = run(kite()
        .env("XDG_DATA_HOME", empty.path())
        .args(["ask", "hello"]))
    .await;
    assert_eq!(r.code, 1);
    assert_eq!(r.stderr.lines().count(), 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("kite model fetch") && r.stderr.contains("KITE_LOCAL_MODEL"),
        "{}",
        r.stderr
    );

    let r = run(kite()
        .env("KITE_LOCAL_MODEL", empty.path().join("nope.gguf"))
        .args(["ask", "hello"]))
    .await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("cannot be read (No such file") && r.stderr.contains("kite model fetch"),
        "{}",
        r.stderr
    );
    let r = run(kite()
        .env("KITE_LOCAL_MODEL", empty.path())
        .args(["ask", "hello"]))
    .await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("which is not a file"), "{}", r.stderr);

    let bad = empty.path().join("bad.gguf");
    std::fs::write(&bad, b"not a model at all").unwrap();
    let r = run(kite().env("KITE_LOCAL_MODEL", &bad).args(["ask", "hello"])).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("not a GGUF model file"), "{}", r.stderr);

    // A provider neither kite nor kite.toml knows is named, with the ones kite knows; a
    // name no provider could have is clap's usage error.
    let r = run(kite().args(["ask", "--provider", "nope", "hello"])).await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("no provider \"nope\"")
            && r.stderr.contains("openai-responses")
            && r.stderr.contains("[providers.nope]"),
        "{}",
        r.stderr
    );
    let r = run(kite().args(["ask", "--provider", "no pe", "hello"])).await;
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("invalid value 'no pe'"), "{}", r.stderr);
}

#[tokio::test]
async fn without_a_key_the_local_model_makes_a_forced_tool_call_and_answers() {
    if !local_model_installed() {
        return;
    }
    let r = run(kite().args([
        "ask",
        "--tool",
        "now",
        "--tool-choice",
        "required",
        "What is the date and time now?",
    ]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("no provider key is set; using the local model"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("[tool] now({})"), "{}", r.stderr);
    // The answer quotes what the tool returned.
    let told = common::what_the_clock_said(&r);
    assert!(
        told.iter().any(|t| r.stdout.contains(t.as_str())),
        "stdout {:?} says none of {told:?}",
        r.stdout
    );
}

#[tokio::test]
async fn a_forced_local_call_cut_by_the_token_limit_is_neither_text_nor_a_guess() {
    if !local_model_installed() {
        return;
    }
    // Eight tokens hold `<tool_call>` and the start of the call's JSON, not its end.
    let r = run(kite().args([
        "ask",
        "--local",
        "--no-store",
        "--tool",
        "now",
        "--tool-choice",
        "now",
        "--max-tokens",
        "8",
        "What time is it?",
    ]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("tool_call"), "{:?}", r.stdout);
    assert!(!r.stdout.contains("name"), "{:?}", r.stdout);
    assert!(
        r.stderr.contains("cut short at the limit on tokens"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("own guess"), "{}", r.stderr);
    assert!(!r.stderr.contains("[tool]"), "{}", r.stderr);
}

#[tokio::test]
async fn the_local_model_refuses_an_image_it_cannot_see() {
    if !local_model_installed() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("kite-ask-image-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A PNG's signature and header are enough for kite to take it as an image.
    let png = dir.join("red.png");
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x02\0\0\0".to_vec();
    bytes.extend_from_slice(&[0x90, 0x77, 0x53, 0xde]);
    std::fs::write(&png, bytes).unwrap();
    let r = run(kite()
        .args(["ask", "--local", "--no-store", "-a"])
        .arg(&png)
        .arg("What colour is this?"))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{:?}", r.stdout);
    assert!(
        r.stderr.contains("reads text only") && r.stderr.contains("an image"),
        "{}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `[defaults] provider = "local"` picks the embedded model even with a key set, as `--local`
/// does: the key's provider (out of reach here) is never asked.
#[tokio::test]
async fn defaults_may_name_the_local_model() {
    if !local_model_installed() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kite.toml");
    std::fs::write(&config, "[defaults]\nprovider = \"local\"\n").unwrap();
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .arg("--config")
        .arg(&config)
        .args(["ask", "--no-store", "--max-tokens", "3", "Say hi"]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("using the local model"), "{}", r.stderr);
    assert!(!r.stdout.trim().is_empty(), "no answer: {}", r.stderr);
    // Not for what only a provider does: a background run, a transcript.
    let r = run(kite().args(["ask", "--local", "--background", "hi"])).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("leave out --background"), "{}", r.stderr);
    let r = run(kite()
        .env("KITE_PROVIDER", "local")
        .arg("transcribe")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("does not transcribe"), "{}", r.stderr);
    // So may `--provider` and `KITE_PROVIDER`, in any case.
    for (flag, var) in [(Some("local"), None), (None, Some("Local"))] {
        let mut c = kite();
        c.env("OPENAI_API_KEY", KEY)
            .args(["ask", "--no-store", "--max-tokens", "3"]);
        if let Some(flag) = flag {
            c.args(["--provider", flag]);
        }
        if let Some(var) = var {
            c.env("KITE_PROVIDER", var);
        }
        let r = run(c.arg("Say hi")).await;
        assert_eq!(r.code, 0, "{flag:?} {var:?}: {}", r.stderr);
        assert!(r.stderr.contains("using the local model"), "{}", r.stderr);
    }
}

#[tokio::test]
async fn the_local_model_given_a_tool_calls_it_unless_told_otherwise_and_says_when_it_did_not() {
    if !local_model_installed() {
        return;
    }
    // No --tool-choice: a question of what the tool does makes it call...
    let r = run(kite().args(["ask", "--tool", "now", "What time is it?"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("[tool] now({})"), "{}", r.stderr);
    assert!(!r.stderr.contains("its own guess"), "{}", r.stderr);
    // ...and one that needs no tool is answered without one.
    let r = run(kite().args([
        "ask",
        "--no-store",
        "--tool",
        "now",
        "What is the capital of France?",
    ]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("[tool] now("), "{}", r.stderr);
    assert!(!r.stdout.trim().is_empty(), "no answer: {}", r.stderr);
    // Left to choose, when it calls none, that is said.
    let r = run(kite().args([
        "ask",
        "--tool",
        "now",
        "--tool-choice",
        "auto",
        "Say hello.",
    ]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let called = r.stderr.contains("[tool] now(");
    assert_eq!(
        r.stderr.contains("answered without calling a tool (now)"),
        !called,
        "{}",
        r.stderr
    );
}

/// `kite ask QUESTION` with Anthropic as the provider, its API a loopback server that
/// replays the recording `at`.
async fn ask_anthropic(at: &str, question: &str) -> (common::Run, ReplayServer) {
    let server = ReplayServer::start(vec![Reply::sse(fixture(at))]).await;
    let r = run(kite()
        .env("ANTHROPIC_API_KEY", KEY)
        .args(["ask", "--provider", "anthropic", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg(question))
    .await;
    (r, server)
}

#[tokio::test]
async fn anthropic_is_a_provider_too() {
    let (r, server) =
        ask_anthropic("anthropic/messages/stream-text/response.sse", "Say hello").await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Hello\n");
    // A whole answer is not said to be cut.
    assert!(!r.stderr.contains("cut short"), "{}", r.stderr);
    let req = &server.requests()[0];
    assert_eq!(req.header("x-api-key"), Some(KEY));
    let body: Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(body["model"], "claude-haiku-4-5");
}

#[tokio::test]
async fn an_answer_cut_at_the_token_limit_says_so_after_its_text() {
    let recording = "anthropic/messages/stream-max-tokens/response.sse";
    let (r, _server) = ask_anthropic(recording, "Tell me a story").await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.trim().is_empty(), "the text so far is shown");
    assert!(
        r.stderr.contains("cut short at the limit on tokens"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn openai_responses_is_a_provider_and_deep_research_picks_it() {
    let text = fixture("openai/responses/stream-text-basic/response.sse");
    let server = ReplayServer::start(vec![
        Reply::sse(text.clone()),
        Reply::sse(text.clone()),
        Reply::sse(text),
    ])
    .await;
    let base = format!("{}/v1", server.url());
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args([
            "ask",
            "--provider",
            "openai-responses",
            "--reasoning",
            "low",
            "--base-url",
        ])
        .arg(&base)
        .arg("Reply with exactly: pong"))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "pong\n");
    // A deep-research model goes to Responses as a background run with web search...
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args([
            "ask",
            "--provider",
            "openai",
            "-m",
            "o4-mini-deep-research",
            "--base-url",
        ])
        .arg(&base)
        .arg("Reply with exactly: pong"))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    // ...and `--api` picks Responses for any model.
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args(["ask", "--api", "responses", "--base-url"])
        .arg(&base)
        .arg("Reply with exactly: pong"))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);

    let reqs = server.requests();
    let bodies: Vec<Value> = reqs
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert!(reqs.iter().all(|r| r.path == "/v1/responses"));
    assert_eq!(bodies[0]["reasoning"], serde_json::json!({"effort": "low"}));
    assert_eq!(bodies[0]["store"], false);
    assert_eq!(bodies[1]["model"], "o4-mini-deep-research");
    assert_eq!(bodies[1]["background"], true);
    assert_eq!(
        bodies[1]["tools"],
        serde_json::json!([{"type": "web_search_preview"}])
    );
    assert_eq!(bodies[2]["model"], "gpt-4o-mini");
    assert_eq!(bodies[2].get("background"), None);
}

fn stored(id: &str, status: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "id": id, "object": "response", "status": status, "background": true,
        "model": "o3-deep-research", "output": [], "usage": null, "error": null,
    }))
    .unwrap()
}

#[tokio::test]
async fn a_background_question_prints_its_id_and_responses_reattach() {
    let id = "resp_cli_bg";
    let mut done: Value =
        serde_json::from_slice(&fixture("openai/responses/text-basic/response.json")).unwrap();
    done["id"] = id.into();
    let server = ReplayServer::start(vec![
        Reply::json(200, stored(id, "queued")),
        Reply::json(200, stored(id, "in_progress")),
        Reply::json(200, stored(id, "in_progress")),
        Reply::json(200, serde_json::to_vec(&done).unwrap()),
        Reply::json(200, stored(id, "cancelled")),
    ])
    .await;
    let base = format!("{}/v1", server.url());
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args([
            "ask",
            "--background",
            "-m",
            "o3-deep-research",
            "--base-url",
        ])
        .arg(&base)
        .arg("Reply with exactly: pong"))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, format!("{id}\n"));
    assert!(r.stderr.contains("kite responses wait"), "{}", r.stderr);

    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args(["responses", "get", id, "--base-url"])
        .arg(&base))
    .await;
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "resp_cli_bg in_progress\n"),
        "{}",
        r.stderr
    );
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args(["responses", "wait", id, "--base-url"])
        .arg(&base))
    .await;
    assert_eq!((r.code, r.stdout.as_str()), (0, "pong\n"), "{}", r.stderr);
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args(["responses", "cancel", id, "--json", "--base-url"])
        .arg(&base))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["status"], "cancelled");

    let reqs = server.requests();
    let start: Value = serde_json::from_slice(&reqs[0].body).unwrap();
    assert_eq!(
        (&start["background"], &start["model"]),
        (&Value::Bool(true), &Value::from("o3-deep-research"))
    );
    assert_eq!(
        start["tools"],
        serde_json::json!([{"type": "web_search_preview"}])
    );
    let paths: Vec<String> = reqs
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        paths,
        [
            "POST /v1/responses",
            "GET /v1/responses/resp_cli_bg",
            "GET /v1/responses/resp_cli_bg",
            "GET /v1/responses/resp_cli_bg",
            "POST /v1/responses/resp_cli_bg/cancel",
        ]
    );
    assert!(
        reqs.iter()
            .all(|r| r.header("authorization") == Some(&format!("Bearer {KEY}")))
    );
}

#[tokio::test]
async fn transcribe_prints_the_text_streamed_or_the_whole_transcript_as_json() {
    const SAID: &str = "Ruby is a programming language designed for developer happiness.";
    let server = ReplayServer::start(vec![
        Reply::sse(fixture(
            "openai/audio-transcriptions/gpt-4o-transcribe-stream/response.sse",
        ))
        .chunked(9, Duration::from_millis(1)),
        Reply::json(
            200,
            fixture("openai/audio-transcriptions/diarize-json/response.json"),
        ),
        Reply::json(
            200,
            fixture("mistral/audio-transcriptions/voxtral-json/response.json"),
        ),
    ])
    .await;
    let dir = std::env::temp_dir().join(format!("kite-transcribe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ruby.wav");
    std::fs::write(&file, b"RIFF\0\0\0\0WAVEfmt some audio").unwrap();
    let base = format!("{}/v1", server.url());

    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args([
            "transcribe",
            "--stream",
            "-m",
            "gpt-4o-transcribe",
            "--base-url",
        ])
        .arg(&base)
        .arg(&file))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, format!("{SAID}\n"));

    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args([
            "transcribe",
            "--json",
            "--format",
            "diarized_json",
            "-m",
            "gpt-4o-transcribe-diarize",
            "--base-url",
        ])
        .arg(&base)
        .arg(&file))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["text"], SAID);
    assert_eq!(v["segments"][0]["speaker"], "A");
    assert_eq!(v["usage"]["total_tokens"], 181);

    let r = run(kite()
        .env("MISTRAL_API_KEY", KEY)
        .args(["transcribe", "--provider", "mistral", "--base-url"])
        .arg(&base)
        .arg(&file))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, format!("{SAID}\n"));

    let reqs = server.requests();
    assert!(reqs.iter().all(|r| r.path == "/v1/audio/transcriptions"));
    let bodies: Vec<String> = reqs.iter().map(|r| r.body_text()).collect();
    assert!(bodies[0].contains("name=\"stream\"\r\n\r\ntrue"));
    assert!(bodies[1].contains("name=\"response_format\"\r\n\r\ndiarized_json"));
    assert!(
        bodies[2].contains("voxtral-mini-latest"),
        "the provider's default model"
    );
    assert!(bodies[2].contains("filename=\"ruby.wav\"\r\nContent-Type: audio/wav"));

    let missing = run(kite()
        .args(["transcribe"])
        .arg(dir.join("nope.wav"))
        .args(["--base-url", &base]))
    .await;
    assert_ne!(missing.code, 0);
    assert!(missing.stderr.contains("cannot read"), "{}", missing.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--json` lines without what differs between runs (tool durations).
/// `--json` lines without what changes between runs (durations, the conversation), and
/// with each run of text deltas as one: where they are cut may move, as kite holds back
/// text that could begin a key it knows.
fn steady(stdout: &str) -> Vec<Value> {
    let mut all: Vec<Value> = Vec::new();
    for l in stdout.lines() {
        let mut v: Value = serde_json::from_str(l).unwrap();
        if let Some(o) = v.as_object_mut() {
            o.remove("duration_ms");
            o.remove("conversation");
        }
        match all.last_mut() {
            Some(last) if last["type"] == "text_delta" && v["type"] == "text_delta" => {
                let joined = format!(
                    "{}{}",
                    last["text"].as_str().unwrap_or_default(),
                    v["text"].as_str().unwrap_or_default()
                );
                last["text"] = Value::String(joined);
            }
            _ => all.push(v),
        }
    }
    all
}

#[tokio::test]
async fn ask_records_a_cassette_replays_it_offline_and_the_cassette_commands_read_it() {
    let root = std::env::temp_dir().join(format!("kite-cli-cassettes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dir = root.join("weather");
    let server = ReplayServer::start(weather_loop()).await;
    let base = format!("{}/v1", server.url());
    let ask = |question: &str| {
        let mut c = kite();
        c.args(["ask", "--json", "--provider", "openai", "-m", "gpt-5-nano"])
            .args(["--base-url", &base, "--cassette"])
            .arg(&dir)
            .arg(question);
        c
    };
    let recorded = run(ask("Weather in Berlin?").env("OPENAI_API_KEY", KEY)).await;
    assert_eq!(recorded.code, 0, "stderr: {}", recorded.stderr);
    assert_eq!(server.requests().len(), 2);
    drop(server);

    // The server is gone and no key is set: the cassette answers, the same way.
    let replayed = run(ask("Weather in Berlin?").env("KITE_CASSETTE", "replay")).await;
    assert_eq!(replayed.code, 0, "stderr: {}", replayed.stderr);
    assert_eq!(steady(&replayed.stdout), steady(&recorded.stdout));
    assert!(replayed.stdout.contains("tool_result"));

    // A changed question fails with a diff and what to delete.
    let drift = run(&mut ask("Weather in Paris?")).await;
    assert_eq!(drift.code, 1);
    assert!(
        drift.stderr.contains("-") && drift.stderr.contains("Weather in Berlin?"),
        "{}",
        drift.stderr
    );
    assert!(
        drift.stderr.contains("+") && drift.stderr.contains("Weather in Paris?"),
        "{}",
        drift.stderr
    );
    assert!(
        drift.stderr.contains(&format!("delete {}", dir.display())),
        "{}",
        drift.stderr
    );
    let error = steady(&drift.stdout).pop().unwrap();
    assert_eq!(
        (error["kind"].as_str(), error["cassette"].as_str()),
        (Some("cassette"), Some("drift"))
    );

    let list = run(kite().args(["cassette", "list"]).arg(&root)).await;
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert_eq!(
        list.stdout.trim(),
        format!(
            "{}  2 exchanges  POST /v1/chat/completions ×2",
            dir.display()
        )
    );
    let show = run(kite().args(["cassette", "show"]).arg(&dir)).await;
    assert_eq!(show.code, 0, "{}", show.stderr);
    assert!(
        show.stdout
            .contains("  1  POST /v1/chat/completions  gpt-5-nano, 1 message"),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout.contains("→ 200 text/event-stream"),
        "{}",
        show.stdout
    );
    let one = run(kite().args(["cassette", "show"]).arg(&dir).arg("2")).await;
    assert!(one.stdout.contains("\"role\": \"tool\""), "{}", one.stdout);
    assert!(
        one.stdout.contains("data: "),
        "the stream as recorded: {}",
        one.stdout
    );

    // Nothing secret was written; a key planted beside the cassette is reported.
    let clean = run(kite().args(["cassette", "scan"]).arg(&root)).await;
    assert_eq!(clean.code, 0, "{}{}", clean.stdout, clean.stderr);
    assert!(clean.stderr.contains("nothing looks like a key"));
    std::fs::write(dir.join("notes.txt"), format!("line one\nkey = {KEY}\n")).unwrap();
    let dirty = run(kite().args(["cassette", "scan"]).arg(&root)).await;
    assert_eq!(dirty.code, 1);
    assert_eq!(
        dirty.stdout.trim(),
        format!(
            "{}:2:7: looks like a key (sk-…, {} characters)",
            dir.join("notes.txt").display(),
            KEY.len()
        )
    );
    assert!(!dirty.stdout.contains(KEY) && !dirty.stderr.contains(KEY));

    // The embedded model makes no HTTP traffic to record.
    let local = run(kite().args(["ask", "--cassette"]).arg(&dir).arg("hi")).await;
    assert_eq!(local.code, 1);
    assert!(
        local.stderr.contains("--cassette records HTTP traffic"),
        "{}",
        local.stderr
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test]
async fn a_pdf_goes_as_a_document_and_a_name_that_lies_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pdf = dir.path().join("report.pdf");
    std::fs::write(
        &pdf,
        b"%PDF-1.4\n1 0 obj\n<<>>\nendobj\ntrailer\n<<>>\n%%EOF\n",
    )
    .unwrap();
    let server = ReplayServer::start(vec![Reply::sse(fixture(
        "openai/chat-completions/stream-text-with-usage/response.sse",
    ))])
    .await;
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args(["ask", "--no-store", "--provider", "openai", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("-a")
        .arg(&pdf)
        .arg("What is in it?"))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let sent: Value = serde_json::from_slice(&server.requests()[0].body).unwrap();
    let parts = &sent["messages"][0]["content"];
    let file = parts
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["type"] == "file")
        .unwrap_or_else(|| panic!("{parts}"));
    assert_eq!(file["file"]["filename"], "report.pdf", "{file}");
    assert!(
        file["file"]["file_data"]
            .as_str()
            .unwrap()
            .starts_with("data:application/pdf;base64,JVBERi0"),
        "{file}"
    );
    let fake = dir.path().join("fake.pdf");
    std::fs::write(&fake, "not a pdf").unwrap();
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .arg("ask")
        .arg("-a")
        .arg(&fake)
        .arg("hi"))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("is not one"), "{}", r.stderr);
}
