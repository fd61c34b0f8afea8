//! Claude Code and Codex, from npm, unmodified and with their default settings, through
//! `kite serve` in front of each kind of provider: OpenAI Chat Completions, OpenAI
//! Responses, Anthropic Messages and an OpenAI-compatible server (each a loopback server
//! scripted by what it is asked, `common::agents`). Each agent must give a plain answer,
//! make a tool round trip that writes a file, make two calls at once, keep a session of 20
//! turns, and resume a session. In front of the local model, whose context holds less than
//! either agent's prompt, each must be told so in words it shows its user.

mod common;

use common::KEY;
use common::agents::{FILE_TEXT, Run, claude, codex, codex_home, provider};
use common::serve::{GATEWAY_KEY, Served, kite_serve, start};
use kite_testkit::{RecordedRequest, ReplayServer};
use std::path::{Path, PathBuf};

/// The kinds of provider the gateway can stand in front of.
#[derive(Clone, Copy, Debug)]
enum Upstream {
    Chat,
    Responses,
    Anthropic,
    Compatible,
}

/// The gateway, with a client key, in front of `upstream` of `kind`.
fn gateway(kind: Upstream, upstream: &ReplayServer) -> Served {
    let mut cmd = kite_serve();
    cmd.env("KITE_LOG", "off")
        .args(["--api-key", GATEWAY_KEY, "--model", "scripted"])
        .arg("--base-url")
        .arg(format!("{}/v1", upstream.url()));
    match kind {
        Upstream::Chat => cmd
            .env("OPENAI_API_KEY", KEY)
            .args(["--provider", "openai"]),
        Upstream::Responses => cmd
            .env("OPENAI_API_KEY", KEY)
            .args(["--provider", "openai-responses"]),
        Upstream::Anthropic => cmd
            .env("ANTHROPIC_API_KEY", KEY)
            .args(["--provider", "anthropic"]),
        Upstream::Compatible => cmd.env("KITE_API_KEY", KEY),
    };
    start(&mut cmd)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Agent {
    ClaudeCode,
    Codex,
    /// Codex set to a model it does not know: its tools come in `tools`, with a hosted
    /// one (`web_search`) among them.
    CodexOtherModel,
}

/// How a run goes on from the ones before it.
enum Then<'a> {
    Fresh,
    /// The last session in its folder.
    Continue,
    /// The session named.
    Resume(&'a str),
}

/// One folder for the agent to work in, and one for its settings.
struct Desk {
    _tmp: tempfile::TempDir,
    work: PathBuf,
    home: PathBuf,
}

impl Desk {
    fn new(agent: Agent, served: &Served) -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let work = tmp.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        Self::with(tmp, agent, served, work)
    }

    /// A desk working in `work`.
    fn at(agent: Agent, served: &Served, work: &Path) -> Self {
        Self::with(tempfile::tempdir().unwrap(), agent, served, work.to_owned())
    }

    fn with(tmp: tempfile::TempDir, agent: Agent, served: &Served, work: PathBuf) -> Self {
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        match agent {
            Agent::ClaudeCode => {}
            Agent::Codex => codex_home(&home, &served.base, None),
            Agent::CodexOtherModel => codex_home(&home, &served.base, Some("scripted-coder")),
        }
        Self {
            _tmp: tmp,
            work,
            home,
        }
    }

    fn holds(&self, file: &str) -> bool {
        std::fs::read_to_string(self.work.join(file)).is_ok_and(|t| t == FILE_TEXT)
    }
}

async fn ask(agent: Agent, served: &Served, desk: &Desk, prompt: &str, then: Then<'_>) -> Run {
    match agent {
        Agent::ClaudeCode => {
            let more: Vec<&str> = match then {
                Then::Fresh => vec![],
                Then::Continue => vec!["--continue"],
                Then::Resume(id) => vec!["--resume", id],
            };
            claude(
                &desk.work,
                &desk.home,
                &served.site(),
                GATEWAY_KEY,
                prompt,
                &more,
            )
            .await
        }
        Agent::Codex | Agent::CodexOtherModel => {
            let resume = !matches!(then, Then::Fresh);
            codex(&desk.work, &desk.home, GATEWAY_KEY, prompt, resume).await
        }
    }
}

