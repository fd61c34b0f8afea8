//! The library's examples (`crates/kite/examples`, the book's guides show them) run as a
//! user runs them, against a loopback server that replays OpenAI's recorded answers from
//! `testdata/wire`: the binaries `cargo test` builds beside the tests, with a key of the
//! right shape and `OPENAI_BASE_URL` pointing at the server.

use kite_testkit::{ReplayServer, Reply, fixture};
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

const CHAT: &str = "openai/chat-completions";

/// The recorded stream of a weather tool call, then the one that answers from its result.
fn weather_replies() -> Vec<Reply> {
    vec![
        Reply::sse(fixture(&format!(
            "{CHAT}/stream-tool-call-fragments/response.sse"
        ))),
        Reply::sse(fixture(&format!(
            "{CHAT}/stream-after-tool-result/response.sse"
        ))),
    ]
}

/// A server that answers once with OpenAI's recorded stream of "1\n2\n3", with usage.
async fn counting_to_three() -> ReplayServer {
    let recorded = fixture(&format!("{CHAT}/stream-text-with-usage/response.sse"));
    ReplayServer::start(vec![Reply::sse(recorded)]).await
}

/// `target/<profile>/examples/<name>`, built by `cargo test` beside this test.
fn example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>");
    let path = dir.join("examples").join(name);
    let source =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("examples/{name}.rs"));
    let modified = |p: &std::path::Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    assert!(
        path.is_file() && modified(&path) >= modified(&source),
        "{} is not built from the latest {}: a plain `cargo test` builds the examples, or \
         `cargo build -p kite-llm --examples --features mcp,skills,otel,prices`",
        path.display(),
        source.display()
    );
    path
}

