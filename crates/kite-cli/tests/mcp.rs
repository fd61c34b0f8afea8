//! MCP servers from kite.toml: `kite mcp list|call`, where the configuration is found, and
//! `kite ask` calling a server's tool in its loop.

mod common;

use common::{KEY, kite, run};
use kite::{FinishReason, Message, Part, Response, Role, ToolCall, Usage};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply, mcp};
use serde_json::Value;
use std::path::Path;

/// A kite.toml with the Python SDK server, server-everything, and a server that cannot start.
fn write_config(dir: &Path) -> std::path::PathBuf {
    let toml = format!(
        r#"
[mcp.servers.py]
command = {python:?}
args = [{script:?}]
reject = ["headers"]

[mcp.servers.everything]
command = {everything:?}
args = ["stdio"]
allow = ["echo", "get-sum"]

[mcp.servers.broken]
command = "/nonexistent/mcp-server"
"#,
        python = mcp::python().to_string_lossy(),
        script = mcp::own("py_server.py").to_string_lossy(),
        everything = mcp::npm_bin("mcp-server-everything").to_string_lossy(),
    );
    let path = dir.join("kite.toml");
    std::fs::write(&path, toml).unwrap();
    path
}

#[tokio::test]
async fn mcp_list_shows_each_server_its_status_and_tools() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path());
    let r = run(common::in_trusted(dir.path()).args(["mcp", "list"])).await;
    assert_eq!(r.code, 1, "a server is down: {}", r.stderr);
    assert!(r.stdout.contains("broken: down: "), "{}", r.stdout);
    assert!(
        r.stdout.contains("py: up (\"kite-py-test\""),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("everything: up (\"mcp-servers/everything\""),
        "{}",
        r.stdout
    );
    // `echo` is on both: the names get their server's prefix.
    for line in [
        "  add",
        "  everything_echo (on the server: echo)",
        "  py_echo (on the server: echo)",
        "  get-sum",
    ] {
        assert!(
            r.stdout.lines().any(|l| l == line),
            "{line:?} in {}",
            r.stdout
        );
    }
    assert!(!r.stdout.contains("headers"), "rejected: {}", r.stdout);

    let r = run(common::in_trusted(dir.path()).args(["mcp", "list", "--json"])).await;
    let servers: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let py = servers.iter().find(|s| s["server"] == "py").unwrap();
    assert_eq!(py["status"], "up");
    assert_eq!(py["protocol"], "2025-11-25");
    assert!(py["pid"].as_u64().is_some());
    let broken = servers.iter().find(|s| s["server"] == "broken").unwrap();
    assert!(
        broken["error"]
            .as_str()
            .unwrap()
            .contains("/nonexistent/mcp-server"),
        "{broken}"
    );
}

#[tokio::test]
async fn mcp_call_prints_the_result_and_fails_on_a_tool_error() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path());
    let r = run(common::in_trusted(dir.path()).args([
        "mcp",
        "call",
        "py",
        "add",
        r#"{"a": 2, "b": 40}"#,
    ]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "42");

    let r = run(common::in_trusted(dir.path()).args([
        "mcp",
        "call",
        "py",
        "fail",
        r#"{"reason": "no"}"#,
    ]))
    .await;
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.contains("Error executing tool fail"),
        "{}",
        r.stdout
    );
    assert!(r.stderr.contains("reported an error"), "{}", r.stderr);

    let r = run(common::in_trusted(dir.path()).args([
        "mcp",
        "call",
        "everything",
        "echo",
        r#"{"message": "hi"}"#,
        "--json",
    ]))
    .await;
    let v: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(v["content"][0]["text"], "Echo: hi");
    assert_eq!(v["isError"], false);

    // A server's question with no terminal to ask on is declined, and the server hears so.
    let r = run(common::in_trusted(dir.path())
        .stdin(std::process::Stdio::null())
        .args(["mcp", "call", "everything", "trigger-elicitation-request"]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("asks: Please provide inputs") && r.stderr.contains("declined"),
        "{}",
        r.stderr
    );
    assert!(r.stdout.to_lowercase().contains("decline"), "{}", r.stdout);

    let r = run(common::in_trusted(dir.path()).args(["mcp", "call", "nope", "x"])).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains(r#"no MCP server "nope""#), "{}", r.stderr);
    let r =
        run(common::in_trusted(dir.path()).args(["mcp", "call", "py", "add", "not json"])).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("not JSON"), "{}", r.stderr);
}