/// `run` answered `want`, or why not.
fn answered(run: &Run, want: &str) -> Result<(), String> {
    match run.ok && run.answer.trim() == want {
        true => Ok(()),
        false => Err(format!("wanted {want:?}, got {run:#?}")),
    }
}

/// Every case for `agent` through a gateway in front of a provider of `kind`: their
/// names, each with what went wrong, if anything.
async fn cases(
    agent: Agent,
    kind: Upstream,
) -> (
    Vec<(&'static str, Result<(), String>)>,
    Vec<RecordedRequest>,
) {
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let upstream = provider(&tools).await;
    let served = gateway(kind, &upstream);
    let mut out = Vec::new();

    let desk = Desk::new(agent, &served);
    let run = ask(agent, &served, &desk, "Say hi. kite-turn-1", Then::Fresh).await;
    out.push(("plain answer", answered(&run, "ok 1")));

    // Claude Code's calls name whole paths: the provider's, where these desks work.
    for (name, files, prompt) in [
        ("tool round trip", &["hello.txt"][..], "Write hello.txt"),
        (
            "parallel calls",
            &["a.txt", "b.txt"][..],
            "Write a.txt and b.txt",
        ),
    ] {
        let desk = Desk::at(agent, &served, &tools);
        for f in files {
            let _ = std::fs::remove_file(tools.join(f));
        }
        let run = ask(agent, &served, &desk, prompt, Then::Fresh).await;
        let missing: Vec<&&str> = files.iter().filter(|f| !desk.holds(f)).collect();
        out.push((
            name,
            answered(&run, "done").and(match missing.is_empty() {
                true => Ok(()),
                false => Err(format!("{missing:?} not written: {run:#?}")),
            }),
        ));
    }

    let desk = Desk::new(agent, &served);
    let mut long = Ok(());
    for turn in 1..=20 {
        let then = if turn == 1 {
            Then::Fresh
        } else {
            Then::Continue
        };
        let run = ask(agent, &served, &desk, &format!("kite-turn-{turn}"), then).await;
        if let Err(e) = answered(&run, &format!("ok {turn}")) {
            long = Err(format!("turn {turn}: {e}"));
            break;
        }
    }
    out.push(("20-turn session", long));

    let desk = Desk::new(agent, &served);
    let first = ask(agent, &served, &desk, "kite-turn-1", Then::Fresh).await;
    let resumed = match (agent, &first.session) {
        (Agent::ClaudeCode, Some(id)) => {
            // Another session since, so that only the id finds the first.
            ask(agent, &served, &desk, "Say hi.", Then::Fresh).await;
            ask(agent, &served, &desk, "kite-turn-2", Then::Resume(id)).await
        }
        _ => ask(agent, &served, &desk, "kite-turn-2", Then::Continue).await,
    };
    out.push((
        "resumed session",
        answered(&first, "ok 1").and(answered(&resumed, "ok 2")),
    ));
    (out, upstream.requests())
}

/// Runs every case and fails naming each that failed; what the provider was sent.
async fn all_pass(agent: Agent, kind: Upstream) -> Vec<RecordedRequest> {
    let (results, sent) = cases(agent, kind).await;
    let failed: Vec<String> = results
        .iter()
        .filter_map(|(name, r)| r.as_ref().err().map(|e| format!("{name}: {e}")))
        .collect();
    let passed: Vec<&str> = results
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(n, _)| *n)
        .collect();
    eprintln!("{agent:?} in front of {kind:?}: passed {passed:?}");
    assert!(
        failed.is_empty(),
        "{agent:?} in front of {kind:?}:\n{}",
        failed.join("\n\n")
    );
    sent
}

