//! The secrets sweep: every command of the CLI and every gateway endpoint run with a planted
//! key of each provider's shape (and the gateway's, an MCP server's token and an OTLP
//! header), at the most verbose log level (`KITE_LOG=trace`, `-v`), against a loopback
//! provider that also repeats the key it was sent, in an error and in an answer. Then
//! everything the runs left is
//! scanned: what they printed, the gateway's answers and metrics, and every file under the
//! run's folder (the store with its conversations, keys and spend ledger, cassettes, the
//! traces and metrics the OTLP receiver got, the environment each MCP server was started
//! with). No key may appear anywhere, whole or as a long piece of it.

#[path = "../common/mod.rs"]
mod common;
mod gateway;
mod world;

use common::otlp::Receiver;
use common::{kite, run};
use std::path::{Path, PathBuf};
use tokio::process::Command;
use world::{OTLP_TOKEN, PLANTED, config_text, provider};

/// Everything one sweep saw, and where it ran.
struct Sweep {
    root: PathBuf,
    otlp: Receiver,
    seen: Vec<(String, String)>,
}

impl Sweep {
    /// `kite ARGS` with every key planted, the log at its most verbose, traces exported.
    fn kite(&self, args: &[&str]) -> Command {
        let mut cmd = kite();
        for (var, key) in PLANTED {
            cmd.env(var, key);
        }
        cmd.env("KITE_LOG", "trace")
            .env("HOME", &self.root)
            .env("XDG_CONFIG_HOME", self.root.join("config"))
            .env("XDG_DATA_HOME", self.root.join("data"))
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env("XDG_CACHE_HOME", self.root.join("cache"))
            .env("KITE_STORE_URL", self.root.join("store.db"))
            .env("OTEL_EXPORTER_OTLP_ENDPOINT", self.otlp.endpoint())
            .env(
                "OTEL_EXPORTER_OTLP_HEADERS",
                format!("authorization=Bearer {OTLP_TOKEN}"),
            )
            .current_dir(&self.root)
            .args(args);
        cmd
    }

    /// Runs `kite ARGS` and keeps what it printed; returns its exit code.
    async fn run(&mut self, args: &[&str]) -> i32 {
        let mut cmd = self.kite(args);
        let out = tokio::time::timeout(std::time::Duration::from_secs(90), run(&mut cmd))
            .await
            .unwrap_or_else(|_| panic!("kite {args:?} did not end"));
        let what = format!("kite {}", args.join(" "));
        self.seen
            .push((format!("{what}: stdout"), out.stdout.clone()));
        self.seen.push((format!("{what}: stderr"), out.stderr));
        out.code
    }

    /// Like [`Sweep::run`], and the command must succeed.
    async fn ok(&mut self, args: &[&str]) -> String {
        let code = self.run(args).await;
        let (_, stderr) = self.seen.last().unwrap().clone();
        assert_eq!(code, 0, "kite {args:?}: {stderr}");
        self.seen[self.seen.len() - 2].1.clone()
    }

    /// Every key found in what was seen, and every file under the root.
    fn leaks(&self) -> Vec<String> {
        let mut texts = self.seen.clone();
        // The receiver's summary names the authorization header it was sent, which is
        // the one place the OTLP token belongs; the whole exports are in otlp-raw.jsonl.
        let summary = self.root.join("otlp.jsonl");
        for file in files(&self.root).into_iter().filter(|f| *f != summary) {
            let bytes = std::fs::read(&file).unwrap_or_default();
            texts.push((
                file.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            ));
        }
        found(&texts)
    }
}