/// Runs the example `name` with `args` against `server`, with no other provider's key, and
/// fails the test past a deadline.
async fn run(name: &str, args: &[&str], server: &ReplayServer, env: &[(&str, &str)]) -> Output {
    let mut cmd = tokio::process::Command::new(example(name));
    cmd.args(args).kill_on_drop(true);
    for var in [
        "ANTHROPIC_API_KEY",
        "MISTRAL_API_KEY",
        "OPENROUTER_API_KEY",
        "GROQ_API_KEY",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("OPENAI_API_KEY", "sk-example-0123456789abcdef")
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap_or_else(|_| panic!("the {name} example ran past 60 s"))
        .expect("the example starts");
    assert!(
        out.status.success(),
        "the {name} example failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn stream_prints_the_answer_as_it_arrives() {
    let server = counting_to_three().await;
    let out = run("stream", &["Count to three."], &server, &[]).await;
    assert_eq!(stdout(&out).trim(), "1\n2\n3");
    let request = &server.requests()[0];
    // OPENAI_BASE_URL ends in /v1, as the SDKs' does.
    assert_eq!(request.path, "/v1/chat/completions");
    let asked = request.body_text();
    assert!(asked.contains("Count to three."), "{asked}");
    assert!(asked.contains(r#""stream":true"#), "{asked}");
}

#[tokio::test]
async fn tools_calls_the_weather_and_answers_from_it() {
    let server = ReplayServer::start(weather_replies()).await;
    let out = run(
        "tools",
        &["Weather in Berlin (52.5200, 13.4050)?"],
        &server,
        &[],
    )
    .await;
    assert!(
        stdout(&out).starts_with("Current weather in Berlin"),
        "{}",
        stdout(&out)
    );
    assert!(stderr(&out).contains("[1 tool calls,"), "{}", stderr(&out));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The tool's result went back to the model.
    let second = requests[1].body_text();
    assert!(
        second.contains("Current weather at 52.5200, 13.4050: 15°C"),
        "{second}"
    );
}

/// A streamed answer that calls `name` with `arguments`, then one that says `text`.
fn call_then_answer(name: &str, arguments: &str, text: &str) -> Vec<Reply> {
    use kite::{FinishReason, Message, Part, Response, Role, ToolCall};
    use kite_testkit::render::{Shape, sse};
    let mut call = Response::empty(FinishReason::ToolCalls);
    call.message = Message::new(
        Role::Assistant,
        vec![Part::ToolCall(ToolCall::new("call_1", name, arguments))],
    );
    let mut answer = Response::empty(FinishReason::Stop);
    answer.message = Message::assistant(text);
    vec![
        Reply::sse(sse(Shape::Chat, &call, 1)),
        Reply::sse(sse(Shape::Chat, &answer, 2)),
    ]
}

#[tokio::test]
async fn agent_runs_the_tool_its_hook_allows_and_streams_the_answer() {
    let server = ReplayServer::start(call_then_answer(
        "convert",
        r#"{"amount":250,"from":"EUR","to":"USD"}"#,
        "250 EUR is 270.00 USD.",
    ))
    .await;
    let out = run("agent", &["Convert 250 EUR to USD"], &server, &[]).await;
    assert!(
        stdout(&out).starts_with("250 EUR is 270.00 USD."),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).contains("[2 model calls,"), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("[tool] -> 270.00 USD"),
        "{}",
        stderr(&out)
    );
    let second = server.requests()[1].body_text();
    assert!(second.contains("270.00 USD"), "{second}");
}

#[tokio::test]
async fn agent_hook_skips_an_amount_over_a_million() {
    let server = ReplayServer::start(call_then_answer(
        "convert",
        r#"{"amount":2000000,"from":"EUR","to":"USD"}"#,
        "That needs approval.",
    ))
    .await;
    let out = run("agent", &["Convert 2,000,000 EUR to USD"], &server, &[]).await;
    assert!(
        stdout(&out).starts_with("That needs approval."),
        "{}",
        stdout(&out)
    );
    let second = server.requests()[1].body_text();
    assert!(
        second.contains("amounts over a million need approval"),
        "{second}"
    );
    assert!(!second.contains("2160000.00 USD"), "{second}");
}

#[cfg(all(feature = "otel", feature = "prices"))]
#[tokio::test]
async fn costs_prices_the_run() {
    let server = counting_to_three().await;
    let out = run("costs", &["Count to three."], &server, &[]).await;
    assert_eq!(stdout(&out).trim(), "1\n2\n3");
    // gpt-4o-mini's price from the table carried in the binary: a few millionths of a dollar.
    let err = stderr(&out);
    let cost = err
        .split('$')
        .nth(1)
        .and_then(|s| {
            s.trim_end_matches(|c: char| c == ']' || c.is_whitespace())
                .parse::<f64>()
                .ok()
        })
        .unwrap_or_else(|| panic!("no cost in {err}"));
    assert!(cost > 0.0 && cost < 0.01, "{err}");
}

#[cfg(feature = "skills")]
#[tokio::test]
async fn skills_tells_the_model_of_the_skills_found() {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("skills/release-notes");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: release-notes\ndescription: Writes release notes from a list of merged changes.\n---\n\nGroup the changes by kind.\n",
    )
    .unwrap();
    let server = counting_to_three().await;
    let folder = dir.path().join("skills");
    let out = run(
        "skills",
        &[folder.to_str().unwrap(), "Write the release notes."],
        &server,
        &[],
    )
    .await;
    assert!(
        stderr(&out).contains("[skills: release-notes]"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stdout(&out).trim(), "1\n2\n3");
    let asked = server.requests()[0].body_text();
    assert!(
        asked.contains("Writes release notes from a list of merged changes."),
        "{asked}"
    );
}

#[cfg(feature = "mcp")]
#[tokio::test]
async fn mcp_gives_the_agent_the_servers_tools_and_calls_them() {
    let server = ReplayServer::start(call_then_answer(
        "echo",
        r#"{"message":"hello from the model"}"#,
        "The server said hello.",
    ))
    .await;
    let python = kite_testkit::mcp::python();
    let py_server = kite_testkit::mcp::own("py_server.py");
    let out = run(
        "mcp",
        &[
            "Echo hello.",
            python.to_str().unwrap(),
            py_server.to_str().unwrap(),
        ],
        &server,
        &[],
    )
    .await;
    let err = stderr(&out);
    assert!(err.contains("echo") && err.contains("add"), "{err}");
    assert!(
        stdout(&out).starts_with("The server said hello."),
        "{}",
        stdout(&out)
    );
    let requests = server.requests();
    assert!(
        requests[0].body_text().contains(r#""name":"echo""#),
        "{}",
        requests[0].body_text()
    );
    // The server's answer went back to the model.
    let second = requests[1].body_text();
    assert!(second.contains("hello from the model"), "{second}");
}

#[cfg(feature = "local")]
#[tokio::test]
async fn local_calls_the_tool_and_answers_with_no_key_and_no_server() {
    if kite::local::find_model().is_err() {
        assert!(
            std::env::var_os("KITE_REQUIRE_LOCAL_MODEL").is_none(),
            "no local model (kite model fetch)"
        );
        return;
    }
    // No server answers: the model runs in process.
    let server = ReplayServer::start(Vec::new()).await;
    let out = run("local", &["What is the date and time now?"], &server, &[]).await;
    let err = stderr(&out);
    assert!(err.contains("[tool] now -> {\"unix\": "), "{err}");
    assert!(!stdout(&out).trim().is_empty(), "no answer: {err}");
    assert!(server.requests().is_empty());
}

/// The book's first program, with no key set: the embedded local model answers.
#[cfg(feature = "local")]
#[tokio::test]
async fn the_first_program_answers_with_no_key() {
    if kite::local::find_model().is_err() {
        assert!(
            std::env::var_os("KITE_REQUIRE_LOCAL_MODEL").is_none(),
            "no local model (kite model fetch)"
        );
        return;
    }
    let server = ReplayServer::start(Vec::new()).await;
    let out = run(
        "stream",
        &["What color is the sky?"],
        &server,
        &[("OPENAI_API_KEY", "")],
    )
    .await;
    assert!(
        !stdout(&out).trim().is_empty(),
        "no answer: {}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("tokens in"), "{}", stderr(&out));
    assert!(server.requests().is_empty(), "a server was asked");
}
