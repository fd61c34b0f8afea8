//! Running the kite binary as a user runs it.
#![allow(dead_code)]

pub(crate) mod agents;
pub(crate) mod otlp;
pub(crate) mod serve;

use std::time::Duration;
use tokio::process::Command;

pub(crate) const KEY: &str = "sk-cli-test-key-9876543210SECRET";

/// The kite binary with no provider or configuration from the outside.
pub(crate) fn kite() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_kite"));
    for var in [
        "OPENAI_API_KEY",
        "MISTRAL_API_KEY",
        "OPENROUTER_API_KEY",
        "GROQ_API_KEY",
        "ANTHROPIC_API_KEY",
        "KITE_API_KEY",
        "KITE_PROVIDER",
        "KITE_MODEL",
        "KITE_BASE_URL",
        "KITE_CASSETTE",
        "KITE_CONFIG",
    ] {
        c.env_remove(var);
    }
    // No configuration from the machine: tests bring their own kite.toml.
    c.env("XDG_CONFIG_HOME", "/nonexistent/kite-tests");
    // Conversations go to a store of the test's own, never the user's.
    c.env("KITE_STORE_URL", fresh_store());
    c.env("KITE_LOG", "off");
    // MCP logins go to files of the test's own, never to the user's keyring.
    c.env("KITE_MCP_LOGINS", "file");
    // No input unless the test gives some: text piped in joins the question.
    c.stdin(std::process::Stdio::null());
    c
}

/// Trusts the kite.toml in `dir` as it is now, in a data folder of `dir`'s own, which it
/// returns (for `XDG_DATA_HOME`).
pub(crate) fn trust(dir: &std::path::Path) -> std::path::PathBuf {
    let data = dir.join(".kite-data");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kite"))
        .arg("trust")
        .current_dir(dir)
        .env("XDG_DATA_HOME", &data)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    data
}

/// Trusts the project folder `dir` (its `.agents/skills`), in the data folder of `dir`'s
/// own that [`trust`] uses.
pub(crate) fn trust_folder(dir: &std::path::Path) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kite"))
        .arg("trust")
        .arg(dir)
        .env("XDG_DATA_HOME", dir.join(".kite-data"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `kite()` in `dir`, whose kite.toml is trusted as it is now; the local model is still
/// found.
pub(crate) fn in_trusted(dir: &std::path::Path) -> Command {
    let data = trust(dir);
    let mut c = kite();
    c.current_dir(dir).env("XDG_DATA_HOME", data);
    if let Some(model) = local_model_path() {
        c.env("KITE_LOCAL_MODEL", model);
    }
    c
}

/// Where the installed local model is, if it is.
fn local_model_path() -> Option<String> {
    static PATH: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kite"))
            .args(["model", "path"])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    })
    .clone()
}

/// A streamed Chat Completions answer saying `text`; `n` numbers it.
pub(crate) fn answer(text: &str, n: usize) -> kite_testkit::Reply {
    let mut r = kite::Response::empty(kite::FinishReason::Stop);
    r.message = kite::Message::assistant(text);
    kite_testkit::Reply::sse(kite_testkit::render::sse(
        kite_testkit::render::Shape::Chat,
        &r,
        n,
    ))
}

/// What a terminal shows while kite runs `args` on it (`script` gives it one), with
/// `envs` and nothing from the machine's configuration or store.
pub(crate) async fn on_terminal(args: &str, envs: &[(&str, &str)]) -> String {
    let command = format!("{} {args}", env!("CARGO_BIN_EXE_kite"));
    let out = tokio::process::Command::new("script")
        .args(["-qefc", &command, "/dev/null"])
        .envs(envs.iter().copied())
        .env("KITE_STORE_URL", fresh_store())
        .env("KITE_LOG", "off")
        .env("XDG_CONFIG_HOME", "/nonexistent/kite-tests")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The path of a new, empty conversation store.
pub(crate) fn fresh_store() -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("kite-cli-tests-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir.join(format!("conversations-{n}.db"))
}

/// What `now` said, as `r`'s stderr shows it, in the forms an answer may quote: the date
/// (`2026-12-08`), the time of day (`01:40`, `1:40`), the weekday (`Tuesday`) or the day
/// (`8 December 2026`). An answer that quotes none of them did not answer from the clock.
pub(crate) fn what_the_clock_said(r: &Run) -> Vec<String> {
    let field = |name: &str| {
        let at = r.stderr.split(&format!("\"{name}\":\"")).nth(1);
        at.expect("the clock's answer")
            .split('"')
            .next()
            .unwrap()
            .to_owned()
    };
    let (utc, date) = (field("utc"), field("date"));
    let time = utc.get(11..16).unwrap_or_default();
    let mut told = vec![
        utc.get(..10).unwrap_or_default().to_owned(),
        time.to_owned(),
        time.strip_prefix('0').unwrap_or(time).to_owned(),
    ];
    told.extend(date.split(", ").take(2).map(str::to_owned));
    told.retain(|t| !t.is_empty());
    told
}

pub(crate) struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub(crate) async fn run(cmd: &mut Command) -> Run {
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("kite finished")
        .expect("kite ran");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// The installed local model, or `None` after saying loudly why the test is skipped. CI sets
/// KITE_REQUIRE_LOCAL_MODEL, and then a missing model fails the test instead.
/// Where the installed local model is; `None` (said on stderr) when it is not installed.
pub(crate) fn local_model() -> Option<String> {
    if !local_model_installed() {
        return None;
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kite"))
        .args(["model", "path"])
        .output()
        .unwrap();
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

pub(crate) fn local_model_installed() -> bool {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kite"))
        .args(["model", "path"])
        .output()
        .unwrap();
    if out.status.success() {
        return true;
    }
    let why = String::from_utf8_lossy(&out.stderr).into_owned();
    if std::env::var_os("KITE_REQUIRE_LOCAL_MODEL").is_some() {
        panic!("KITE_REQUIRE_LOCAL_MODEL is set but: {why}");
    }
    eprintln!(
        "\n*** SKIPPED: no local model ({}). Run `kite model fetch`. ***\n",
        why.trim()
    );
    false
}

/// Waits (for at most `within`) until `child` has written the first byte of its answer,
/// then sends it `signal` (`-INT` as Ctrl-C does, `-TERM` as a service manager does): its
/// stdout, for what it says after.
pub(crate) async fn signal_once_begun(
    child: &mut tokio::process::Child,
    signal: &str,
    within: Duration,
) -> tokio::process::ChildStdout {
    use tokio::io::AsyncReadExt;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut first = [0u8; 1];
    tokio::time::timeout(within, stdout.read_exact(&mut first))
        .await
        .expect("the answer began")
        .unwrap();
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args([signal, &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    stdout
}
