//! Coding agents (Claude Code, Codex: from npm, unmodified) run headless against `kite
//! serve`, in front of a loopback provider scripted by what it is asked: a file to write
//! (`hello.txt`, or `a.txt` and `b.txt` at once) gets the calls that write it with the
//! agent's own tool, a tool's result gets "done", and anything else "ok N", N the number
//! of the user's turns (`kite-turn-…`) the conversation holds.

use kite::wire::{anthropic, openai_chat, openai_responses};
use kite::{FinishReason, Message, Part, Request, Response, Role, ToolCall};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{RecordedRequest, ReplayServer, Reply, mcp};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// What the file the agents write holds.
pub(crate) const FILE_TEXT: &str = "hi from kite";

/// How long one agent run may take.
const RUN_DEADLINE: Duration = Duration::from_secs(120);

/// The provider for agents working in `dir`.
pub(crate) async fn provider(dir: &Path) -> ReplayServer {
    let dir = dir.to_owned();
    let n = AtomicUsize::new(0);
    ReplayServer::answering(move |req| reply(req, &dir, n.fetch_add(1, Ordering::Relaxed))).await
}

fn reply(req: &RecordedRequest, dir: &Path, n: usize) -> Reply {
    let path = req.path.split('?').next().unwrap_or_default();
    let (shape, decoded) = if path.ends_with("/chat/completions") {
        let r = openai_chat::serve::decode_request(&req.body);
        (Shape::Chat, r.map(|c| c.request))
    } else if path.ends_with("/responses") {
        let r = openai_responses::serve::decode_request(&req.body);
        (Shape::Responses, r.map(|c| c.request))
    } else if path.ends_with("/messages") {
        let r = anthropic::serve::decode_request(&req.body);
        (Shape::Anthropic, r.map(|c| c.request))
    } else {
        return Reply::json(404, json!({"error": {"message": path}}).to_string());
    };
    match decoded {
        Ok(request) => Reply::sse(sse(shape, &answer(&request, dir), n)),
        Err(e) => Reply::json(
            400,
            json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": format!("the scripted provider cannot read this: {e}")}})
            .to_string(),
        ),
    }
}

/// The user's latest words.
fn last_user_text(request: &Request) -> String {
    request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User)
        .map(Message::text)
        .unwrap_or_default()
}

fn answer(request: &Request, dir: &Path) -> Response {
    let mut r = Response::empty(FinishReason::Stop);
    if request
        .messages
        .last()
        .is_some_and(|m| m.role == Role::Tool)
    {
        r.message = Message::assistant("done");
        return r;
    }
    let said = last_user_text(request);
    let files: &[&str] = if said.contains("a.txt and b.txt") {
        &["a.txt", "b.txt"]
    } else if said.contains("hello.txt") {
        &["hello.txt"]
    } else {
        let turns = request
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.text().matches("kite-turn-").count())
            .sum::<usize>();
        r.message = Message::assistant(format!("ok {turns}"));
        return r;
    };
    let calls: Vec<Part> = files
        .iter()
        .enumerate()
        .map(|(i, file)| Part::ToolCall(write_call(request, dir, file, i)))
        .collect();
    r.message = Message::new(Role::Assistant, calls);
    r.finish_reason = FinishReason::ToolCalls;
    r
}

/// A call of the agent's own tool that writes [`FILE_TEXT`] into `file`.
fn write_call(request: &Request, dir: &Path, file: &str, i: usize) -> ToolCall {
    let has = |name: &str| request.tools.iter().any(|t| t.name == name);
    let shell = format!("printf '%s' '{FILE_TEXT}' > {file}");
    let id = format!("call_{i}_{file}").replace('.', "_");
    if has("Write") {
        let path = dir.join(file);
        let args = json!({"file_path": path, "content": FILE_TEXT});
        return ToolCall::new(id, "Write", args.to_string());
    }
    if has("exec_command") {
        return ToolCall::new(id, "exec_command", json!({"cmd": shell}).to_string());
    }
    if has("functions__exec") {
        // Codex's code mode: JavaScript that runs its shell tool.
        let js = format!(
            "const r = await tools.exec_command({{cmd: {}}});\ntext(r.output ?? '');\n",
            json!(shell)
        );
        return ToolCall::new(id, "functions__exec", json!({"input": js}).to_string());
    }
    let names: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
    panic!("no tool to write a file with among {names:?}");
}