#[tokio::test]
async fn the_configuration_is_found_by_flag_variable_working_directory_and_xdg() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let path = write_config(dir.path());
    let call = ["mcp", "call", "py", "add", r#"{"a": 1, "b": 2}"#];

    let by_flag = run(kite()
        .current_dir(elsewhere.path())
        .arg("--config")
        .arg(&path)
        .args(call))
    .await;
    assert_eq!(by_flag.stdout.trim(), "3", "{}", by_flag.stderr);
    let by_env = run(kite()
        .current_dir(elsewhere.path())
        .env("KITE_CONFIG", &path)
        .args(call))
    .await;
    assert_eq!(by_env.stdout.trim(), "3", "{}", by_env.stderr);
    let xdg = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(xdg.path().join("kite")).unwrap();
    std::fs::copy(&path, xdg.path().join("kite/kite.toml")).unwrap();
    let by_xdg = run(kite()
        .current_dir(elsewhere.path())
        .env("XDG_CONFIG_HOME", xdg.path())
        .args(call))
    .await;
    assert_eq!(by_xdg.stdout.trim(), "3", "{}", by_xdg.stderr);

    // None found: no servers.
    let none = run(kite().current_dir(elsewhere.path()).args(["mcp", "list"])).await;
    assert_eq!(none.code, 0);
    assert!(
        none.stderr.contains("no MCP servers are configured"),
        "{}",
        none.stderr
    );

    let missing = run(kite().current_dir(elsewhere.path()).args([
        "--config",
        "/nonexistent/kite.toml",
        "mcp",
        "list",
    ]))
    .await;
    assert_eq!(missing.code, 1);
    assert!(
        missing
            .stderr
            .contains("/nonexistent/kite.toml does not exist"),
        "{}",
        missing.stderr
    );

    let bad = elsewhere.path().join("kite.toml");
    std::fs::write(
        &bad,
        "[mcp.servers.x]\ncommand = \"a\"\nurl = \"http://b\"\n",
    )
    .unwrap();
    let r = run(kite().current_dir(elsewhere.path()).args(["mcp", "list"])).await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("kite.toml") && r.stderr.contains("not both"),
        "{}",
        r.stderr
    );
    std::fs::write(&bad, "[mcp.servers.x\n").unwrap();
    let r = run(kite().current_dir(elsewhere.path()).args(["mcp", "list"])).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("line 1"), "{}", r.stderr);
}

/// `kite ask` in `dir`, with OpenAI's API served by `server`.
fn ask(dir: &Path, server: &ReplayServer, extra: &[&str]) -> tokio::process::Command {
    let mut c = common::in_trusted(dir);
    c.env("OPENAI_API_KEY", KEY)
        .arg("ask")
        .args(extra)
        .args([
            "--provider",
            "openai",
            "--model",
            "gpt-5-nano",
            "--base-url",
        ])
        .arg(format!("{}/v1", server.url()))
        .arg("What is 19 + 23?");
    c
}