/// Which secret shows in which text: whole, or any 16 characters of it past its shape's
/// prefix.
fn found(texts: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    let secrets = PLANTED.iter().copied().chain([("OTLP header", OTLP_TOKEN)]);
    for (name, secret) in secrets {
        let tail = &secret[secret.find("PLANTED").unwrap() + 7..];
        let pieces: Vec<&str> = (0..=tail.len().saturating_sub(16))
            .step_by(4)
            .map(|i| &tail[i..i + 16])
            .collect();
        for (what, text) in texts {
            if text.contains(secret) || pieces.iter().any(|p| text.contains(p)) {
                found.push(format!("{name} in {what}"));
            }
        }
    }
    found
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => out.extend(files(&path)),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_key_shows_anywhere_whatever_kite_is_asked_to_do() {
    let upstream = provider().await;
    let u = upstream.url();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    std::fs::create_dir_all(root.join("config/kite")).unwrap();
    let config = root.join("config/kite/kite.toml");
    std::fs::write(&config, config_text(&root, &u)).unwrap();
    let mut sweep = Sweep {
        otlp: Receiver::start(&root),
        root: root.clone(),
        seen: Vec::new(),
    };
    let base = format!("{u}/v1");

    // Asking, on every provider, streamed and as JSON, with tools and MCP servers.
    for provider in [
        "openai",
        "openai-responses",
        "anthropic",
        "mistral",
        "openrouter",
        "groq",
    ] {
        let said = sweep
            .ok(&[
                "ask",
                "-v",
                "--usage",
                "--provider",
                provider,
                "--base-url",
                &base,
                "hello",
            ])
            .await;
        assert!(said.contains("Hello from the sweep."), "{provider}: {said}");
    }
    sweep
        .ok(&[
            "ask",
            "--base-url",
            &base,
            "--json",
            "--tool",
            "now",
            "hello",
        ])
        .await;
    // A provider that repeats the key it was sent.
    for provider in ["openai", "anthropic", "groq"] {
        let args = [
            "ask",
            "--provider",
            provider,
            "--base-url",
            &base,
            "say-the-key",
        ];
        assert_ne!(sweep.run(&args).await, 0);
    }
    // A provider that puts the key it was sent in its answer.
    for provider in ["openai", "anthropic"] {
        let args = [
            "ask",
            "--provider",
            provider,
            "--base-url",
            &base,
            "repeat-the-key",
        ];
        let said = sweep.ok(&args).await;
        assert!(said.contains("The key you sent is"), "{said}");
    }
    // Recorded traffic, and what reads it.
    let cassettes = root.join("cassettes").display().to_string();
    for provider in ["openai", "anthropic"] {
        let folder = format!("{cassettes}/{provider}");
        let args = [
            "ask",
            "--provider",
            provider,
            "--base-url",
            &base,
            "--cassette",
            &folder,
        ];
        sweep.ok(&[&args[..], &["recorded"]].concat()).await;
    }
    sweep.ok(&["cassette", "list", &cassettes]).await;
    sweep
        .run(&["cassette", "show", &format!("{cassettes}/openai")])
        .await;
    sweep.ok(&["cassette", "scan", &cassettes]).await;
    // Chat, and the stored conversations.
    let mut chat = sweep.kite(&["chat", "-v", "--provider", "anthropic", "--base-url", &base]);
    chat.stdin(std::process::Stdio::piped());
    chat.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = chat.spawn().unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(b"first line\nsecond line\n").await.unwrap();
    }
    let out = child.wait_with_output().await.unwrap();
    sweep.seen.push((
        "kite chat: stdout".into(),
        String::from_utf8_lossy(&out.stdout).into(),
    ));
    sweep.seen.push((
        "kite chat: stderr".into(),
        String::from_utf8_lossy(&out.stderr).into(),
    ));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = sweep.ok(&["conversations", "list"]).await;
    let id = listed
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    sweep.run(&["conversations", "show", &id]).await;
    sweep.run(&["conversations", "export", &id]).await;
    // Everything else the command line does.
    for args in [
        &["completions", "bash"][..],
        &["models"],
        &["models", "--base-url", &base],
        &["model", "path"],
        &["prices", "show", "gpt-5-nano"],
        &["prices", "list", "openai"],
        &["responses", "get", "resp_0123"],
        &["skills", "list"],
        &["mcp", "list"],
        &["mcp", "call", "envdump", "echo", r#"{"text": "hi"}"#],
        &["keys", "create", "sweeper"],
        &["keys", "list"],
        &["teams", "create", "crew"],
        &["teams", "list"],
        &["trust"],
    ] {
        sweep.run(args).await;
    }
    let audio = root.join("hello.wav");
    std::fs::write(&audio, b"RIFF\x24\x00\x00\x00WAVEfmt ").unwrap();
    let audio = audio.display().to_string();
    sweep
        .ok(&["transcribe", "--provider", "openai", &audio])
        .await;

    // The gateway: every endpoint, on every route.
    gateway::gateway(&mut sweep).await;
    sweep.run(&["usage"]).await;
    sweep.run(&["usage", "--by", "key", "--json"]).await;

    // The sweep must have reached what it scans.
    let envs = std::fs::read_to_string(root.join("child-env.jsonl")).unwrap_or_default();
    assert!(
        envs.lines().count() >= 2,
        "the MCP server was not started: {envs}"
    );
    let received = sweep.otlp.received();
    assert!(
        received.iter().any(|r| r["signal"] == "span"),
        "no trace arrived"
    );
    let sent = format!("Bearer {OTLP_TOKEN}");
    assert!(
        received.iter().any(|r| r["authorization"] == sent.as_str()),
        "the collector was not given its token"
    );
    let raw = std::fs::read_to_string(root.join("otlp-raw.jsonl")).unwrap_or_default();
    assert!(raw.contains("gen_ai"), "the whole exports were not kept");
    assert!(root.join("store.db").exists());
    // Each key was sent where it belongs, and the scan finds it there.
    let sent: Vec<(String, String)> = upstream
        .requests()
        .iter()
        .map(|r| {
            (
                format!("{} {}", r.method, r.path),
                format!("{:?}", r.headers),
            )
        })
        .collect();
    let at_upstream = found(&sent);
    for (var, _) in PLANTED {
        if !["GATEWAY_KEY", "ADMIN_KEY"].contains(var) {
            assert!(
                at_upstream
                    .iter()
                    .any(|f| f.starts_with(&format!("{var} "))),
                "{var} never reached the provider"
            );
        }
    }
    let leaks = sweep.leaks();
    assert!(leaks.is_empty(), "keys leaked:\n{}", leaks.join("\n"));
    drop(dir);
}
