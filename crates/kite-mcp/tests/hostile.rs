//! Servers that misbehave: silent ones, ones that write junk or crash while starting, ones
//! that echo credentials back; and what a stdio server may see of kite's environment.

mod common;

use kite_mcp::{Error, Hub, HubOptions, ServerConfig, ServerStatus};
use kite_testkit::{ReplayServer, Reply, SilentServer};
use std::time::{Duration, Instant};

/// A stdio server running `code` in Python.
fn python_code(code: &str) -> ServerConfig {
    ServerConfig::stdio(
        kite_testkit::mcp::python().to_string_lossy(),
        ["-c".to_owned(), code.to_owned()],
    )
}

fn quick_hub() -> Hub {
    Hub::with_options(HubOptions {
        startup_timeout: Duration::from_millis(2500),
        // Out of the way: these tests look at the first attempt only.
        reconnect_initial: Duration::from_secs(600),
        ..HubOptions::default()
    })
}

/// Adds `config` and returns the error, checking it came within the deadline's reach.
async fn refused(hub: &Hub, config: ServerConfig) -> String {
    let started = Instant::now();
    let e = tokio::time::timeout(Duration::from_secs(20), hub.add("bad", config))
        .await
        .expect("the start-up deadline ended the attempt")
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10), "{e}");
    assert!(matches!(e, Error::Connect { .. }), "{e:?}");
    let down = hub.servers().into_iter().find(|s| s.id == "bad").unwrap();
    assert!(matches!(down.status, ServerStatus::Down { .. }), "{down:?}");
    e.to_string()
}

#[tokio::test]
async fn a_stdio_server_that_never_answers_is_down_after_its_deadline_with_its_stderr() {
    let hub = quick_hub();
    let e = refused(
        &hub,
        python_code(
            "import sys, time\nsys.stderr.write('warming the cache\\n'); sys.stderr.flush()\ntime.sleep(3600)",
        ),
    )
    .await;
    assert!(e.contains("no answer to initialize within 2.5 s"), "{e}");
    assert!(
        e.contains("its stderr ended with: warming the cache"),
        "{e}"
    );
}

#[tokio::test]
async fn a_stdio_server_that_writes_junk_is_down_after_its_deadline() {
    let hub = quick_hub();
    let e = refused(
        &hub,
        python_code(
            "import sys, time\nprint('hello, I am not JSON-RPC', flush=True)\nsys.stderr.write('JUNK_MARKER\\n'); sys.stderr.flush()\ntime.sleep(3600)",
        ),
    )
    .await;
    // Junk lines are passed over; the deadline ends the wait.
    assert!(
        e.contains("no answer to initialize within 2.5 s")
            && e.contains("its stderr ended with: JUNK_MARKER"),
        "{e}"
    );
}

#[tokio::test]
async fn a_server_that_crashes_while_starting_shows_the_end_of_its_stderr() {
    let hub = quick_hub();
    let e = refused(
        &hub,
        python_code(
            "import sys\nfor i in range(20): sys.stderr.write(f'line {i}\\n')\nsys.stderr.write('fatal: no config at /etc/x\\n')\nsys.exit(3)",
        ),
    )
    .await;
    assert!(
        e.contains("its stderr ended with:") && e.contains("fatal: no config at /etc/x"),
        "{e}"
    );
    assert!(!e.contains("line 3 "), "only the last lines: {e}");
}

#[tokio::test]
async fn an_http_server_that_accepts_and_never_answers_is_down_after_its_deadline() {
    let silent = SilentServer::start().await;
    let url = format!("{}/mcp", silent.url());
    let hub = quick_hub();
    let e = refused(
        &hub,
        ServerConfig::http(url).startup_timeout(Duration::from_millis(800)),
    )
    .await;
    assert!(
        e.contains("no answer to initialize within 0.8 s"),
        "the server's own deadline wins: {e}"
    );
    drop(silent);
}

const TOKEN: &str = "tok-0123456789-very-secret";
const HEADER: &str = "hdr-9876543210-also-secret";

#[tokio::test]
async fn credentials_a_server_echoes_back_are_never_shown() {
    let body = format!(
        "{{\"error\":\"invalid token\",\"you sent\":\"Bearer {TOKEN}\",\"x-api-key\":\"{HEADER}\"}}"
    );
    let answers = [
        Reply::json(401, body.clone()).header("www-authenticate", "Bearer"),
        Reply::json(401, body.clone()),
        Reply::json(403, body.clone()),
        Reply::json(200, body.clone()),
    ];
    let hub = quick_hub();
    let mut echoed = 0;
    for (i, answer) in answers.into_iter().enumerate() {
        let echo = ReplayServer::start(vec![answer; 8]).await;
        let config = ServerConfig::http(format!("{}/mcp", echo.url()))
            .bearer_token(TOKEN)
            .header("X-Api-Key", HEADER);
        let e = hub
            .add(format!("echo{i}"), config.clone())
            .await
            .unwrap_err();
        let shown = format!("{e} {e:?} {:?} {config:?}", hub.servers());
        assert!(!echo.requests().is_empty(), "the server was asked");
        assert!(
            !shown.contains(TOKEN) && !shown.contains(HEADER),
            "a credential was shown: {shown}"
        );
        if shown.contains("[redacted]") {
            echoed += 1;
        }
    }
    assert!(echoed > 0, "some answer's echo reaches an error, hidden");
}

#[tokio::test]
async fn closing_the_hub_lets_a_server_finish_then_ends_what_it_started() {
    let dir = std::env::temp_dir().join(format!("kite-mcp-close-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("saved");
    let helper = dir.join("helper");
    // A real server that saves its state when its stdin closes, and has a helper process.
    let code = format!(
        "import atexit, subprocess, sys\n\
         from mcp.server.mcpserver import MCPServer\n\
         helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n\
         open({helper:?}, 'w').write(str(helper.pid))\n\
         atexit.register(lambda: open({saved:?}, 'w').write('saved'))\n\
         app = MCPServer('closing')\n\
         @app.tool()\n\
         def hi() -> str:\n    return 'hi'\n\
         app.run()\n",
        helper = helper.display().to_string(),
        saved = saved.display().to_string(),
    );
    let hub = quick_hub();
    hub.add("closing", python_code(&code)).await.unwrap();
    let helper_pid: u32 = std::fs::read_to_string(&helper).unwrap().parse().unwrap();
    hub.close().await;
    assert_eq!(
        std::fs::read_to_string(&saved).ok().as_deref(),
        Some("saved"),
        "the server finished its work before it went"
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{helper_pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{helper_pid}/stat"))
            .unwrap_or_default()
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
    {
        assert!(Instant::now() < deadline, "the helper outlived the hub");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = std::fs::remove_dir_all(&dir);
}
