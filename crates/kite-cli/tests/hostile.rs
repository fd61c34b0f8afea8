//! kite run as an attacker or a careless user runs it: hostile cassettes, stalled providers,
//! signals in the middle, a closed pipe, out-of-range numbers and flags that make no sense.

mod common;

use common::{KEY, kite, local_model_installed, run};
use kite_testkit::{ReplayServer, Reply, SilentServer, fixture, mcp};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kite-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A cassette folder whose index names `request_body` for its one request.
fn cassette_naming(dir: &Path, request_body: &str, version: u32) {
    std::fs::create_dir_all(dir).unwrap();
    let index = serde_json::json!({"kite_cassette": version, "exchanges": [{
        "request": {"method": "POST", "url": "http://127.0.0.1:1/v1/chat/completions",
                    "headers": {}, "body": request_body},
        "response": {"status": 200, "headers": {"content-type": "application/json"},
                     "body": "001-response.json"}
    }]});
    std::fs::write(dir.join("cassette.json"), index.to_string()).unwrap();
    std::fs::write(dir.join("001-response.json"), "{}").unwrap();
}

#[tokio::test]
async fn a_cassette_that_names_a_file_outside_its_folder_shows_nothing_of_it() {
    let root = scratch("traversal");
    let secret = root.join("environ-copy");
    std::fs::write(&secret, format!("OPENAI_API_KEY={KEY}\n")).unwrap();
    for (name, body) in [
        ("absolute", "/proc/self/environ".to_owned()),
        ("parent", "../environ-copy".to_owned()),
        ("absolute-copy", secret.display().to_string()),
    ] {
        let dir = root.join(name);
        cassette_naming(&dir, &body, 1);
        for args in [vec!["cassette", "show"], vec!["cassette", "list"]] {
            let r = run(kite().env("KITE_API_KEY", KEY).args(&args).arg(&dir)).await;
            assert_eq!(r.code, 1, "{args:?} {name}: {}", r.stderr);
            assert!(
                r.stdout.contains("not a plain file name")
                    || r.stderr.contains("not a plain file name"),
                "{name}: {}{}",
                r.stdout,
                r.stderr
            );
            let all = format!("{}{}", r.stdout, r.stderr);
            assert!(!all.contains(KEY) && !all.contains("PATH="), "{all}");
        }
        // Replaying it is refused the same way, before anything is sent.
        let r = run(kite()
            .env("KITE_CASSETTE", "replay")
            .args(["ask", "--provider", "openai", "--cassette"])
            .arg(&dir)
            .arg("hi"))
        .await;
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains("not a plain file name"), "{}", r.stderr);
        assert!(!r.stderr.contains(KEY) && !r.stderr.contains("PATH="));
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test]
async fn cassette_list_goes_past_a_broken_cassette_and_marks_it() {
    let root = scratch("list");
    cassette_naming(&root.join("a-good"), "001-request.json", 1);
    cassette_naming(&root.join("b-future"), "001-request.json", 7);
    std::fs::create_dir_all(root.join("c-corrupt")).unwrap();
    std::fs::write(root.join("c-corrupt/cassette.json"), "{ not json").unwrap();
    cassette_naming(&root.join("d-good"), "001-request.json", 1);
    let r = run(kite().args(["cassette", "list"]).arg(&root)).await;
    assert_eq!(r.code, 1, "a broken cassette is reported: {}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{}", r.stdout);
    assert!(lines[0].contains("a-good  1 exchange"), "{}", lines[0]);
    assert!(
        lines[1].contains("b-future  unreadable:")
            && lines[1].contains("format version 7 (this kite reads version 1)"),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].contains("c-corrupt  unreadable:") && lines[2].contains("not a cassette index"),
        "{}",
        lines[2]
    );
    assert!(lines[3].contains("d-good  1 exchange"), "{}", lines[3]);
    let _ = std::fs::remove_dir_all(&root);
}

/// A stream that spells out a key in two pieces, neither of which looks like one.
fn split_key_stream() -> Vec<u8> {
    let chunk = |text: &str| {
        let c = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
        format!("data: {c}\n\n")
    };
    let mut body = chunk("Your key is sk-proj-AbCdEf");
    body += &chunk("GhIjKlMnOpQrStUvWxYz0123. Keep it safe.");
    body += "data: [DONE]\n\n";
    body.into_bytes()
}

/// A stream whose answer spells out `key` in two deltas, split in its middle.
fn key_in_two_deltas(key: &str) -> Vec<u8> {
    let (a, b) = key.split_at(key.len() / 2);
    let chunk = |text: &str| {
        let c = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
        format!("data: {c}\n\n")
    };
    format!(
        "{}{}data: [DONE]\n\n",
        chunk(&format!("Your key: {a}")),
        chunk(&format!("{b} is set."))
    )
    .into_bytes()
}

#[tokio::test]
async fn a_known_key_the_answer_splits_between_deltas_is_hidden_on_a_pipe_and_in_json() {
    let server = ReplayServer::start(vec![
        Reply::sse(key_in_two_deltas(KEY)),
        Reply::sse(key_in_two_deltas(KEY)),
    ])
    .await;
    for json in [false, true] {
        let r = run(kite()
            .env("OPENAI_API_KEY", KEY)
            .args(["ask", "--no-store", "--provider", "openai", "--base-url"])
            .arg(format!("{}/v1", server.url()))
            .args(json.then_some("--json"))
            .arg("what is my key?"))
        .await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(!r.stdout.contains(KEY), "json {json}: {}", r.stdout);
        assert!(r.stdout.contains("[redacted]"), "json {json}: {}", r.stdout);
        assert!(r.stdout.contains("is set."), "json {json}: {}", r.stdout);
    }
}

