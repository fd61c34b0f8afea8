//! `kite serve` in front of kite's loopback provider, with the official OpenAI Python SDK as
//! its client: whole and streamed completions, a tool call, structured output, the model
//! list, and errors raised as the SDK's own exception types.

mod common;

use common::serve::{
    GATEWAY_KEY, by_check, kite_serve, sdk, serve, serve_config, serve_provider, serve_with, start,
};
use common::{KEY, answer, kite};
use kite::{FinishReason, Message, Part, Response, Role, ToolCall, Usage};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply};
use serde_json::{Value, json};

#[tokio::test]
async fn the_openai_sdk_talks_to_the_gateway() {
    let mut tool = Response::empty(FinishReason::ToolCalls);
    tool.message = Message::new(
        Role::Assistant,
        vec![Part::ToolCall(ToolCall::new(
            "call_7",
            "add",
            r#"{"a": 19, "b": 23}"#,
        ))],
    );
    let mut whole = Response::empty(FinishReason::Stop);
    whole.message = Message::assistant("Hello there.");
    whole.usage = Usage {
        input_tokens: 11,
        output_tokens: 3,
        total_tokens: 14,
        ..Usage::default()
    };
    let upstream = ReplayServer::start(vec![
        Reply::sse(sse(Shape::Chat, &whole, 1)),
        Reply::sse(sse(Shape::Chat, &whole, 2)),
        Reply::sse(sse(Shape::Chat, &tool, 3)),
        answer(r#"{"city": "Paris"}"#, 4),
        Reply::json(
            404,
            r#"{"error": {"message": "The model `no-such-model` does not exist", "type": "invalid_request_error", "code": "model_not_found"}}"#,
        ),
    ])
    .await;
    let served = serve(&upstream);
    let checks = by_check(sdk("openai_client.py", &served.base, &[]).await);
    let c = |name: &str| {
        checks
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in {checks:?}"))
    };
    assert_eq!(c("whole")["text"], "Hello there.");
    assert_eq!(c("whole")["finish"], "stop");
    assert_eq!(c("whole")["model"], "gpt-5-nano");
    assert_eq!(c("whole")["prompt_tokens"], 11);
    assert_eq!(c("stream")["text"], "Hello there.");
    assert_eq!(c("stream")["finish"], "stop");
    assert_eq!(c("stream")["usage"], 14);
    assert_eq!(c("tool")["name"], "add");
    assert_eq!(c("tool")["arguments"], json!({"a": 19, "b": 23}));
    assert_eq!(c("tool")["finish"], "tool_calls");
    assert_eq!(c("tool")["id"], "call_7");
    assert_eq!(c("structured")["parsed"], json!({"city": "Paris"}));
    assert_eq!(c("models")["ids"], json!(["gpt-5-nano"]));
    assert_eq!(c("not_found")["raised"], "NotFoundError");
    assert_eq!(c("bad_key")["raised"], "AuthenticationError");

    // What went upstream: kite's request, with the provider's key, never the client's.
    let sent = upstream.requests();
    assert_eq!(sent.len(), 5, "the bad key never reached the provider");
    let tools: Value = serde_json::from_slice(&sent[2].body).unwrap();
    assert_eq!(tools["tools"][0]["function"]["name"], "add");
    let shaped: Value = serde_json::from_slice(&sent[3].body).unwrap();
    assert_eq!(shaped["response_format"]["type"], "json_schema");
    for r in &sent {
        assert_eq!(
            r.header("authorization"),
            Some(format!("Bearer {KEY}").as_str())
        );
    }
}

#[tokio::test]
async fn without_a_key_it_listens_on_loopback_only() {
    let r = common::run(kite().args([
        "serve",
        "--addr",
        "0.0.0.0:0",
        "--provider",
        "openai",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ]))
    .await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("set a client key"), "{}", r.stderr);
    // Keys go in the environment or the config, where `ps` does not show them.
    assert!(r.stderr.contains("KITE_SERVE_API_KEY"), "{}", r.stderr);
    // A host name is looked up; one that has no address is said to be wrong.
    let r = common::run(kite().args(["serve", "--addr", "no-such-host.invalid:0"])).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot listen on no-such-host.invalid:0"),
        "{}",
        r.stderr
    );
    let upstream = ReplayServer::start(Vec::new()).await;
    let served = serve_keyless(&upstream, &["--addr", "localhost:0"]);
    assert!(
        served.site().starts_with("http://127.0.0.1:"),
        "{}",
        served.site()
    );
    let health = reqwest::get(format!("{}/health", served.site()))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    // A limit of nothing is refused, not a gateway that refuses everyone.
    let r = common::run(kite().args(["serve", "--api-key", "k", "--rpm", "0"])).await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    // An admin key short enough to guess is refused, and not shown.
    let config = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(config.path(), "[serve]\nadmin_keys = [\"hunter2-admin\"]\n").unwrap();
    let r = common::run(kite().arg("--config").arg(config.path()).args([
        "serve",
        "--provider",
        "openai",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ]))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("at least 24 characters"), "{}", r.stderr);
    assert!(!r.stderr.contains("hunter2-admin"), "{}", r.stderr);
}

