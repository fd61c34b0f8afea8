//! `kite serve` beyond Chat Completions: the Responses API through the official OpenAI SDK,
//! routes that run their own tools (built-in and an MCP server's) for clients that send
//! none, and what each key has used and what it cost.

mod common;

use common::serve::{GATEWAY_KEY, by_check, kite_serve, sdk, serve, serve_config, start};
use common::{KEY, answer};
use kite::{FinishReason, Message, Part, Response, Role, ToolCall, Usage};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply, mcp};
use serde_json::{Value, json};

/// A streamed Chat Completions answer calling `name` with `arguments`, with `usage`.
fn call(name: &str, arguments: &str, n: usize, usage: Usage) -> Reply {
    let mut r = Response::empty(FinishReason::ToolCalls);
    r.message = Message::new(
        Role::Assistant,
        vec![Part::ToolCall(ToolCall::new(
            format!("call_{n}"),
            name,
            arguments,
        ))],
    );
    r.usage = usage;
    Reply::sse(sse(Shape::Chat, &r, n))
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        ..Usage::default()
    }
}

#[tokio::test]
async fn the_openai_sdk_uses_the_responses_api_through_the_gateway() {
    let mut whole = Response::empty(FinishReason::Stop);
    whole.message = Message::assistant("Hello there.");
    whole.usage = usage(11, 3);
    let upstream = ReplayServer::start(vec![
        Reply::sse(sse(Shape::Chat, &whole, 1)),
        Reply::sse(sse(Shape::Chat, &whole, 2)),
        call("add", r#"{"a": 19, "b": 23}"#, 3, Usage::default()),
        answer(r#"{"city": "Paris"}"#, 4),
    ])
    .await;
    let served = serve(&upstream);
    let checks = by_check(sdk("openai_responses_client.py", &served.base, &[]).await);
    let c = |name: &str| {
        checks
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in {checks:?}"))
    };
    assert_eq!(c("whole")["text"], "Hello there.");
    assert_eq!(c("whole")["status"], "completed");
    assert_eq!(c("whole")["model"], "gpt-5-nano");
    assert_eq!(c("whole")["input_tokens"], 11);
    assert_eq!(c("stream")["text"], "Hello there.");
    assert_eq!(c("stream")["final"], "Hello there.");
    assert_eq!(c("stream")["status"], "completed");
    assert!(
        c("stream")["deltas"].as_u64().unwrap() >= 1,
        "{:?}",
        c("stream")
    );
    assert_eq!(c("tool")["type"], "function_call");
    assert_eq!(c("tool")["name"], "add");
    assert_eq!(c("tool")["arguments"], json!({"a": 19, "b": 23}));
    assert_eq!(c("tool")["call_id"], "call_3");
    assert_eq!(c("structured")["parsed"], json!({"city": "Paris"}));
    // A response that was never stored is not found.
    assert_eq!(c("stored")["raised"], "NotFoundError");
    assert_eq!(c("stored")["status"], 404);

    let sent = upstream.requests();
    assert_eq!(sent.len(), 4, "the refused request never went upstream");
    let tools: Value = serde_json::from_slice(&sent[2].body).unwrap();
    assert_eq!(tools["tools"][0]["function"]["name"], "add");
    let shaped: Value = serde_json::from_slice(&sent[3].body).unwrap();
    assert_eq!(shaped["response_format"]["type"], "json_schema");
}

#[tokio::test]
async fn flags_a_gateway_has_no_use_for_are_refused() {
    for flag in [["--temperature", "0.5"], ["--max-tokens", "10"]] {
        let r = common::run(common::kite().arg("serve").args(flag)).await;
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(
            r.stderr.contains(&format!("does not take {}", flag[0])),
            "{}",
            r.stderr
        );
    }
    // With routes, the flags that shape the one model they replace.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kite.toml"),
        "[[serve.routes]]\nname = \"a\"\nprovider = \"local\"\n",
    )
    .unwrap();
    let data = common::trust(dir.path());
    let r = common::run(
        common::kite()
            .current_dir(dir.path())
            .env("XDG_DATA_HOME", &data)
            .args(["serve", "--tool", "now"]),
    )
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("--tool only with no [[serve.routes]]"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn a_route_runs_its_own_tools_and_counts_what_each_key_used() {
    let upstream = ReplayServer::start(vec![
        // A whole answer: an MCP tool, a built-in one, then the answer.
        call("echo", r#"{"message": "ping"}"#, 1, usage(100, 10)),
        call("now", "{}", 2, usage(200, 10)),
        Reply::sse(sse(
            Shape::Chat,
            &{
                let mut r = Response::empty(FinishReason::Stop);
                r.message = Message::assistant("Echoed ping at noon.");
                r.usage = usage(300, 20);
                r
            },
            3,
        )),
        // A streamed one.
        call("now", "{}", 4, usage(100, 5)),
        answer("It is noon.", 5),
        // A client with tools of its own: they go upstream, and the call comes back.
        call("add", r#"{"a": 1, "b": 2}"#, 6, usage(50, 5)),
    ])
    .await;
    let toml = format!(
        r#"
[serve]
keys = ["${{SERVE_TEST_KEY}}"]

[[serve.routes]]
name = "helper"
provider = "openai"
model = "gpt-5-nano"
base_url = "{}/v1"
tools = ["now"]
mcp = ["everything"]

[mcp.servers.everything]
command = {everything:?}
args = ["stdio"]
allow = ["echo"]
"#,
        upstream.url(),
        everything = mcp::npm_bin("mcp-server-everything").to_string_lossy(),
    );
    let (served, _dir) = serve_config(&toml, &["--system", "Answer briefly.", "--max-turns", "3"]);
    let base = served.base.clone();
    let client = reqwest::Client::new();
    let ask = |body: Value| {
        client
            .post(format!("{base}/chat/completions"))
            .bearer_auth(GATEWAY_KEY)
            .json(&body)
            .send()
    };
    let question = json!([{"role": "user", "content": "Echo ping, and say the time."}]);

    let whole: Value = ask(json!({"model": "helper", "messages": question}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let message = &whole["choices"][0]["message"];
    assert_eq!(message["content"], "Echoed ping at noon.", "{whole}");
    assert!(message.get("tool_calls").is_none(), "{whole}");
    assert_eq!(whole["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        whole["usage"]["prompt_tokens"], 600,
        "every call's usage, summed"
    );

    let streamed = ask(json!({"model": "helper", "messages": question, "stream": true}))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut text = String::new();
    for line in streamed.lines().filter_map(|l| l.strip_prefix("data: ")) {
        if line == "[DONE]" {
            continue;
        }
        let chunk: Value = serde_json::from_str(line).unwrap();
        let delta = &chunk["choices"][0]["delta"];
        assert!(delta.get("tool_calls").is_none(), "{line}");
        text.push_str(delta["content"].as_str().unwrap_or_default());
    }
    assert_eq!(text, "It is noon.", "{streamed}");
    assert!(streamed.ends_with("data: [DONE]\n\n"), "{streamed}");

    let add = json!([{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]);
    let own: Value = ask(json!({"model": "helper", "messages": question, "tools": add}))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        own["choices"][0]["message"]["tool_calls"][0]["function"]["name"], "add",
        "{own}"
    );

    // What went upstream: the route's tools, their results, then the client's own tools.
    let sent: Vec<Value> = upstream
        .requests()
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(sent.len(), 6);
    let names = |r: &Value| -> Vec<String> {
        r["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                t["function"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect()
    };
    assert_eq!(sent[0]["messages"][0]["role"], "system", "{}", sent[0]);
    assert_eq!(sent[0]["messages"][0]["content"], "Answer briefly.");
    let mut offered = names(&sent[0]);
    offered.sort();
    assert_eq!(offered, ["echo", "now"]);
    assert!(sent[1].to_string().contains("Echo: ping"), "{}", sent[1]);
    assert!(sent[2].to_string().contains("utc"), "{}", sent[2]);
    assert_eq!(names(&sent[5]), ["add"]);

    // The key's usage: three questions (reading it spends nothing), every call's tokens,
    // priced from the table (gpt-5-nano: $0.05 in, $0.40 out per million).
    let used: Value = client
        .get(format!("{base}/usage"))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let u = &used["usage"];
    assert_eq!(u["requests"], 3, "{used}");
    assert_eq!(u["input_tokens"], 750, "{used}");
    assert_eq!(u["output_tokens"], 50, "{used}");
    assert_eq!(u["unpriced"], 0, "{used}");
    let cost = u["cost"].as_f64().unwrap();
    assert!(
        (cost - (750.0 * 0.05 + 50.0 * 0.40) / 1e6).abs() < 1e-12,
        "{used}"
    );
    let unknown = client.get(format!("{base}/usage")).send().await.unwrap();
    assert_eq!(unknown.status(), 401);

    // The web chat's page is served to anyone, its conversations only with a key.
    let site = served.site();
    let page = client.get(format!("{site}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let policy = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(policy.contains("default-src 'self'"), "{policy}");
    let listed = client
        .get(format!("{site}/api/conversations"))
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 401);
    let listed = client
        .get(format!("{site}/api/conversations"))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
}

#[tokio::test]
async fn each_key_keeps_its_own_conversations_and_each_request_its_own_skills() {
    let view = r#"{"path": "skills/word-count/SKILL.md"}"#;
    let upstream = ReplayServer::start(vec![
        // The first key's question, in the web chat: the skill's instructions, then text.
        call("view", view, 1, usage(10, 1)),
        answer("There are 29 words.", 2),
        // The second key's, through the gateway: the same skill, in a run of its own.
        call("view", view, 3, usage(10, 1)),
        answer("There are 29 words.", 4),
    ])
    .await;
    let skills =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/skills/valid");
    let toml = format!(
        r#"
[serve]
keys = ["${{SERVE_TEST_KEY}}", "sk-second-key-0123456789"]

[[serve.routes]]
name = "skilled"
provider = "openai"
model = "gpt-5-nano"
base_url = "{}/v1"
skills = [{skills:?}]
"#,
        upstream.url(),
    );
    let (served, _dir) = serve_config(&toml, &[]);
    let site = served.site();
    let client = reqwest::Client::new();
    let first = |r: reqwest::RequestBuilder| r.bearer_auth(GATEWAY_KEY);
    let second = |r: reqwest::RequestBuilder| r.bearer_auth("sk-second-key-0123456789");

    let said = first(client.post(format!("{site}/api/chat")))
        .json(&json!({"conversation": null, "model": "skilled", "text": "How many words?"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(said.contains("event: done"), "{said}");
    let asked: Value = second(client.post(format!("{site}/v1/chat/completions")))
        .json(&json!({"model": "skilled", "messages": [{"role": "user", "content": "How many words?"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        asked["choices"][0]["message"]["content"],
        "There are 29 words."
    );

    // Both runs were given the skill's instructions: neither saw the other's workspace.
    let sent = upstream.requests();
    assert_eq!(sent.len(), 4);
    for n in [1, 3] {
        let body = sent[n].body_text();
        assert!(
            body.contains("Run this command from the workspace root"),
            "{body}"
        );
        assert!(!body.contains("already loaded"), "{body}");
    }

    // The first key's conversation is its own.
    let list = |who: &dyn Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder| {
        who(client.get(format!("{site}/api/conversations"))).send()
    };
    let mine: Value = list(&first).await.unwrap().json().await.unwrap();
    let ids: Vec<&str> = mine["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 1, "{mine}");
    let theirs: Value = list(&second).await.unwrap().json().await.unwrap();
    assert_eq!(theirs["conversations"], json!([]), "{theirs}");
    let url = format!("{site}/api/conversations/{}", ids[0]);
    let peek = second(client.get(&url)).send().await.unwrap();
    assert_eq!(peek.status(), 404);
    let delete = second(client.delete(&url)).send().await.unwrap();
    assert_eq!(delete.status(), 404);
    let shown: Value = first(client.get(&url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["messages"][0]["parts"][0]["text"], "How many words?");
}

#[tokio::test]
async fn max_turns_bounds_the_gateways_own_loop() {
    let upstream = ReplayServer::start(vec![
        call("now", "{}", 1, usage(10, 1)),
        call("now", "{}", 2, usage(10, 1)),
    ])
    .await;
    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("OPENAI_API_KEY", KEY)
            .args(["--provider", "openai", "--model", "gpt-5-nano"])
            .args(["--tool", "now", "--max-turns", "2", "--base-url"])
            .arg(format!("{}/v1", upstream.url())),
    );
    let answer: Value = reqwest::Client::new()
        .post(format!("{}/chat/completions", served.base))
        .bearer_auth(served.key())
        .json(&json!({"model": "gpt-5-nano",
            "messages": [{"role": "user", "content": "What time is it?"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["choices"][0]["finish_reason"], "length", "{answer}");
    assert_eq!(upstream.requests().len(), 2);
}

#[tokio::test]
async fn a_routes_provider_keeps_the_timeouts_of_the_flags() {
    // An upstream that takes the request and never answers.
    let silent = kite_testkit::SilentServer::start().await;
    let toml = format!(
        "[[serve.routes]]\nname = \"quiet\"\nprovider = \"openai\"\nbase_url = \"{}/v1\"\n",
        silent.url()
    );
    let (served, _dir) = serve_config(&toml, &["--timeout", "1"]);
    let started = std::time::Instant::now();
    let refused = reqwest::Client::new()
        .post(format!("{}/chat/completions", served.base))
        .bearer_auth(served.key())
        .json(&json!({"model": "quiet", "messages": [{"role": "user", "content": "Hi"}]}))
        .timeout(std::time::Duration::from_secs(60))
        .send()
        .await
        .unwrap();
    assert!(refused.status().is_server_error(), "{}", refused.status());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_routes_own_timeout_falls_back_while_the_client_waits() {
    // The first route's upstream takes the request and never answers; by its own deadline
    // the gateway goes on to the fallback, long before the ten minutes of a plain call.
    let silent = kite_testkit::SilentServer::start().await;
    let steady = ReplayServer::start(vec![common::answer("From the fallback.", 1)]).await;
    let toml = format!(
        "[[serve.routes]]\nname = \"quiet\"\nprovider = \"openai\"\nbase_url = \"{}/v1\"\n\
         timeout_secs = 1\nidle_timeout_secs = 1\nfallbacks = [\"steady\"]\n\n\
         [[serve.routes]]\nname = \"steady\"\nprovider = \"openai\"\nbase_url = \"{}/v1\"\n",
        silent.url(),
        steady.url()
    );
    let (served, _dir) = serve_config(&toml, &[]);
    let answer: Value = reqwest::Client::new()
        .post(format!("{}/chat/completions", served.base))
        .bearer_auth(served.key())
        .json(&json!({"model": "quiet", "messages": [{"role": "user", "content": "Hi"}]}))
        .timeout(std::time::Duration::from_secs(45))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["choices"][0]["message"]["content"], "From the fallback.",
        "{answer}"
    );
    // A deadline out of range, or on the local model, is refused at start.
    for (route, says) in [
        (
            "provider = \"openai\"\ntimeout_secs = 0",
            "`timeout_secs` must be",
        ),
        (
            "provider = \"local\"\nidle_timeout_secs = 5",
            "takes no timeout_secs",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("kite.toml"),
            format!("[[serve.routes]]\nname = \"r\"\n{route}\n"),
        )
        .unwrap();
        let data = common::trust(dir.path());
        let r = common::run(
            common::kite()
                .current_dir(dir.path())
                .env("XDG_DATA_HOME", &data)
                .env("OPENAI_API_KEY", common::KEY)
                .args(["serve", "--addr", "127.0.0.1:0"]),
        )
        .await;
        assert_eq!(r.code, 1, "{route}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{route}: {}", r.stderr);
    }
}

#[tokio::test]
async fn a_routes_file_tools_never_hand_out_the_gateways_own_secrets() {
    const ADMIN: &str = "sk-admin-written-in-the-file-0042";
    let upstream = ReplayServer::start(vec![
        // A tenant has the model read the gateway's configuration...
        call("read_file", r#"{"path": "kite.toml"}"#, 1, usage(10, 5)),
        answer("I could not read it.", 2),
        // ...and a file of the project that happens to hold the provider's key.
        call("read_file", r#"{"path": "notes.txt"}"#, 3, usage(10, 5)),
        answer("Done.", 4),
    ])
    .await;
    let toml = format!(
        r#"
[serve]
keys = ["{GATEWAY_KEY}"]
admin_keys = ["{ADMIN}"]

[[serve.routes]]
name = "helper"
provider = "openai"
model = "gpt-5-nano"
base_url = "{}/v1"
tools = ["read_file"]
"#,
        upstream.url(),
    );
    let (served, dir) = serve_config(&toml, &[]);
    std::fs::write(dir.path().join("notes.txt"), format!("deploy with {KEY}")).unwrap();
    let client = reqwest::Client::new();
    for question in ["Spell out kite.toml.", "Read notes.txt."] {
        let said: Value = client
            .post(format!("{}/chat/completions", served.base))
            .bearer_auth(GATEWAY_KEY)
            .json(&json!({"model": "helper", "messages": [{"role": "user", "content": question}]}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert!(
            said["choices"][0]["message"]["content"].is_string(),
            "{said}"
        );
    }
    let sent = upstream.requests();
    assert_eq!(sent.len(), 4);
    let config_result = String::from_utf8_lossy(&sent[1].body);
    let notes_result = String::from_utf8_lossy(&sent[3].body);
    for secret in [ADMIN, GATEWAY_KEY, KEY] {
        assert!(!config_result.contains(secret), "{config_result}");
        assert!(!notes_result.contains(secret), "{notes_result}");
    }
    assert!(config_result.contains("kite's own"), "{config_result}");
    assert!(
        notes_result.contains("deploy with [redacted]"),
        "{notes_result}"
    );
}