#[tokio::test]
async fn a_key_split_across_stream_events_is_neither_recorded_nor_missed_by_scan() {
    let root = scratch("split");
    let server = ReplayServer::start(vec![Reply::sse(split_key_stream())]).await;
    let dir = root.join("leak");
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args(["ask", "--provider", "openai", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("--cassette")
        .arg(&dir)
        .arg("what is my key?"))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("looks like a key"), "{}", r.stderr);
    assert!(!dir.join("cassette.json").exists(), "nothing was recorded");

    // The same stream on disk (written by hand, say) is found by scan.
    std::fs::write(root.join("stream.sse"), split_key_stream()).unwrap();
    let r = run(kite()
        .args(["cassette", "scan"])
        .arg(root.join("stream.sse")))
    .await;
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("stream.sse:1:1: looks like a key (sk-…"),
        "{}",
        r.stdout
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test]
async fn a_cassette_that_cannot_be_written_fails_before_the_paid_request() {
    // Root may write almost anywhere; nobody can make a folder in /proc.
    let unwritable = Path::new("/proc/kite-hostile-cassette");
    let server = ReplayServer::start(vec![Reply::sse(split_key_stream())]).await;
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args(["ask", "--provider", "openai", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("--cassette")
        .arg(unwritable)
        .arg("hi"))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("cannot create /proc/kite-hostile-cassette"),
        "{}",
        r.stderr
    );
    assert!(server.requests().is_empty(), "nothing was paid for");
}

fn chat_stream() -> Vec<u8> {
    fixture("openai/chat-completions/stream-after-tool-result/response.sse")
}

#[tokio::test]
async fn a_provider_that_stalls_or_never_answers_is_given_up_on_by_the_deadlines() {
    // Headers and the first event, then silence.
    let body = chat_stream();
    let first = body.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let server = ReplayServer::start(vec![Reply::sse(body.clone()).stall_after(first)]).await;
    let started = Instant::now();
    let r = run(kite()
        .env("KITE_API_KEY", KEY)
        .args(["ask", "--idle-timeout", "1", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("hi"))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("the answer stalled: no data for 1s"),
        "{}",
        r.stderr
    );
    assert!(started.elapsed() < Duration::from_secs(15));

    // The same from kite.toml.
    let dir = scratch("stall");
    std::fs::write(dir.join("kite.toml"), "[http]\nidle_timeout_secs = 0.5\n").unwrap();
    let server = ReplayServer::start(vec![Reply::sse(body).stall_after(first)]).await;
    let r = run(kite()
        .env("KITE_API_KEY", KEY)
        .current_dir(&dir)
        .env("XDG_DATA_HOME", common::trust(&dir))
        .args(["ask", "--no-mcp", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("hi"))
    .await;
    assert!(r.stderr.contains("no data for 500ms"), "{}", r.stderr);

    // Accepts, reads the request, never answers: `--timeout` bounds the wait, retries
    // included.
    let silent = SilentServer::start().await;
    let started = Instant::now();
    let r = run(kite()
        .env("KITE_API_KEY", KEY)
        .args(["ask", "--timeout", "0.5", "--base-url"])
        .arg(format!("{}/v1", silent.url()))
        .arg("hi"))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("no answer within 500ms"), "{}", r.stderr);
    assert!(started.elapsed() < Duration::from_secs(30));
    drop(silent);

    // Nothing listens: the retries stop before `--timeout` would pass in a wait, and the
    // error says why the last attempt failed. (The first wait is 0.5 to 1 s, the first two
    // 1.5 to 3 s: two attempts, the last well before the deadline.)
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let r = run(kite()
        .env("KITE_API_KEY", KEY)
        .args(["ask", "--timeout", "1.4", "--base-url"])
        .arg(format!("http://127.0.0.1:{port}/v1"))
        .arg("hi"))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    let last = r.stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("could not connect") && last.contains("refused"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("said nothing"), "{}", r.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_bad_value_in_the_environment_is_named_by_its_variable() {
    use std::os::unix::ffi::OsStrExt;
    let not_utf8 = std::ffi::OsStr::from_bytes(b"sk-\xff\xfe");
    // A flag's variable with a value out of range, or not UTF-8.
    let r = run(kite().env("KITE_LOCAL_PARALLEL", "-1").args(["ask", "hi"])).await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the value comes from the environment variable KITE_LOCAL_PARALLEL"),
        "{}",
        r.stderr
    );
    let r = run(kite().env("KITE_MODEL", not_utf8).args(["ask", "hi"])).await;
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the environment variable KITE_MODEL is not UTF-8"),
        "{}",
        r.stderr
    );
    // A provider's key: named, its value not shown, and no other model used instead.
    let r = run(kite().env("OPENAI_API_KEY", not_utf8).args(["ask", "hi"])).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("OPENAI_API_KEY is not UTF-8"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("local model"), "{}", r.stderr);
    assert!(r.stdout.is_empty(), "{}", r.stdout);
    // So with a compatible server's key: refused, not sent without one.
    let r = run(kite().env("KITE_API_KEY", not_utf8).args([
        "ask",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "hi",
    ]))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("KITE_API_KEY is not UTF-8"),
        "{}",
        r.stderr
    );
}

#[test]
fn help_or_version_that_cannot_be_written_fails() {
    for args in [&["--version"][..], &["--help"], &["ask", "--help"]] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kite"))
            .args(args)
            .stdout(full)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("cannot write to standard output"),
            "{stderr}"
        );
    }
    // Written, they succeed.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kite"))
        .arg("--version")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("kite "));
}

