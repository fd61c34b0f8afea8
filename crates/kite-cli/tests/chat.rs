//! `kite chat` in a real terminal: tmux gives it a pseudo-terminal, sends keys (Ctrl-C
//! included) and reads the screen, while the loopback server answers and records what it
//! was sent.

mod common;

use common::answer;
use kite::{FinishReason, Message, Response};
use kite_testkit::render::{Shape, sse};
use kite_testkit::{ReplayServer, Reply};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// One tmux server of the test's own (its socket in a temporary folder), holding one
/// window that runs kite.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn available() -> bool {
        let found = Command::new("tmux").arg("-V").output().is_ok();
        if !found {
            if std::env::var_os("KITE_REQUIRE_TMUX").is_some() {
                panic!("KITE_REQUIRE_TMUX is set but tmux is not installed");
            }
            eprintln!("\n*** SKIPPED: tmux is not installed ***\n");
        }
        found
    }

    /// Starts `command` (run by sh) in a 120×40 terminal; when it ends, `exit=N` shows.
    fn start(dir: &Path, command: &str) -> Self {
        let socket = dir.join(format!("tmux-{}", fastrand_suffix()));
        let tmux = Self { socket };
        let shell = format!("{command}; echo exit=$?; sleep 60");
        let status = tmux
            .cmd()
            .args(["new-session", "-d", "-s", "kite", "-x", "120", "-y", "40"])
            .arg(shell)
            .status()
            .unwrap();
        assert!(status.success());
        tmux
    }

    fn cmd(&self) -> Command {
        let mut c = Command::new("tmux");
        c.arg("-S").arg(&self.socket);
        c
    }

    /// Types `keys` (tmux key names: `Enter`, `C-c`, `C-d`, or literal text).
    fn keys(&self, keys: &[&str]) {
        let status = self
            .cmd()
            .args(["send-keys", "-t", "kite"])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Types a line and Enter.
    fn line(&self, text: &str) {
        self.cmd()
            .args(["send-keys", "-t", "kite", "-l", text])
            .status()
            .unwrap();
        self.keys(&["Enter"]);
    }

    /// The screen and its scrollback, as text.
    fn screen(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-J", "-S", "-200", "-t", "kite"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until `text` shows `times` times on the screen (at most 30 s).
    fn wait_for_n(&self, text: &str, times: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if screen.matches(text).count() >= times {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "{text:?} did not show {times} times; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn wait_for(&self, text: &str) -> String {
        self.wait_for_n(text, 1)
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

fn fastrand_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst) + u64::from(std::process::id()) * 1000
}

/// The chat command line, with nothing from the outside but what is named.
fn chat_command(dir: &Path, store: &Path, url: &str, extra: &str) -> String {
    format!(
        "env -i PATH=/usr/bin:/bin HOME={home} XDG_DATA_HOME={home}/data \
         XDG_CONFIG_HOME={home}/config TERM=xterm-256color KITE_LOG=off KITE_STORE_URL={store} \
         {kite} chat --model m --base-url {url}/v1 {extra}",
        home = dir.display(),
        store = store.display(),
        kite = env!("CARGO_BIN_EXE_kite"),
    )
}

/// The texts of the messages a request sent.
fn sent(server: &ReplayServer, n: usize) -> Vec<String> {
    let body: Value = serde_json::from_str(&server.requests()[n].body_text()).unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chat_survives_ctrl_c_keeps_its_turns_and_resumes_with_continue() {
    if !Tmux::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("conversations.db");
    let mut slow = Response::empty(FinishReason::Stop);
    slow.message = Message::assistant("slow ".repeat(400));
    let server = ReplayServer::start(vec![
        answer("Paris is the capital.", 1),
        Reply::sse(sse(Shape::Chat, &slow, 2)).chunked(40, Duration::from_millis(300)),
        answer("Berlin, then.", 3),
        answer("We spoke of capitals.", 4),
        answer("A fresh start.", 5),
    ])
    .await;
    let url = server.url();

    let t = Tmux::start(dir.path(), &chat_command(dir.path(), &store, &url, ""));
    t.wait_for("chatting with m");
    t.line("/help");
    t.wait_for("/compact");
    t.line("/nope");
    t.wait_for("unknown command /nope");
    t.line("What is the capital of France?");
    t.wait_for("Paris is the capital.");

    // Ctrl-C while the slow answer streams cancels that turn only.
    t.line("Tell me slowly.");
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.requests().len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the slow question was never sent"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    t.keys(&["C-c"]);
    t.wait_for("cancelled");
    t.line("And Germany?");
    t.wait_for("Berlin, then.");
    assert_eq!(
        sent(&server, 2),
        [
            "What is the capital of France?",
            "Paris is the capital.",
            "Tell me slowly.",
            "And Germany?"
        ],
        "the cut turn keeps its question; the chat goes on"
    );
    t.line("/exit");
    t.wait_for("exit=0");
    drop(t);

    // The next chat continues it: the server receives the earlier turns.
    let t = Tmux::start(dir.path(), &chat_command(dir.path(), &store, &url, "-c"));
    t.wait_for("continuing");
    t.line("What did we talk about?");
    t.wait_for("We spoke of capitals.");
    assert_eq!(
        sent(&server, 3),
        [
            "What is the capital of France?",
            "Paris is the capital.",
            "Tell me slowly.",
            "And Germany?",
            "Berlin, then.",
            "What did we talk about?"
        ]
    );

    // /reset begins a new conversation; Ctrl-C clears a typed line; Ctrl-D leaves.
    t.line("/reset");
    t.wait_for("a new conversation begins");
    t.line("Start over?");
    t.wait_for("A fresh start.");
    assert_eq!(sent(&server, 4), ["Start over?"]);
    t.keys(&["-l", "half a thought"]);
    t.wait_for("half a thought");
    t.keys(&["C-c"]);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !t.screen().contains("exit="),
        "Ctrl-C on a typed line only clears it"
    );
    t.keys(&["C-d"]);
    t.wait_for("exit=0");

    // Both conversations are stored.
    let list = std::process::Command::new(env!("CARGO_BIN_EXE_kite"))
        .args(["conversations", "list", "--json"])
        .env("KITE_STORE_URL", &store)
        .output()
        .unwrap();
    let titles: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["title"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(titles.len(), 2, "{titles:?}");
    assert!(titles.contains(&"Start over?".to_owned()), "{titles:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_chat_offers_skills_in_every_turn_and_loads_each_file_once() {
    if !Tmux::available() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("conversations.db");
    let skills = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/skills/valid");
    let view = |id: &str, n: usize| {
        let mut r = Response::empty(FinishReason::ToolCalls);
        r.message = Message::new(
            kite::Role::Assistant,
            vec![kite::Part::ToolCall(kite::ToolCall::new(
                id,
                "view",
                r#"{"path": "skills/word-count/SKILL.md"}"#,
            ))],
        );
        Reply::sse(sse(Shape::Chat, &r, n))
    };
    let server = ReplayServer::start(vec![
        view("c1", 1),
        answer("I have read the skill.", 2),
        view("c2", 3),
        answer("Still read.", 4),
    ])
    .await;
    let extra = format!("--skills {}", skills.join("word-count").display());
    let t = Tmux::start(
        dir.path(),
        &chat_command(dir.path(), &store, &server.url(), &extra),
    );
    t.wait_for("chatting with m");
    t.line("Count the words, please.");
    t.wait_for("I have read the skill.");
    // Another model, the same skills, and the same run: the file is not sent again.
    t.line("/model other");
    t.line("And again?");
    t.wait_for("Still read.");
    let body =
        |n: usize| -> Value { serde_json::from_str(&server.requests()[n].body_text()).unwrap() };
    let after_switch = body(2);
    assert_eq!(after_switch["model"], "other");
    let system = after_switch["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("<available_skills>"), "{system}");
    let tools = after_switch["tools"].to_string();
    assert!(
        tools.contains("\"view\"") && tools.contains("\"bash\""),
        "{tools}"
    );
    let results: Vec<String> = [1, 3]
        .iter()
        .map(|&n| {
            body(n)["messages"]
                .as_array()
                .unwrap()
                .iter()
                .rev()
                .find(|m| m["role"] == "tool")
                .unwrap()["content"]
                .to_string()
        })
        .collect();
    assert!(results[0].contains("It prints `words=N`"), "{}", results[0]);
    assert!(results[1].contains("already loaded"), "{}", results[1]);
    assert!(
        !results[1].contains("It prints `words=N`"),
        "{}",
        results[1]
    );
    t.line("/exit");
    t.wait_for("exit=0");
}

#[tokio::test]
async fn attach_sends_a_file_with_the_next_question_only() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "the launch is on Tuesday").unwrap();
    let server =
        ReplayServer::start(vec![answer("Tuesday.", 1), answer("You are welcome.", 2)]).await;
    let mut chat = tokio::process::Command::new(env!("CARGO_BIN_EXE_kite"))
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir.path())
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("KITE_LOG", "off")
        .args(["chat", "--no-store", "--model", "m", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    use tokio::io::AsyncWriteExt;
    let mut stdin = chat.stdin.take().unwrap();
    stdin
        .write_all(
            b"/attach missing.txt\n/attach notes.txt\n/attach\nWhen is the launch?\nThanks!\n",
        )
        .await
        .unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), chat.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("cannot attach missing.txt"), "{said}");
    assert!(
        said.contains("notes.txt goes with the next question"),
        "{said}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("notes.txt"));
    let first = server.requests()[0].body_text();
    assert!(first.contains("the launch is on Tuesday"), "{first}");
    let second: Value = serde_json::from_str(&server.requests()[1].body_text()).unwrap();
    let last = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .to_string();
    assert!(
        !last.contains("Tuesday") && last.contains("Thanks!"),
        "{last}"
    );
}
