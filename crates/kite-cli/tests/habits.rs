//! Habits users bring from other chat tools: files attached to the question with `-a`,
//! text piped in, defaults and roles from kite.toml, `--no-stream`, `kite models`, and
//! conversations compacted before a turn, `--version` naming the commit.

mod common;

use common::{KEY, kite, run};
use kite_testkit::{ReplayServer, Reply, fixture};
use serde_json::Value;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;

/// A streamed chat answer saying `text`.
fn answer(text: &str) -> Reply {
    common::answer(text, 1)
}

fn body(server: &ReplayServer, n: usize) -> Value {
    serde_json::from_str(&server.requests()[n].body_text()).unwrap()
}

const TEXT: &str = "openai/chat-completions/stream-text-with-usage/response.sse";

#[tokio::test]
async fn attached_images_and_text_files_go_with_the_question() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("dot.PNG");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\nfake").unwrap();
    let notes = dir.path().join("notes.md");
    std::fs::write(&notes, "- buy milk\n").unwrap();
    let server = ReplayServer::start(vec![Reply::sse(fixture(TEXT))]).await;
    let r = run(kite()
        .args(["ask", "--no-store", "--model", "m", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("-a")
        .arg(&png)
        .arg("--attach")
        .arg(&notes)
        .arg("What is this?"))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let body: serde_json::Value = serde_json::from_str(&server.requests()[0].body_text()).unwrap();
    let content = body["messages"][0]["content"].as_array().unwrap();
    assert_eq!(content[0]["text"], "What is this?");
    assert_eq!(
        content[1]["image_url"]["url"],
        "data:image/png;base64,iVBORw0KGgpmYWtl"
    );
    assert_eq!(content[2]["text"], "notes.md:\n- buy milk\n");
}

#[tokio::test]
async fn a_file_that_is_neither_image_nor_text_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let blob = dir.path().join("data.bin");
    std::fs::write(&blob, [0xff, 0xfe, 0x00, 0x81]).unwrap();
    let server = ReplayServer::start(vec![Reply::sse(fixture(TEXT))]).await;
    for (file, why) in [
        (blob.clone(), "neither an image"),
        (dir.path().join("missing.txt"), "cannot attach"),
        (dir.path().to_path_buf(), "not a file"),
    ] {
        let r = run(kite()
            .args(["ask", "--no-store", "--model", "m", "--base-url"])
            .arg(format!("{}/v1", server.url()))
            .arg("-a")
            .arg(&file)
            .arg("What is this?"))
        .await;
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains(why), "{}", r.stderr);
    }
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test]
async fn piped_text_follows_the_question() {
    let server = ReplayServer::start(vec![answer("A summary.")]).await;
    let mut child = kite()
        .args(["ask", "--no-store", "--model", "m", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("summarize")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"line one\nline two\n").await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "A summary.\n");
    assert_eq!(
        body(&server, 0)["messages"][0]["content"],
        "summarize\n\nline one\nline two\n"
    );
}

