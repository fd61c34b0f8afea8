//! `kite ask` keeps its conversations: `-c` continues the last one and `--conversation ID` a
//! given one (the provider receives the earlier turns), `--no-store` keeps nothing, and a
//! store that is no database is one clear error; `kite conversations` and `kite completions`.

mod common;

use common::{fresh_store, kite, run, signal_once_begun};
use kite_testkit::{ReplayServer, Reply, fixture};

const TEXT: &str = "openai/chat-completions/stream-text-with-usage/response.sse";

async fn ask(
    server: &ReplayServer,
    store: &std::path::Path,
    extra: &[&str],
    prompt: &str,
) -> common::Run {
    run(kite()
        .env("KITE_STORE_URL", store)
        .args(["ask", "--model", "m", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .args(extra)
        .arg(prompt))
    .await
}

fn sent_messages(server: &ReplayServer, n: usize) -> Vec<String> {
    let body: serde_json::Value = serde_json::from_str(&server.requests()[n].body_text()).unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| format!("{}: {}", m["role"].as_str().unwrap(), m["content"]))
        .collect()
}

#[tokio::test]
async fn continue_sends_the_earlier_turns() {
    let store = fresh_store();
    let server = ReplayServer::start(vec![
        Reply::sse(fixture(TEXT)),
        Reply::sse(fixture(TEXT)),
        Reply::sse(fixture(TEXT)),
    ])
    .await;
    let first = ask(&server, &store, &[], "Count to three.").await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    let answer = first.stdout.trim().to_owned();
    assert!(!answer.is_empty());

    let second = ask(&server, &store, &["-c"], "And back?").await;
    assert_eq!(second.code, 0, "{}", second.stderr);
    let sent = sent_messages(&server, 1);
    assert_eq!(sent.len(), 3, "{sent:?}");
    assert!(sent[0].contains("Count to three."), "{sent:?}");
    assert!(
        sent[1].starts_with("assistant") && sent[1].contains('1'),
        "{sent:?}"
    );
    assert!(sent[2].contains("And back?"), "{sent:?}");

    // --no-store sends nothing earlier and keeps nothing: the next -c still sees two turns.
    let alone = ask(&server, &store, &["--no-store"], "Alone.").await;
    assert_eq!(alone.code, 0, "{}", alone.stderr);
    assert_eq!(sent_messages(&server, 2).len(), 1);
}

#[tokio::test]
async fn a_named_conversation_is_continued_and_an_unknown_one_is_an_error() {
    let store = fresh_store();
    let server = ReplayServer::start(vec![Reply::sse(fixture(TEXT))]).await;
    let r = ask(
        &server,
        &store,
        &["--conversation", "0123456789abcdef"],
        "Hi.",
    )
    .await;
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("no stored conversation 0123456789abcdef"),
        "{}",
        r.stderr
    );
    assert_eq!(server.requests().len(), 0, "nothing was sent");

    let r = ask(&server, &store, &["-c"], "Hi.").await;
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("no stored conversation"), "{}", r.stderr);
}

#[tokio::test]
async fn a_store_that_is_no_database_is_named_with_what_to_do() {
    let store = fresh_store();
    std::fs::write(&store, vec![0x5a; 4096]).unwrap();
    let server = ReplayServer::start(vec![Reply::sse(fixture(TEXT))]).await;
    let r = ask(&server, &store, &[], "Hi.").await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(&store.display().to_string()) && r.stderr.contains("move it aside"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read(&store).unwrap(),
        vec![0x5a; 4096],
        "the file is untouched"
    );
    assert_eq!(server.requests().len(), 0);
}

