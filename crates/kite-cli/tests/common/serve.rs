//! Starting `kite serve` in the tests, and asking it through the official SDKs.

use super::KEY;
use kite_testkit::{ReplayServer, mcp};
use serde_json::Value;
use std::io::BufRead;

pub(crate) const GATEWAY_KEY: &str = "sk-gateway-test-0123456789";

/// `kite serve` on a free loopback port; killed when dropped.
pub(crate) struct Served {
    pub child: std::process::Child,
    pub base: String,
    /// With no client key, the token it asks every caller for.
    pub token: Option<String>,
    /// What it said before it served.
    pub said: String,
    /// The rest of what it says on stderr.
    pub stderr: std::io::BufReader<std::process::ChildStderr>,
}

impl Served {
    /// Asks it to stop, as a service manager does (SIGTERM).
    pub(crate) fn terminate(&self) {
        let sent = std::process::Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }

    /// Where its web chat is: the gateway's address without `/v1`.
    pub(crate) fn site(&self) -> String {
        self.base.trim_end_matches("/v1").to_owned()
    }

    /// The address it printed for the web chat: with the token, when it asks for one.
    pub(crate) fn page(&self) -> String {
        match &self.token {
            Some(token) => format!("{}/?token={token}", self.site()),
            None => self.site(),
        }
    }

    /// The token it asks for, which callers give as their key.
    pub(crate) fn key(&self) -> &str {
        self.token
            .as_deref()
            .expect("a gateway with no key asks for its token")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `kite serve` on a free loopback port, with nothing from the machine but `PATH`.
pub(crate) fn kite_serve() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_kite"));
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", std::env::temp_dir())
        .env("XDG_CONFIG_HOME", "/nonexistent/kite-tests")
        .env("KITE_STORE_URL", super::fresh_store())
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stderr(std::process::Stdio::piped());
    c
}

/// Starts `cmd` (a [`kite_serve`]) and waits for the address it serves on.
pub(crate) fn start(cmd: &mut std::process::Command) -> Served {
    let mut child = cmd.spawn().unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut token = None;
    let mut said = String::new();
    for _ in 0..10 {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        said.push_str(&line);
        let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) else {
            continue;
        };
        // The web chat's address with the token comes first, then the gateway's.
        if let Some((_, t)) = url.split_once("?token=") {
            token = Some(t.to_owned());
            continue;
        }
        if !line.starts_with("kite: serving ") {
            continue;
        }
        let base = url.to_owned();
        return Served {
            child,
            base,
            token,
            said,
            stderr,
        };
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("kite serve said no address: {said}");
}

/// The gateway, with a client key, in front of OpenAI's API served by `upstream`.
pub(crate) fn serve_with(upstream: &ReplayServer, extra: &[&str]) -> Served {
    serve_provider("openai", "gpt-5-nano", upstream, extra)
}

/// The gateway, with a client key, in front of `provider`'s API (its key in the
/// provider's variable) served by `upstream`, answering as `model`.
pub(crate) fn serve_provider(
    provider: &str,
    model: &str,
    upstream: &ReplayServer,
    extra: &[&str],
) -> Served {
    let key_var = match provider {
        "openai" | "openai-responses" => "OPENAI_API_KEY",
        "anthropic" => "ANTHROPIC_API_KEY",
        "mistral" => "MISTRAL_API_KEY",
        other => panic!("no key variable known for {other}"),
    };
    start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env(key_var, KEY)
            .args(["--provider", provider, "--model", model])
            .args(["--api-key", GATEWAY_KEY])
            .args(extra)
            .arg("--base-url")
            .arg(format!("{}/v1", upstream.url())),
    )
}

/// What the SDK client `script` (in the test kit's peers) said about the gateway at
/// `base`: one JSON object per check.
pub(crate) async fn sdk(script: &str, base: &str, extra: &[&str]) -> Vec<Value> {
    let mut cmd = std::process::Command::new(mcp::python());
    cmd.arg(mcp::own(script))
        .arg(base)
        .arg(GATEWAY_KEY)
        .args(extra);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The checks by name.
pub(crate) fn by_check(said: Vec<Value>) -> std::collections::HashMap<String, Value> {
    said.into_iter()
        .map(|v| (v["check"].as_str().unwrap_or_default().to_owned(), v))
        .collect()
}

pub(crate) fn serve(upstream: &ReplayServer) -> Served {
    serve_with(upstream, &[])
}

/// `kite serve` in front of the local model, with no key; `None` when the model is not
/// installed.
pub(crate) fn serve_local() -> Option<Served> {
    let model = super::local_model()?;
    Some(start(
        kite_serve()
            .env("KITE_LOG", "off")
            .env("KITE_LOCAL_MODEL", &model),
    ))
}

/// `kite serve` with `toml` as its kite.toml (trusted), in a folder of its own that lives
/// as long as the returned guard: the client key in `SERVE_TEST_KEY`, the provider's in
/// `OPENAI_API_KEY`, and `extra` flags.
pub(crate) fn serve_config(toml: &str, extra: &[&str]) -> (Served, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kite.toml"), toml).unwrap();
    let data = super::trust(dir.path());
    let served = start(
        kite_serve()
            .current_dir(dir.path())
            .env("HOME", dir.path())
            .env("XDG_DATA_HOME", &data)
            .env("KITE_LOG", "off")
            .env("OPENAI_API_KEY", KEY)
            .env("ANTHROPIC_API_KEY", KEY)
            .env("SERVE_TEST_KEY", GATEWAY_KEY)
            .args(extra),
    );
    (served, dir)
}