#[tokio::test]
async fn defaults_providers_and_roles_come_from_kite_toml() {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start(vec![answer("One."), answer("Two."), answer("Three.")]).await;
    let config = dir.path().join("kite.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[defaults]
provider = "openai"
system = "Be terse. Today is {{date}}."
tools = ["now"]

# A provider's name in any case.
[providers.OpenAI]
base_url = "{}/v1"
model = "from-the-config"

[prompts]
file = "prompts.toml"
"#,
            server.url()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("prompts.toml"),
        "[roles]\npirate = \"Talk like a pirate.\"\n",
    )
    .unwrap();
    let ask = |extra: &[&str]| {
        let mut c = kite();
        c.env("OPENAI_API_KEY", KEY)
            .arg("--config")
            .arg(&config)
            .args(["ask", "--no-store"])
            .args(extra)
            .arg("Hello?");
        c
    };
    let r = run(&mut ask(&[])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let sent = body(&server, 0);
    assert_eq!(sent["model"], "from-the-config");
    let system = sent["messages"][0]["content"].as_str().unwrap();
    let date = system.strip_prefix("Be terse. Today is ").unwrap();
    assert!(
        date.len() == 11 && date.as_bytes()[4] == b'-' && date.ends_with('.'),
        "{system}"
    );
    assert_eq!(sent["tools"][0]["function"]["name"], "now");

    // A flag wins over the file; a role names a system prompt of the prompts file.
    let r = run(&mut ask(&["--role", "pirate", "--model", "flagged"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let sent = body(&server, 1);
    assert_eq!(sent["model"], "flagged");
    assert_eq!(sent["messages"][0]["content"], "Talk like a pirate.");

    let r = run(&mut ask(&["--role", "poet"])).await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("no role \"poet\"") && r.stderr.contains("pirate"),
        "{}",
        r.stderr
    );

    // A provider kite does not know is named as the problem.
    std::fs::write(&config, "[providers.nosuch]\nmodel = \"x\"\n").unwrap();
    let r = run(&mut ask(&[])).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("[providers.nosuch]"), "{}", r.stderr);
    // Nor may one provider have two tables.
    std::fs::write(
        &config,
        "[providers.openai]\nmodel = \"x\"\n[providers.OPENAI]\nmodel = \"y\"\n",
    )
    .unwrap();
    let r = run(&mut ask(&[])).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("a second time"), "{}", r.stderr);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_projects_kite_toml_is_laid_over_the_personal_one() {
    let server = ReplayServer::start(vec![answer("One."), answer("Two.")]).await;
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join("kite")).unwrap();
    std::fs::write(
        home.path().join("kite/kite.toml"),
        format!(
            "[defaults]\nprovider = \"openai\"\nsystem = \"Personal prompt.\"\n\
             [providers.openai]\nbase_url = \"{}/v1\"\nmodel = \"personal-model\"\n",
            server.url()
        ),
    )
    .unwrap();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(
        project.path().join("kite.toml"),
        "[providers.OpenAI]\nmodel = \"project-model\"\n",
    )
    .unwrap();
    let ask = |data: Option<&std::path::Path>| {
        let mut c = kite();
        c.current_dir(project.path())
            .env("XDG_CONFIG_HOME", home.path())
            .env("OPENAI_API_KEY", KEY)
            .args(["ask", "--no-store", "Hello?"]);
        if let Some(d) = data {
            c.env("XDG_DATA_HOME", d);
        }
        c
    };
    // Untrusted, the project's file stops kite, personal one or not.
    let r = run(&mut ask(None)).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("kite trust"), "{}", r.stderr);
    assert!(server.requests().is_empty());
    // Trusted, it says what differs: the model; the provider, its server and the system
    // prompt stay the user's.
    let data = common::trust(project.path());
    let r = run(&mut ask(Some(&data))).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let sent = body(&server, 0);
    assert_eq!(sent["model"], "project-model");
    assert_eq!(sent["messages"][0]["content"], "Personal prompt.");
}