#[tokio::test]
async fn stored_conversations_are_listed_shown_exported_and_deleted() {
    let store = fresh_store();
    let server = ReplayServer::start(vec![Reply::sse(fixture(TEXT))]).await;
    let r = ask(&server, &store, &[], "Count to three, please.").await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let conversations = |args: &[&str]| {
        let mut c = kite();
        c.env("KITE_STORE_URL", &store)
            .arg("conversations")
            .args(args);
        c
    };

    let listed = run(&mut conversations(&["list", "--json"])).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let c: serde_json::Value = serde_json::from_str(listed.stdout.trim()).unwrap();
    assert_eq!(c["title"], "Count to three, please.");
    assert_eq!(c["version"], 1);
    assert_eq!(c["model"], "m");
    let id = c["id"].as_str().unwrap().to_owned();

    // The start of an id names it, as in git.
    let shown = run(&mut conversations(&["show", &id[..id.len() - 4]])).await;
    assert!(
        shown.stdout.contains("user: Count to three, please."),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains("assistant: 1"), "{}", shown.stdout);

    let md = run(&mut conversations(&["export", &id])).await;
    assert!(
        md.stdout.starts_with("# Count to three, please."),
        "{}",
        md.stdout
    );
    assert!(md.stdout.contains("## Assistant"), "{}", md.stdout);
    let js = run(&mut conversations(&["export", &id, "--format", "json"])).await;
    let v: serde_json::Value = serde_json::from_str(&js.stdout).unwrap();
    assert_eq!(v["turns"][0]["number"], 1);

    let gone = run(&mut conversations(&["delete", &id])).await;
    assert_eq!(
        (gone.code, gone.stdout.trim()),
        (0, format!("deleted {id}").as_str())
    );
    let again = run(&mut conversations(&["delete", &id])).await;
    assert_eq!(again.code, 1);
    assert!(
        again.stderr.contains("no stored conversation"),
        "{}",
        again.stderr
    );
    let listed = run(&mut conversations(&["list"])).await;
    assert_eq!(listed.stdout, "");
    assert!(
        listed.stderr.contains("no conversations are stored yet"),
        "{}",
        listed.stderr
    );
}

#[tokio::test]
async fn a_start_shared_by_two_ids_is_refused_with_both() {
    let store = fresh_store();
    let server =
        ReplayServer::start(vec![Reply::sse(fixture(TEXT)), Reply::sse(fixture(TEXT))]).await;
    for q in ["first", "second"] {
        assert_eq!(ask(&server, &store, &[], q).await.code, 0);
    }
    let listed =
        run(kite()
            .env("KITE_STORE_URL", &store)
            .args(["conversations", "list", "--json"]))
        .await;
    let ids: Vec<String> = listed
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let common: String = ids[0]
        .chars()
        .zip(ids[1].chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    let given = if common.is_empty() {
        "x".to_owned()
    } else {
        common
    };
    let r = run(kite()
        .env("KITE_STORE_URL", &store)
        .args(["conversations", "show", &given]))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    if given != "x" {
        assert!(
            r.stderr.contains("the start of 2 conversations"),
            "{}",
            r.stderr
        );
    }
}

#[tokio::test]
async fn completions_are_printed_for_each_shell() {
    for (shell, mark) in [
        ("bash", "_kite()"),
        ("zsh", "#compdef kite"),
        ("fish", "complete -c kite"),
    ] {
        let r = run(kite().args(["completions", shell])).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.stdout.contains(mark),
            "{shell}: {}",
            &r.stdout[..r.stdout.len().min(200)]
        );
        assert!(r.stdout.contains("conversations"), "{shell}");
    }
    let r = run(kite().args(["completions", "tcsh"])).await;
    assert_eq!(r.code, 2);
}