#[tokio::test]
async fn out_of_range_durations_and_numbers_are_refused_with_a_message() {
    let dir = scratch("ranges");
    for (toml, says) in [
        (
            "[mcp.servers.x]\ncommand = \"x\"\ntimeout_secs = 1e300\n",
            "`timeout_secs` must be a number of seconds from 0.001 to",
        ),
        (
            "[mcp.servers.x]\ncommand = \"x\"\nstartup_timeout_secs = inf\n",
            "`startup_timeout_secs` must be",
        ),
        ("[http]\ntimeout_secs = -1\n", "`timeout_secs` must be"),
        (
            "[http]\nidle_timeout_secs = nan\n",
            "`idle_timeout_secs` must be",
        ),
        ("[http]\ntimeout = 5\n", "unknown field `timeout`"),
        (
            "[skills]\nmax_memory_mb = 0\n",
            "`max_memory_mb` must be at least 1",
        ),
        ("[skills]\nmax_workspace_mb = -1\n", "max_workspace_mb"),
        (
            "[skills]\nmax_tmp_mb = 18446744073709551615\n",
            "`max_tmp_mb` is too large",
        ),
    ] {
        std::fs::write(dir.join("kite.toml"), toml).unwrap();
        let r = run(kite().current_dir(&dir).args(["mcp", "list"])).await;
        assert_eq!(r.code, 1, "{toml}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{toml}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);

    for (args, says) in [
        (
            vec!["ask", "--timeout", "1e300", "hi"],
            "it must be a number of seconds from 0.001 to 604800",
        ),
        (vec!["ask", "--idle-timeout", "0", "hi"], "from 0.001"),
        (
            vec!["responses", "wait", "r", "--timeout", "1e30"],
            "to 604800 (a week), not 1e30",
        ),
        (
            vec!["ask", "--temperature", "nan", "hi"],
            "not a temperature",
        ),
        (
            vec!["ask", "--temperature", "inf", "hi"],
            "not a temperature",
        ),
        (vec!["ask", "--max-turns", "0", "hi"], "--max-turns"),
        (vec!["ask", "--context-size", "1", "hi"], "--context-size"),
        (vec!["ask", "--threads", "0", "hi"], "--threads"),
    ] {
        let r = run(kite().args(&args)).await;
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    // A wrong value from a flag's environment variable names the variable, what to change.
    for (var, value, args) in [
        ("KITE_LOCAL_PARALLEL", "-1", vec!["ask", "--local", "hi"]),
        ("KITE_LOCAL_THREADS", "0", vec!["serve", "--local"]),
    ] {
        let r = run(kite().env(var, value).args(&args)).await;
        assert_eq!(r.code, 2, "{var}: {}", r.stderr);
        assert!(
            r.stderr
                .contains(&format!("the environment variable {var}")),
            "{var}: {}",
            r.stderr
        );
    }
    let r = run(kite().args(["ask", "--local", "--parallel", "0", "hi"])).await;
    assert!(!r.stderr.contains("environment variable"), "{}", r.stderr);
}

#[tokio::test]
async fn a_forced_tool_that_is_not_offered_is_refused_before_any_request() {
    let server = ReplayServer::start(vec![Reply::sse(chat_stream())]).await;
    let r = run(kite()
        .env("KITE_API_KEY", KEY)
        .args([
            "ask",
            "--no-mcp",
            "--tool",
            "now",
            "--tool-choice",
            "weather",
            "--base-url",
        ])
        .arg(format!("{}/v1", server.url()))
        .arg("hi"))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("--tool-choice \"weather\" names no tool on offer (now)"),
        "{}",
        r.stderr
    );
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn transcribing_a_missing_file_says_so_first() {
    let r = run(kite().args(["transcribe", "/nonexistent/talk.wav"])).await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("cannot read /nonexistent/talk.wav"),
        "not a question about providers: {}",
        r.stderr
    );
}

#[tokio::test]
async fn a_closed_stdout_ends_the_run_quietly_and_cancels_the_call() {
    // A slow stream: the whole answer would take seconds.
    let server = ReplayServer::start(vec![
        Reply::sse(chat_stream()).chunked(8, Duration::from_millis(40)),
    ])
    .await;
    let mut child = kite()
        .env("KITE_API_KEY", KEY)
        .args(["ask", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("hi")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -c 5`: read a little, then close the pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 5];
    stdout.read_exact(&mut first).await.unwrap();
    drop(stdout);
    let started = Instant::now();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("kite ended")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(141), "{stderr}");
    assert!(
        !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "it stopped soon after"
    );
}

/// `kite` started with its output piped, and a way to signal it.
struct Running {
    child: tokio::process::Child,
}

impl Running {
    fn signal(&self, sig: &str) {
        let pid = self.child.id().unwrap().to_string();
        let ok = std::process::Command::new("kill")
            .args([sig, &pid])
            .status()
            .unwrap();
        assert!(ok.success());
    }

    async fn finish(self) -> (Option<i32>, Option<i32>, String) {
        use std::os::unix::process::ExitStatusExt;
        let out = tokio::time::timeout(Duration::from_secs(30), self.child.wait_with_output())
            .await
            .expect("kite ended after the signal")
            .unwrap();
        (
            out.status.code(),
            out.status.signal(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

#[tokio::test]
async fn ctrl_c_while_the_local_model_generates_exits_130_without_a_crash() {
    if !local_model_installed() {
        return;
    }
    for (sig, status) in [("-INT", 130), ("-TERM", 143)] {
        let mut child = kite()
            .args(["ask", "--local", "--max-tokens", "400"])
            .arg("Write a long story about a kite that flies over the sea, with many details.")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for the first words: the model is generating now.
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 1];
        tokio::time::timeout(Duration::from_secs(60), stdout.read_exact(&mut first))
            .await
            .expect("the model started answering")
            .unwrap();
        let running = Running { child };
        running.signal(sig);
        let (code, signal, stderr) = running.finish().await;
        assert_eq!(signal, None, "kite died of a signal: {stderr}");
        assert_eq!(code, Some(status), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// Whether process `pid` is gone (or a zombie nobody has reaped yet).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn ctrl_c_while_an_mcp_server_starts_leaves_no_process_behind() {
    let dir = scratch("mcp-start");
    let pids = dir.join("pids");
    // A server that starts a helper process of its own, then never answers.
    let script = format!(
        "import os, subprocess, sys, time\n\
         helper = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)'])\n\
         open({pids:?} + '.tmp', 'w').write(f'{{os.getpid()}} {{helper.pid}}')\n\
         os.rename({pids:?} + '.tmp', {pids:?})\n\
         time.sleep(3600)\n",
        pids = pids.display().to_string()
    );
    std::fs::write(dir.join("slow.py"), script).unwrap();
    std::fs::write(
        dir.join("kite.toml"),
        format!(
            "[mcp.servers.slow]\ncommand = {:?}\nargs = [{:?}]\nstartup_timeout_secs = 120\n",
            mcp::python().to_string_lossy(),
            dir.join("slow.py").to_string_lossy()
        ),
    )
    .unwrap();
    for (args, sig, status) in [
        (vec!["mcp", "list"], "-INT", 130),
        (
            vec!["ask", "--base-url", "http://127.0.0.1:9/v1", "hi"],
            "-TERM",
            143,
        ),
    ] {
        let _ = std::fs::remove_file(&pids);
        let child = common::in_trusted(&dir)
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let running = Running { child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !pids.exists() {
            assert!(Instant::now() < deadline, "the server started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let started: Vec<u32> = std::fs::read_to_string(&pids)
            .unwrap()
            .split_whitespace()
            .map(|p| p.parse().unwrap())
            .collect();
        running.signal(sig);
        let (code, signal, stderr) = running.finish().await;
        assert_eq!((code, signal), (Some(status), None), "{args:?}: {stderr}");
        let deadline = Instant::now() + Duration::from_secs(5);
        while !started.iter().all(|p| gone(*p)) {
            assert!(
                Instant::now() < deadline,
                "{args:?}: processes {started:?} outlived kite"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A kite.toml in `dir` with one stdio server `name` running Python `code`, and `extra`
/// lines for its table.
fn python_server(dir: &Path, name: &str, code: &str, extra: &str) {
    let toml = format!(
        "[mcp.servers.{name}]\ncommand = {:?}\nargs = [\"-c\", {code:?}]\n{extra}",
        mcp::python().to_string_lossy()
    );
    std::fs::write(dir.join("kite.toml"), toml).unwrap();
}

#[tokio::test]
async fn a_crashed_mcp_server_is_reported_with_the_end_of_its_stderr() {
    let dir = scratch("mcp-crash");
    python_server(
        &dir,
        "crash",
        "import sys; sys.stderr.write('config error: API_URL is empty\\n'); sys.exit(2)",
        "",
    );
    let r = run(common::in_trusted(&dir)
        .env("KITE_LOG", "info")
        .args(["mcp", "list"]))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("its stderr ended with: config error: API_URL is empty"),
        "{}",
        r.stderr
    );
    // The server's stderr is logged too: as plain lines when stderr is not a terminal.
    assert!(
        r.stderr.contains(" INFO ") && r.stderr.contains("stderr: config error"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("\x1b["),
        "plain text when not a terminal: {:?}",
        r.stderr
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn mcp_credentials_stay_out_of_errors_and_logs_even_when_the_server_echoes_them() {
    const TOKEN: &str = "tok-cli-0123456789-secret";
    const HEADER: &str = "hdr-cli-9876543210-secret";
    let body = format!("{{\"error\":\"bad\",\"got\":\"Bearer {TOKEN}\",\"key\":\"{HEADER}\"}}");
    let server = ReplayServer::start(vec![Reply::json(401, body); 16]).await;
    let dir = scratch("mcp-echo");
    std::fs::write(
        dir.join("kite.toml"),
        format!(
            "[mcp.servers.echo]\nurl = \"{}/mcp\"\nbearer_token_env = \"ECHO_TOKEN\"\nheaders = {{ \"X-Key\" = \"{HEADER}\" }}\n",
            server.url()
        ),
    )
    .unwrap();
    for log in ["warn", "trace"] {
        let r = run(common::in_trusted(&dir)
            .env("ECHO_TOKEN", TOKEN)
            .env("KITE_LOG", log)
            .args(["mcp", "list", "--json"]))
        .await;
        assert_eq!(r.code, 1, "{}", r.stderr);
        let all = format!("{}{}", r.stdout, r.stderr);
        assert!(all.contains("[redacted]"), "{all}");
        assert!(
            !all.contains(TOKEN) && !all.contains(HEADER),
            "KITE_LOG={log}: {all}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn on_a_terminal_a_silent_model_is_shown_waiting_with_the_time() {
    let silent = SilentServer::start().await;
    let screen = common::on_terminal(
        &format!("ask --timeout 3.6 --base-url {}/v1 hi", silent.url()),
        &[("KITE_API_KEY", KEY)],
    )
    .await;
    assert!(
        screen.contains("kite: waiting for the model… 2s"),
        "{screen:?}"
    );
    assert!(
        screen.contains("kite: waiting for the model… 3s"),
        "{screen:?}"
    );
    assert!(screen.contains("no answer within 3.6s"), "{screen:?}");
    drop(silent);

    // Without a terminal, nothing of the kind.
    let silent = SilentServer::start().await;
    let r = run(kite()
        .env("KITE_API_KEY", KEY)
        .args(["ask", "--timeout", "2.5", "--base-url"])
        .arg(format!("{}/v1", silent.url()))
        .arg("hi"))
    .await;
    assert!(!r.stderr.contains("waiting"), "{}", r.stderr);
    drop(silent);
}

#[tokio::test]
async fn more_threads_than_cores_are_clamped_with_a_message() {
    if !local_model_installed() {
        return;
    }
    let r = run(kite().args([
        "ask",
        "--local",
        "--threads",
        "1000",
        "--max-tokens",
        "2",
        "hi",
    ]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let cores = std::thread::available_parallelism().unwrap().get();
    assert!(
        r.stderr.contains(&format!(
            "--threads 1000 is more than this machine's {cores} cores; using {cores}"
        )),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn recording_replaces_planted_links_and_never_writes_through_them() {
    let root = scratch("planted");
    let victim = root.join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let dir = root.join("cassette");
    std::fs::create_dir_all(&dir).unwrap();
    for name in ["cassette.json", "001-request.json", "001-response.sse"] {
        std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
    }
    // The planted index is refused as it stands; a folder with links only for the files to
    // come is recorded into with the links replaced.
    std::fs::remove_file(dir.join("cassette.json")).unwrap();
    let server = ReplayServer::start(vec![Reply::sse(chat_stream())]).await;
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .args(["ask", "--provider", "openai", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("--cassette")
        .arg(&dir)
        .arg("hi"))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    for name in ["cassette.json", "001-request.json", "001-response.sse"] {
        let meta = std::fs::symlink_metadata(dir.join(name)).unwrap();
        assert!(meta.is_file(), "{name} is a file of the cassette's own");
    }

    // A cassette folder that is itself a link is not recorded into.
    let elsewhere = root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("001-response.sse"), "precious").unwrap();
    std::os::unix::fs::symlink(&elsewhere, root.join("linked")).unwrap();
    let server = ReplayServer::start(vec![Reply::sse(chat_stream())]).await;
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .env("KITE_CASSETTE", "record")
        .args(["ask", "--provider", "openai", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("--cassette")
        .arg(root.join("linked"))
        .arg("hi"))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("the folder is a link"), "{}", r.stderr);
    assert!(server.requests().is_empty());
    assert_eq!(
        std::fs::read_to_string(elsewhere.join("001-response.sse")).unwrap(),
        "precious"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test]
async fn pipes_links_and_devices_in_a_cassette_tree_neither_hang_nor_stop_a_scan() {
    let root = scratch("devices");
    let dir = root.join("piped");
    std::fs::create_dir_all(&dir).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(dir.join("cassette.json"))
        .status()
        .unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink("/nonexistent", root.join("dangling")).unwrap();
    std::os::unix::fs::symlink("/dev/zero", root.join("zero")).unwrap();
    std::fs::write(root.join("notes.txt"), format!("key = {KEY}\n")).unwrap();

    let r = run(kite().args(["cassette", "show"]).arg(&dir)).await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("not a regular file"), "{}", r.stderr);
    let r = run(kite().args(["cassette", "scan"]).arg(&root)).await;
    assert_eq!(r.code, 1, "the key is still found: {}", r.stderr);
    assert!(
        r.stdout.contains("notes.txt:1:7: looks like a key"),
        "{}",
        r.stdout
    );
    for skipped in ["cassette.json", "dangling", "zero"] {
        assert!(
            r.stderr.contains("passed over") && r.stderr.contains(skipped),
            "{skipped}: {}",
            r.stderr
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test]
async fn what_a_cassette_or_server_names_cannot_drive_the_terminal() {
    let root = scratch("escapes");
    let dir = root.join("c");
    cassette_naming(&dir, "001-request.json", 1);
    let index = std::fs::read_to_string(dir.join("cassette.json"))
        .unwrap()
        .replace("\"POST\"", "\"\\u001b]0;pwned\\u0007\\u001b[2J\"");
    std::fs::write(dir.join("cassette.json"), index).unwrap();
    std::fs::write(dir.join("001-request.json"), "{}").unwrap();
    for args in [vec!["cassette", "list"], vec!["cassette", "show"]] {
        let r = run(kite().args(&args).arg(&dir)).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            !r.stdout.contains('\x1b') && !r.stdout.contains('\x07'),
            "{:?}",
            r.stdout
        );
        assert!(r.stdout.contains("\\u{1b}]0;pwned"), "{:?}", r.stdout);
    }
    // Scripts get the data as it is, escaped the JSON way.
    let r = run(kite().args(["cassette", "list", "--json"]).arg(&dir)).await;
    assert!(
        r.stdout.contains("\\u001b]0;pwned\\u0007"),
        "{:?}",
        r.stdout
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[tokio::test]
async fn a_forwarded_key_a_crashing_server_prints_is_hidden() {
    let dir = scratch("mcp-leak");
    std::fs::write(
        dir.join("kite.toml"),
        "[mcp.servers.leaky]\ncommand = \"sh\"\nargs = [\"-c\", \"echo \\\"boom: $FWD\\\" >&2; exit 3\"]\nenv = { FWD = \"${OPENAI_API_KEY}\" }\n",
    )
    .unwrap();
    let r = run(common::in_trusted(&dir)
        .env("OPENAI_API_KEY", KEY)
        .env("KITE_LOG", "info")
        .args(["mcp", "list"]))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(all.contains("boom: [redacted]"), "{all}");
    assert!(!all.contains(KEY), "{all}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_signal_at_start_up_is_the_last_thing_said() {
    // Early enough to land while the store opens and the first request is made: what the
    // command would still say of its cancelled work is not said.
    for ms in (20..=200).step_by(30) {
        let child = kite()
            .env("KITE_API_KEY", KEY)
            .args(["ask", "--base-url", "http://127.0.0.1:9/v1", "hi"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(ms)).await;
        let running = Running { child };
        running.signal("-INT");
        let (code, _, stderr) = running.finish().await;
        let said: Vec<&str> = stderr.lines().filter(|l| l.starts_with("kite: ")).collect();
        if said.is_empty() {
            // Not yet watching for signals: the default action ended it.
            continue;
        }
        assert_eq!(
            said.last(),
            Some(&"kite: interrupted"),
            "at {ms} ms: {stderr}"
        );
        assert_eq!(code, Some(130), "at {ms} ms: {stderr}");
    }
}

#[tokio::test]
async fn a_signal_is_heard_while_kite_waits_on_a_blocking_read() {
    for (sig, status) in [("-INT", 130), ("-HUP", 129)] {
        // `kite ask -` reads the question from a stdin that stays open.
        let mut child = kite()
            .args(["ask", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Held open until kite has ended: its read never returns by itself.
        let stdin = child.stdin.take();
        // Time for kite to start and watch for signals.
        tokio::time::sleep(Duration::from_millis(1000)).await;
        let running = Running { child };
        running.signal(sig);
        let (code, signal, stderr) = running.finish().await;
        drop(stdin);
        assert_eq!((code, signal), (Some(status), None), "{sig}: {stderr}");
    }
}

#[tokio::test]
async fn a_stream_of_keep_alive_comments_is_given_up_on_after_the_timeout() {
    let comments = ": keep-alive\n\n".repeat(100).into_bytes();
    let server = ReplayServer::start(vec![
        Reply::sse(comments).chunked(14, Duration::from_millis(100)),
    ])
    .await;
    let started = Instant::now();
    let r = run(kite()
        .env("KITE_API_KEY", KEY)
        .args([
            "ask",
            "--timeout",
            "1.5",
            "--idle-timeout",
            "1",
            "--base-url",
        ])
        .arg(format!("{}/v1", server.url()))
        .arg("hi"))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("the model said nothing"), "{}", r.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
    // Events the API does not define are no answer either.
    let unknown = "event: x\ndata: {}\n\n".repeat(200).into_bytes();
    let server = ReplayServer::start(vec![
        Reply::sse(unknown).chunked(19, Duration::from_millis(50)),
    ])
    .await;
    let started = Instant::now();
    let r = run(kite()
        .env("KITE_API_KEY", KEY)
        .args(["ask", "--timeout", "1.5", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("hi"))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("the model said nothing"), "{}", r.stderr);
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[tokio::test]
async fn kite_ask_goes_on_without_a_server_that_misses_its_start_up_deadline() {
    let dir = scratch("ask-down");
    python_server(
        &dir,
        "silent",
        "import time; time.sleep(3600)",
        "startup_timeout_secs = 1\n",
    );
    let server = ReplayServer::start(vec![Reply::sse(chat_stream())]).await;
    let started = Instant::now();
    let r = run(common::in_trusted(&dir)
        .env("KITE_API_KEY", KEY)
        .args(["ask", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("hi"))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "MCP server \"silent\": cannot connect: no answer to initialize within 1.0 s"
        ),
        "{}",
        r.stderr
    );
    assert!(!r.stdout.is_empty(), "the answer came");
    assert!(started.elapsed() < Duration::from_secs(15));
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn questions_that_cannot_be_answered_are_refused_before_any_request() {
    let server = ReplayServer::start(vec![Reply::sse(chat_stream())]).await;
    let base = format!("{}/v1", server.url());
    for (args, says) in [
        (
            vec!["ask", "--base-url", &base, "  "],
            "the question is empty",
        ),
        (
            vec![
                "ask",
                "--base-url",
                &base,
                "--tool-choice",
                "required",
                "hi",
            ],
            "--tool-choice required, but no tool is on offer",
        ),
    ] {
        let r = run(kite().env("KITE_API_KEY", KEY).args(&args)).await;
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
    assert!(server.requests().is_empty());
}

#[tokio::test]
async fn a_full_disk_is_an_error_not_a_closed_pipe() {
    let server = ReplayServer::start(vec![Reply::sse(chat_stream())]).await;
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let child = kite()
        .env("KITE_API_KEY", KEY)
        .args(["ask", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("hi")
        .stdout(full)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("kite: cannot write the output: No space left on device"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_token_in_an_mcp_servers_url_is_never_shown() {
    let dir = scratch("url-token");
    std::fs::write(
        dir.join("kite.toml"),
        "[mcp.servers.q]\nurl = \"http://user:pw-0123456789@127.0.0.1:9/mcp?access_token=qtok-secret-555\"\n",
    )
    .unwrap();
    let r = run(common::in_trusted(&dir)
        .env("KITE_LOG", "debug")
        .args(["mcp", "list"]))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    let all = format!("{}{}", r.stdout, r.stderr);
    assert!(
        !all.contains("qtok-secret-555") && !all.contains("pw-0123456789"),
        "{all}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_broken_kite_toml_never_shows_a_password_or_key_it_holds() {
    let dir = scratch("toml-password");
    let path = dir.join("kite.toml");
    for text in [
        "[store]\nurl = \"postgres://u:sekritpass@127.0.0.1:9/db\n",
        "[store]\nurl = [\"postgres://u:sekritpass@127.0.0.1:9/db\"]\n",
        "[serve]\nkeys = [\"sk-sekritpass\"\n",
        "[serve]\nadmin_keys = \"sekritpass\"\n",
        "[serve]\nadmin_keys = [\"sekritpass\"]\nkeys = [\"a\", 7]\n",
        "[providers.openai]\napi_key = [\"sekritpass\"]\n",
        "[serve]\nadmin_keys = \"ab\\\"sekritpass\\\"cd\"\n",
        "[serve]\nlimits_unavailable = \"sekritpass\"\n",
        "[serve]\nlimits_unavailable = \"a`sekritpass`, expected\"\n",
    ] {
        std::fs::write(&path, text).unwrap();
        let r = run(kite()
            .arg("--config")
            .arg(&path)
            .args(["ask", "--local", "hi"]))
        .await;
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.stderr.contains("kite.toml"), "{}", r.stderr);
        assert!(
            r.stderr.contains("line "),
            "where it is wrong: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("sekritpass"), "{}", r.stderr);
    }
}

#[tokio::test]
async fn a_kite_toml_in_the_working_directory_does_nothing_until_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let server = ReplayServer::start(vec![Reply::sse(fixture(
        "openai/chat-completions/stream-text-with-usage/response.sse",
    ))])
    .await;
    let ran = dir.join("ran.txt");
    let toml = format!(
        "[defaults]\nprovider = \"openai\"\n[providers.openai]\nbase_url = \"{}/v1\"\n\
         [mcp.servers.x]\ncommand = \"sh\"\nargs = [\"-c\", \"echo ran > {}\"]\n",
        server.url(),
        ran.display()
    );
    std::fs::write(dir.join("kite.toml"), &toml).unwrap();
    let data = dir.join("data");
    let ask = || {
        let mut c = kite();
        c.current_dir(dir)
            .env("XDG_DATA_HOME", &data)
            .env("OPENAI_API_KEY", KEY)
            .args(["ask", "--no-store", "hi"]);
        c
    };
    let r = run(&mut ask()).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("is not trusted yet") && r.stderr.contains("kite trust"),
        "{}",
        r.stderr
    );
    assert_eq!(server.requests().len(), 0, "the key went nowhere");
    assert!(!ran.exists(), "no program was started");

    let trust = |extra: &[&str]| {
        let mut c = kite();
        c.current_dir(dir)
            .env("XDG_DATA_HOME", &data)
            .arg("trust")
            .args(extra);
        c
    };
    let t = run(&mut trust(&[])).await;
    assert_eq!(t.code, 0, "{}", t.stderr);
    let list = std::fs::read_to_string(data.join("kite/trusted")).unwrap();
    assert!(list.contains("kite.toml"), "{list}");
    let r = run(&mut ask()).await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(server.requests().len(), 1);

    // A changed file must be trusted again; forgetting takes trust back.
    std::fs::write(dir.join("kite.toml"), format!("{toml}\n# changed\n")).unwrap();
    let r = run(&mut ask()).await;
    assert!(
        r.stderr.contains("has changed since it was trusted"),
        "{}",
        r.stderr
    );
    run(&mut trust(&[])).await;
    run(&mut trust(&["--forget"])).await;
    let r = run(&mut ask()).await;
    assert!(r.stderr.contains("is not trusted yet"), "{}", r.stderr);
    // Named with --config, it is the user's own choice.
    let r = run(kite().current_dir(dir).env("XDG_DATA_HOME", &data).args([
        "--config",
        "kite.toml",
        "mcp",
        "list",
        "--json",
    ]))
    .await;
    assert!(!r.stderr.contains("trusted"), "{}", r.stderr);
    assert!(r.stdout.contains("\"x\""), "{}", r.stdout);

    // A link to a trusted file borrows nothing: the folder's own file is what is trusted.
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(dir.join("kite.toml"), elsewhere.path().join("kite.toml")).unwrap();
    run(&mut trust(&[])).await;
    let r = run(kite()
        .current_dir(elsewhere.path())
        .env("XDG_DATA_HOME", &data)
        .args(["ask", "--no-store", "hi"]))
    .await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("is a link"), "{}", r.stderr);
}

#[tokio::test]
async fn pip_sees_no_key_and_its_failure_is_shown() {
    // A python3 that writes down the environment it was given, then fails as pip does.
    let dir = scratch("pip-env");
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let seen = dir.join("seen");
    let script = format!(
        "#!/bin/sh\nenv >> {}\necho 'ERROR: Could not find a version that satisfies the requirement' >&2\necho 'ERROR: No matching distribution found' >&2\nexit 1\n",
        seen.display()
    );
    let python = bin.join("python3");
    std::fs::write(&python, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    for args in [["model", "fetch"], ["prices", "update"]] {
        let _ = std::fs::remove_file(&seen);
        let r = run(kite()
            .env("PATH", &path)
            .env("XDG_DATA_HOME", dir.join("data"))
            .env("OPENAI_API_KEY", KEY)
            .env("ANTHROPIC_API_KEY", "sk-ant-another-SECRET-key-0123")
            .env("PIP_INDEX_URL", "https://pypi.example/simple")
            .args(args))
        .await;
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("No matching distribution found"),
            "{args:?}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("no message"), "{}", r.stderr);
        let env = std::fs::read_to_string(&seen).unwrap();
        assert!(!env.contains("SECRET"), "{args:?} gave pip a key: {env}");
        assert!(env.contains("PIP_INDEX_URL="), "pip keeps its own settings");
        assert!(env.contains("PATH="));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn serve_settings_that_cannot_work_are_refused_before_serving() {
    let dir = scratch("serve-settings");
    let big = "[serve.cache] ttl_secs must be from 1 to 31536000";
    let routes = "[[serve.routes]]\nname = \"a\"\nprovider = \"openai\"\nfallbacks = [\"b\", \"nosuch\"]\n\
                  [[serve.routes]]\nname = \"b\"\nprovider = \"openai\"\n";
    let many_fallbacks: String = (0..10)
        .map(|i| {
            let others: Vec<String> = (1..10).map(|k| format!("\"r{k}\"")).collect();
            let fallbacks = if i == 0 { others.join(", ") } else { String::new() };
            format!("[[serve.routes]]\nname = \"r{i}\"\nprovider = \"openai\"\nfallbacks = [{fallbacks}]\n")
        })
        .collect();
    for (toml, says) in [
        // Past what TOML's integers hold: said where, without the value.
        (
            "[serve.cache]\nttl_secs = 18446744073709551615\n",
            "line 2 (`ttl_secs`), column 12: u64 value was too large",
        ),
        ("[serve.cache]\nttl_secs = 31536001\n", big),
        ("[serve.cache]\nttl_secs = 0\n", big),
        (
            routes,
            "[serve] route \"a\": its fallback \"nosuch\" names no route (the routes: a, b)",
        ),
        (
            &routes.replace("\"nosuch\"", "\"a\""),
            "[serve] route \"a\" names itself as a fallback",
        ),
        (
            &routes.replace("\"nosuch\"", "\"b\""),
            "[serve] route \"a\": its fallback \"b\" is listed twice",
        ),
        (
            "[[serve.routes]]\nname = \"a\"\nprovider = \"openai\"\n\
             [[serve.routes]]\nname = \"a\"\nprovider = \"mistral\"\n",
            "[serve] route \"a\" is defined twice",
        ),
        (
            &routes.replace("name = \"a\"", "name = \" \""),
            "[serve] route 1: its name is empty",
        ),
        (
            &routes.replace("name = \"a\"", "name = \"a \""),
            "[serve] route \"a \": its name begins or ends with a space",
        ),
        (
            &many_fallbacks,
            "[serve] route \"r0\": 9 fallbacks, more than 8",
        ),
    ] {
        let config = dir.join("kite.toml");
        std::fs::write(&config, toml).unwrap();
        let r = run(kite()
            .env("OPENAI_API_KEY", KEY)
            .arg("--config")
            .arg(&config)
            .args(["serve", "--addr", "127.0.0.1:0"]))
        .await;
        assert_eq!(r.code, 1, "{toml}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{toml}: {}", r.stderr);
        assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_fifo_in_place_of_a_configuration_is_refused_not_waited_on() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("kite.toml");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let data = dir.path().join("data");
    for args in [
        vec!["trust", "kite.toml"],
        vec!["--config", "kite.toml", "models"],
    ] {
        let mut c = kite();
        c.current_dir(dir.path())
            .env("XDG_DATA_HOME", &data)
            .args(&args);
        let r = run(&mut c).await;
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("not a file") || r.stderr.contains("not a regular file"),
            "{args:?}: {}",
            r.stderr
        );
    }
}

#[tokio::test]
async fn folders_others_may_write_are_not_used_without_a_word() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // A personal configuration in a folder anyone may write: someone else's, in effect.
    let config = dir.path().join("config");
    std::fs::create_dir_all(config.join("kite")).unwrap();
    std::fs::write(config.join("kite/kite.toml"), "[defaults]\nmodel = \"m\"\n").unwrap();
    std::fs::set_permissions(config.join("kite"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut c = kite();
    c.current_dir(dir.path())
        .env("XDG_CONFIG_HOME", &config)
        .env("XDG_DATA_HOME", dir.path().join("data"))
        .args(["models"]);
    let r = run(&mut c).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("may be written by other users; kite does not use it"),
        "{}",
        r.stderr
    );
    // A data folder anyone may write holds no trust, and is refused for what kite keeps.
    let data = dir.path().join("open-data");
    std::fs::create_dir_all(data.join("kite")).unwrap();
    std::fs::set_permissions(data.join("kite"), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::write(dir.path().join("kite.toml"), "[defaults]\nmodel = \"m\"\n").unwrap();
    let mut c = kite();
    c.current_dir(dir.path())
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .env("XDG_DATA_HOME", &data)
        .args(["trust", "kite.toml"]);
    let r = run(&mut c).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("may be written by other users"),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn a_named_model_a_dead_server_and_a_web_page_are_each_said_plainly() {
    let page = b"<!DOCTYPE html><html><head><title>Not Implemented</title></head>\
                 <body><h1>Not Implemented</h1><p>POST is not served here.</p></body></html>";
    // A model named with no key for it is not answered by another model.
    let r = run(kite().args(["ask", "--model", "gpt-4o", "--no-store", "hi"])).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("OPENAI_API_KEY is not set"),
        "{}",
        r.stderr
    );
    // A 501 is asked once, and said with where it came from, as text.
    let server = ReplayServer::start(vec![
        Reply::status(501)
            .header("content-type", "text/html")
            .body(page.to_vec()),
        Reply::status(501)
            .header("content-type", "text/html")
            .body(page.to_vec()),
    ])
    .await;
    let base = format!("{}/v1", server.url());
    let started = Instant::now();
    let r = run(kite().args(["ask", "--no-store", "--base-url", &base, "hi"])).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(server.requests().len(), 1, "a 501 was asked again");
    assert!(!r.stderr.contains('<'), "{}", r.stderr);
    assert!(
        r.stderr.contains("web page") && r.stderr.contains(&base),
        "{}",
        r.stderr
    );
    let r = run(kite().args(["models", "--base-url", &base])).await;
    assert!(
        !r.stderr.contains('<') && r.stderr.contains("web page"),
        "{}",
        r.stderr
    );
    // A refused connection is tried once more, soon, and names the server.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/v1", closed.local_addr().unwrap());
    drop(closed);
    let started = Instant::now();
    let r = run(kite().args(["ask", "--no-store", "--base-url", &dead, "hi"])).await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(
        r.stderr.contains("could not connect") && r.stderr.contains(&dead),
        "{}",
        r.stderr
    );
}

#[tokio::test]
async fn the_command_line_sends_openais_requests_where_openai_base_url_says() {
    let server = ReplayServer::start(vec![Reply::sse(fixture(
        "openai/chat-completions/stream-text-with-usage/response.sse",
    ))])
    .await;
    let r = run(kite()
        .env("OPENAI_API_KEY", KEY)
        .env("OPENAI_BASE_URL", format!("{}/v1", server.url()))
        .args(["ask", "--no-store", "Count to three."]))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "1\n2\n3");
    assert_eq!(server.requests()[0].path, "/v1/chat/completions");
}