#[tokio::test]
async fn no_stream_prints_nothing_until_the_answer_is_whole() {
    use tokio::io::AsyncReadExt;
    let body = fixture(TEXT);
    // The answer stops halfway: streamed, its first half shows; whole, nothing does.
    let server = ReplayServer::start(vec![
        Reply::sse(body.clone()).stall_after(body.len() * 2 / 3),
        Reply::sse(body.clone()).stall_after(body.len() * 2 / 3),
        Reply::sse(body.clone()),
        Reply::sse(body.clone()),
    ])
    .await;
    let start = |extra: &[&str]| {
        kite()
            .args(["ask", "--no-store", "--model", "m", "--base-url"])
            .arg(format!("{}/v1", server.url()))
            .args(extra)
            .arg("Count")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    for (extra, shows) in [(&[][..], true), (&["--no-stream"][..], false)] {
        let mut child = start(extra);
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        let read = tokio::time::timeout(
            std::time::Duration::from_secs(3),
            stdout.read_exact(&mut first),
        )
        .await;
        assert_eq!(read.is_ok(), shows, "{extra:?}");
        child.kill().await.unwrap();
    }
    // Whole, the answer is the same text.
    let streamed = run(kite()
        .args(["ask", "--no-store", "--model", "m", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("Count"))
    .await;
    let whole = run(kite()
        .args([
            "ask",
            "--no-store",
            "--no-stream",
            "--model",
            "m",
            "--base-url",
        ])
        .arg(format!("{}/v1", server.url()))
        .arg("Count"))
    .await;
    assert_eq!(whole.code, 0, "{}", whole.stderr);
    assert!(!whole.stdout.trim().is_empty());
    assert_eq!(whole.stdout, streamed.stdout);
}

#[tokio::test]
async fn models_lists_what_kite_knows_and_what_the_provider_lists() {
    let listing = r#"{"object":"list","data":[{"id":"zeta-1","object":"model"},{"id":"alpha-2","object":"model"}]}"#;
    let server = ReplayServer::start(vec![
        Reply::json(200, listing),
        Reply::json(
            401,
            r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error"}}"#,
        ),
    ])
    .await;
    let models = |extra: &[&str]| {
        let mut c = kite();
        c.env("OPENAI_API_KEY", KEY)
            .args(["models", "--provider", "openai", "--base-url"])
            .arg(format!("{}/v1", server.url()))
            .args(extra);
        c
    };
    let r = run(&mut models(&[])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("gpt-4o-mini") && r.stdout.contains("(default)"),
        "{}",
        r.stdout
    );
    let alpha = r.stdout.find("alpha-2").expect("the provider's list");
    assert!(alpha < r.stdout.find("zeta-1").unwrap(), "sorted");
    let req = &server.requests()[0];
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );

    let r = run(&mut models(&["--json"])).await;
    assert_eq!(r.code, 1, "a refused key is an error");
    assert!(
        r.stderr.contains("Incorrect API key") && !r.stderr.contains(KEY),
        "{}",
        r.stderr
    );
    let line: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(line["provider"], "openai");
    assert!(line["listed"].is_null());

    // A server named alone gets KITE_API_KEY, and no provider's key.
    let server2 = ReplayServer::start(vec![Reply::json(200, listing)]).await;
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .env("ANTHROPIC_API_KEY", KEY)
        .env("KITE_API_KEY", "kite-key-for-this-server")
        .args(["models", "--base-url"])
        .arg(format!("{}/v1", server2.url())))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("lists 2 models") && r.stdout.contains("zeta-1"),
        "{}",
        r.stdout
    );
    let sent = server2.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].header("authorization"),
        Some("Bearer kite-key-for-this-server")
    );

    // With no key, only what kite knows, and nothing is sent.
    let r = run(kite().args(["models", "--provider", "groq"])).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("GROQ_API_KEY not set") && r.stdout.contains("llama-3.3-70b-versatile")
    );
    assert_eq!(server.requests().len(), 2);
    // The embedded model comes first with no provider named, and alone with `local`: the
    // file kite would load, or how to install one.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("Tiny-Model.gguf");
    std::fs::write(&file, b"GGUF").unwrap();
    let r = run(kite().env("KITE_LOCAL_MODEL", &file).arg("models")).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let local = r.stdout.find("local (no key").expect("the local model");
    assert!(local < r.stdout.find("openai").unwrap(), "{}", r.stdout);
    assert!(r.stdout.contains("Tiny-Model"), "{}", r.stdout);
    let missing = dir.path().join("none.gguf");
    let r = run(kite().env("KITE_LOCAL_MODEL", &missing).args([
        "models",
        "--provider",
        "local",
        "--json",
    ]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let line: Value = serde_json::from_str(r.stdout.trim()).unwrap();
    assert_eq!(line["provider"], "local");
    assert_eq!(line["installed"], false);
    assert!(
        line["error"].as_str().unwrap().contains("kite model fetch"),
        "{line}"
    );
}

#[tokio::test]
async fn a_long_conversation_is_compacted_before_the_next_turn() {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start(vec![
        answer("Answer one."),
        answer("Answer two."),
        answer("They asked two questions."),
        answer("Answer three."),
    ])
    .await;
    let config = dir.path().join("kite.toml");
    std::fs::write(
        &config,
        "[compact]\npolicy = \"messages\"\nmax = 3\nkeep = 1\n\n[prompts]\nsummarize = \"SUMMARIZE THIS\"\n",
    )
    .unwrap();
    let store = common::fresh_store();
    let ask = |question: &str, more: bool| {
        let mut c = kite();
        c.env("KITE_STORE_URL", &store)
            .arg("--config")
            .arg(&config)
            .args(["ask", "--model", "m", "--base-url"])
            .arg(format!("{}/v1", server.url()));
        if more {
            c.arg("-c");
        }
        c.arg(question);
        c
    };
    for (q, more) in [("Question one?", false), ("Question two?", true)] {
        let r = run(&mut ask(q, more)).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let r = run(&mut ask("Question three?", true)).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("compacting"), "{}", r.stderr);

    let summary = body(&server, 2);
    assert_eq!(summary["messages"][0]["content"], "SUMMARIZE THIS");
    let transcript = summary["messages"][1]["content"].as_str().unwrap();
    assert!(transcript.contains("Question one?") && !transcript.contains("Question two?"));
    let texts: Vec<String> = body(&server, 3)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(texts[0].contains("They asked two questions."), "{texts:?}");
    assert_eq!(
        texts[1..],
        ["Question two?", "Answer two.", "Question three?"]
    );

    // The archived turns are still in the store.
    let list = run(kite()
        .env("KITE_STORE_URL", &store)
        .args(["conversations", "list", "--json"]))
    .await;
    let id = serde_json::from_str::<Value>(list.stdout.lines().next().unwrap()).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let export = run(kite()
        .env("KITE_STORE_URL", &store)
        .args(["conversations", "export", &id]))
    .await;
    assert!(export.stdout.contains("Question one?") && export.stdout.contains("Answer one."));
}

#[tokio::test]
async fn the_local_model_is_warned_of_tools_that_crowd_its_context() {
    if !common::local_model_installed() {
        return;
    }
    let r = run(kite().args([
        "ask",
        "--local",
        "--no-store",
        "--tools",
        "--context-size",
        "256",
        "--max-tokens",
        "5",
        "hi",
    ]))
    .await;
    assert!(r.stderr.contains("tools' definitions take"), "{}", r.stderr);
    assert!(
        r.stderr.contains("of the local model's 256 tokens"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn answers_render_as_markdown_on_a_terminal_and_plain_elsewhere() {
    let text = "# Plan\n\nUse **bold** moves.\n\n```rust\nfn main() {}\n```\n\nEnd \u{1b}]0;owned\u{7} here.";
    let server = ReplayServer::start(vec![answer(text), answer(text)]).await;
    let screen = common::on_terminal(
        &format!("ask --no-store --model m --base-url {}/v1 hi", server.url()),
        &[],
    )
    .await;
    assert!(
        !screen.contains("# Plan") && screen.contains("Plan"),
        "{screen:?}"
    );
    assert!(screen.contains("\x1b[1mbold"), "{screen:?}");
    assert!(
        screen.contains("\x1b[38;2;"),
        "code is highlighted: {screen:?}"
    );
    assert!(!screen.contains("**"), "{screen:?}");
    assert!(
        !screen.contains("\x1b]0;owned"),
        "the answer's escapes are not obeyed"
    );
    assert!(screen.contains("\\u{1b}]0;owned"), "{screen:?}");

    // Not a terminal: the text as the model wrote it.
    let r = run(kite()
        .args(["ask", "--no-store", "--model", "m", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("hi"))
    .await;
    assert!(
        r.stdout.starts_with("# Plan\n\nUse **bold** moves."),
        "{}",
        r.stdout
    );
}

#[tokio::test]
async fn version_names_the_commit_it_was_built_from() {
    let r = run(kite().arg("--version")).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    let version = env!("CARGO_PKG_VERSION");
    match head {
        // Built from a checkout: its commit (the build script reruns when HEAD moves).
        Some(head) => assert_eq!(r.stdout.trim(), format!("kite {version} ({head})")),
        None => assert!(
            r.stdout.starts_with(&format!("kite {version} (")),
            "{}",
            r.stdout
        ),
    }
}