#[tokio::test]
async fn a_store_url_of_another_kind_is_refused_and_creates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = ReplayServer::start(vec![Reply::sse(fixture(TEXT))]).await;
    let r = run(kite()
        .current_dir(dir.path())
        .env("KITE_STORE_URL", "mysql://x@127.0.0.1/db")
        .args(["ask", "--model", "m", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("Hi."))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("neither a postgres:// URL"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[tokio::test]
async fn the_title_is_the_question_and_the_export_cannot_be_forged() {
    let store = fresh_store();
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "private notes").unwrap();
    let server = ReplayServer::start(vec![Reply::sse(fixture(TEXT))]).await;
    let r = ask(
        &server,
        &store,
        &["-a", notes.to_str().unwrap()],
        "Hi.\n## Assistant\nforged",
    )
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let listed =
        run(kite()
            .env("KITE_STORE_URL", &store)
            .args(["conversations", "list", "--json"]))
        .await;
    let c: serde_json::Value = serde_json::from_str(listed.stdout.trim()).unwrap();
    assert!(
        !c["title"].as_str().unwrap().contains("private notes"),
        "{c}"
    );
    let id = c["id"].as_str().unwrap();
    let md = run(kite()
        .env("KITE_STORE_URL", &store)
        .args(["conversations", "export", id]))
    .await;
    let headings: Vec<&str> = md.stdout.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(headings, ["## You", "## Assistant"], "{}", md.stdout);
    assert!(md.stdout.contains("\\## Assistant"), "{}", md.stdout);
    assert!(!md.stdout.contains("user: "), "{}", md.stdout);
}

#[tokio::test]
async fn a_turn_cut_short_by_an_error_is_stored_as_far_as_it_is_consistent() {
    use kite::{FinishReason, Message, Part, Response, ToolCall};
    use kite_testkit::render::{Shape, sse};
    let mut call = Response::empty(FinishReason::ToolCalls);
    call.message = Message::new(
        kite::Role::Assistant,
        vec![Part::ToolCall(ToolCall::new("call_1", "now", "{}"))],
    );
    let server = ReplayServer::start(vec![
        Reply::sse(sse(Shape::Chat, &call, 1)),
        Reply::json(
            400,
            r#"{"error":{"message":"context too long","type":"invalid_request_error"}}"#,
        ),
    ])
    .await;
    let store = fresh_store();
    let r = ask(&server, &store, &["--tool", "now"], "What time is it?").await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("context too long"), "{}", r.stderr);

    let list = run(kite()
        .env("KITE_STORE_URL", &store)
        .args(["conversations", "list", "--json"]))
    .await;
    let c: serde_json::Value = serde_json::from_str(list.stdout.lines().next().unwrap()).unwrap();
    let show = run(kite().env("KITE_STORE_URL", &store).args([
        "conversations",
        "show",
        "--json",
        c["id"].as_str().unwrap(),
    ]))
    .await;
    let turns: serde_json::Value = serde_json::from_str(&show.stdout).unwrap();
    let messages = turns[0]["turn"]["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "the question, the call and its result: {messages:?}"
    );
    assert_eq!(messages[1]["parts"][0]["type"], "tool_call");
    assert_eq!(messages[2]["parts"][0]["type"], "tool_result");
}

#[tokio::test]
async fn a_full_disk_fails_the_turn_and_keeps_the_earlier_ones() {
    if std::process::Command::new("prlimit")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("\n*** SKIPPED: no prlimit (util-linux) ***\n");
        return;
    }
    let server = ReplayServer::start(vec![
        Reply::sse(fixture(TEXT)),
        Reply::sse(fixture(TEXT)),
        Reply::sse(fixture(TEXT)),
    ])
    .await;
    let store = fresh_store();
    for (q, more) in [("first", &[][..]), ("second", &["-c"][..])] {
        let r = ask(&server, &store, more, q).await;
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    // Files may not grow past 40 kB: the store opens, but cannot take a 100 kB turn.
    let r = run(tokio::process::Command::new("prlimit")
        .arg("--fsize=40000")
        .arg(env!("CARGO_BIN_EXE_kite"))
        .args(["ask", "-c", "--model", "m", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("third ".repeat(20_000))
        .env("KITE_STORE_URL", &store)
        .env("KITE_LOG", "off")
        .env("XDG_CONFIG_HOME", "/nonexistent/kite-tests")
        .stdin(std::process::Stdio::null()))
    .await;
    assert_eq!(r.code, 1, "a failed write, not a signal: {}", r.stderr);
    assert!(r.stderr.contains("could not be stored"), "{}", r.stderr);
    let list = run(kite()
        .env("KITE_STORE_URL", &store)
        .args(["conversations", "list", "--json"]))
    .await;
    let c: serde_json::Value = serde_json::from_str(list.stdout.lines().next().unwrap()).unwrap();
    assert_eq!(
        c["version"], 2,
        "the earlier turns, and nothing of the failed one"
    );
}

#[tokio::test]
async fn ctrl_c_or_sigterm_mid_answer_keeps_the_question() {
    use tokio::io::AsyncReadExt;
    let body = fixture(TEXT);
    let server = ReplayServer::start(vec![
        Reply::sse(body.clone()).stall_after(body.len() / 2),
        Reply::sse(body.clone()).stall_after(body.len() / 2),
    ])
    .await;
    let store = fresh_store();
    for (n, (sig, status)) in [("-INT", 130), ("-TERM", 143)].into_iter().enumerate() {
        let mut child = kite()
            .env("KITE_STORE_URL", &store)
            .args(["ask", "--json", "--model", "m", "--base-url"])
            .arg(format!("{}/v1", server.url()))
            .arg(format!("question {n}"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The answer has begun, then stalls.
        let mut stdout =
            signal_once_begun(&mut child, sig, std::time::Duration::from_secs(20)).await;
        let mut rest = String::new();
        stdout.read_to_string(&mut rest).await.unwrap();
        let out =
            tokio::time::timeout(std::time::Duration::from_secs(20), child.wait_with_output())
                .await
                .expect("kite ended")
                .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(status), "{stderr}");
        let done: serde_json::Value = serde_json::from_str(rest.lines().last().unwrap()).unwrap();
        assert_eq!(done["stop"], "cancelled", "{rest}");
        assert!(done["conversation"].is_string(), "{rest}");
    }
    let list = run(kite()
        .env("KITE_STORE_URL", &store)
        .args(["conversations", "list", "--json"]))
    .await;
    let titles: Vec<String> = list
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["title"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(titles.len(), 2, "{titles:?}");
    assert!(
        titles.iter().all(|t| t.starts_with("question ")),
        "{titles:?}"
    );
    // What was shown of each answer is kept, marked as cut short, as the web chat keeps it.
    for line in list.stdout.lines() {
        let id = serde_json::from_str::<serde_json::Value>(line).unwrap()["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let shown = run(kite().env("KITE_STORE_URL", &store).args([
            "conversations",
            "show",
            &id,
            "--json",
        ]))
        .await;
        let turns: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
        let turn = &turns[0]["turn"];
        assert_eq!(turn["cut_short"], true, "{turns}");
        let said = turn["messages"][1]["parts"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(!said.is_empty(), "the shown part of the answer: {turns}");
    }
}

#[tokio::test]
async fn a_libpq_key_value_store_string_is_postgres_not_a_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let silent = kite_testkit::SilentServer::start().await;
    let port = silent
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_owned();
    let url = format!("host=127.0.0.1 port={port} user=x password='pw SECRET' dbname=d");
    let r = run(kite()
        .current_dir(dir.path())
        .env("KITE_STORE_URL", &url)
        .args(["conversations", "list"]))
    .await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("database"), "{}", r.stderr);
    assert!(!r.stderr.contains("SECRET"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no file made"
    );
}

#[tokio::test]
async fn a_local_answer_cut_short_still_costs_nothing() {
    use tokio::io::AsyncReadExt;
    let Some(model) = common::local_model() else {
        return;
    };
    let store = fresh_store();
    let mut child = kite()
        .env("KITE_STORE_URL", &store)
        .env("KITE_LOCAL_MODEL", &model)
        .args(["ask", "--local", "--json", "--no-skills"])
        .arg("Write a long story, of at least 500 words, about a lighthouse keeper.")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Stopped once some of the answer's text has come (not only the call's start).
    let mut stdout = child.stdout.take().unwrap();
    let mut said = Vec::new();
    let mut byte = [0u8; 1];
    let text_came = async {
        while !String::from_utf8_lossy(&said).contains("\"text_delta\"") {
            stdout.read_exact(&mut byte).await.unwrap();
            said.push(byte[0]);
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(120), text_came)
        .await
        .expect("the answer's text began");
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).await.unwrap();
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("kite ended")
        .unwrap();
    assert_eq!(out.status.code(), Some(143));
    let list = run(kite()
        .env("KITE_STORE_URL", &store)
        .args(["conversations", "list", "--json"]))
    .await;
    let id = serde_json::from_str::<serde_json::Value>(list.stdout.lines().next().unwrap())
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let shown = run(kite()
        .env("KITE_STORE_URL", &store)
        .args(["conversations", "show", &id]))
    .await;
    assert!(shown.stdout.contains("cut short"), "{}", shown.stdout);
    // The call cut off counted no tokens, but the local model's cost is known: nothing.
    assert!(shown.stdout.contains("tokens, $0"), "{}", shown.stdout);
}

#[tokio::test]
async fn a_placeholder_key_is_a_word_that_stays_in_what_was_said() {
    // Local servers take any key, and `test` is the one people give them: no secret, and a
    // word the user and the model say. It stays on screen, in the store and when sent back.
    let chunk = |text: &str| {
        let c = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]});
        format!("data: {c}\n\n")
    };
    let answer = format!("{}data: [DONE]\n\n", chunk("It is a test, and it passed."));
    let store = fresh_store();
    let server = ReplayServer::start(vec![
        Reply::sse(answer.clone().into_bytes()),
        Reply::sse(answer.into_bytes()),
    ])
    .await;
    let ask = |extra: &'static [&'static str], prompt: &'static str| {
        let mut c = kite();
        c.env("KITE_STORE_URL", &store)
            .env("OPENAI_API_KEY", "test")
            .args(["ask", "--provider", "openai", "--model", "m", "--base-url"])
            .arg(format!("{}/v1", server.url()))
            .args(extra)
            .arg(prompt);
        c
    };
    let first = run(&mut ask(&[], "Is this a test?")).await;
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stdout.contains("It is a test"), "{}", first.stdout);
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Bearer test")
    );

    let again = run(&mut ask(&["-c"], "And the next test?")).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    let sent = sent_messages(&server, 1);
    assert!(sent[0].contains("Is this a test?"), "{sent:?}");
    assert!(sent[1].contains("It is a test, and it passed."), "{sent:?}");

    let mut export = kite();
    export
        .env("KITE_STORE_URL", &store)
        .args(["conversations", "list", "--json"]);
    let listed = run(&mut export).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.contains("Is this a test?"),
        "{}",
        listed.stdout
    );
    assert!(!listed.stdout.contains("[redacted]"), "{}", listed.stdout);
}