/// An agent's run: whether it succeeded, its last answer, what it printed.
#[derive(Debug)]
pub(crate) struct Run {
    pub ok: bool,
    pub answer: String,
    pub session: Option<String>,
    pub out: String,
}

async fn run(mut cmd: tokio::process::Command) -> std::process::Output {
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let child = cmd.spawn().expect("the agent starts");
    match tokio::time::timeout(RUN_DEADLINE, child.wait_with_output()).await {
        Ok(out) => out.unwrap(),
        Err(_) => panic!("the agent ran past {RUN_DEADLINE:?}"),
    }
}

/// The agents' installed commands (from npm, beside the MCP peers; scripts/setup.sh --tests).
pub(crate) fn agent_bin(name: &str) -> PathBuf {
    let bin = mcp::npm_bin(name);
    assert!(
        bin.exists(),
        "{} is not installed; run scripts/setup.sh --tests",
        bin.display()
    );
    bin
}

/// Claude Code, headless, in `dir` (its settings in `home`), asking the gateway at
/// `site` (no `/v1`) with `key`.
pub(crate) async fn claude(
    dir: &Path,
    home: &Path,
    site: &str,
    key: &str,
    prompt: &str,
    more: &[&str],
) -> Run {
    let mut cmd = tokio::process::Command::new(agent_bin("claude"));
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("IS_SANDBOX", "1")
        .env("ANTHROPIC_BASE_URL", site)
        .env("ANTHROPIC_API_KEY", key)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .args(["-p", prompt, "--output-format", "json"])
        .arg("--dangerously-skip-permissions")
        .args(more);
    let out = run(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let said: Value = serde_json::from_str(stdout.trim()).unwrap_or(Value::Null);
    Run {
        ok: out.status.success() && said["is_error"] == false,
        answer: said["result"].as_str().unwrap_or_default().to_owned(),
        session: said["session_id"].as_str().map(str::to_owned),
        out: format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)),
    }
}

/// Codex's settings in `home`: the gateway at `base` (with `/v1`) as its provider, and
/// `model` in place of its default (a GPT name, for which it sends its tools in
/// namespaces, among the input).
pub(crate) fn codex_home(home: &Path, base: &str, model: Option<&str>) {
    std::fs::create_dir_all(home).unwrap();
    let model = model
        .map(|m| format!("model = \"{m}\"\n"))
        .unwrap_or_default();
    std::fs::write(
        home.join("config.toml"),
        format!(
            "{model}model_provider = \"kite\"\ncheck_for_update_on_startup = false\n\n\
             [analytics]\nenabled = false\n\n[features]\nplugins = false\n\n\
             [model_providers.kite]\nname = \"kite\"\nbase_url = \"{base}\"\n\
             wire_api = \"responses\"\nenv_key = \"KITE_GATEWAY_KEY\"\n"
        ),
    )
    .unwrap();
}

/// Codex, headless, in `dir` (its settings in `home`: [`codex_home`]), with `key`;
/// `resume` continues its last session.
pub(crate) async fn codex(dir: &Path, home: &Path, key: &str, prompt: &str, resume: bool) -> Run {
    let mut cmd = tokio::process::Command::new(agent_bin("codex"));
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("CODEX_HOME", home)
        .env("KITE_GATEWAY_KEY", key)
        .args(["exec", "--json", "--skip-git-repo-check"]);
    if resume {
        cmd.args(["resume", "--last"]);
    }
    cmd.args(["--dangerously-bypass-approvals-and-sandbox", prompt]);
    let out = run(cmd).await;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let events: Vec<Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let answer = events
        .iter()
        .rev()
        .find(|e| e["item"]["type"] == "agent_message")
        .and_then(|e| e["item"]["text"].as_str())
        .unwrap_or_default()
        .to_owned();
    let failed = events
        .iter()
        .any(|e| matches!(e["type"].as_str(), Some("turn.failed" | "error")));
    Run {
        ok: out.status.success() && !failed,
        answer,
        session: None,
        out: format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr)),
    }
}
