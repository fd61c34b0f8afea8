//! The hub against real MCP servers: the npm reference servers over stdio, and a server built
//! with the official Python SDK. `scripts/setup.sh --tests` installs them (into
//! `~/.cache/kite/mcp-peers`, or `KITE_MCP_PEERS`).

mod common;

use common::{Served, everything, logs, pid, python, text};

use kite_agent::{Agent, ToolSet};
use kite_core::{Part, Role};
use kite_mcp::{Hub, HubOptions, Prefixing, ServerConfig, ServerStatus};
use kite_testkit::ScriptedModel;
use serde_json::json;
use std::time::Duration;

#[tokio::test]
async fn everything_over_stdio_negotiates_lists_and_calls() {
    let hub = Hub::new();
    hub.add("everything", everything()).await.unwrap();
    let report = &hub.servers()[0];
    match &report.status {
        ServerStatus::Up { protocol, name, .. } => {
            assert_eq!(protocol, "2025-11-25");
            assert!(name.contains("everything"), "{name}");
        }
        other => panic!("{other:?}"),
    }
    let names: Vec<&str> = report.tools.iter().map(|t| t.0.as_str()).collect();
    for want in [
        "echo",
        "get-sum",
        "get-tiny-image",
        "get-structured-content",
    ] {
        assert!(names.contains(&want), "{names:?}");
    }

    let echo = hub
        .call("everything", "echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), "Echo: hi");
    assert!(!echo.is_error);
    let sum = hub
        .call("everything", "get-sum", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(text(&sum).contains("42"), "{sum:?}");
    let image = hub
        .call("everything", "get-tiny-image", json!({}))
        .await
        .unwrap();
    assert!(
        image
            .content
            .iter()
            .any(|b| b["type"] == "image" && b["data"].as_str().is_some_and(|d| !d.is_empty()))
    );
    let structured = hub
        .call(
            "everything",
            "get-structured-content",
            json!({"location": "New York"}),
        )
        .await
        .unwrap();
    assert!(
        structured
            .structured
            .as_ref()
            .is_some_and(|v| v.is_object()),
        "{structured:?}"
    );

    // As kite tools: images stay images.
    let tools = hub.tools::<()>();
    let tiny = tools
        .iter()
        .find(|t| t.spec().name == "get-tiny-image")
        .unwrap();
    let ctx = kite_agent::ToolContext {
        context: std::sync::Arc::new(()),
        call_id: "c1".into(),
        cancel: Default::default(),
    };
    let out = tiny.call(json!({}), ctx).await.unwrap();
    assert!(
        out.content.iter().any(|p| matches!(p, Part::Image { .. })),
        "{out:?}"
    );
    hub.shutdown();
}

#[tokio::test]
async fn a_killed_stdio_server_is_reconnected_and_the_call_succeeds() {
    let hub = Hub::with_options(HubOptions {
        reconnect_initial: Duration::from_secs(30),
        ..HubOptions::default()
    });
    hub.add("everything", everything()).await.unwrap();
    let first = pid(&hub, "everything");
    assert_eq!(
        text(
            &hub.call("everything", "echo", json!({"message": "one"}))
                .await
                .unwrap()
        ),
        "Echo: one"
    );
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let second = hub
        .call("everything", "echo", json!({"message": "two"}))
        .await
        .unwrap();
    assert_eq!(text(&second), "Echo: two");
    assert_ne!(pid(&hub, "everything"), first, "a new process serves it");
    hub.shutdown();
}

#[tokio::test]
async fn the_exit_of_a_server_is_noticed_at_once_and_its_tools_retired() {
    let hub = Hub::with_options(HubOptions {
        reconnect_initial: Duration::from_secs(60),
        ..HubOptions::default()
    });
    let set: ToolSet = ToolSet::new();
    hub.add("everything", everything()).await.unwrap();
    hub.bind(&set);
    assert!(set.specs().iter().any(|s| s.name == "echo"));
    std::process::Command::new("kill")
        .args(["-KILL", &pid(&hub, "everything").to_string()])
        .status()
        .unwrap();
    let mut waited = 0;
    while !set.specs().is_empty() {
        assert!(waited < 100, "tools still offered: {:?}", set.specs().len());
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert!(matches!(hub.servers()[0].status, ServerStatus::Down { .. }));
    // A call brings it back, and the tools with it.
    hub.call("everything", "echo", json!({"message": "back"}))
        .await
        .unwrap();
    assert!(set.specs().iter().any(|s| s.name == "echo"));
    hub.shutdown();
}

#[tokio::test]
async fn a_path_outside_the_filesystem_root_is_a_tool_error() {
    let root = std::env::temp_dir().join(format!("kite-mcp-fs-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("note.txt"), "kept here").unwrap();
    let bin = kite_testkit::mcp::npm_bin("mcp-server-filesystem");
    let hub = Hub::new();
    hub.add(
        "files",
        ServerConfig::stdio(bin.to_string_lossy(), [root.to_string_lossy().into_owned()]),
    )
    .await
    .unwrap();
    let inside = hub
        .call(
            "files",
            "read_text_file",
            json!({"path": root.join("note.txt")}),
        )
        .await
        .unwrap();
    assert!(!inside.is_error);
    assert_eq!(text(&inside), "kept here");
    let outside = hub
        .call("files", "read_text_file", json!({"path": "/etc/hostname"}))
        .await
        .unwrap();
    assert!(outside.is_error, "{outside:?}");
    assert!(
        text(&outside).contains("outside allowed directories"),
        "{outside:?}"
    );
    hub.shutdown();
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test]
async fn clashing_names_get_prefixes_lists_filter_and_a_failing_tool_is_an_error() {
    let hub = Hub::new();
    hub.add("everything", everything().allow(["echo", "get-sum"]))
        .await
        .unwrap();
    hub.add(
        "py",
        python().prefix("python").reject([
            "add",
            "ask_many",
            "headers",
            "grow",
            "slow",
            "wait_for_cancel",
        ]),
    )
    .await
    .unwrap();
    let mut names: Vec<String> = hub
        .tools::<()>()
        .iter()
        .map(|t| t.spec().name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["everything_echo", "fail", "get-sum", "python_echo"]);

    let failed = hub
        .call("py", "fail", json!({"reason": "on purpose"}))
        .await
        .unwrap();
    assert!(failed.is_error);
    // The Python SDK names the tool and keeps the exception's message to itself.
    assert!(
        text(&failed).contains("Error executing tool fail"),
        "{failed:?}"
    );
    assert_eq!(
        text(
            &hub.call("py", "echo", json!({"message": "py"}))
                .await
                .unwrap()
        ),
        "Echo: py"
    );
    hub.shutdown();
}

/// A tool of the program's own, named like a server's.
struct Local;

impl kite_agent::Tool<()> for Local {
    fn spec(&self) -> &kite_core::ToolSpec {
        static SPEC: std::sync::OnceLock<kite_core::ToolSpec> = std::sync::OnceLock::new();
        SPEC.get_or_init(|| {
            kite_core::ToolSpec::new("echo", "the program's own echo", json!({"type": "object"}))
        })
    }
    fn call(
        &self,
        _: serde_json::Value,
        _: kite_agent::ToolContext<()>,
    ) -> kite_agent::ToolFuture<()> {
        Box::pin(async { Ok(kite_agent::ToolOutput::text("local")) })
    }
}

#[tokio::test]
async fn a_server_tool_named_like_one_in_the_set_never_replaces_it() {
    for (prefixing, want) in [
        (Prefixing::OnClash, vec!["echo", "everything_echo"]),
        (Prefixing::Never, vec!["echo"]),
    ] {
        let hub = Hub::with_options(HubOptions {
            prefixing,
            ..HubOptions::default()
        });
        hub.add("everything", everything().allow(["echo"]))
            .await
            .unwrap();
        let set: ToolSet<()> = ToolSet::new();
        set.add(Local);
        hub.bind(&set);
        let mut names = set.names();
        names.sort();
        assert_eq!(names, want, "{prefixing:?}");
        let echo = set.get("echo").unwrap();
        assert_eq!(echo.spec().description, "the program's own echo");
        hub.shutdown();
    }
}

#[tokio::test]
async fn a_tool_the_program_puts_in_place_of_a_server_tool_stays() {
    let hub = Hub::new();
    hub.add("everything", everything().allow(["echo"]))
        .await
        .unwrap();
    let set: ToolSet<()> = ToolSet::new();
    hub.bind(&set);
    assert_eq!(set.names(), ["echo"]);
    // The program replaces the server's tool with its own; when the server goes, its own
    // tool is not taken away with it.
    set.add(Local);
    assert!(hub.remove("everything"));
    assert_eq!(set.names(), ["echo"]);
    assert_eq!(
        set.get("echo").unwrap().spec().description,
        "the program's own echo"
    );
    hub.shutdown();
}

#[tokio::test]
async fn a_scripted_model_calls_an_mcp_tool_and_gets_its_real_result() {
    let hub = Hub::new();
    hub.add("everything", everything()).await.unwrap();
    let model = ScriptedModel::new()
        .tool_calls(&[("call_1", "get-sum", json!({"a": 19, "b": 23}))])
        .text("The sum is 42.");
    let agent = Agent::new(model, "scripted");
    hub.bind(agent.tools());
    let run = agent.ask("What is 19 + 23?").await.unwrap();
    let result = run
        .messages()
        .iter()
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| m.parts.iter())
        .find_map(|p| match p {
            Part::ToolResult(r) => Some(r.clone()),
            _ => None,
        })
        .unwrap();
    assert!(!result.is_error);
    assert!(result.text_content().contains("42"), "{result:?}");
    hub.shutdown();
}

/// A server restarted on its port forgets every session: server-everything then answers
/// 400 with an id-less error, the Python SDK 404. Either way the next call starts a new
/// session and succeeds.
#[tokio::test]
async fn http_servers_survive_a_restart_that_forgets_the_session() {
    logs();
    for (mut server, tool, args) in [
        (Served::everything(), "get-sum", json!({"a": 2, "b": 40})),
        (
            Served::python("streamable-http"),
            "add",
            json!({"a": 2, "b": 40}),
        ),
    ] {
        let hub = Hub::with_options(HubOptions {
            reconnect_initial: Duration::from_secs(60),
            ..HubOptions::default()
        });
        hub.add("s", ServerConfig::http(server.url()))
            .await
            .unwrap();
        match &hub.servers()[0].status {
            ServerStatus::Up { protocol, pid, .. } => {
                assert!(
                    ["2025-11-25", "2025-06-18"].contains(&protocol.as_str()),
                    "{protocol}"
                );
                assert_eq!(*pid, None);
            }
            other => panic!("{other:?}"),
        }
        let sum = hub.call("s", tool, args.clone()).await.unwrap();
        assert!(text(&sum).contains("42"), "{sum:?}");

        server.restart();
        let again = hub.call("s", tool, args).await.unwrap();
        assert!(text(&again).contains("42"), "{}: {again:?}", server.program);
        assert!(matches!(hub.servers()[0].status, ServerStatus::Up { .. }));
        hub.shutdown();
    }
}

#[tokio::test]
async fn python_over_http_gets_headers_and_token_in_sse_and_json_modes() {
    for mode in ["streamable-http", "streamable-http-json"] {
        let server = Served::python(mode);
        let hub = Hub::new();
        hub.add(
            "py",
            ServerConfig::http(server.url())
                .header("X-Team", "kite")
                .bearer_token("t0ken"),
        )
        .await
        .unwrap();
        let seen = hub.call("py", "headers", json!({})).await.unwrap();
        let seen: serde_json::Value = serde_json::from_str(&text(&seen)).unwrap();
        assert_eq!(
            seen,
            json!({"x-team": "kite", "authorization": "Bearer t0ken"}),
            "{mode}"
        );
        let failed = hub
            .call("py", "fail", json!({"reason": "no"}))
            .await
            .unwrap();
        assert!(failed.is_error, "{mode}");
        hub.shutdown();
    }
}

#[tokio::test]
async fn a_changed_tool_list_reaches_a_bound_tool_set() {
    let hub = Hub::new();
    hub.add("py", python()).await.unwrap();
    let set: ToolSet = ToolSet::new();
    hub.bind(&set);
    assert!(!set.specs().iter().any(|s| s.name == "sprout"));
    let grew = hub
        .call("py", "grow", json!({"name": "sprout"}))
        .await
        .unwrap();
    assert_eq!(text(&grew), "added sprout");
    let mut waited = 0;
    while !set.specs().iter().any(|s| s.name == "sprout") {
        assert!(waited < 100, "the new tool never arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    let sprout = hub.call("py", "sprout", json!({})).await.unwrap();
    assert_eq!(text(&sprout), "I am sprout");
    hub.shutdown();
}

#[tokio::test]
async fn a_server_that_stops_answering_is_found_by_ping() {
    let hub = Hub::with_options(HubOptions {
        ping_interval: Duration::from_millis(200),
        ping_timeout: Duration::from_millis(300),
        reconnect_initial: Duration::from_secs(60),
        ..HubOptions::default()
    });
    hub.add("everything", everything()).await.unwrap();
    let set: ToolSet = ToolSet::new();
    hub.bind(&set);
    let stopped = pid(&hub, "everything");
    let signal = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, &stopped.to_string()])
            .status()
            .unwrap()
    };
    assert!(signal("-STOP").success());
    let mut waited = 0;
    while !set.specs().is_empty() {
        assert!(waited < 100, "the hung server's tools are still offered");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    signal("-CONT");
    match &hub.servers()[0].status {
        ServerStatus::Down { error } => assert!(error.contains("ping"), "{error}"),
        other => panic!("{other:?}"),
    }
    hub.shutdown();
}

#[tokio::test]
async fn progress_renews_a_call_deadline_and_silence_ends_it() {
    let hub = Hub::new();
    hub.add("py", python().timeout(Duration::from_millis(1500)))
        .await
        .unwrap();
    // Three seconds in all, with progress every half second: within the deadline.
    let done = hub
        .call("py", "slow", json!({"seconds": 3, "steps": 6}))
        .await
        .unwrap();
    assert_eq!(text(&done), "done");
    // Three seconds of silence: past it.
    let silent = hub
        .call("py", "slow", json!({"seconds": 3, "steps": 1}))
        .await
        .unwrap_err();
    assert!(
        matches!(silent, kite_mcp::Error::Timeout { .. }),
        "{silent:?}"
    );
    hub.shutdown();
}

#[tokio::test]
async fn cancelling_a_call_tells_the_server() {
    let hub = Hub::new();
    hub.add("py", python()).await.unwrap();
    let marker = std::env::temp_dir().join(format!("kite-mcp-cancel-{}", std::process::id()));
    let _ = std::fs::remove_file(&marker);
    let tool = hub
        .tools::<()>()
        .into_iter()
        .find(|t| t.spec().name == "wait_for_cancel")
        .unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let ctx = kite_agent::ToolContext {
        context: std::sync::Arc::new(()),
        call_id: "c1".into(),
        cancel: cancel.clone(),
    };
    let stop = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        stop.cancel();
    });
    let outcome = tool.call(json!({"marker": marker}), ctx).await;
    assert!(outcome.is_err(), "a cancelled call is not a result");
    let mut waited = 0;
    while std::fs::read_to_string(&marker).ok().as_deref() != Some("cancelled") {
        assert!(waited < 100, "the server never heard of the cancellation");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    let _ = std::fs::remove_file(&marker);
    hub.shutdown();
}

#[tokio::test]
async fn a_server_answering_a_protocol_kite_does_not_speak_is_refused() {
    let answer = |version: &str| {
        kite_testkit::Reply::json(
            200,
            json!({"jsonrpc": "2.0", "id": 0, "result": {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "odd", "version": "1"}
            }})
            .to_string(),
        )
    };
    // The answer to `initialize`, then 202 for `notifications/initialized`.
    let server = kite_testkit::ReplayServer::start(vec![
        answer("1999-01-01"),
        kite_testkit::Reply::status(202),
        kite_testkit::Reply::status(200),
    ])
    .await;
    let hub = Hub::new();
    let refused = hub
        .add("odd", ServerConfig::http(format!("{}/mcp", server.url())))
        .await
        .unwrap_err();
    assert!(
        matches!(&refused, kite_mcp::Error::Connect { message, .. } if message.contains("1999-01-01")),
        "{refused}"
    );
    hub.shutdown();
}

#[tokio::test]
async fn a_server_that_comes_up_later_is_picked_up_in_the_background() {
    let port = common::free_port();
    let hub = Hub::with_options(HubOptions {
        reconnect_initial: Duration::from_millis(100),
        reconnect_max: Duration::from_millis(400),
        ..HubOptions::default()
    });
    let set: ToolSet = ToolSet::new();
    hub.bind(&set);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let refused = hub.add("late", ServerConfig::http(url)).await.unwrap_err();
    assert!(
        matches!(refused, kite_mcp::Error::Connect { .. }),
        "{refused}"
    );
    assert!(matches!(hub.servers()[0].status, ServerStatus::Down { .. }));

    let _server = Served::python_on("streamable-http", port);
    let mut waited = 0;
    while !set.specs().iter().any(|s| s.name == "add") {
        assert!(waited < 200, "the server's tools never arrived");
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += 1;
    }
    assert!(matches!(hub.servers()[0].status, ServerStatus::Up { .. }));
    hub.shutdown();
}

#[tokio::test]
async fn a_server_of_the_old_http_and_sse_transport_is_named_as_such() {
    let served = Served::everything_sse();
    let hub = Hub::with_options(HubOptions {
        reconnect_initial: Duration::from_secs(600),
        ..HubOptions::default()
    });
    let url = format!("http://127.0.0.1:{}/sse", served.port);
    let said = hub
        .add("old", ServerConfig::http(url))
        .await
        .unwrap_err()
        .to_string();
    assert!(said.contains("2024-11-05 HTTP+SSE transport"), "{said}");
    assert!(said.contains("mcp-remote"), "{said}");
    hub.shutdown();
}