#[tokio::test]
async fn a_conversation_keeps_its_provider_a_failed_start_keeps_nothing_and_another_model_is_said()
{
    let store = fresh_store();
    let conversations = |args: &[&str]| {
        let mut c = kite();
        c.env("KITE_STORE_URL", &store)
            .arg("conversations")
            .args(args);
        c
    };
    // A question that fails before any answer begins no conversation.
    let failing = ReplayServer::start(vec![Reply::json(
        400,
        r#"{"error":{"message":"no such model","type":"invalid_request_error"}}"#,
    )])
    .await;
    let r = ask(&failing, &store, &[], "Hello?").await;
    assert_eq!(r.code, 1, "{}", r.stderr);
    let listed = run(&mut conversations(&["list", "--json"])).await;
    assert!(listed.stdout.trim().is_empty(), "{}", listed.stdout);
    // One that is answered records who answered it, a tool's result by the tool's name.
    use kite::{FinishReason, Message, Part, Response, ToolCall};
    use kite_testkit::render::{Shape, sse};
    let mut call = Response::empty(FinishReason::ToolCalls);
    call.message = Message::new(
        kite::Role::Assistant,
        vec![Part::ToolCall(ToolCall::new("call_1", "now", "{}"))],
    );
    let server = ReplayServer::start(vec![
        Reply::sse(sse(Shape::Chat, &call, 1)),
        Reply::sse(fixture(TEXT)),
        Reply::sse(fixture(TEXT)),
    ])
    .await;
    let r = ask(&server, &store, &["--tool", "now"], "What time is it?").await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    let listed = run(&mut conversations(&["list", "--json"])).await;
    let c: serde_json::Value = serde_json::from_str(listed.stdout.trim()).unwrap();
    assert_eq!(c["provider"], "openai_compatible", "{c}");
    let shown = run(&mut conversations(&["show", c["id"].as_str().unwrap()])).await;
    assert!(shown.stdout.contains("[tool] now -> "), "{}", shown.stdout);
    // Going on with another model is said.
    let r = run(kite()
        .env("KITE_STORE_URL", &store)
        .args(["ask", "-c", "--model", "other", "--base-url"])
        .arg(format!("{}/v1", server.url()))
        .arg("And now?"))
    .await;
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("this conversation was with m (openai_compatible); it goes on with other"),
        "{}",
        r.stderr
    );
}
