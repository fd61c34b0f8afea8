//! Servers that misbehave: silent ones, ones that write junk or crash while starting, ones
//! that echo credentials back; and what a stdio server may see of kite's environment.

mod common;

use common::{everything, text};
use kite_mcp::{Error, Hub, HubOptions, ServerConfig, ServerStatus};
use kite_testkit::{ReplayServer, Reply, SilentServer};
use serde_json::json;
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
        startup_timeout: Duration::from_millis(1500),
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
    assert!(e.contains("no answer to initialize within 1.5 s"), "{e}");
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
        python_code("import time\nprint('hello, I am not JSON-RPC', flush=True)\ntime.sleep(3600)"),
    )
    .await;
    assert!(e.contains("cannot connect"), "{e}");
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
async fn a_stdio_server_sees_only_the_allow_list_and_what_its_table_forwards() {
    // Set for this process only; the test's own variables are unique to it.
    // SAFETY: no other thread of this test binary reads or writes these variables.
    unsafe {
        std::env::set_var(
            "OPENAI_API_KEY",
            "sk-should-never-reach-a-server-0123456789",
        );
        std::env::set_var("KITE_TEST_FORWARDED", "forwarded-value");
    }
    let config = everything()
        .env("GIVEN", "given-value")
        .env("FROM_KITE", "${KITE_TEST_FORWARDED}");
    let hub = Hub::new();
    hub.add("everything", config).await.unwrap();
    let r = hub.call("everything", "get-env", json!({})).await.unwrap();
    let env: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&text(&r)).expect("get-env answers with the environment as JSON");
    assert!(!env.contains_key("OPENAI_API_KEY"), "{env:?}");
    assert!(!text(&r).contains("sk-should-never-reach"));
    assert_eq!(env["GIVEN"], "given-value");
    assert_eq!(env["FROM_KITE"], "forwarded-value");
    assert!(
        env.contains_key("PATH") && env.contains_key("HOME"),
        "{env:?}"
    );
    for name in env.keys() {
        assert!(
            kite_mcp::INHERITED.contains(&name.as_str())
                || name.starts_with("LC_")
                || ["GIVEN", "FROM_KITE"].contains(&name.as_str())
                // What a server's own runtime sets for itself (Node's npm launcher).
                || name.starts_with("npm_")
                || name == "NODE"
                || name == "INIT_CWD"
                || name == "COLOR"
                || name == "EDITOR",
            "{name} reached the server"
        );
    }
    hub.shutdown();

    // A table that forwards a variable kite does not have is refused with its name.
    let missing = everything().env("T", "${KITE_TEST_SURELY_UNSET}");
    let e = quick_hub().add("m", missing).await.unwrap_err();
    assert!(e.to_string().contains("KITE_TEST_SURELY_UNSET"), "{e}");
}