/// Every body the provider was sent holds `what`, or none does.
fn all_hold(sent: &[RecordedRequest], what: &str, held: bool) {
    assert!(!sent.is_empty());
    for r in sent {
        assert_eq!(
            r.body_text().contains(what),
            held,
            "{what}: {}",
            r.body_text()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_in_front_of_chat_completions() {
    let sent = all_pass(Agent::ClaudeCode, Upstream::Chat).await;
    // Anthropic's own settings stay with Anthropic.
    for own in ["cache_control", "context_management", "adaptive"] {
        all_hold(&sent, own, false);
    }
    assert!(sent.iter().all(|r| r.header("anthropic-beta").is_none()));
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_in_front_of_responses() {
    all_pass(Agent::ClaudeCode, Upstream::Responses).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_in_front_of_anthropic() {
    let sent = all_pass(Agent::ClaudeCode, Upstream::Anthropic).await;
    // What Claude Code asks of Anthropic reaches it: its betas, cache breakpoints,
    // adaptive thinking and context edits.
    for own in [
        r#""cache_control":{"type":"ephemeral"}"#,
        "clear_thinking_20251015",
    ] {
        all_hold(&sent, own, true);
    }
    // Its thinking too, but for turns going on from calls the scripted provider made
    // without thinking, which Anthropic would refuse to think in.
    let thinks = |r: &RecordedRequest| r.body_text().contains(r#""type":"adaptive""#);
    assert!(sent.iter().any(thinks));
    assert!(
        sent.iter()
            .any(|r| r.body_text().contains("tool_result") && !thinks(r))
    );
    for r in &sent {
        let betas = r.header("anthropic-beta").unwrap_or_default();
        assert!(betas.contains("claude-code-20250219"), "{betas}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn claude_code_in_front_of_a_compatible_server() {
    all_pass(Agent::ClaudeCode, Upstream::Compatible).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_in_front_of_chat_completions() {
    all_pass(Agent::Codex, Upstream::Chat).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_in_front_of_responses() {
    let sent = all_pass(Agent::Codex, Upstream::Responses).await;
    // Its cache key routes its requests to where OpenAI holds its prompt.
    all_hold(&sent, r#""prompt_cache_key""#, true);
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_in_front_of_anthropic() {
    all_pass(Agent::Codex, Upstream::Anthropic).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_in_front_of_a_compatible_server() {
    all_pass(Agent::Codex, Upstream::Compatible).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_set_to_another_model_in_front_of_anthropic() {
    let sent = all_pass(Agent::CodexOtherModel, Upstream::Anthropic).await;
    // Its hosted web search is left out; its namespaced functions are named flat.
    all_hold(&sent, "web_search", false);
    all_hold(&sent, "multi_agent_v1__", true);
}

#[tokio::test(flavor = "multi_thread")]
async fn codex_set_to_another_model_in_front_of_responses() {
    // Its hosted web search is passed on to OpenAI.
    let sent = all_pass(Agent::CodexOtherModel, Upstream::Responses).await;
    all_hold(&sent, r#""type":"web_search""#, true);
}

/// The local model holds 8,192 tokens at most; Claude Code's prompt alone is some 20,000
/// and Codex's 8,600. Each agent fails, showing its user why and what to do.
#[tokio::test(flavor = "multi_thread")]
async fn agents_in_front_of_the_local_model_are_told_why_it_cannot_serve_them() {
    let Some(model) = common::local_model() else {
        return;
    };
    let served = start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("KITE_LOCAL_MODEL", &model)
            .args(["--local", "--api-key", GATEWAY_KEY]),
    );
    for agent in [Agent::ClaudeCode, Agent::Codex] {
        let desk = Desk::new(agent, &served);
        let run = ask(agent, &served, &desk, "Say hi.", Then::Fresh).await;
        assert!(!run.ok, "{agent:?}: {run:#?}");
        assert!(
            run.out.contains("the local model holds")
                && run
                    .out
                    .contains("use a provider's model for prompts this long"),
            "{agent:?}: {}",
            run.out
        );
    }
}