/// `kite serve` with no key, in front of `upstream`, with `extra` flags.
fn serve_keyless(upstream: &ReplayServer, extra: &[&str]) -> common::serve::Served {
    start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("OPENAI_API_KEY", KEY)
            .args(["--provider", "openai", "--model", "gpt-5-nano"])
            .args(extra)
            .arg("--base-url")
            .arg(format!("{}/v1", upstream.url())),
    )
}

#[tokio::test]
async fn with_no_key_every_call_needs_the_token_it_printed() {
    let upstream = ReplayServer::start(vec![answer("Tokened.", 1)]).await;
    let served = serve_keyless(&upstream, &[]);
    let token = served.key().to_owned();
    assert!(token.len() >= 32, "{token}");
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let site = served.site();
    // Without it, nothing: not the history, not the models, not a question.
    for path in ["/api/conversations", "/v1/models", "/v1/usage"] {
        let r = client.get(format!("{site}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 401, "{path}");
        let wrong = client
            .get(format!("{site}{path}"))
            .bearer_auth("not-the-token")
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), 401, "{path}");
    }
    let asked = client
        .post(format!("{site}/v1/chat/completions"))
        .json(&json!({"model": "gpt-5-nano", "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status(), 401);
    let said = asked.text().await.unwrap();
    assert!(said.contains("token kite serve printed"), "{said}");
    assert!(upstream.requests().is_empty());
    // As a key (both headers the SDKs send), it is taken.
    let r = client
        .get(format!("{site}/v1/models"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = client
        .get(format!("{site}/v1/models"))
        .header("x-api-key", &token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // The printed address sets it as a private cookie and sends the browser on.
    let visit = client.get(served.page()).send().await.unwrap();
    assert_eq!(visit.status(), 303);
    assert_eq!(visit.headers()["location"], "/");
    let cookie = visit.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    assert!(pair.ends_with(&token), "{pair}");
    let r = client
        .get(format!("{site}/api/conversations"))
        .header("cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    // A wrong token in the address sets nothing.
    let visit = client
        .get(format!("{site}/?token=not-the-token"))
        .send()
        .await
        .unwrap();
    assert_eq!(visit.status(), 200);
    assert!(visit.headers().get("set-cookie").is_none());
}

#[tokio::test]
async fn with_keys_in_the_store_it_says_they_replace_the_token() {
    let upstream = ReplayServer::start(vec![answer("Keyed.", 1)]).await;
    let store = common::fresh_store();
    let made = common::run(
        kite()
            .env("KITE_STORE_URL", &store)
            .args(["keys", "create", "me"]),
    )
    .await;
    assert_eq!(made.code, 0, "{}", made.stderr);
    let key = made.stdout.trim().to_owned();
    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("KITE_STORE_URL", &store)
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
    assert!(served.token.is_none(), "{}", served.said);
    assert!(
        served
            .said
            .contains("asks for the keys `kite keys create` made"),
        "{}",
        served.said
    );
    let r = reqwest::Client::new()
        .get(format!("{}/v1/models", served.site()))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "{key}");
}

#[tokio::test]
async fn no_auth_asks_for_nothing_and_says_what_that_means() {
    let upstream = ReplayServer::start(vec![]).await;
    let served = serve_keyless(&upstream, &["--no-auth"]);
    assert!(served.token.is_none());
    assert!(
        served
            .said
            .contains("--no-auth: every user of this machine"),
        "{}",
        served.said
    );
    let r = reqwest::get(format!("{}/api/conversations", served.site()))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r =
        common::run(kite().args(["serve", "--no-auth", "--api-key", "sk-some-key-12345"])).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("--no-auth is for a gateway with no client key"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn a_key_on_the_command_line_is_warned_about() {
    let upstream = ReplayServer::start(vec![]).await;
    for (flag, warned) in [(true, true), (false, false)] {
        let mut cmd = kite_serve();
        cmd.env("KITE_LOG", "off")
            .env("OPENAI_API_KEY", KEY)
            .args(["--provider", "openai", "--base-url"])
            .arg(format!("{}/v1", upstream.url()));
        match flag {
            true => cmd.args(["--api-key", GATEWAY_KEY]),
            false => cmd.env("KITE_SERVE_API_KEY", GATEWAY_KEY),
        };
        let said = start(&mut cmd).said.clone();
        assert_eq!(said.contains("KITE_SERVE_API_KEY"), warned, "{said}");
        assert!(!said.contains(GATEWAY_KEY), "{said}");
    }
}

#[tokio::test]
async fn sigterm_lets_a_stream_under_way_finish_then_stops() {
    let mut long = Response::empty(FinishReason::Stop);
    long.message = Message::assistant("word ".repeat(60));
    let upstream = ReplayServer::start(vec![
        Reply::sse(sse(Shape::Chat, &long, 1)).chunked(64, std::time::Duration::from_millis(60)),
    ])
    .await;
    let mut served = serve(&upstream);
    let client = reqwest::Client::new();
    let mut response = client
        .post(format!("{}/chat/completions", served.base))
        .bearer_auth(GATEWAY_KEY)
        .json(&json!({"model": "gpt-5-nano", "stream": true,
            "messages": [{"role": "user", "content": "Talk."}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut body = String::from_utf8_lossy(&response.chunk().await.unwrap().unwrap()).into_owned();
    // Mid-stream: SIGTERM.
    served.terminate();
    // A request that comes meanwhile is refused in its client's shape, to be asked again.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let refused = client
        .post(format!("{}/messages", served.base))
        .header("x-api-key", GATEWAY_KEY)
        .json(&json!({"model": "gpt-5-nano", "max_tokens": 10,
            "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "5");
    let said: Value = refused.json().await.unwrap();
    assert_eq!(said["type"], "error", "{said}");
    assert_eq!(said["error"]["type"], "overloaded_error", "{said}");
    while let Some(chunk) = response.chunk().await.unwrap() {
        body.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");
    let text = kite_testkit::render::chat_stream_text(&body);
    assert_eq!(text, "word ".repeat(60), "the whole answer came");
    // Drained within its grace: a clean stop.
    let status = served.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    // It takes no more requests.
    let refused = client
        .get(format!("{}/models", served.base))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await;
    assert!(refused.is_err());
}

#[tokio::test]
async fn a_stream_past_the_grace_ends_with_an_error_in_its_apis_way() {
    let mut long = Response::empty(FinishReason::Stop);
    long.message = Message::assistant("word ".repeat(200));
    let slow = || {
        Reply::sse(sse(Shape::Chat, &long, 1)).chunked(32, std::time::Duration::from_millis(100))
    };
    let upstream = ReplayServer::start(vec![slow(), slow()]).await;
    let mut served = serve_with(&upstream, &["--grace", "1"]);
    let client = reqwest::Client::new();
    let ask = |path: &str, body: Value| {
        client
            .post(format!("{}/{path}", served.base))
            .bearer_auth(GATEWAY_KEY)
            .json(&body)
            .send()
    };
    let mut chat = ask(
        "chat/completions",
        json!({"model": "gpt-5-nano", "stream": true,
            "messages": [{"role": "user", "content": "Talk."}]}),
    )
    .await
    .unwrap();
    let mut messages = ask(
        "messages",
        json!({"model": "gpt-5-nano", "stream": true, "max_tokens": 500,
            "messages": [{"role": "user", "content": "Talk."}]}),
    )
    .await
    .unwrap();
    let _ = chat.chunk().await.unwrap();
    let _ = messages.chunk().await.unwrap();
    served.terminate();
    let rest = |mut r: reqwest::Response| async move {
        let mut body = String::new();
        // A body cut without its end would be an error here.
        while let Some(chunk) = r.chunk().await.unwrap() {
            body.push_str(&String::from_utf8_lossy(&chunk));
        }
        body
    };
    let (chat, messages) = tokio::join!(rest(chat), rest(messages));
    assert!(chat.contains(r#"data: {"error""#), "{chat}");
    assert!(
        chat.contains("stopped before this answer was complete"),
        "{chat}"
    );
    assert!(chat.trim_end().ends_with("data: [DONE]"), "{chat}");
    let last = messages.trim_end().rsplit("\n\n").next().unwrap();
    assert!(last.starts_with("event: error"), "{messages}");
    // The grace ran out: as a process ended by the signal.
    assert_eq!(served.child.wait().unwrap().code(), Some(143));
}

#[tokio::test]
async fn the_local_model_in_the_gateway_calls_the_tool_it_is_given() {
    let Some(model) = common::local_model() else {
        return;
    };
    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("KITE_LOCAL_MODEL", &model)
            .args(["--tool", "now"]),
    );
    let said = reqwest::Client::new()
        .post(format!("{}/api/chat", served.site()))
        .bearer_auth(served.key())
        .json(&json!({"conversation": null, "model": "local", "text": "What time is it?"}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(said.contains("event: tool_call"), "{said}");
    assert!(said.contains(r#""name":"now""#), "{said}");
}

#[tokio::test]
async fn routes_on_the_local_model_share_one_load_of_it() {
    // The second names it in another case.
    let Some(model) = common::local_model() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kite.toml"),
        "[[serve.routes]]\nname = \"small\"\nprovider = \"local\"\n\n\
         [[serve.routes]]\nname = \"tiny\"\nprovider = \"Local\"\n",
    )
    .unwrap();
    let data = common::trust(dir.path());
    let served = start(
        kite_serve()
            .current_dir(dir.path())
            .env("XDG_DATA_HOME", &data)
            .env("KITE_LOG", "off")
            .env("KITE_LOCAL_MODEL", &model),
    );
    assert_eq!(
        served.said.matches("using the local model").count(),
        1,
        "{}",
        served.said
    );
    for route in ["small", "tiny"] {
        let answer: Value = reqwest::Client::new()
            .post(format!("{}/chat/completions", served.base))
            .bearer_auth(served.key())
            .json(&json!({"model": route, "max_tokens": 4,
                "messages": [{"role": "user", "content": "Say hi"}]}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let text = answer["choices"][0]["message"]["content"].as_str();
        assert!(text.is_some_and(|t| !t.is_empty()), "{route}: {answer}");
    }
}

// Two workers: the upstream answers kite's listing while `start` waits for kite to say
// where it serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_named_alone_has_its_own_models_listed() {
    let upstream = ReplayServer::start(vec![
        Reply::json(
            200,
            r#"{"object": "list", "data": [{"id": "llama-3.2-1b"}, {"id": "qwen3-4b"}]}"#,
        ),
        answer("From qwen.", 1),
    ])
    .await;
    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .arg("--base-url")
            .arg(format!("{}/v1", upstream.url())),
    );
    assert!(
        served.said.contains("/v1/models lists its 2"),
        "{}",
        served.said
    );
    let client = reqwest::Client::new();
    let models: Value = client
        .get(format!("{}/models", served.base))
        .bearer_auth(served.key())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["llama-3.2-1b", "qwen3-4b"]);
    let answer: Value = client
        .post(format!("{}/chat/completions", served.base))
        .bearer_auth(served.key())
        .json(&json!({"model": "qwen3-4b", "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["choices"][0]["message"]["content"], "From qwen.");
    let sent: Value = serde_json::from_slice(&upstream.requests()[1].body).unwrap();
    assert_eq!(sent["model"], "qwen3-4b");
}

#[tokio::test]
async fn with_no_key_set_it_serves_the_local_model() {
    let Some(served) = common::serve::serve_local() else {
        return;
    };
    let client = reqwest::Client::new();
    let whole: Value = client
        .post(format!("{}/chat/completions", served.base))
        .bearer_auth(served.key())
        .json(&json!({"model": "anything", "max_tokens": 12,
            "messages": [{"role": "user", "content": "Say hi."}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let text = whole["choices"][0]["message"]["content"].as_str().unwrap();
    assert!(!text.trim().is_empty(), "{whole}");
    assert_eq!(whole["model"], "anything");
    let streamed = client
        .post(format!("{}/chat/completions", served.base))
        .bearer_auth(served.key())
        .json(&json!({"model": "local", "max_tokens": 8, "stream": true,
            "messages": [{"role": "user", "content": "Say hi."}]}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(streamed.contains("chat.completion.chunk"), "{streamed}");
    assert!(streamed.trim_end().ends_with("data: [DONE]"), "{streamed}");

    // Clients asking at once are answered together, each as it would be alone.
    let ask = |question: &'static str| {
        let client = client.clone();
        let url = format!("{}/chat/completions", served.base);
        let key = served.key().to_owned();
        async move {
            let answer: Value = client
                .post(url)
                .bearer_auth(key)
                .json(&json!({"model": "local", "max_tokens": 24,
                    "messages": [{"role": "user", "content": question}]}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            answer["choices"][0]["message"]["content"].clone()
        }
    };
    let questions = ["Name a colour.", "What is the capital of Italy?", "Say hi."];
    let mut alone = Vec::new();
    for q in questions {
        alone.push(ask(q).await);
    }
    let together = futures_util::future::join_all(questions.map(ask)).await;
    assert_eq!(together, alone);
}

#[tokio::test]
async fn the_anthropic_sdk_talks_to_the_gateway() {
    let mut hello = Response::empty(FinishReason::Stop);
    hello.message = Message::assistant("Hello there.");
    hello.usage = Usage {
        input_tokens: 9,
        output_tokens: 3,
        total_tokens: 12,
        ..Usage::default()
    };
    let mut tool = Response::empty(FinishReason::ToolCalls);
    tool.message = Message::new(
        Role::Assistant,
        vec![Part::ToolCall(ToolCall::new(
            "toolu_7",
            "add",
            r#"{"a": 19, "b": 23}"#,
        ))],
    );
    let upstream = ReplayServer::start(vec![
        Reply::sse(sse(Shape::Chat, &hello, 1)),
        Reply::sse(sse(Shape::Chat, &hello, 2)),
        Reply::sse(sse(Shape::Chat, &tool, 3)),
    ])
    .await;
    let served = serve(&upstream);
    let checks = by_check(sdk("anthropic_client.py", &served.site(), &[]).await);
    let c = |name: &str| {
        checks
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in {checks:?}"))
    };
    assert_eq!(c("whole")["text"], "Hello there.");
    assert_eq!(c("whole")["stop"], "end_turn");
    assert_eq!(c("whole")["model"], "claude-haiku-4-5");
    assert_eq!(c("whole")["output_tokens"], 3);
    assert_eq!(c("stream")["text"], "Hello there.");
    assert_eq!(c("stream")["stop"], "end_turn");
    assert_eq!(c("tool")["name"], "add");
    assert_eq!(c("tool")["input"], json!({"a": 19, "b": 23}));
    assert_eq!(c("tool")["id"], "toolu_7");
    assert_eq!(c("tool")["stop"], "tool_use");
    assert_eq!(c("bad_key")["raised"], "AuthenticationError");
    // A count before asking: the tokenizer's, for a provider that counts none.
    let counted = c("count")["input_tokens"].as_u64().unwrap();
    assert!((20..400).contains(&counted), "{counted}");
    // The model list in Anthropic's shape, paged.
    assert_eq!(c("models")["ids"], json!(["gpt-5-nano"]));
    assert_eq!(c("models")["type"], "model");
    assert_eq!(c("models")["display_name"], "gpt-5-nano");
    assert_eq!(c("models")["has_more"], false);
    assert_eq!(c("model")["id"], "gpt-5-nano");
    // Upstream, the system prompt went as kite sends one.
    let first: Value = serde_json::from_slice(&upstream.requests()[0].body).unwrap();
    assert_eq!(first["messages"][0]["content"], "Be brief.");
    assert_eq!(first["model"], "claude-haiku-4-5");
    assert_eq!(upstream.requests().len(), 3, "nothing else went upstream");
}

/// In front of Anthropic, a count is Anthropic's own: asked of its endpoint with the
/// client's betas, and given back as it came.
#[tokio::test]
async fn a_count_of_tokens_in_front_of_anthropic_is_anthropics() {
    let upstream = ReplayServer::start(vec![Reply::json(200, r#"{"input_tokens": 1234}"#)]).await;
    let served = serve_provider("anthropic", "claude-haiku-4-5", &upstream, &[]);
    let r = reqwest::Client::new()
        .post(format!("{}/messages/count_tokens", served.base))
        .header("x-api-key", GATEWAY_KEY)
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "token-counting-2024-11-01")
        .json(&json!({"model": "claude-haiku-4-5", "system": "Be brief.",
            "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        r.json::<Value>().await.unwrap(),
        json!({"input_tokens": 1234})
    );
    let sent = &upstream.requests()[0];
    assert_eq!(sent.path, "/v1/messages/count_tokens");
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert!(
        sent.header("anthropic-beta")
            .is_some_and(|b| b.contains("token-counting-2024-11-01"))
    );
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    assert_eq!(body["system"], "Be brief.");
    assert!(
        body.get("max_tokens").is_none() && body.get("stream").is_none(),
        "{body}"
    );
}

#[tokio::test]
async fn a_key_over_its_limit_gets_429_with_retry_after() {
    let upstream = ReplayServer::start(vec![answer("One.", 1), answer("Two.", 2)]).await;
    let served = serve_with(&upstream, &["--rpm", "2"]);
    let said = sdk("openai_client.py", &served.base, &["rate"]).await;
    let stdout = format!("{said:?}");
    assert_eq!(said[0]["raised"], Value::Null, "{stdout}");
    assert_eq!(said[1]["raised"], Value::Null, "{stdout}");
    assert_eq!(said[2]["raised"], "RateLimitError", "{stdout}");
    assert_eq!(said[2]["status"], 429);
    let wait: u64 = said[2]["retry_after"].as_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&wait), "{wait}");
    assert_eq!(
        upstream.requests().len(),
        2,
        "the refused request never went upstream"
    );
    // Over its limit, a key can still read what it used: reading spends nothing.
    let used: Value = reqwest::Client::new()
        .get(format!("{}/usage", served.base))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(used["usage"]["requests"], 2, "{used}");
}

#[tokio::test]
async fn each_request_is_logged_with_its_id_and_no_key() {
    let upstream = ReplayServer::start(vec![answer("Logged.", 1)]).await;
    // Logs on, as `kite serve` has them by default.
    let mut served = start(
        kite_serve()
            .env("OPENAI_API_KEY", KEY)
            .args(["--provider", "openai", "--model", "gpt-5-nano"])
            .args(["--api-key", GATEWAY_KEY, "--base-url"])
            .arg(format!("{}/v1", upstream.url())),
    );
    let base = served.base.clone();
    let client = reqwest::Client::new();
    let ok = client
        .post(format!("{base}/chat/completions"))
        .bearer_auth(GATEWAY_KEY)
        .json(&json!({"model": "gpt-5-nano", "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    let id = ok.headers()["x-request-id"].to_str().unwrap().to_owned();
    let refused = client
        .get(format!("{base}/models"))
        .bearer_auth("a-wrong-key-SECRET")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    served.terminate();
    let mut log = String::new();
    std::io::Read::read_to_string(&mut served.stderr, &mut log).unwrap();
    let _ = served.child.wait();
    let logged = log
        .lines()
        .find(|l| l.contains(&id))
        .unwrap_or_else(|| panic!("{id} not in {log}"));
    assert!(
        logged.contains("status=200") && logged.contains("/v1/chat/completions"),
        "{logged}"
    );
    assert!(log.contains("status=401"), "{log}");
    assert!(
        !log.contains("SECRET") && !log.contains(GATEWAY_KEY) && !log.contains(KEY),
        "{log}"
    );
}

#[tokio::test]
async fn routes_from_kite_toml_fall_back_when_the_first_fails() {
    let upstream = ReplayServer::start(vec![answer("From the backup.", 1)]).await;
    // Nothing listens on the primary's address: it fails before answering.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/v1", dead.local_addr().unwrap());
    drop(dead);
    let toml = format!(
        r#"
[serve]
keys = ["${{SERVE_TEST_KEY}}"]

[[serve.routes]]
name = "primary"
provider = "openai"
model = "gpt-5-nano"
base_url = "{dead_url}"
fallbacks = ["backup"]

[[serve.routes]]
name = "backup"
provider = "openai"
model = "gpt-5-mini"
base_url = "{}/v1"
"#,
        upstream.url()
    );
    let (served, _dir) = serve_config(&toml, &[]);
    let base = served.base.clone();
    let client = reqwest::Client::new();
    let models: Value = client
        .get(format!("{base}/models"))
        .bearer_auth(GATEWAY_KEY)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["primary", "backup"]);
    let answer: Value = client
        .post(format!("{base}/chat/completions"))
        .bearer_auth(GATEWAY_KEY)
        .json(&json!({"model": "primary", "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        answer["choices"][0]["message"]["content"], "From the backup.",
        "{answer}"
    );
    assert_eq!(answer["model"], "primary");
    let sent: Value = serde_json::from_slice(&upstream.requests()[0].body).unwrap();
    assert_eq!(
        sent["model"], "gpt-5-mini",
        "the backup's own model went upstream"
    );
    // With routes configured, other names are unknown.
    let unknown = client
        .post(format!("{base}/chat/completions"))
        .bearer_auth(GATEWAY_KEY)
        .json(&json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "Hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), 404);
}

/// Structured output asked of a route in front of Anthropic: a forced tool upstream, the
/// answer as the message's content to the client.
#[tokio::test]
async fn structured_output_in_front_of_anthropic_comes_back_as_content() {
    let recorded = String::from_utf8(kite_testkit::fixture(
        "anthropic/messages/stream-tool-use-input-fragments/response.sse",
    ))
    .unwrap()
    .replace(r#""name":"weather""#, r#""name":"kite_structured_answer""#);
    let upstream = ReplayServer::start(vec![Reply::sse(recorded.into_bytes())]).await;
    let served = serve_provider("anthropic", "claude-haiku-4-5", &upstream, &[]);
    let schema = json!({"type": "object", "properties": {"latitude": {"type": "string"},
        "longitude": {"type": "string"}}, "required": ["latitude", "longitude"]});
    let said: Value = reqwest::Client::new()
        .post(format!("{}/chat/completions", served.base))
        .bearer_auth(GATEWAY_KEY)
        .json(&json!({"model": "claude-haiku-4-5",
            "messages": [{"role": "user", "content": "Where is Berlin?"}],
            "response_format": {"type": "json_schema",
                "json_schema": {"name": "place", "schema": schema, "strict": true}}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let choice = &said["choices"][0];
    assert_eq!(choice["finish_reason"], "stop", "{said}");
    assert!(
        choice["message"]
            .get("tool_calls")
            .is_none_or(Value::is_null)
    );
    let content: Value =
        serde_json::from_str(choice["message"]["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        content,
        json!({"latitude": "52.5200", "longitude": "13.4050"})
    );
    let sent: Value = serde_json::from_slice(&upstream.requests()[0].body).unwrap();
    assert_eq!(sent["tools"][0]["input_schema"], schema);
    assert_eq!(sent["tool_choice"]["type"], "tool");
}

/// `[serve] hosted_tools = "refuse"`: a hosted tool for a provider that cannot run it is
/// refused with 400 naming it, before anything goes upstream.
#[tokio::test]
async fn hosted_tools_can_be_refused_instead_of_dropped() {
    let upstream = ReplayServer::start(vec![answer("Hi.", 1)]).await;
    let toml = format!(
        "[serve]\nkeys = [\"${{SERVE_TEST_KEY}}\"]\nhosted_tools = \"refuse\"\n\n\
         [[serve.routes]]\nname = \"m\"\nprovider = \"openai\"\nmodel = \"gpt-5-nano\"\n\
         base_url = \"{}/v1\"\n",
        upstream.url()
    );
    let (served, _dir) = serve_config(&toml, &[]);
    let ask = |tools: Value| {
        reqwest::Client::new()
            .post(format!("{}/responses", served.base))
            .bearer_auth(GATEWAY_KEY)
            .json(&json!({"model": "m", "input": "What is new today?", "tools": tools}))
            .send()
    };
    let refused = ask(json!([{"type": "web_search"}])).await.unwrap();
    assert_eq!(refused.status(), 400);
    let said: Value = refused.json().await.unwrap();
    let message = said["error"]["message"].as_str().unwrap();
    assert!(message.contains("web_search"), "{message}");
    assert!(upstream.requests().is_empty());
    // Without one, the route answers.
    let answered = ask(json!([])).await.unwrap();
    assert_eq!(answered.status(), 200);
}

/// A field only OpenAI's API has reaches an OpenAI route as it came, and a route to
/// another provider refuses it with 400 naming it.
#[tokio::test]
async fn openai_only_fields_reach_openai_and_are_refused_elsewhere() {
    let openai = ReplayServer::start(vec![answer("Hi.", 1)]).await;
    let anthropic = ReplayServer::start(vec![]).await;
    let toml = format!(
        "[serve]\nkeys = [\"${{SERVE_TEST_KEY}}\"]\n\n\
         [[serve.routes]]\nname = \"gpt\"\nprovider = \"openai\"\nmodel = \"gpt-5-nano\"\n\
         base_url = \"{}/v1\"\n\n\
         [[serve.routes]]\nname = \"claude\"\nprovider = \"anthropic\"\n\
         model = \"claude-haiku-4-5\"\nbase_url = \"{}/v1\"\n",
        openai.url(),
        anthropic.url()
    );
    let (served, _dir) = serve_config(&toml, &[]);
    let ask = |model: &str| {
        reqwest::Client::new()
            .post(format!("{}/chat/completions", served.base))
            .bearer_auth(GATEWAY_KEY)
            .json(
                &json!({"model": model, "messages": [{"role": "user", "content": "Hi"}],
                "logit_bias": {"50256": -100}, "service_tier": "flex"}),
            )
            .send()
    };
    let passed = ask("gpt").await.unwrap();
    assert_eq!(passed.status(), 200);
    let sent: Value = serde_json::from_slice(&openai.requests()[0].body).unwrap();
    assert_eq!(sent["logit_bias"], json!({"50256": -100}));
    assert_eq!(sent["service_tier"], "flex");
    let refused = ask("claude").await.unwrap();
    assert_eq!(refused.status(), 400);
    let said: Value = refused.json().await.unwrap();
    let message = said["error"]["message"].as_str().unwrap();
    assert!(message.contains("logit_bias"), "{message}");
    assert!(anthropic.requests().is_empty());
}