#[tokio::test]
async fn kite_ask_offers_configured_mcp_tools_and_sends_back_their_real_results() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path());
    let call = Response {
        id: None,
        model: Some("m".into()),
        message: Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall::new(
                "call_1",
                "add",
                r#"{"a": 19, "b": 23}"#,
            ))],
        ),
        finish_reason: FinishReason::ToolCalls,
        usage: Usage::default(),
    };
    let answer = Response {
        message: Message::assistant("19 + 23 = 42."),
        finish_reason: FinishReason::Stop,
        ..call.clone()
    };
    let server = ReplayServer::start(vec![
        Reply::sse(sse(Shape::Chat, &call, 1)),
        Reply::sse(sse(Shape::Chat, &answer, 2)),
    ])
    .await;
    let r = run(&mut ask(dir.path(), &server, &[])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("19 + 23 = 42."), "{}", r.stdout);
    // One line says what the configured servers added.
    assert!(
        r.stderr.contains(
            "kite: 9 tools from 2 of 3 MCP servers in kite.toml (--no-mcp leaves them out)"
        ),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(r#"MCP server "broken": cannot connect"#)
            && r.stderr.contains("its tools are not offered"),
        "the broken server is reported: {}",
        r.stderr
    );

    let requests = server.requests();
    let first: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let offered: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for name in ["add", "fail", "everything_echo", "py_echo", "get-sum"] {
        assert!(offered.contains(&name), "{name} not in {offered:?}");
    }
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(result["tool_call_id"], "call_1");
    assert!(result["content"].to_string().contains("42"), "{result}");

    // --no-mcp leaves them out.
    let server = ReplayServer::start(vec![Reply::sse(sse(Shape::Chat, &answer, 1))]).await;
    let r = run(&mut ask(dir.path(), &server, &["--no-mcp"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let first: Value = serde_json::from_slice(&server.requests()[0].body).unwrap();
    assert!(first.get("tools").is_none(), "{first}");
}

#[tokio::test]
async fn a_servers_request_for_the_model_is_refused_with_no_one_to_allow_it() {
    let dir = tempfile::tempdir().unwrap();
    write_config(dir.path());
    let call = Response {
        id: None,
        model: Some("m".into()),
        message: Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall::new(
                "call_1",
                "ask_many",
                r#"{"times": 25, "max_tokens": 100000000}"#,
            ))],
        ),
        finish_reason: FinishReason::ToolCalls,
        usage: Usage::default(),
    };
    let answer = Response {
        message: Message::assistant("Done."),
        finish_reason: FinishReason::Stop,
        ..call.clone()
    };
    let server = ReplayServer::start(vec![
        Reply::sse(sse(Shape::Chat, &call, 1)),
        Reply::sse(sse(Shape::Chat, &answer, 2)),
    ])
    .await;
    // Run with no terminal: nobody can allow it, so the model is never asked.
    let r = run(&mut ask(dir.path(), &server, &[])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(r#"MCP server "py" asked for the model's answer (refused"#),
        "{}",
        r.stderr
    );
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        2,
        "the server's 25 questions never reached the model"
    );
    let second: Value = serde_json::from_slice(&requests[1].body).unwrap();
    let result = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .to_string();
    assert!(result.contains(r#"\"answered\": []"#), "{result}");
    assert!(result.contains("not there to allow it"), "{result}");
}

/// A tool call to `add`, then an answer, as OpenAI streams them.
fn call_add_then_answer() -> Vec<Reply> {
    let call = Response {
        id: None,
        model: Some("m".into()),
        message: Message::new(
            Role::Assistant,
            vec![Part::ToolCall(ToolCall::new(
                "call_1",
                "add",
                r#"{"a": 2, "b": 40}"#,
            ))],
        ),
        finish_reason: FinishReason::ToolCalls,
        usage: Usage::default(),
    };
    let answer = Response {
        message: Message::assistant("2 + 40 = 42."),
        finish_reason: FinishReason::Stop,
        ..call.clone()
    };
    vec![
        Reply::sse(sse(Shape::Chat, &call, 1)),
        Reply::sse(sse(Shape::Chat, &answer, 2)),
    ]
}

#[tokio::test]
async fn a_server_known_from_before_is_waited_for_only_when_its_tool_is_called() {
    let dir = tempfile::tempdir().unwrap();
    // The server sleeps as long as `delay` says before it starts.
    let delay = dir.path().join("delay");
    std::fs::write(&delay, "0").unwrap();
    let toml = format!(
        "[mcp.servers.py]\ncommand = \"/bin/sh\"\nstartup_timeout_secs = 900\n\
         args = ['-c', 'sleep $(cat \"{delay}\"); exec \"{python}\" \"{script}\"']\n",
        delay = delay.display(),
        python = mcp::python().display(),
        script = mcp::own("py_server.py").display(),
    );
    std::fs::write(dir.path().join("kite.toml"), toml).unwrap();
    // The first time, kite starts the server to learn its tools, and keeps them.
    let server = ReplayServer::start(call_add_then_answer()).await;
    let r = run(&mut ask(dir.path(), &server, &[])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("2 + 40 = 42."), "{}", r.stdout);

    // Now it would take ten minutes to start: a question that calls none of its tools does
    // not wait for it, and its tools are offered as kept.
    std::fs::write(&delay, "600").unwrap();
    let server = ReplayServer::start(vec![Reply::sse(sse(
        Shape::Chat,
        &Response {
            message: Message::assistant("No tool needed."),
            ..Response::empty(FinishReason::Stop)
        },
        1,
    ))])
    .await;
    let asked = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        run(&mut ask(dir.path(), &server, &[])),
    )
    .await
    .expect("kite ask waited for a server whose tools it did not call");
    assert_eq!(asked.code, 0, "{}", asked.stderr);
    assert!(asked.stdout.contains("No tool needed."), "{}", asked.stdout);
    let first: Value = serde_json::from_slice(&server.requests()[0].body).unwrap();
    assert!(first["tools"].to_string().contains("\"add\""), "{first}");

    // A call to one of its tools waits for it, and gets the server's real answer.
    std::fs::write(&delay, "2").unwrap();
    let server = ReplayServer::start(call_add_then_answer()).await;
    let r = run(&mut ask(dir.path(), &server, &[])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let second: Value = serde_json::from_slice(&server.requests()[1].body).unwrap();
    assert!(second["messages"].to_string().contains("42"), "{second}");
}
